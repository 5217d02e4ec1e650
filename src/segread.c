/* segread: consistent reads of a live segment (see seg.h's protocol). */
#include "config.h"

#include "segread.h"

#include <errno.h>
#include <string.h>

#define RETRIES 1000

static uint64_t ld(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static uint32_t ld32(const uint32_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static const void *at(const void *base, uint64_t off)
{
    return (const char *)base + off;
}

int seg_read_locked(const uint64_t *seq, const void *src, void *dst, size_t n)
{
    for (int i = 0; i < RETRIES; i++) {
        uint64_t s0 = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
        if (s0 & 1)
            continue;
        for (size_t k = 0; k < n / 8; k++)
            ((uint64_t *)dst)[k] = ld((const uint64_t *)src + k);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(seq, __ATOMIC_RELAXED) == s0)
            return 0;
    }
    for (size_t k = 0; k < n / 8; k++)
        ((uint64_t *)dst)[k] = ld((const uint64_t *)src + k);
    return EAGAIN;
}

/* A slot's counters only grow and each is stored whole, so reading a
 * class's six twice and finding them equal gives a consistent snapshot of
 * it (a double collect). Returns 0, or EAGAIN when some class kept changing
 * past the retry limit (its last read is kept). */
static int read_collect(const struct seg_counters *src, struct seg_counters *dst)
{
    int rc = 0;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        const uint64_t *s = (const uint64_t *)&src[c];
        uint64_t a[6], b[6];
        int i, k, same = 0;
        for (k = 0; k < 6; k++)
            a[k] = __atomic_load_n(&s[k], __ATOMIC_ACQUIRE);
        for (i = 0; i < RETRIES && !same; i++) {
            for (k = 0; k < 6; k++)
                b[k] = __atomic_load_n(&s[k], __ATOMIC_ACQUIRE);
            same = memcmp(a, b, sizeof a) == 0;
            memcpy(a, b, sizeof a);
        }
        if (!same)
            rc = EAGAIN;
        memcpy(&dst[c], a, sizeof a);
    }
    return rc;
}

static void add(struct seg_counters *out, const struct seg_counters *in)
{
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        out[c].allocs += in[c].allocs;
        out[c].frees += in[c].frees;
        out[c].reallocs += in[c].reallocs;
        out[c].req_bytes += in[c].req_bytes;
        out[c].usable_alloc += in[c].usable_alloc;
        out[c].usable_free += in[c].usable_free;
    }
}

int seg_sum(const void *base, const struct seg_header *h, struct seg_counters out[SIZECLASS_COUNT])
{
    static __thread struct seg_counters tmp[SIZECLASS_COUNT];
    const struct seg_slot *slots = at(base, h->off_slots);
    const struct seg_slot *overflow = at(base, h->off_overflow);
    const struct seg_slot *retired = at(base, h->off_retired);
    int rc = 0;

    memset(out, 0, sizeof(struct seg_counters) * SIZECLASS_COUNT);
    /* The retired total's seq also covers folds: a thread that exits adds its
     * slot to retired and clears the slot inside one odd period, so a sum
     * taken across an unchanged, even retired seq counts it once. */
    for (int attempt = 0; attempt < RETRIES; attempt++) {
        uint64_t r0 = __atomic_load_n(&retired->seq, __ATOMIC_ACQUIRE);
        if (r0 & 1)
            continue;
        memset(out, 0, sizeof(struct seg_counters) * SIZECLASS_COUNT);
        rc = 0;
        for (uint32_t i = 0; i < h->nslots; i++) {
            if (__atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE) != SEG_SLOT_LIVE)
                continue;  /* never used, or folded into retired and cleared */
            if (read_collect(slots[i].cls, tmp) != 0)
                rc = EAGAIN;
            add(out, tmp);
        }
        read_collect(overflow->cls, tmp);
        add(out, tmp);
        for (size_t k = 0; k < sizeof tmp / 8; k++)
            ((uint64_t *)tmp)[k] = ld((const uint64_t *)retired->cls + k);
        add(out, tmp);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&retired->seq, __ATOMIC_RELAXED) == r0)
            return rc;
    }
    return EAGAIN;
}

/* The double collect of read_collect, for one class's tracked figures. */
static int read_tracked1(const struct seg_tracked *src, struct seg_tracked *dst)
{
    enum { N = sizeof(struct seg_tracked) / 8 };
    const uint64_t *s = (const uint64_t *)src;
    uint64_t a[N], b[N];
    int same = 0;
    for (int k = 0; k < N; k++)
        a[k] = __atomic_load_n(&s[k], __ATOMIC_ACQUIRE);
    for (int i = 0; i < RETRIES && !same; i++) {
        for (int k = 0; k < N; k++)
            b[k] = __atomic_load_n(&s[k], __ATOMIC_ACQUIRE);
        same = memcmp(a, b, sizeof a) == 0;
        memcpy(a, b, sizeof a);
    }
    memcpy(dst, a, sizeof a);
    return same ? 0 : EAGAIN;
}

static void add_tracked(struct seg_tracked *out, const struct seg_tracked *in)
{
    uint64_t *o = (uint64_t *)out;
    const uint64_t *i = (const uint64_t *)in;
    for (size_t k = 0; k < sizeof *out / 8; k++)
        o[k] += i[k];
}

void seg_read_tracked(const void *base, const struct seg_header *h, unsigned c,
                      struct seg_tracked *out)
{
    const struct seg_slot *slots = at(base, h->off_slots);
    const struct seg_slot *overflow = at(base, h->off_overflow);
    const struct seg_slot *retired = at(base, h->off_retired);
    struct seg_tracked t;

    for (int attempt = 0; attempt < RETRIES; attempt++) {
        uint64_t r0 = __atomic_load_n(&retired->seq, __ATOMIC_ACQUIRE);
        if (r0 & 1)
            continue;
        memset(out, 0, sizeof *out);
        for (uint32_t i = 0; i < h->nslots; i++) {
            if (__atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE) != SEG_SLOT_LIVE)
                continue;
            read_tracked1(&slots[i].trk[c], &t);
            add_tracked(out, &t);
        }
        read_tracked1(&overflow->trk[c], &t);
        add_tracked(out, &t);
        read_tracked1(&retired->trk[c], &t);
        add_tracked(out, &t);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&retired->seq, __ATOMIC_RELAXED) == r0)
            return;
    }
}

uint64_t seg_live_req_class(const void *base, const struct seg_header *h,
                            const struct seg_counters *sum, unsigned c, int *exact)
{
    const struct seg_header *file = base;
    struct seg_tracked t;
    uint64_t live = sum->allocs - sum->frees;
    uint64_t live_usable = sum->usable_alloc - sum->usable_free;
    uint64_t tl, treq;

    seg_read_tracked(base, h, c, &t);
    tl = t.allocs - t.frees;
    treq = t.req_alloc - t.req_free;
    *exact = (h->flags & SEG_F_EXACT_REQ) && !(ld32(&file->flags) & SEG_F_INHERITED) &&
             ld(&file->tracked_dropped) == 0;
    if (*exact)
        return treq;
    if (tl == 0 || live == 0)
        return live ? live_usable : 0;
    /* live * treq / tl without overflow: both fit in 64 bits, the product may not. */
    return (uint64_t)((unsigned __int128)live * treq / tl);
}
