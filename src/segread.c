/* segread: consistent reads of a live segment (see seg.h's protocol). */
#include "config.h"

#include "segread.h"

#include <errno.h>
#include <math.h>
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

/* A slot's counters only grow and each is stored whole, so reading a chunk
 * of them (a class's six counters, or its tracked figures) twice and finding
 * it the same gives a consistent snapshot of that chunk (a double collect).
 * Adds `nchunks` chunks of `words` words at src into acc. Returns 0, or
 * EAGAIN when some chunk kept changing past the retry limit (its last read
 * is added). */
#define CHUNK_MAX 32
_Static_assert(sizeof(struct seg_counters) / 8 <= CHUNK_MAX &&
               sizeof(struct seg_tracked) / 8 <= CHUNK_MAX, "chunks fit the buffers");

static int collect_add(const uint64_t *src, uint64_t *acc, size_t words, size_t nchunks)
{
    int rc = 0;
    for (size_t c = 0; c < nchunks; c++, src += words, acc += words) {
        uint64_t a[CHUNK_MAX], b[CHUNK_MAX];
        int same = 0;
        for (size_t k = 0; k < words; k++)
            a[k] = __atomic_load_n(&src[k], __ATOMIC_ACQUIRE);
        for (int i = 0; i < RETRIES && !same; i++) {
            for (size_t k = 0; k < words; k++)
                b[k] = __atomic_load_n(&src[k], __ATOMIC_ACQUIRE);
            same = memcmp(a, b, words * 8) == 0;
            memcpy(a, b, words * 8);
        }
        if (!same)
            rc = EAGAIN;
        for (size_t k = 0; k < words; k++)
            acc[k] += a[k];
    }
    return rc;
}

/* Sums the same region (at `off` within each slot: nchunks chunks of words
 * words) over every live slot, every live counter slot when the region is
 * the counters (`cls`: at off - offsetof(cls) in a counter slot), the
 * overflow slot and the retired total. The
 * retired slot's seq also covers folds: a thread that exits adds its slot to
 * retired and clears the slot inside one odd period, so a sum taken across
 * an unchanged, even retired seq counts it once. */
static int sum_slots(const void *base, const struct seg_header *h, size_t off, size_t words,
                     size_t nchunks, uint64_t *out)
{
    const struct seg_slot *slots = at(base, h->off_slots);
    const struct seg_slot *overflow = at(base, h->off_overflow);
    const struct seg_slot *retired = at(base, h->off_retired);
    int rc = 0;
    int cls = off >= offsetof(struct seg_slot, cls) && off < offsetof(struct seg_slot, trk);

    for (int attempt = 0; attempt < RETRIES; attempt++) {
        uint64_t r0 = __atomic_load_n(&retired->seq, __ATOMIC_ACQUIRE);
        if (r0 & 1)
            continue;
        memset(out, 0, words * nchunks * 8);
        rc = 0;
        for (uint32_t i = 0; i < h->nslots; i++) {
            if (__atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE) != SEG_SLOT_LIVE)
                continue;  /* never used, or folded into retired and cleared */
            rc |= collect_add(at(&slots[i], off), out, words, nchunks);
        }
        if (cls && h->ncslots) {
            const struct seg_cstate *cst = at(base, h->off_cstate);
            const struct seg_cslot *cs = at(base, h->off_cslots);
            uint64_t high = __atomic_load_n(&((const struct seg_header *)base)->cslots_high,
                                            __ATOMIC_ACQUIRE);
            if (high > h->ncslots)
                high = h->ncslots;
            for (uint64_t i = 0; i < high; i++) {
                if (__atomic_load_n(&cst[i].state, __ATOMIC_ACQUIRE) != SEG_SLOT_LIVE)
                    continue;
                rc |= collect_add(at(&cs[i], off - offsetof(struct seg_slot, cls)), out, words,
                                  nchunks);
            }
        }
        rc |= collect_add(at(overflow, off), out, words, nchunks);
        rc |= collect_add(at(retired, off), out, words, nchunks);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&retired->seq, __ATOMIC_RELAXED) == r0)
            return rc ? EAGAIN : 0;
    }
    return EAGAIN;
}

/* Adds a slot's class c, its counters at cls and its tracked figures at
 * trk (NULL: a counter slot, which has none), read together: one double
 * collect over both, so that they are as of one moment. */
static int collect_class(const struct seg_counters *cls, const struct seg_tracked *trk,
                         struct seg_counters *sum, struct seg_tracked *t)
{
    enum { WC = sizeof *cls / 8, WT = sizeof *trk / 8 };
    uint64_t a[WC + WT], b[WC + WT];
    size_t n = trk ? WC + WT : WC;
    int same = 0;
    for (int i = 0; i < RETRIES && !same; i++) {
        for (size_t k = 0; k < WC; k++)
            b[k] = __atomic_load_n((const uint64_t *)cls + k, __ATOMIC_ACQUIRE);
        for (size_t k = WC; k < n; k++)
            b[k] = __atomic_load_n((const uint64_t *)trk + (k - WC), __ATOMIC_ACQUIRE);
        same = i > 0 && memcmp(a, b, n * 8) == 0;
        memcpy(a, b, n * 8);
    }
    for (size_t k = 0; k < WC; k++)
        ((uint64_t *)sum)[k] += a[k];
    for (size_t k = WC; k < n; k++)
        ((uint64_t *)t)[k - WC] += a[k];
    return same ? 0 : EAGAIN;
}

int seg_sum_classes(const void *base, const struct seg_header *h,
                    struct seg_counters sum[SIZECLASS_COUNT], struct seg_tracked trk[SIZECLASS_COUNT])
{
    const struct seg_slot *slots = at(base, h->off_slots);
    const struct seg_slot *overflow = at(base, h->off_overflow);
    const struct seg_slot *retired = at(base, h->off_retired);
    int rc = 0;

    for (int attempt = 0; attempt < RETRIES; attempt++) {
        uint64_t r0 = __atomic_load_n(&retired->seq, __ATOMIC_ACQUIRE);
        if (r0 & 1)
            continue;
        memset(sum, 0, sizeof(struct seg_counters) * SIZECLASS_COUNT);
        memset(trk, 0, sizeof(struct seg_tracked) * SIZECLASS_COUNT);
        rc = 0;
        for (uint32_t i = 0; i < h->nslots; i++) {
            if (__atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE) != SEG_SLOT_LIVE)
                continue;
            for (unsigned c = 0; c < SIZECLASS_COUNT; c++)
                rc |= collect_class(&slots[i].cls[c], &slots[i].trk[c], &sum[c], &trk[c]);
        }
        /* The overflow slot holds the tracked figures of the threads in
         * counter slots: read after their counters, every allocation it
         * tracks was counted by then (a count comes first); a free counted
         * in between can still leave the tracked bytes above the counted
         * ones, which seg_live_req holds to them. */
        if (h->ncslots) {
            const struct seg_cstate *cst = at(base, h->off_cstate);
            const struct seg_cslot *cs = at(base, h->off_cslots);
            uint64_t high = __atomic_load_n(&((const struct seg_header *)base)->cslots_high,
                                            __ATOMIC_ACQUIRE);
            if (high > h->ncslots)
                high = h->ncslots;
            for (uint64_t i = 0; i < high; i++) {
                if (__atomic_load_n(&cst[i].state, __ATOMIC_ACQUIRE) != SEG_SLOT_LIVE)
                    continue;
                for (unsigned c = 0; c < SIZECLASS_COUNT; c++)
                    rc |= collect_class(&cs[i].cls[c], NULL, &sum[c], &trk[c]);
            }
        }
        for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
            rc |= collect_class(&overflow->cls[c], &overflow->trk[c], &sum[c], &trk[c]);
            rc |= collect_class(&retired->cls[c], &retired->trk[c], &sum[c], &trk[c]);
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&retired->seq, __ATOMIC_RELAXED) == r0)
            return rc ? EAGAIN : 0;
    }
    return EAGAIN;
}

int seg_sum(const void *base, const struct seg_header *h, struct seg_counters out[SIZECLASS_COUNT])
{
    memset(out, 0, sizeof(struct seg_counters) * SIZECLASS_COUNT);
    return sum_slots(base, h, offsetof(struct seg_slot, cls), sizeof(struct seg_counters) / 8,
                     SIZECLASS_COUNT, (uint64_t *)out);
}

void seg_read_tracked(const void *base, const struct seg_header *h, unsigned c,
                      struct seg_tracked *out)
{
    memset(out, 0, sizeof *out);
    sum_slots(base, h, offsetof(struct seg_slot, trk) + c * sizeof(struct seg_tracked),
              sizeof(struct seg_tracked) / 8, 1, (uint64_t *)out);
}

int seg_req_exact(const void *base, const struct seg_header *h)
{
    const struct seg_header *file = base;
    return (h->flags & SEG_F_EXACT_REQ) && !(ld32(&file->flags) & SEG_F_INHERITED) &&
           ld(&file->tracked_dropped) == 0;
}

uint64_t seg_live_req(const struct seg_counters *sum, const struct seg_tracked *t, int exact)
{
    uint64_t live = sum->allocs - sum->frees;
    uint64_t live_usable = sum->usable_alloc - sum->usable_free;
    uint64_t tl = t->allocs - t->frees, treq = t->req_alloc - t->req_free;
    unsigned __int128 v;

    /* A block never holds more than its usable size: a sum whose parts were
     * read at other moments (the tracked figures of threads in counter
     * slots, kept in the overflow slot) is held to that too. */
    if (exact)
        return treq > live_usable ? live_usable : treq;
    if (live == 0)
        return 0;
    /* live * (mean request of the tracked live blocks), without overflow:
     * both fit in 64 bits, the product may not. With no tracked block
     * live, the mean request of all the class's allocations (exact
     * counters) stands in for it. */
    if (tl != 0)
        v = (unsigned __int128)live * treq / tl;
    else if (sum->allocs != 0)
        v = (unsigned __int128)live * sum->req_bytes / sum->allocs;
    else
        return live_usable;
    /* A block never holds more than its usable size. */
    return v > live_usable ? live_usable : (uint64_t)v;
}

double seg_req_stderr(double live, double n, double s1, double s2, uint64_t live_usable,
                      uint64_t est)
{
    if (live <= 0)
        return 0;
    if (n < 2)
        return (double)(live_usable > est ? live_usable - est : 0);
    double var = (s2 - s1 * s1 / n) / (n - 1);
    double fpc = n < live ? 1 - n / live : 0;
    return live * sqrt((var > 0 ? var : 0) / n * fpc);
}


