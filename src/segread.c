/* segread: consistent reads of a live segment (see seg.h's protocol). */
#include "config.h"

#include "segread.h"

#include <errno.h>
#include <stddef.h>
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

/* The sums. Every counter only grows and is stored whole, so reading a
 * chunk of words twice and finding it the same gives them as of one moment
 * (a double collect). And every block's allocation is counted before its
 * free: so, class by class, what frees add is read over all the slots
 * before what allocations add, and then each free in the class's sum is of
 * a block whose allocation is in it too. Its live blocks (allocations less
 * frees) are then real blocks of that class, allocated by the end of its
 * read and not freed by its start (microseconds apart: a whole sum taken
 * frees first over every class measured a churning program's live bytes at
 * 2.4 times the truth), and their usable bytes fit the class's sizes,
 * however threads free each other's blocks meanwhile. Each side of a
 * slot's class is one double collect over its counters and its tracked
 * figures together, so that those agree too (with sample:1, a live block's
 * request is counted where its usable size is, but for a thread between
 * its count and its table). */

/* Which side a word of a class's counters, or of its tracked figures, is
 * on: the frees side holds what a free adds (and the tracked lifetimes). */
enum side { FREES, ALLOCS };
#define CW (sizeof(struct seg_counters) / 8)
#define TW (sizeof(struct seg_tracked) / 8)
#define WORD(type, field) (offsetof(struct type, field) / 8)

static enum side cls_side(unsigned w)
{
    return w == WORD(seg_counters, frees) || w == WORD(seg_counters, usable_free) ? FREES : ALLOCS;
}

_Static_assert(offsetof(struct seg_tracked, lifetime) + sizeof(((struct seg_tracked *)0)->lifetime) ==
                   sizeof(struct seg_tracked), "the lifetimes are the tracked figures' last words");

static enum side trk_side(unsigned w)
{
    return w == WORD(seg_tracked, frees) || w == WORD(seg_tracked, req_free) ||
                   w == WORD(seg_tracked, usable_free) || w >= WORD(seg_tracked, lifetime)
               ? FREES : ALLOCS;
}

/* Adds one side of a slot's class c to sum and t: its counters at cls and
 * its tracked figures at trk (NULL: a counter slot, which has none; or t
 * NULL: not wanted), read together in one double collect. Returns 0, or
 * EAGAIN when they kept changing past the retry limit (the last read is
 * added). */
static int collect_side(enum side sd, const struct seg_counters *cls, const struct seg_tracked *trk,
                        struct seg_counters *sum, struct seg_tracked *t)
{
    const uint64_t *c = (const uint64_t *)cls, *k = (const uint64_t *)trk;
    uint64_t a[CW + TW], b[CW + TW];
    unsigned nk = trk && t ? TW : 0;
    int same = 0;
    for (int i = 0; i < RETRIES && !same; i++) {
        unsigned n = 0;
        for (unsigned w = 0; w < CW; w++)
            if (cls_side(w) == sd)
                b[n++] = __atomic_load_n(&c[w], __ATOMIC_ACQUIRE);
        for (unsigned w = 0; w < nk; w++)
            if (trk_side(w) == sd)
                b[n++] = __atomic_load_n(&k[w], __ATOMIC_ACQUIRE);
        same = i > 0 && memcmp(a, b, n * 8) == 0;
        memcpy(a, b, n * 8);
    }
    unsigned n = 0;
    for (unsigned w = 0; w < CW; w++)
        if (cls_side(w) == sd)
            ((uint64_t *)sum)[w] += a[n++];
    for (unsigned w = 0; w < nk; w++)
        if (trk_side(w) == sd)
            ((uint64_t *)t)[w] += a[n++];
    return same ? 0 : EAGAIN;
}

/* One side of class c over every slot: the full slots, the counter
 * slots, the overflow slot (which holds the tracked figures of the threads
 * in counter slots) and the retired total. */
static int sum_side(const void *base, const struct seg_header *h, enum side sd, unsigned c,
                    struct seg_counters *sum, struct seg_tracked *trk)
{
    const struct seg_slot *slots = at(base, h->off_slots);
    const struct seg_slot *overflow = at(base, h->off_overflow);
    const struct seg_slot *retired = at(base, h->off_retired);
    int rc = 0;
    for (uint32_t i = 0; i < h->nslots; i++) {
        if (__atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE) != SEG_SLOT_LIVE)
            continue;  /* never used, or folded into retired and cleared */
        rc |= collect_side(sd, &slots[i].cls[c], &slots[i].trk[c], sum, trk);
    }
    if (h->ncslots) {
        const struct seg_cstate *cst = at(base, h->off_cstate);
        const struct seg_cslot *cs = at(base, h->off_cslots);
        uint64_t high = __atomic_load_n(&((const struct seg_header *)base)->cslots_high,
                                        __ATOMIC_ACQUIRE);
        if (high > h->ncslots)
            high = h->ncslots;
        for (uint64_t i = 0; i < high; i++)
            if (__atomic_load_n(&cst[i].state, __ATOMIC_ACQUIRE) == SEG_SLOT_LIVE)
                rc |= collect_side(sd, &cs[i].cls[c], NULL, sum, NULL);
    }
    rc |= collect_side(sd, &overflow->cls[c], &overflow->trk[c], sum, trk);
    rc |= collect_side(sd, &retired->cls[c], &retired->trk[c], sum, trk);
    return rc;
}

/* Class by class, both sides over every slot, frees first: a class's sum
 * spans the microseconds of its own two passes, so what moves meanwhile
 * (and is counted as allocated, not yet as freed) is that little. The
 * retired slot's seq also covers folds: a thread that exits adds its slot
 * to retired and clears the slot inside one odd period, so a sum taken
 * across an unchanged, even retired seq counts it once. trk may be NULL. */
static int sum_all(const void *base, const struct seg_header *h,
                   struct seg_counters sum[SIZECLASS_COUNT], struct seg_tracked *trk)
{
    const struct seg_slot *retired = at(base, h->off_retired);
    int rc = 0;
    for (int attempt = 0; attempt < RETRIES; attempt++) {
        uint64_t r0 = __atomic_load_n(&retired->seq, __ATOMIC_ACQUIRE);
        if (r0 & 1)
            continue;
        memset(sum, 0, sizeof(struct seg_counters) * SIZECLASS_COUNT);
        if (trk)
            memset(trk, 0, sizeof(struct seg_tracked) * SIZECLASS_COUNT);
        rc = 0;
        for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
            rc |= sum_side(base, h, FREES, c, &sum[c], trk ? &trk[c] : NULL);
            rc |= sum_side(base, h, ALLOCS, c, &sum[c], trk ? &trk[c] : NULL);
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&retired->seq, __ATOMIC_RELAXED) == r0)
            return rc ? EAGAIN : 0;
    }
    return EAGAIN;
}

int seg_sum_classes(const void *base, const struct seg_header *h,
                    struct seg_counters sum[SIZECLASS_COUNT], struct seg_tracked trk[SIZECLASS_COUNT])
{
    return sum_all(base, h, sum, trk);
}

int seg_sum(const void *base, const struct seg_header *h, struct seg_counters out[SIZECLASS_COUNT])
{
    return sum_all(base, h, out, NULL);
}

void seg_read_tracked(const void *base, const struct seg_header *h, unsigned c,
                      struct seg_tracked *out)
{
    static struct seg_counters sum[SIZECLASS_COUNT];
    static struct seg_tracked trk[SIZECLASS_COUNT];
    sum_all(base, h, sum, trk);
    *out = trk[c < SIZECLASS_COUNT ? c : 0];
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


