/* track: the tracked blocks, a sample by bytes (seg_track_p): the
 * countdown that picks them, their weights, the table in the segment that
 * holds them with its counting filter, and the event ring. */
#include "config.h"

#include "rec.h"

#include <math.h>

#include "debug.h"
#include "seg.h"
#include "sizeclass.h"
#include "stack.h"

/* ---- The tracked table and its filter ---- */

/* Live entries of the tracked table per group of 2^TRACK_GROUP_SHIFT
 * entries, so that the sampler reads only the groups that hold some (a few,
 * against the whole table's megabytes once every entry has been used, and
 * no page of the table that no insert has touched). The writer's table has
 * SEG_TRACK_DEFAULT entries (seg_default_geometry). Private memory, copied by fork
 * with the table. Synchronization: relaxed atomic adds by the thread that
 * claims or clears an entry, read by the sampler; a count read while an
 * entry is being claimed may miss it for one pass. */
#define TRACK_GROUP_SHIFT 6
static uint32_t group_live[SEG_TRACK_DEFAULT >> TRACK_GROUP_SHIFT];
_Static_assert(SEG_TRACK_DEFAULT % (1u << TRACK_GROUP_SHIFT) == 0, "whole groups");
/* The stack id of a block tracked without stacks (with_stacks, stacks_on). */
static const uint32_t no_stack = 0;

/* The tracked figures the calling thread adds to, and in *shared whether
 * they are the overflow slot's (atomic adds). */
static inline struct seg_tracked *my_trk(int *shared)
{
    struct seg_tracked *t = my_cls() == overflow->cls ? overflow->trk : rt.trk;
    *shared = t == overflow->trk;
    return t;
}

/* One tracked figure of the calling thread's slot: a plain store in its
 * own slot, an atomic add in the shared overflow slot (`shared`). */
static inline void trk_add(int shared, uint64_t *field, uint64_t v)
{
    if (shared)
        __atomic_fetch_add(field, v, __ATOMIC_RELAXED);
    else
        __atomic_store_n(field, *field + v, __ATOMIC_RELEASE);
}

void filter_inc(const void *p)
{
    if (hot.filter == filter_all)
        return;
    uint8_t *f = &filter[filter_idx(p)], v = __atomic_load_n(f, __ATOMIC_RELAXED);
    while (v != 255 && !__atomic_compare_exchange_n(f, &v, (uint8_t)(v + 1), 1,
                                                    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
}

static void filter_dec(const void *p)
{
    if (hot.filter == filter_all)
        return;
    uint8_t *f = &filter[filter_idx(p)], v = __atomic_load_n(f, __ATOMIC_RELAXED);
    /* 255 is sticky: the count is no longer known. */
    while (v != 255 && v != 0 && !__atomic_compare_exchange_n(f, &v, (uint8_t)(v - 1), 1,
                                                              __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
}

/* Where the table's entries go. Every insert hashes into its first
 * TRACK_NEAR entries (160 KiB), the near ones, until one finds no free
 * entry within SEG_TRACK_PROBE there; from then on, for good (track_far),
 * inserts hash over the rest of the table, the far entries, never into the
 * near ones, which that failure showed to be crowded. A program with up to
 * a few thousand tracked blocks at a time then touches, and keeps resident
 * in its RSS, 160 KiB of the table, not all of it (5 MiB by default: every
 * page of it within seconds of db_bench, with a few hundred blocks tracked
 * at a time). A block is found where it was put, so table_find looks in
 * both once track_far is set (and never in the far ones before: reading a
 * page of the table that no insert touched would make it resident). */
#define TRACK_NEAR 4096u
/* 0, then 1 for good. Synchronization: relaxed; a thread that frees a block
 * put among the far entries sees it set, since the thread that put it there
 * saw it set before handing the block out. Copied by fork with the table. */
static uint32_t track_far;

/* The near entries [0, near_n()), the far ones [near_n(), track_mask]; none
 * far where the table has no more than TRACK_NEAR entries. A power of two,
 * as the table's size is (the writer's is SEG_TRACK_DEFAULT). */
static inline uint32_t near_n(void)
{
    return track_mask < TRACK_NEAR ? track_mask + 1 : TRACK_NEAR;
}

/* Claims an entry for p among the n entries from base, starting at p's
 * hash (pow2: n is a power of two, as the near entries' count is), and
 * fills it, published by its alloc_ns (*t). The stack is taken
 * (stack == NULL) only once the entry is ours, so that a full table costs
 * no unwinding; *t is then read again after it. Returns 0 when there was no
 * room within SEG_TRACK_PROBE entries. */
static inline __attribute__((always_inline)) int
claim_entry(const void *p, uint64_t h, uint32_t base, uint32_t n, int pow2, size_t req,
            size_t usable, uint32_t wb, uint64_t *t, const uint32_t *stack, uint32_t tid)
{
    uint32_t j = pow2 ? (uint32_t)(h >> 32) & (n - 1) : (uint32_t)(h >> 32) % n;
    /* 0 and 1 mark an entry never used and one freed */
    SHIM_ASSERT((uintptr_t)p > 1);
    for (uint32_t k = 0; k < SEG_TRACK_PROBE; k++, j = j + 1 == n ? 0 : j + 1) {
        struct seg_track *e = &table[base + j];
        uint64_t a = __atomic_load_n(&e->addr, __ATOMIC_RELAXED);
        if (a > 1)
            continue;
        if (__atomic_compare_exchange_n(&e->addr, &a, (uint64_t)(uintptr_t)p, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            __atomic_fetch_add(&group_live[(base + j) >> TRACK_GROUP_SHIFT], 1, __ATOMIC_RELAXED);
            __atomic_store_n(&e->req, req, __ATOMIC_RELAXED);
            __atomic_store_n(&e->usable, usable, __ATOMIC_RELAXED);
            __atomic_store_n(&e->weight, wb, __ATOMIC_RELAXED);
            if (stack == NULL) {
                /* the block's life starts after the unwinding it waited for */
                __atomic_store_n(&e->stack, stack_capture(req, seg_track_weight(wb)), __ATOMIC_RELAXED);
                *t = mono_now();
            } else {
                __atomic_store_n(&e->stack, *stack, __ATOMIC_RELAXED);
            }
            __atomic_store_n(&e->tid, tid, __ATOMIC_RELAXED);
            __atomic_store_n(&e->alloc_ns, *t, __ATOMIC_RELEASE);
            return 1;
        }
    }
    return 0;
}

/* claim_entry among the near entries, else (from then on alone) the far. */
static int table_insert(const void *p, uint64_t h, size_t req, size_t usable, uint32_t wb,
                        uint64_t *t, const uint32_t *stack, uint32_t tid)
{
    uint32_t near = near_n(), all = track_mask + 1;
    if (!__atomic_load_n(&track_far, __ATOMIC_RELAXED)) {
        if (claim_entry(p, h, 0, near, 1, req, usable, wb, t, stack, tid))
            return 1;
        if (near == all)
            return 0;
        __atomic_store_n(&track_far, 1, __ATOMIC_RELAXED);
    }
    return claim_entry(p, h, near, all - near, 0, req, usable, wb, t, stack, tid);
}

/* The entry that holds p among the n entries from base, as claim_entry
 * would have put it. */
static inline __attribute__((always_inline)) struct seg_track *
find_entry(const void *p, uint64_t h, uint32_t base, uint32_t n, int pow2)
{
    uint32_t j = pow2 ? (uint32_t)(h >> 32) & (n - 1) : (uint32_t)(h >> 32) % n;
    for (uint32_t k = 0; k < SEG_TRACK_PROBE; k++, j = j + 1 == n ? 0 : j + 1) {
        struct seg_track *e = &table[base + j];
        uint64_t a = __atomic_load_n(&e->addr, __ATOMIC_ACQUIRE);
        if (a == (uint64_t)(uintptr_t)p)
            return e;
        if (a == 0)
            return NULL;
    }
    return NULL;
}

uint32_t table_written_end(void)
{
    return __atomic_load_n(&track_far, __ATOMIC_RELAXED) ? track_mask + 1 : near_n();
}

/* Among the far entries first once inserts go there: most live blocks are
 * there then, and a lookup among the crowded near ones runs on to
 * SEG_TRACK_PROBE entries before it gives up. */
static struct seg_track *table_find(const void *p, uint64_t h)
{
    uint32_t near = near_n(), all = track_mask + 1;
    struct seg_track *e = NULL;
    if (near != all && __atomic_load_n(&track_far, __ATOMIC_RELAXED))
        e = find_entry(p, h, near, all - near, 0);
    if (e == NULL)
        e = find_entry(p, h, 0, near, 1);
    return e;
}

static inline __attribute__((always_inline)) void event_push(uint32_t kind, const void *p, uint64_t size, uint64_t life, uint64_t mono)
{
    /* Numbers are claimed 16 at a time, so that the shared head is written
     * once per 16 events of a thread, not once per event. */
    /* A claim left unused while the ring went half round (a thread that
     * rarely tracks) is dropped: its cells now belong to newer events.
     * ">=": a signal handler's tracked call between this test and the
     * increment below can use the claim's last number, and this one then
     * takes one past it; the next event must claim anew, not run on. */
    if (rt.ev_next >= rt.ev_end ||
        __atomic_load_n(&events->head, __ATOMIC_RELAXED) - rt.ev_next >= geo.events_cap / 2) {
        rt.ev_next = __atomic_fetch_add(&events->head, 16, __ATOMIC_RELAXED);
        rt.ev_end = rt.ev_next + 16;
    }
    uint64_t n = rt.ev_next++;
    struct seg_event *e = &evs[ev_mask ? n & ev_mask : n % geo.events_cap];
    __atomic_store_n(&e->seq, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&e->t_ns, mono + realtime_offset, __ATOMIC_RELAXED);
    __atomic_store_n(&e->addr, (uint64_t)(uintptr_t)p, __ATOMIC_RELAXED);
    __atomic_store_n(&e->size, size, __ATOMIC_RELAXED);
    __atomic_store_n(&e->lifetime_ns, life, __ATOMIC_RELAXED);
    __atomic_store_n(&e->tid, my_tid(), __ATOMIC_RELAXED);
    __atomic_store_n(&e->kind, kind, __ATOMIC_RELAXED);
    __atomic_store_n(&e->seq, n + 1, __ATOMIC_RELEASE);
}

/* ---- Sampling ---- */

static uint64_t rng_next(void)
{
    uint64_t x = rt.rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rt.rng = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* The first state of this thread's generator. With the `seed` key, the
 * n-th thread to draw gets a mix of seed + n: a single-threaded run tracks
 * the same blocks every time (and each thread of a program whose threads
 * start in a fixed order). Without it, the clock, the thread id and the
 * address of its state. Never 0 (xorshift's fixed point). */
static uint64_t seed_thread(void)
{
    static uint64_t threads;
    uint64_t x;

    if (sample_seed) {
        x = sample_seed + __atomic_fetch_add(&threads, 1, __ATOMIC_RELAXED) * 0x9E3779B97F4A7C15ull;
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;   /* splitmix64's finalizer */
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
        x ^= x >> 31;
    } else {
        x = clock_ns(CLOCK_MONOTONIC) ^ ((uint64_t)my_tid() << 32) ^ (uintptr_t)&rt;
    }
    return x ? x : 1;
}

long cost_b_of(long n, uint64_t sb)
{
    if (n <= 1)
        return 1;
    /* at most 2^52 ln 2 (sample:2, sample_bytes:0): a long holds it */
    double b = -seg_gap(sb) * log1p(-1.0 / (double)n) + 0.5;
    return b < 1 ? 1 : b > 0x1p60 ? (long)0x1p60 : (long)b;
}

/* What an allocation costs of the countdown with tracking off, and the
 * countdown then: each thread looks for new settings every 256 small
 * allocations or 1 MiB of its allocations, whichever comes first. */
#define OFF_COST_B 4096L
#define OFF_CHUNK  (1L << 20)
/* A draw beyond max(CHUNK_MIN, 4 gaps) ends at a chunk there instead (and
 * is drawn again: the process has no memory), so that a thread takes new
 * settings within that much of its allocations; at sample_bytes:512k, 2
 * MiB, which 1.8% of draws reach. */
#define CHUNK_MIN  (1L << 21)
#define CHUNK_GAPS 4.0

/* Copies the settings in force into the calling thread's rt (adopt them
 * for its draws from now on), unless the sampler is writing them (then
 * returns 0: the thread keeps its own and looks again at its next draw). */
static int adopt(void)
{
    uint32_t g = __atomic_load_n(&settings_gen, __ATOMIC_ACQUIRE);
    if (g & 1)
        return 0;
    long n = __atomic_load_n(&sample_n, __ATOMIC_RELAXED);
    uint64_t sb = __atomic_load_n(&sample_bytes, __ATOMIC_RELAXED);
    long b = __atomic_load_n(&sample_cost_b, __ATOMIC_RELAXED);
    int on = __atomic_load_n(&track_on, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&settings_gen, __ATOMIC_RELAXED) != g)
        return 0;
    rt.gen = g;
    rt.n = n;
    rt.gap = seg_gap(sb);
    rt.on = (uint8_t)on;
    rt.cost_b = on ? b : OFF_COST_B;
    return 1;
}

/* The next countdown under the thread's settings: an exponential draw of
 * mean rt.gap, >= 1 (the bytes of cost until the next tracked block, from
 * the end of the last one's cost; the gaps of a Poisson process have no
 * memory, so a block whose cost c a countdown runs out in is tracked with
 * probability 1 - exp(-c / gap) whatever came before: seg_track_p), or a
 * chunk's end (rt.skip). */
static long draw_countdown(void)
{
    if (!rt.on) {
        rt.skip = 1;
        return OFF_CHUNK;
    }
    rt.skip = 0;
    if (rt.n <= 1)
        return 1;
    double u = ((double)(rng_next() >> 11) + 1.0) * (1.0 / 9007199254740992.0);  /* (0, 1] */
    double k = ceil(-log(u) * rt.gap);
    double cap = CHUNK_GAPS * rt.gap > (double)CHUNK_MIN ? CHUNK_GAPS * rt.gap : (double)CHUNK_MIN;
    if (cap > 4e18)
        cap = 4e18;
    if (k > cap) {
        rt.skip = 1;
        return (long)cap;
    }
    return k < 1 ? 1 : (long)k;
}

/* The weight of a block of usable size u tracked now: 1/p(u), as an IEEE
 * binary32's bits (seg_track.weight); p from the cost the countdown took
 * under the thread's settings (rt.cost_b, B rounded to a byte:
 * seg_track_p less that rounding). */
static uint32_t weight_of(size_t usable)
{
    union { float f; uint32_t u; } v;
    double p = rt.n <= 1 ? 1.0 : -expm1(-((double)usable + (double)rt.cost_b) / rt.gap);
    double w = p > 0 ? 1.0 / p : 1e30;
    v.f = (float)(w < 1e30 ? w : 1e30);
    return v.u;
}

static void track(const void *p, size_t req, size_t usable, unsigned c)
{
    uint64_t h = addr_hash(p);
    uint64_t t = mono_now();
    int shared;
    struct seg_tracked *tk = &my_trk(&shared)[c];
    uint32_t wb = weight_of(usable);
    float w = seg_track_weight(wb);

    int stacks = with_stacks && __atomic_load_n(&stacks_on, __ATOMIC_RELAXED);
    if (!table_insert(p, h, req, usable, wb, &t, stacks ? NULL : &no_stack, my_tid())) {
        __atomic_fetch_add(&seg->tracked_dropped, 1, __ATOMIC_RELAXED);
        if (unlikely(__atomic_load_n(&sampler_state, __ATOMIC_RELAXED) == S_NONE))
            start_sampler();
        return;
    }
    filter_inc(p);
    uint64_t wreq = seg_w_bytes(w, req), wus = seg_w_bytes(w, usable);
    if (likely(!shared)) {
        trk_add(0, &tk->req_alloc, wreq);
        trk_add(0, &tk->usable_alloc, wus);
        trk_add(0, &tk->allocs, 1);
    } else {
        trk_add(1, &tk->req_alloc, wreq);
        trk_add(1, &tk->usable_alloc, wus);
        trk_add(1, &tk->allocs, 1);
    }
    event_push(SEG_EV_ALLOC, p, req, 0, t);
    if (unlikely(__atomic_load_n(&sampler_state, __ATOMIC_RELAXED) == S_NONE))
        start_sampler();
}

/* The countdown ran out: tracks p if a point of the draw fell in its cost,
 * and draws the next countdown. Every block is judged whole under the
 * settings whose cost it paid (rt's); a thread takes new settings only
 * here, at the end of a block, so that each block's chance, and so its
 * weight, is that of one set of settings. Which settings a block falls
 * under is fixed by what came before it (when this thread's countdowns ran
 * out, and settings_gen), and the draws for the block itself are
 * independent of that: so 1/p stays its unbiased weight, even though when
 * a thread looks for new settings depends on its earlier draws. Returns p,
 * so that the hot path can end with a tail call. */
__attribute__((noinline))
void *maybe_track(void *p, size_t req, size_t usable, unsigned c)
{
    SHIM_ASSERT(c < SIZECLASS_COUNT);
    if (unlikely(rt.rng == 0)) {
        /* First draw of this thread: seed, take the settings, and judge
         * this allocation (which cost it nothing yet) afresh. */
        rt.rng = seed_thread();
        if (!adopt()) {
            /* The sampler is writing them: never wait for it. Track
             * nothing for a chunk, and take them at its end (an odd
             * generation is never a written one's). */
            rt.on = 0;
            rt.cost_b = OFF_COST_B;
            rt.gen = 1;
        }
        rt.countdown = -(long)(usable + (size_t)rt.cost_b);
        rt.skip = 1;
    }
    int hit = !rt.skip;   /* a point of the draw fell in this block's cost */
    if (!hit && rt.on) {
        /* The countdown ended at a chunk's end (or this thread's start):
         * draw on from there, over what of the block's cost lies beyond. */
        long o = -rt.countdown;
        for (;;) {
            long k = draw_countdown();
            if (k > o) {
                rt.countdown = k - o;
                break;
            }
            if (!rt.skip) {
                hit = 1;
                break;
            }
            o -= k;
        }
    } else if (!hit) {
        rt.countdown = draw_countdown();   /* tracking off: the next chunk */
        if (unlikely(__atomic_load_n(&sampler_state, __ATOMIC_RELAXED) == S_NONE))
            start_sampler();   /* shimdump --set reaches a process through it */
    }
    if (hit)
        track(p, req, usable, c);
    if (unlikely(__atomic_load_n(&settings_gen, __ATOMIC_RELAXED) != rt.gen) && adopt())
        rt.countdown = draw_countdown();
    else if (hit)
        rt.countdown = draw_countdown();
    return p;
}

/* Removes p (hash h) from the table if it is there; *out gets its entry. */
static inline int untrack_found(const void *p, uint64_t h, struct seg_track *out)
{
    struct seg_track *e = table_find(p, h);
    if (!e)
        return 0;   /* the filter's false positive */
    out->addr = (uint64_t)(uintptr_t)p;
    out->alloc_ns = __atomic_load_n(&e->alloc_ns, __ATOMIC_ACQUIRE);
    /* published (table_insert) before malloc handed the block out */
    SHIM_ASSERT(out->alloc_ns != 0 || rec_inherited());
    out->req = __atomic_load_n(&e->req, __ATOMIC_RELAXED);
    out->usable = __atomic_load_n(&e->usable, __ATOMIC_RELAXED);
    out->stack = __atomic_load_n(&e->stack, __ATOMIC_RELAXED);
    out->tid = __atomic_load_n(&e->tid, __ATOMIC_RELAXED);
    out->weight = __atomic_load_n(&e->weight, __ATOMIC_RELAXED);
    __atomic_store_n(&e->alloc_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->addr, 1, __ATOMIC_RELEASE);
    /* the entry was counted in its group when it was claimed */
    uint32_t live = __atomic_fetch_sub(&group_live[(uint32_t)(e - table) >> TRACK_GROUP_SHIFT],
                                       1, __ATOMIC_RELAXED);
    SHIM_ASSERT(live > 0 || rec_inherited());
    filter_dec(p);
    return 1;
}

/* untrack_found out of line, for rec_realloc (record.c); untrack_free
 * takes it inline. */
int untrack_remove(const void *p, uint64_t h, struct seg_track *out)
{
    return untrack_found(p, h, out);
}

/* Puts back an entry that untrack_take took (a realloc that failed). */
void untrack_undo(const void *p, const struct seg_track *e)
{
    uint64_t h = addr_hash(p);
    uint64_t t = e->alloc_ns;
    if (table_insert(p, h, e->req, e->usable, e->weight, &t, &e->stack, e->tid)) {
        filter_inc(p);
        return;
    }
    /* No room to put it back: it leaves the tracked set (without a
     * lifetime), and the segment no longer claims exact figures. */
    int shared;
    struct seg_tracked *tk = &my_trk(&shared)[sizeclass_of(e->usable)];
    float w = seg_track_weight(e->weight);
    trk_add(shared, &tk->req_free, seg_w_bytes(w, e->req));
    trk_add(shared, &tk->usable_free, seg_w_bytes(w, e->usable));
    trk_add(shared, &tk->frees, 1);
    stack_free(e->stack, LIFEBUCKET_COUNT, w);   /* its lifetime is lost */
    __atomic_fetch_add(&seg->tracked_dropped, 1, __ATOMIC_RELAXED);
}

/* Accounts the end of a tracked block's life. */
void untrack_finish(const void *p, const struct seg_track *e)
{
    uint64_t now = mono_now();
    uint64_t life = now > e->alloc_ns ? now - e->alloc_ns : 0;
    int shared;
    struct seg_tracked *tk = &my_trk(&shared)[sizeclass_of(e->usable)];
    float w = seg_track_weight(e->weight);
    uint64_t wn = seg_w_count(w), wreq = seg_w_bytes(w, e->req), wus = seg_w_bytes(w, e->usable);
    stack_free(e->stack, lifebucket_of(life), w);
    if (likely(!shared)) {
        trk_add(0, &tk->lifetime[lifebucket_of(life)], wn);
        trk_add(0, &tk->req_free, wreq);
        trk_add(0, &tk->usable_free, wus);
        trk_add(0, &tk->frees, 1);
    } else {
        trk_add(1, &tk->lifetime[lifebucket_of(life)], wn);
        trk_add(1, &tk->req_free, wreq);
        trk_add(1, &tk->usable_free, wus);
        trk_add(1, &tk->frees, 1);
    }
    event_push(SEG_EV_FREE, p, e->req, life, now);
}

/* The end of a free that the filter did not rule out: p may be tracked. */
void untrack_free(const void *p)
{
    struct seg_track e;
    if (untrack_found(p, addr_hash(p), &e))
        untrack_finish(p, &e);
}

/* Calls fn on every entry of the tracked table that holds a block, for the
 * sampler's ages: only in the groups that group_live says hold some. */
void table_scan(void (*fn)(struct seg_track *e, void *ctx), void *ctx)
{
    uint32_t n = (track_mask >> TRACK_GROUP_SHIFT) + 1;
    SHIM_ASSERT(n <= sizeof group_live / sizeof group_live[0]);
    for (uint32_t g = 0; g < n; g++) {
        if (__atomic_load_n(&group_live[g], __ATOMIC_RELAXED) == 0)
            continue;
        uint32_t end = (g + 1) << TRACK_GROUP_SHIFT;
        for (uint32_t i = g << TRACK_GROUP_SHIFT; i < end; i++)
            if (__atomic_load_n(&table[i].addr, __ATOMIC_RELAXED) > 1)
                fn(&table[i], ctx);
    }
}
