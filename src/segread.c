/* segread: consistent reads of a live segment (see seg.h's protocol). */
#include "config.h"

#include "segread.h"

#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <sched.h>
#include <string.h>
#include <time.h>

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
 * free: so, for a few classes at a time, what frees add is read over all
 * the slots before what allocations add, and then each free in a class's
 * sum is of a block whose allocation is in it too. Its live blocks
 * (allocations less frees) are then real blocks of that class, allocated
 * by the end of its read and not freed by its start, and their usable
 * bytes fit the class's sizes, however threads free each other's blocks
 * meanwhile (but for a block per thread whose bytes are counted and not
 * yet the block itself). Each side of a slot's class is one double collect
 * over its counters and its tracked figures together, so that those agree
 * too (with sample:1, a live block's request is counted where its usable
 * size is, but for a thread between its count and its table). */

/* The words of each side: what a free adds (and the tracked lifetimes,
 * the tracked figures' last words, from TRK_FREE_RUN on), and what an
 * allocation adds. */
enum side { FREES, ALLOCS };
#define CW (sizeof(struct seg_counters) / 8)
#define TW (sizeof(struct seg_tracked) / 8)
#define WORD(type, field) (offsetof(struct type, field) / 8)
static const unsigned char cls_w[2][4] = {
    [FREES] = { WORD(seg_counters, frees), WORD(seg_counters, usable_free) },
    [ALLOCS] = { WORD(seg_counters, allocs), WORD(seg_counters, reallocs),
                 WORD(seg_counters, req_bytes), WORD(seg_counters, usable_alloc) },
};
static const unsigned cls_n[2] = { 2, 4 };
static const unsigned char trk_w[2][3] = {
    [FREES] = { WORD(seg_tracked, frees), WORD(seg_tracked, req_free) },
    [ALLOCS] = { WORD(seg_tracked, allocs), WORD(seg_tracked, req_alloc),
                 WORD(seg_tracked, usable_alloc) },
};
static const unsigned trk_n[2] = { 2, 3 };
#define TRK_FREE_RUN WORD(seg_tracked, usable_free)   /* usable_free, lifetime[]: to the end */
_Static_assert(WORD(seg_tracked, lifetime) == TRK_FREE_RUN + 1 &&
                   offsetof(struct seg_tracked, lifetime) +
                           sizeof(((struct seg_tracked *)0)->lifetime) == sizeof(struct seg_tracked),
               "usable_free then the lifetimes close the tracked figures");
#define SIDE_MAX (4 + 3 + TW - TRK_FREE_RUN)

/* Reads one side of a slot's class: its counters at c and its tracked
 * figures at k (NULL: none) into v, in the order of the lists. Returns how
 * many words. */
static unsigned read_side(enum side sd, const uint64_t *c, const uint64_t *k, uint64_t *v)
{
    unsigned n = 0;
    for (unsigned w = 0; w < cls_n[sd]; w++)
        v[n++] = __atomic_load_n(&c[cls_w[sd][w]], __ATOMIC_ACQUIRE);
    if (!k)
        return n;
    for (unsigned w = 0; w < trk_n[sd]; w++)
        v[n++] = __atomic_load_n(&k[trk_w[sd][w]], __ATOMIC_ACQUIRE);
    if (sd == FREES)
        for (unsigned w = TRK_FREE_RUN; w < TW; w++)
            v[n++] = __atomic_load_n(&k[w], __ATOMIC_ACQUIRE);
    return n;
}

/* Adds one side of a slot's class to sum and t: its counters at cls and
 * its tracked figures at trk (NULL: a counter slot, which has none; or t
 * NULL: not wanted), read together in one double collect. Returns 0, or
 * EAGAIN when they kept changing past the retry limit (the last read is
 * added). */
static int collect_side(enum side sd, const struct seg_counters *cls, const struct seg_tracked *trk,
                        struct seg_counters *sum, struct seg_tracked *t)
{
    const uint64_t *c = (const uint64_t *)cls, *k = trk && t ? (const uint64_t *)trk : NULL;
    uint64_t a[SIDE_MAX], b[SIDE_MAX];
    unsigned n = read_side(sd, c, k, a);
    int same = 0;
    for (int i = 0; i < RETRIES && !same; i++) {
        read_side(sd, c, k, b);
        same = memcmp(a, b, n * 8) == 0;
        memcpy(a, b, n * 8);
    }
    uint64_t *s = (uint64_t *)sum, *tt = (uint64_t *)t;
    unsigned i = 0;
    for (unsigned w = 0; w < cls_n[sd]; w++)
        s[cls_w[sd][w]] += a[i++];
    if (k) {
        for (unsigned w = 0; w < trk_n[sd]; w++)
            tt[trk_w[sd][w]] += a[i++];
        if (sd == FREES)
            for (unsigned w = TRK_FREE_RUN; w < TW; w++)
                tt[w] += a[i++];
    }
    return same ? 0 : EAGAIN;
}

/* Classes summed together, frees then allocations: the fewer, the shorter
 * the time between a class's two sides (what is allocated meanwhile is
 * counted as allocated, and not yet as freed), the more, the fewer the
 * walks over the slots. Measured on bcsim (16 threads, a 128 MiB cache,
 * 5.6 GiB/s allocated), 20 reads: every class at once read up to 2.4 times
 * the live bytes, 32 at a time up to 16% over, 8 at a time up to 1.5%. A
 * sum of 128 threads' slots takes 1.3 ms, as a single walk did; of 4096
 * (their counter slots one page each) 27 ms, where one walk took 11. */
#define GROUP 8

/* One side of classes [c0, c1) over every slot: the full slots, the
 * counter slots, the overflow slot (which holds the tracked figures of the
 * threads in counter slots) and the retired total. */
static int sum_side(const void *base, const struct seg_header *h, enum side sd, unsigned c0,
                    unsigned c1, struct seg_counters *sum, struct seg_tracked *trk)
{
    const struct seg_slot *slots = at(base, h->off_slots);
    const struct seg_slot *overflow = at(base, h->off_overflow);
    const struct seg_slot *retired = at(base, h->off_retired);
    int rc = 0;
    for (uint32_t i = 0; i < h->nslots; i++) {
        if (__atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE) != SEG_SLOT_LIVE)
            continue;  /* never used, or folded into retired and cleared */
        for (unsigned c = c0; c < c1; c++)
            rc |= collect_side(sd, &slots[i].cls[c], &slots[i].trk[c], &sum[c], trk ? &trk[c] : NULL);
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
                for (unsigned c = c0; c < c1; c++)
                    rc |= collect_side(sd, &cs[i].cls[c], NULL, &sum[c], NULL);
    }
    for (unsigned c = c0; c < c1; c++) {
        rc |= collect_side(sd, &overflow->cls[c], &overflow->trk[c], &sum[c], trk ? &trk[c] : NULL);
        rc |= collect_side(sd, &retired->cls[c], &retired->trk[c], &sum[c], trk ? &trk[c] : NULL);
    }
    return rc;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A group's two sides again where they took this many times the quickest
 * group's (and 100 us more): the reader was held up between them (on a
 * busy host, a preemption of milliseconds), and what the program allocated
 * meanwhile is counted as allocated and not as freed (a read of bcsim
 * preempted so counted 35% too much). The quickest of GROUP_TRIES is kept. */
#define GROUP_SLOW 4
#define GROUP_TRIES 4

/* Classes [c0, c1), both sides over every slot, frees first: into sum and
 * trk (NULL: not wanted), taking the quickest of up to GROUP_TRIES reads
 * where one was slow against *quick (the quickest so far, updated). */
static int sum_group(const void *base, const struct seg_header *h, unsigned c0, unsigned c1,
                     struct seg_counters *sum, struct seg_tracked *trk, uint64_t *quick)
{
    struct seg_counters bsum[GROUP];
    struct seg_tracked btrk[GROUP];
    uint64_t best = UINT64_MAX;
    int rc = 0, brc = 0;
    for (int t = 0; t < GROUP_TRIES; t++) {
        memset(&sum[c0], 0, (c1 - c0) * sizeof *sum);
        if (trk)
            memset(&trk[c0], 0, (c1 - c0) * sizeof *trk);
        uint64_t t0 = mono_ns();
        rc = sum_side(base, h, FREES, c0, c1, sum, trk);
        rc |= sum_side(base, h, ALLOCS, c0, c1, sum, trk);
        uint64_t took = mono_ns() - t0;
        if (took < best) {
            best = took;
            brc = rc;
            memcpy(bsum, &sum[c0], (c1 - c0) * sizeof *sum);
            if (trk)
                memcpy(btrk, &trk[c0], (c1 - c0) * sizeof *trk);
        }
        if (took < *quick)
            *quick = took;
        if (best <= *quick * GROUP_SLOW + 100000)
            break;
    }
    memcpy(&sum[c0], bsum, (c1 - c0) * sizeof *sum);
    if (trk)
        memcpy(&trk[c0], btrk, (c1 - c0) * sizeof *trk);
    return brc;
}

/* GROUP classes at a time, both sides over every slot, frees first. The
 * retired slot's seq also covers folds: a thread that exits adds its slot
 * to retired and clears the slot inside one odd period (a microsecond or
 * so: an odd seq is waited out, yielding now and then), so a sum taken
 * across an unchanged, even retired seq counts it once. The output is
 * zeroed first: on EAGAIN it holds the last attempt, or zeros. trk may be
 * NULL. */
static int sum_all(const void *base, const struct seg_header *h,
                   struct seg_counters sum[SIZECLASS_COUNT], struct seg_tracked *trk)
{
    const struct seg_slot *retired = at(base, h->off_retired);
    int rc = EAGAIN;
    uint64_t quick = UINT64_MAX;
    memset(sum, 0, sizeof(struct seg_counters) * SIZECLASS_COUNT);
    if (trk)
        memset(trk, 0, sizeof(struct seg_tracked) * SIZECLASS_COUNT);
    for (int attempt = 0; attempt < RETRIES; attempt++) {
        uint64_t r0 = __atomic_load_n(&retired->seq, __ATOMIC_ACQUIRE);
        if (r0 & 1) {
            if (attempt % 16 == 15)
                sched_yield();
            continue;
        }
        rc = 0;
        for (unsigned c = 0; c < SIZECLASS_COUNT; c += GROUP) {
            unsigned c1 = c + GROUP < SIZECLASS_COUNT ? c + GROUP : SIZECLASS_COUNT;
            rc |= sum_group(base, h, c, c1, sum, trk, &quick);
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&retired->seq, __ATOMIC_RELAXED) == r0)
            return rc ? EAGAIN : 0;
        rc = EAGAIN;
    }
    return rc;
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
    uint64_t tus = t->usable_alloc - t->usable_free;
    unsigned __int128 v;

    /* A block never holds more than its usable size: a sum whose parts were
     * read at other moments (the tracked figures of threads in counter
     * slots, kept in the overflow slot) is held to that too. */
    if (exact)
        return treq > live_usable ? live_usable : treq;
    if (live == 0)
        return 0;
    /* live_usable * (requested / usable bytes of the tracked live blocks,
     * both weighted), without overflow: both fit in 64 bits, the product
     * may not. With no tracked block live, the ratio of all the class's
     * allocations (exact counters) stands in for it. */
    if (tl != 0 && tus != 0 && tus <= (uint64_t)1 << 62)
        v = (unsigned __int128)live_usable * treq / tus;
    else if (sum->usable_alloc != 0)
        v = (unsigned __int128)live_usable * sum->req_bytes / sum->usable_alloc;
    else
        return live_usable;
    /* A block never holds more than its usable size. */
    return v > live_usable ? live_usable : (uint64_t)v;
}

double seg_req_stderr(uint64_t live_usable, uint64_t est, double n, double wu, double a, double b,
                      double c)
{
    if (live_usable == 0)
        return 0;
    if (n < 2 || wu <= 0)
        return (double)(live_usable > est ? live_usable - est : 0);
    /* the ratio R = est / live_usable; z = r - R u; Var(sum w z) is
     * estimated by sum w (w - 1) z^2 = a - 2 R b + R^2 c */
    double r = (double)est / (double)live_usable;
    double var = a - 2 * r * b + r * r * c;
    return (double)live_usable / wu * sqrt(var > 0 ? var : 0);
}
