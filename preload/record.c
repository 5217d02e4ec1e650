/* record: counts every allocation into the shared-memory segment, tracks a
 * sample of them for lifetimes and ages, and keeps the time series.
 *
 * The common path (an untracked malloc or free) reads the block's usable
 * size from the backend, bumps its own thread's counters in the segment
 * (plain stores, see count_alloc), decrements a thread-local countdown, and on
 * free tests one byte of a counting filter: no lock, no atomic read-modify-
 * write, no cache line that another thread writes. About 1 in `sample`
 * allocations, drawn with a geometric countdown so that every allocation has
 * the same chance, is tracked: its address, size and time go into a table
 * in the segment, found again at free through the filter. */
#include "config.h"

#include "record.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dispatch.h"
#include "fmt.h"
#include "log.h"
#include "seg.h"
#include "segread.h"
#include "sizeclass.h"
#include "stack.h"

/* ---- State; everything here is set by record_start and read-only after,
 * except where a Synchronization note says otherwise. ---- */

static const struct backend_ops *be;
/* A private copy of the header as written at start: every size, count and
 * offset the writer uses comes from here, never from the shared file, which
 * anyone who can write it could change under us. */
static struct seg_header geo;
static struct backend_ops rec_ops;
static uint64_t realtime_offset;   /* CLOCK_REALTIME - CLOCK_MONOTONIC at start */
static struct seg_header *seg;
static struct seg_slot *slots, *overflow, *retired;
/* The counter slots (seg.h) of threads beyond the slots, and their states. */
static struct seg_cslot *cslots;
static struct seg_cstate *cstates;
/* Where the shim's own allocations count, outside the segment: the
 * sampler thread's (sampler_own) and those the shim causes in a program
 * thread (shim_own: pthread_create's and pthread_join's, around the
 * sampler's start and stop), so that the program's figures hold only the
 * program's. Each written by one thread at a time. */
static struct seg_slot sampler_own, shim_own;
static struct seg_ages *ages;
static struct seg_series *series;
static struct seg_sample *samples;
static struct seg_events *events;
static struct seg_event *evs;
static struct seg_track *table;
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
static uint8_t *filter;
static uint32_t track_mask, filter_shift;
static uint64_t ev_mask;         /* events_cap - 1 where that is a power of two, else 0 */
static long sample_n;
static double log_keep;          /* log(1 - 1/sample_n) */
static char seg_path[CONF_PATH_MAX + 32];
static pthread_key_t slot_key;
/* What the hot path reads, on one cache line: the backend's functions (no
 * hop through its table) and the filter. Chosen by record_start, read-only
 * after. With sample:1 every block is tracked and the filter would only add
 * two atomic updates per block: free then asks the table directly, through
 * a two-byte stand-in whose cells are both set. */
static struct {
    void *(*malloc)(size_t);
    void (*free)(void *);
    size_t (*usable)(void *);           /* the backend's usable_live */
    size_t (*usable_for)(size_t);
    const uint8_t *filter;
    unsigned filter_shift;
} hot __attribute__((aligned(64)));
/* For requests up to UC_MAX bytes, where the backend can tell the usable
 * size from the request (usable_for): usable size | class << 16, by 8-byte
 * steps (uc_for[(n + 7) / 8]), so that malloc makes one load instead of a
 * call and a class lookup. Filled by record_start from usable_for, and
 * used only if usable_for answers alike for every n of each step
 * (uc_table). Read-only after start. */
#define UC_MAX 4096
static uint32_t uc_for[UC_MAX / 8 + 1];
static int uc_table;
static const uint8_t filter_all[2] = { 1, 1 };
/* The segment's file is created unnamed (O_TMPFILE) and given its name
 * (linkat) when the process first tracks a block, so that the many short
 * processes a shell or mysqld_safe runs leave nothing behind. Kept: the
 * descriptor and its identity, to check that the program has not closed it
 * and reused the number. Synchronization: `published` changes from 0 in
 * record_start (root), in the sampler thread (publish), and in a fork child. */
static int seg_fd = -1;
static dev_t seg_dev;
static ino_t seg_ino;
static int published;   /* 0: not yet, 1: named, -1: could not be named */
/* The live segment's memory file (seg.h, "Two files"), or -1 where the
 * segment is private memory; with its identity, so that a number the
 * program closed and reused is never taken for it. Set by record_start
 * (and in a fork child), read-only after. */
static int live_fd = -1;
static dev_t live_dev;
static ino_t live_ino;
/* The copy's writers (the sampler each pass, publish, exit) take copy_mu,
 * which guards copy_seq (odd while a rewrite is under way), copy_ns (the
 * last complete copy) and copy_err (the errno of the last failed rewrite,
 * 0 when current: a line is said when it changes). */
static pthread_mutex_t copy_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t copy_seq, copy_ns;
static int copy_err;
static int copy_cut;    /* a truncation was reported */
/* Whether tracked blocks get a call stack (stacks:N > 0 and the unwinder
 * loaded); stack id 0 otherwise. */
static int with_stacks;
static const uint32_t no_stack = 0;

/* The sampler thread's life. Synchronization: atomic, every change a CAS
 * or a store by the one thread that owns the state then (and, in a fork
 * child, which has no sampler, a reset to S_NONE):
 *   S_NONE -> S_STARTING  by the thread whose tracked allocation starts it
 *   S_STARTING -> S_RUN   by that thread, once pthread_create has returned
 *                     (and glibc counts the sampler), or -> S_STOP if it
 *                     failed; sampler_thread is valid from S_RUN on
 *   S_RUN  -> S_STOP  by the program's last thread on its way out
 *                     (sampler_stop_if_last), which wakes the sampler (a
 *                     futex on this word) and joins it
 *   S_RUN  -> S_STOP  by the sampler itself, alone in the process
 * The sampler never outlives the program's threads: glibc ends a process
 * with exit(0) when the last thread it counts returns, and counts ours. */
enum { S_NONE = 0, S_STARTING, S_RUN, S_STOP };
static int sampler_state;
static pthread_t sampler_thread;   /* valid in S_RUN; read-only after */
/* glibc's count of the process's threads (its private __nptl_nthreads,
 * which libthread_db reads too), or NULL where it cannot be found; then
 * /proc/self/status stands in. Set by record_start, read-only after. */
static const unsigned int *nptl_nthreads;
/* Synchronization: a spinlock (atomic exchange) between threads that fold
 * their slot into retired, and fork. Never taken by malloc or free. */
static int fold_lock;
/* Synchronization: held by the sampler while it writes the segment, and by
 * fork around the copy, so that a child never inherits a half-written
 * sample. */
static pthread_mutex_t sampler_mu = PTHREAD_MUTEX_INITIALIZER;
static long sampler_interval;      /* interval_ms */

/* T_OVER: no slot was free, the thread counts in the overflow slot. */
enum { T_NEW = 0, T_CLAIMING, T_LIVE, T_OVER, T_DEAD };

struct rec_thread {
    /* The thread's own counters (its slot's, or its counter slot's), or
     * NULL: not claimed yet, or counting in the shared overflow slot
     * (T_OVER, T_DEAD, or re-entered while claiming). So the hot path tests
     * one thing: counters of its own for plain stores, or the out-of-line
     * path (slot_slow), which claims or adds atomically. */
    struct seg_counters *cls;
    /* Valid when cls is: where its tracked figures go, its own slot's, or
     * (a thread with a counter slot) the overflow slot's, shared. */
    struct seg_tracked *trk;
    struct seg_slot *slot;   /* its own slot, or NULL */
    uint32_t cslot;          /* 1 + the index of its counter slot, or 0 */
    long countdown;          /* allocations until the next tracked one */
    uint64_t rng;            /* xorshift64* state, 0 until seeded */
    uint64_t ev_next, ev_end; /* event numbers claimed and not yet used */
    uint32_t tid;
    int state;
};
static __thread struct rec_thread rt __attribute__((tls_model("initial-exec")));

/* ---- Clocks and ids ---- */

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The tracked path's clock: the TSC, scaled to CLOCK_MONOTONIC's
 * nanoseconds, where the kernel itself keeps time by it (its clocksource is
 * "tsc", so the counters are invariant and in step across CPUs); else
 * clock_gettime. rdtsc costs a few ns where clock_gettime costs ~20, and a
 * tracked block reads the clock twice.
 *
 * The scale comes from the sampler thread, never from a short measurement:
 * 200 us of busy waiting at start (as before 0.1.0) was 0.03% off on an
 * idle machine and far more when preempted (30 us is 15%), and the first
 * correction then stepped the clock by what it had gathered (0.3 ms idle,
 * tens of ms in CI), into the lifetimes of blocks that lived across it. So
 * until the sampler has a baseline of TSC_BASELINE_NS, mono_now is
 * clock_gettime; from then on, the TSC mapped through an anchor (tsc_a,
 * mono_a) and a scale (mult, ns per tick << 32) at the TSC's rate over the
 * whole baseline. Each later pass moves the anchor to where the mapping
 * stands now, so that the clock never steps, and sets the scale to close
 * half the gap to CLOCK_MONOTONIC (which readers of the table compare it
 * with) over one more period like the last, within +-1000 ppm: stable
 * whatever the passes' spacing. Only a gap over TSC_STEP_NS (a suspend, a
 * migrated VM) is closed by a step.
 *
 * Synchronization: the sampler thread is the only writer, under sampler_mu.
 * The anchor is a latch (two copies and a sequence number whose low bit
 * says which copy readers take while the other is written), so a reader
 * never waits for the writer, even one stopped mid-write or lost to a fork
 * that skipped the fork handlers; it only retries when the sequence moved
 * under it, and after 64 retries reads clock_gettime. */
#if defined(__x86_64__)
#include <x86intrin.h>
#define TSC_BASELINE_NS 500000000ull
#define TSC_STEP_NS     1000000ull
struct clk_anchor {
    uint64_t tsc_a, mono_a, mult;
};
static int use_tsc;                /* set once, after clk is first written */
static int tsc_ok;                 /* the clocksource is the TSC */
static uint64_t tsc0, mono0;       /* a pair from start: the baseline's origin */
static uint64_t last_m;            /* CLOCK_MONOTONIC at the last refinement */
static struct {
    uint64_t seq;
    struct clk_anchor c[2];
} clk __attribute__((aligned(64)));

static inline uint64_t clk_map(const struct clk_anchor *a, uint64_t t)
{
    return a->mono_a + (uint64_t)(((unsigned __int128)(t > a->tsc_a ? t - a->tsc_a : 0) * a->mult) >> 32);
}

static uint64_t mono_now(void)
{
    if (likely(__atomic_load_n(&use_tsc, __ATOMIC_ACQUIRE))) {
        for (int i = 0; i < 64; i++) {
            uint64_t s = __atomic_load_n(&clk.seq, __ATOMIC_ACQUIRE);
            const struct clk_anchor *p = &clk.c[s & 1];
            struct clk_anchor a = {
                __atomic_load_n(&p->tsc_a, __ATOMIC_RELAXED),
                __atomic_load_n(&p->mono_a, __ATOMIC_RELAXED),
                __atomic_load_n(&p->mult, __ATOMIC_RELAXED),
            };
            uint64_t t = __rdtsc();
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (__atomic_load_n(&clk.seq, __ATOMIC_RELAXED) == s)
                return clk_map(&a, t);
        }
    }
    return clock_ns(CLOCK_MONOTONIC);
}

/* A TSC reading and the CLOCK_MONOTONIC time it was taken at: the middle
 * of the tightest of a few brackets (m1, rdtsc, m2), so that a preemption
 * in one does not skew it. */
static void tsc_pair(uint64_t *t, uint64_t *m)
{
    uint64_t best = UINT64_MAX;
    *t = *m = 0;
    for (int i = 0; i < 8; i++) {
        uint64_t m1 = clock_ns(CLOCK_MONOTONIC), tt = __rdtsc(), m2 = clock_ns(CLOCK_MONOTONIC);
        if (m2 >= m1 && m2 - m1 < best) {
            best = m2 - m1;
            *t = tt;
            *m = m1 + (m2 - m1) / 2;
            if (best < 200)
                break;
        }
    }
}

static void clk_copy(struct clk_anchor *dst, const struct clk_anchor *src)
{
    __atomic_store_n(&dst->tsc_a, src->tsc_a, __ATOMIC_RELAXED);
    __atomic_store_n(&dst->mono_a, src->mono_a, __ATOMIC_RELAXED);
    __atomic_store_n(&dst->mult, src->mult, __ATOMIC_RELAXED);
}

/* The latch's write: readers go to copy 1 while copy 0 is written, then
 * to copy 0 while copy 1 is. */
static void clk_store(const struct clk_anchor *a)
{
    __atomic_store_n(&clk.seq, clk.seq + 1, __ATOMIC_RELAXED);   /* odd: copy 1 */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    clk_copy(&clk.c[0], a);
    __atomic_store_n(&clk.seq, clk.seq + 1, __ATOMIC_RELEASE);   /* even: copy 0 */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    clk_copy(&clk.c[1], a);
}

/* Once per sampler pass, under sampler_mu. */
static void tsc_refine(void)
{
    uint64_t t, m;
    if (!tsc_ok)
        return;
    tsc_pair(&t, &m);
    if (t <= tsc0 || m <= mono0 || m - mono0 < TSC_BASELINE_NS)
        return;
    /* The TSC's rate over the whole baseline, ns per tick << 32. */
    uint64_t rate = (uint64_t)(((unsigned __int128)(m - mono0) << 32) / (t - tsc0));
    if (rate == 0)
        return;
    uint64_t period = last_m && m > last_m ? m - last_m : 0;
    last_m = m;
    if (!__atomic_load_n(&use_tsc, __ATOMIC_RELAXED)) {
        struct clk_anchor a = { t, m, rate };
        clk_store(&a);
        __atomic_store_n(&use_tsc, 1, __ATOMIC_RELEASE);
        return;
    }
    /* Where the mapping stands now; gap > 0: it is behind. */
    uint64_t f = clk_map(&clk.c[clk.seq & 1], t);
    int64_t gap = (int64_t)(m - f);
    struct clk_anchor a = { t, f, rate };
    if (gap > (int64_t)TSC_STEP_NS || gap < -(int64_t)TSC_STEP_NS || period == 0) {
        a.mono_a = m;
    } else {
        double scale = 1.0 + (double)gap / 2.0 / (double)period;
        scale = scale < 0.999 ? 0.999 : scale > 1.001 ? 1.001 : scale;
        a.mult = (uint64_t)((double)rate * scale);
    }
    clk_store(&a);
}

static size_t read_proc(const char *path, char *buf, size_t cap);

static void tsc_start(void)
{
    char cs[32];
    tsc_pair(&tsc0, &mono0);
    tsc_ok = read_proc("/sys/devices/system/clocksource/clocksource0/current_clocksource", cs,
                       sizeof cs) && strncmp(cs, "tsc", 3) == 0;
}
#else
static uint64_t mono_now(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}
static void tsc_refine(void) {}
static void tsc_start(void) {}
#endif

static uint32_t my_tid(void)
{
    if (!rt.tid)
        rt.tid = (uint32_t)syscall(SYS_gettid);
    return rt.tid;
}

/* ---- Per-thread slots ---- */

static void spin_lock(int *l)
{
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(l, __ATOMIC_RELAXED))
            sched_yield();
}

static void spin_unlock(int *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* Adds `words` words at src (a slot's cls and trk, or a counter slot's
 * cls) into retired's, from its cls on, clears them and frees the slot
 * (*state), inside one odd period of retired's seq. Precondition:
 * fold_lock held. */
static void fold_locked(uint64_t *src, size_t words, uint32_t *state)
{
    uint64_t *dst = (uint64_t *)retired->cls;
    __atomic_store_n(&retired->seq, retired->seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    for (size_t k = 0; k < words; k++) {
        __atomic_store_n(&dst[k], dst[k] + src[k], __ATOMIC_RELAXED);
        __atomic_store_n(&src[k], 0, __ATOMIC_RELAXED);
    }
    __atomic_store_n(state, SEG_SLOT_FREE, __ATOMIC_RELEASE);
    __atomic_store_n(&retired->seq, retired->seq + 1, __ATOMIC_RELEASE);
}

#define SLOT_WORDS ((sizeof overflow->cls + sizeof overflow->trk) / 8)
#define CSLOT_WORDS (sizeof overflow->cls / 8)

static void sampler_stop_if_last(void);

/* pthread key destructor: the thread is exiting (every thread that
 * allocated has the key set, to its counters or to overflow's). Later
 * allocations of this thread (other destructors) count in the overflow
 * slot. */
static void slot_exit(void *arg)
{
    struct seg_slot *s = rt.slot;
    uint32_t cs = rt.cslot;
    (void)arg;
    sampler_stop_if_last();
    stack_thread_exit();
    rt.state = T_DEAD;
    rt.cls = NULL;
    rt.trk = NULL;
    rt.slot = NULL;
    rt.cslot = 0;
    if (s == NULL && cs == 0)
        return;
    spin_lock(&fold_lock);
    if (s != NULL)
        fold_locked((uint64_t *)s->cls, SLOT_WORDS, &s->state);
    else
        fold_locked((uint64_t *)cslots[cs - 1].cls, CSLOT_WORDS, &cstates[cs - 1].state);
    __atomic_fetch_sub(&seg->slots_in_use, 1, __ATOMIC_RELAXED);
    spin_unlock(&fold_lock);
}

/* Claims a free one of n states (a slot's, or a counter slot's, `stride`
 * bytes apart) for the calling thread: its index, or -1 when none is free. */
static long claim(uint32_t *state, size_t stride, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t *w = (uint32_t *)((char *)state + i * stride);
        uint32_t st = __atomic_load_n(w, __ATOMIC_RELAXED);
        if (st == SEG_SLOT_FREE &&
            __atomic_compare_exchange_n(w, &st, SEG_SLOT_LIVE, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            return i;
    }
    return -1;
}

/* The counters to count in when rt.cls is NULL: claims a slot, else a
 * counter slot, for a new thread, else (re-entered while claiming, none
 * free, exiting) overflow's. */
__attribute__((noinline))
static struct seg_counters *slot_slow(void)
{
    if (rt.state != T_NEW)
        return overflow->cls;
    rt.state = T_CLAIMING;
    __atomic_fetch_add(&seg->threads_seen, 1, __ATOMIC_RELAXED);
    long i = claim(&slots[0].state, sizeof *slots, geo.nslots);
    if (i >= 0) {
        slots[i].tid = my_tid();
        rt.slot = &slots[i];
        rt.trk = slots[i].trk;
        rt.cls = slots[i].cls;
    } else if (geo.ncslots && (i = claim(&cstates[0].state, sizeof *cstates, geo.ncslots)) >= 0) {
        cstates[i].tid = my_tid();
        /* Readers look this far before the thread's first count. */
        uint64_t high = __atomic_load_n(&seg->cslots_high, __ATOMIC_RELAXED);
        while (high < (uint64_t)i + 1 &&
               !__atomic_compare_exchange_n(&seg->cslots_high, &high, (uint64_t)i + 1, 0,
                                            __ATOMIC_RELEASE, __ATOMIC_RELAXED))
            ;
        rt.cslot = (uint32_t)i + 1;
        rt.trk = overflow->trk;
        rt.cls = cslots[i].cls;
    } else {
        /* The key still, for its destructor's look at the thread count. */
        rt.state = T_OVER;
        pthread_setspecific(slot_key, overflow);
        return overflow->cls;
    }
    __atomic_fetch_add(&seg->slots_in_use, 1, __ATOMIC_RELAXED);
    /* May allocate (keys past 32): that counts in the counters just
     * claimed. */
    pthread_setspecific(slot_key, rt.cls);
    rt.state = T_LIVE;
    return rt.cls;
}

/* The counters the calling thread counts in: its own, or overflow's. */
static inline struct seg_counters *my_cls(void)
{
    struct seg_counters *k = rt.cls;
    return likely(k != NULL) ? k : slot_slow();
}

/* The tracked figures the calling thread adds to, and in *shared whether
 * they are the overflow slot's (atomic adds). */
static inline struct seg_tracked *my_trk(int *shared)
{
    struct seg_tracked *t = my_cls() == overflow->cls ? overflow->trk : rt.trk;
    *shared = t == overflow->trk;
    return t;
}

/* The owning thread's update of one class: one plain store per counter, no
 * lock and no read-modify-write on a shared line. The counters only grow, so
 * a reader that reads a class twice and sees the same values has a
 * consistent snapshot of it (seg.h); no sequence counter is needed, which
 * keeps the stores of one call off the critical path of the next. The
 * overflow slot, shared, takes atomic adds instead. */
static inline void count_alloc(struct seg_counters *cls, unsigned c, size_t req, size_t usable,
                               int is_realloc)
{
    struct seg_counters *k = &cls[c];
    if (unlikely(cls == overflow->cls)) {
        __atomic_fetch_add(&k->allocs, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&k->reallocs, (uint64_t)is_realloc, __ATOMIC_RELAXED);
        __atomic_fetch_add(&k->req_bytes, req, __ATOMIC_RELAXED);
        __atomic_fetch_add(&k->usable_alloc, usable, __ATOMIC_RELAXED);
        return;
    }
    if (unlikely(is_realloc))
        __atomic_store_n(&k->reallocs, k->reallocs + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&k->req_bytes, k->req_bytes + req, __ATOMIC_RELAXED);
    __atomic_store_n(&k->usable_alloc, k->usable_alloc + usable, __ATOMIC_RELAXED);
    __atomic_store_n(&k->allocs, k->allocs + 1, __ATOMIC_RELEASE);
}

static inline void count_free(struct seg_counters *cls, unsigned c, size_t usable)
{
    struct seg_counters *k = &cls[c];
    if (unlikely(cls == overflow->cls)) {
        __atomic_fetch_add(&k->frees, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&k->usable_free, usable, __ATOMIC_RELAXED);
        return;
    }
    __atomic_store_n(&k->usable_free, k->usable_free + usable, __ATOMIC_RELAXED);
    __atomic_store_n(&k->frees, k->frees + 1, __ATOMIC_RELEASE);
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

/* ---- The tracked table and its filter ---- */

static inline uint64_t addr_hash(const void *p)
{
    return ((uint64_t)(uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull;
}

static inline uint8_t *filter_cell(uint64_t h)
{
    return &filter[h >> filter_shift];
}

static void filter_inc(uint64_t h)
{
    if (hot.filter == filter_all)
        return;
    uint8_t *f = filter_cell(h), v = __atomic_load_n(f, __ATOMIC_RELAXED);
    while (v != 255 && !__atomic_compare_exchange_n(f, &v, (uint8_t)(v + 1), 1,
                                                    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
}

static void filter_dec(uint64_t h)
{
    if (hot.filter == filter_all)
        return;
    uint8_t *f = filter_cell(h), v = __atomic_load_n(f, __ATOMIC_RELAXED);
    /* 255 is sticky: the count is no longer known. */
    while (v != 255 && v != 0 && !__atomic_compare_exchange_n(f, &v, (uint8_t)(v - 1), 1,
                                                              __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
}

/* Claims an entry for p and fills it, published by its alloc_ns (*t). The
 * stack is taken (stack == NULL) only once the entry is ours, so that a
 * full table costs no unwinding; *t is then read again after it. Returns 0
 * when there was no room. */
static int table_insert(const void *p, uint64_t h, size_t req, size_t usable, uint64_t *t,
                        const uint32_t *stack, uint32_t tid)
{
    uint32_t i = (uint32_t)(h >> 32);
    for (uint32_t k = 0; k < SEG_TRACK_PROBE; k++) {
        struct seg_track *e = &table[(i + k) & track_mask];
        uint64_t a = __atomic_load_n(&e->addr, __ATOMIC_RELAXED);
        if (a > 1)
            continue;
        if (__atomic_compare_exchange_n(&e->addr, &a, (uint64_t)(uintptr_t)p, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            __atomic_fetch_add(&group_live[((i + k) & track_mask) >> TRACK_GROUP_SHIFT], 1,
                               __ATOMIC_RELAXED);
            __atomic_store_n(&e->req, req, __ATOMIC_RELAXED);
            __atomic_store_n(&e->usable, usable, __ATOMIC_RELAXED);
            if (stack == NULL) {
                /* the block's life starts after the unwinding it waited for */
                __atomic_store_n(&e->stack, stack_capture(req), __ATOMIC_RELAXED);
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

static struct seg_track *table_find(const void *p, uint64_t h)
{
    uint32_t i = (uint32_t)(h >> 32);
    for (uint32_t k = 0; k < SEG_TRACK_PROBE; k++) {
        struct seg_track *e = &table[(i + k) & track_mask];
        uint64_t a = __atomic_load_n(&e->addr, __ATOMIC_ACQUIRE);
        if (a == (uint64_t)(uintptr_t)p)
            return e;
        if (a == 0)
            return NULL;
    }
    return NULL;
}

static inline __attribute__((always_inline)) void event_push(uint32_t kind, const void *p, uint64_t size, uint64_t life, uint64_t mono)
{
    /* Numbers are claimed 16 at a time, so that the shared head is written
     * once per 16 events of a thread, not once per event. */
    /* A claim left unused while the ring went half round (a thread that
     * rarely tracks) is dropped: its cells now belong to newer events. */
    if (rt.ev_next == rt.ev_end ||
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

/* A geometric draw with mean sample_n, >= 1: the allocations until the next
 * tracked one, so that each allocation is tracked with probability 1/N. */
static long draw_countdown(void)
{
    if (sample_n <= 1)
        return 1;
    double u = ((double)(rng_next() >> 11) + 1.0) * (1.0 / 9007199254740992.0);  /* (0, 1] */
    double k = floor(log(u) / log_keep);
    return k >= 1e15 ? (long)1e15 : 1 + (long)k;
}

static void start_sampler(void);
static void publish(void);
/* How copy_refresh is called (see there). */
enum { COPY_PASS, COPY_NOW, COPY_FINAL };
static void copy_refresh(int mode);

static void track(const void *p, size_t req, size_t usable, unsigned c)
{
    uint64_t h = addr_hash(p);
    uint64_t t = mono_now();
    int shared;
    struct seg_tracked *tk = &my_trk(&shared)[c];

    if (!table_insert(p, h, req, usable, &t, with_stacks ? NULL : &no_stack, my_tid())) {
        __atomic_fetch_add(&seg->tracked_dropped, 1, __ATOMIC_RELAXED);
        if (unlikely(__atomic_load_n(&sampler_state, __ATOMIC_RELAXED) == S_NONE))
            start_sampler();
        return;
    }
    filter_inc(h);
    if (likely(!shared)) {
        trk_add(0, &tk->req_alloc, req);
        trk_add(0, &tk->usable_alloc, usable);
        trk_add(0, &tk->allocs, 1);
    } else {
        trk_add(1, &tk->req_alloc, req);
        trk_add(1, &tk->usable_alloc, usable);
        trk_add(1, &tk->allocs, 1);
    }
    event_push(SEG_EV_ALLOC, p, req, 0, t);
    if (unlikely(__atomic_load_n(&sampler_state, __ATOMIC_RELAXED) == S_NONE))
        start_sampler();
}

/* The countdown ran out: tracks p (and draws the next countdown). Returns
 * p, so that the hot path can end with a tail call. */
__attribute__((noinline))
static void *maybe_track(void *p, size_t req, size_t usable, unsigned c)
{
    if (unlikely(rt.rng == 0)) {
        /* First draw of this thread: seed, then count this allocation. */
        rt.rng = (clock_ns(CLOCK_MONOTONIC) ^ ((uint64_t)my_tid() << 32) ^ (uintptr_t)&rt) | 1;
        rt.countdown = draw_countdown();
        if (--rt.countdown > 0)
            return p;
    }
    rt.countdown = draw_countdown();
    track(p, req, usable, c);
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
    out->req = __atomic_load_n(&e->req, __ATOMIC_RELAXED);
    out->usable = __atomic_load_n(&e->usable, __ATOMIC_RELAXED);
    out->stack = __atomic_load_n(&e->stack, __ATOMIC_RELAXED);
    out->tid = __atomic_load_n(&e->tid, __ATOMIC_RELAXED);
    __atomic_store_n(&e->alloc_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->addr, 1, __ATOMIC_RELEASE);
    __atomic_fetch_sub(&group_live[(uint32_t)(e - table) >> TRACK_GROUP_SHIFT], 1,
                       __ATOMIC_RELAXED);
    filter_dec(h);
    return 1;
}

/* Removes p from the table if it is tracked; *out gets its entry. */
static int untrack_take(const void *p, struct seg_track *out)
{
    uint64_t h = addr_hash(p);
    if (likely(__atomic_load_n(&hot.filter[h >> hot.filter_shift], __ATOMIC_RELAXED) == 0))
        return 0;
    return untrack_found(p, h, out);
}

/* Puts back an entry that untrack_take took (a realloc that failed). */
static void untrack_undo(const void *p, const struct seg_track *e)
{
    uint64_t h = addr_hash(p);
    uint64_t t = e->alloc_ns;
    if (table_insert(p, h, e->req, e->usable, &t, &e->stack, e->tid)) {
        filter_inc(h);
        return;
    }
    /* No room to put it back: it leaves the tracked set (without a
     * lifetime), and the segment no longer claims exact figures. */
    int shared;
    struct seg_tracked *tk = &my_trk(&shared)[sizeclass_of(e->usable)];
    trk_add(shared, &tk->req_free, e->req);
    trk_add(shared, &tk->usable_free, e->usable);
    trk_add(shared, &tk->frees, 1);
    stack_free(e->stack, LIFEBUCKET_COUNT);   /* its lifetime is lost */
    __atomic_fetch_add(&seg->tracked_dropped, 1, __ATOMIC_RELAXED);
}

/* Accounts the end of a tracked block's life. */
static void untrack_finish(const void *p, const struct seg_track *e)
{
    uint64_t now = mono_now();
    uint64_t life = now > e->alloc_ns ? now - e->alloc_ns : 0;
    int shared;
    struct seg_tracked *tk = &my_trk(&shared)[sizeclass_of(e->usable)];
    stack_free(e->stack, lifebucket_of(life));
    if (likely(!shared)) {
        trk_add(0, &tk->lifetime[lifebucket_of(life)], 1);
        trk_add(0, &tk->req_free, e->req);
        trk_add(0, &tk->usable_free, e->usable);
        trk_add(0, &tk->frees, 1);
    } else {
        trk_add(1, &tk->lifetime[lifebucket_of(life)], 1);
        trk_add(1, &tk->req_free, e->req);
        trk_add(1, &tk->usable_free, e->usable);
        trk_add(1, &tk->frees, 1);
    }
    event_push(SEG_EV_FREE, p, e->req, life, now);
}

/* ---- The recording table of operations ---- */

/* The hot path. What is not the common case (no slot of its own, the
 * countdown run out, a block the filter does not rule out) is out of line
 * and a tail call, so the common case keeps few registers live across
 * calls: n and p across the backend's calls, nothing after. */

/* An allocation by a thread without a slot of its own (see rec_thread).
 * Returns p. */
__attribute__((noinline))
static void *alloc_slow(void *p, size_t req, size_t u, unsigned c, int is_realloc)
{
    count_alloc(slot_slow(), c, req, u, is_realloc);
    if (--rt.countdown <= 0)
        maybe_track(p, req, u, c);
    return p;
}

/* Counts an allocation in the thread's own slot, and draws for tracking.
 * Returns p. */
static inline __attribute__((always_inline)) void *on_alloc_uc(void *p, size_t req, size_t u,
                                                               unsigned c, int is_realloc)
{
    struct seg_counters *k = rt.cls;
    if (unlikely(k == NULL))
        return alloc_slow(p, req, u, c, is_realloc);
    k += c;
    if (is_realloc)
        __atomic_store_n(&k->reallocs, k->reallocs + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&k->req_bytes, k->req_bytes + req, __ATOMIC_RELAXED);
    __atomic_store_n(&k->usable_alloc, k->usable_alloc + u, __ATOMIC_RELAXED);
    __atomic_store_n(&k->allocs, k->allocs + 1, __ATOMIC_RELEASE);
    if (unlikely(--rt.countdown <= 0))
        return maybe_track(p, req, u, c);
    return p;
}

static inline __attribute__((always_inline)) void *on_alloc_u(void *p, size_t req, size_t u,
                                                              int is_realloc)
{
    return on_alloc_uc(p, req, u, sizeclass_of(u), is_realloc);
}

/* The end of a free that the filter did not rule out: p may be tracked. */
static void untrack_free(const void *p)
{
    struct seg_track e;
    if (untrack_found(p, addr_hash(p), &e))
        untrack_finish(p, &e);
}

/* Whether p may be tracked: one byte of the counting filter, 0 for nearly
 * every untracked block. */
static inline int maybe_tracked(const void *p)
{
    return __atomic_load_n(&hot.filter[addr_hash(p) >> hot.filter_shift], __ATOMIC_RELAXED) != 0;
}

/* A free by a thread without a slot of its own, or of a block that may be
 * tracked; then the backend's free. */
__attribute__((noinline))
static void free_slow(void *p, size_t u, unsigned c, int counted)
{
    if (!counted)
        count_free(slot_slow(), c, u);
    if (maybe_tracked(p))
        untrack_free(p);
    hot.free(p);
}

/* The usable size (returned) and class (*c) of a request of n bytes, where
 * uc_table holds: from uc_for up to UC_MAX, from usable_for above. */
static inline __attribute__((always_inline)) size_t uc_of(size_t n, unsigned *c)
{
    if (likely(n <= UC_MAX)) {
        uint32_t e = uc_for[(n + 7) >> 3];
        *c = e >> 16;
        return e & 0xffff;
    }
    size_t u = hot.usable_for(n);
    *c = sizeclass_of(u);
    return u;
}

/* malloc, with the usable size and class from the request (uc_of). */
static void *rec_malloc_table(size_t n)
{
    void *p = hot.malloc(n);
    if (unlikely(p == NULL))
        return p;
    unsigned c;
    size_t u = uc_of(n, &c);
    return on_alloc_uc(p, n, u, c, 0);
}

/* malloc, with the usable size from the block. */
static void *rec_malloc(size_t n)
{
    void *p = hot.malloc(n);
    if (unlikely(p == NULL))
        return p;
    return on_alloc_u(p, n, hot.usable(p), 0);
}

static void rec_free(void *p)
{
    if (p == NULL)
        return;
    size_t u = hot.usable(p);
    unsigned c = sizeclass_of(u);
    struct seg_counters *k = rt.cls;
    if (unlikely(k == NULL))
        return free_slow(p, u, c, 0);
    k += c;
    __atomic_store_n(&k->usable_free, k->usable_free + u, __ATOMIC_RELAXED);
    __atomic_store_n(&k->frees, k->frees + 1, __ATOMIC_RELEASE);
    if (unlikely(maybe_tracked(p)))
        return free_slow(p, u, c, 1);
    hot.free(p);
}

/* Counts the free of p (usable size u) and ends its tracking if it was
 * tracked. */
static void on_free_u(void *p, size_t u)
{
    count_free(my_cls(), sizeclass_of(u), u);
    if (maybe_tracked(p))
        untrack_free(p);
}

static void rec_free_sized(void *p, size_t n)
{
    on_free_u(p, hot.usable(p));
    be->free_sized(p, n);
}

/* C++'s sized delete where malloc's usable size comes from the request
 * (rec_malloc_table): n is the size that operator new was asked for (the
 * standard requires it; jemalloc's sdallocx and, but for page-aligned
 * blocks, tcmalloc's tc_free_sized rely on it too), and operator new
 * counted the block with the same function of n, so the usable size and
 * class come from that table again, without the lookup by address. A
 * program that replaces operator new or delete never gets here (cxx.c). */
static void rec_free_sized_table(void *p, size_t n)
{
    unsigned c;
    size_t u = uc_of(n, &c);
    count_free(my_cls(), c, u);
    if (maybe_tracked(p))
        untrack_free(p);
    be->free_sized(p, n);
}

static void *rec_calloc(size_t n, size_t size)
{
    void *p = be->calloc(n, size);
    if (likely(p != NULL))
        on_alloc_u(p, n * size, hot.usable_for ? hot.usable_for(n * size) : hot.usable(p), 0);
    return p;
}

static void *rec_aligned(size_t align, size_t n)
{
    void *p = be->aligned(align, n);
    if (likely(p != NULL))
        on_alloc_u(p, n, hot.usable(p), 0);
    return p;
}

/* A realloc ends the old block (its class, its usable size, its lifetime if
 * tracked) and begins the new one. The old block is untracked before the
 * call, so that its address, once free, cannot be tracked again by another
 * thread before we are done with it; a failed realloc puts it back. */
static void *rec_realloc(void *p, size_t n)
{
    struct seg_track e;
    size_t ou;
    int was;
    void *q;

    if (p == NULL)
        return rec_malloc(n);
    ou = hot.usable(p);
    was = untrack_take(p, &e);
    q = be->realloc(p, n);
    if (q == NULL && n != 0) {
        if (was)
            untrack_undo(p, &e);
        return NULL;
    }
    count_free(my_cls(), sizeclass_of(ou), ou);
    if (was)
        untrack_finish(p, &e);
    if (q != NULL)
        on_alloc_u(q, n, hot.usable(q), 1);
    return q;
}

/* ---- The sampler thread ---- */

/* Reads a small /proc file into buf (NUL-terminated); returns its length. */
static size_t read_proc(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t got = 0;
    if (fd < 0)
        return 0;
    while (got < cap - 1) {
        ssize_t r = read(fd, buf + got, cap - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return got;
}

/* The value in kB of "name:" in a /proc status-like text, in bytes. */
static uint64_t proc_field_kb(const char *text, const char *name)
{
    const char *p = text;
    size_t nl = strlen(name);
    while ((p = strstr(p, name)) != NULL) {
        if ((p == text || p[-1] == '\n') && p[nl] == ':') {
            uint64_t v = 0;
            for (p += nl + 1; *p == ' ' || *p == '\t'; p++)
                ;
            for (; *p >= '0' && *p <= '9'; p++)
                v = v * 10 + (uint64_t)(*p - '0');
            return v * 1024;
        }
        p += nl;
    }
    return 0;
}

/* Calls fn on every entry of the tracked table that holds a block, for the
 * sampler's ages: only in the groups that group_live says hold some. */
static void table_scan(void (*fn)(struct seg_track *e, void *ctx), void *ctx)
{
    uint32_t n = (track_mask >> TRACK_GROUP_SHIFT) + 1;
    for (uint32_t g = 0; g < n; g++) {
        if (__atomic_load_n(&group_live[g], __ATOMIC_RELAXED) == 0)
            continue;
        uint32_t end = (g + 1) << TRACK_GROUP_SHIFT;
        for (uint32_t i = g << TRACK_GROUP_SHIFT; i < end; i++)
            if (__atomic_load_n(&table[i].addr, __ATOMIC_RELAXED) > 1)
                fn(&table[i], ctx);
    }
}

struct age_ctx {
    uint64_t (*age)[LIFEBUCKET_COUNT];
    uint64_t now;
};

static void age_add(struct seg_track *e, void *arg)
{
    struct age_ctx *a = arg;
    uint64_t t = __atomic_load_n(&e->alloc_ns, __ATOMIC_ACQUIRE);
    uint64_t u = __atomic_load_n(&e->usable, __ATOMIC_RELAXED);
    if (t != 0)
        a->age[sizeclass_of(u)][lifebucket_of(a->now > t ? a->now - t : 0)]++;
}

static void filter_add(struct seg_track *e, void *arg)
{
    (void)arg;
    filter_inc(addr_hash((const void *)(uintptr_t)e->addr));
}

static void sample_once(void)
{
    static struct seg_counters sum[SIZECLASS_COUNT];
    static uint64_t age[SIZECLASS_COUNT][LIFEBUCKET_COUNT];
    static char text[4096];
    struct seg_sample smp;
    uint64_t now_mono;

    /* Under sampler_mu (the fork handlers take it): a child never starts
     * with a correction half made. */
    pthread_mutex_lock(&sampler_mu);
    tsc_refine();
    pthread_mutex_unlock(&sampler_mu);
    now_mono = mono_now();   /* the tracked blocks' clock, for their ages */

    memset(&smp, 0, sizeof smp);
    smp.t_ns = clock_ns(CLOCK_REALTIME);
    seg_sum(seg, &geo, sum);
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        int exact;
        smp.live_count += sum[c].allocs - sum[c].frees;
        smp.live_usable += sum[c].usable_alloc - sum[c].usable_free;
        smp.live_req += seg_live_req_class(seg, &geo, &sum[c], c, &exact);
        smp.allocs += sum[c].allocs;
        smp.frees += sum[c].frees;
        smp.req_bytes += sum[c].req_bytes;
    }
    /* /proc/self/status is cheap; smaps_rollup walks every mapping (80 ms per
     * 8 GiB of 4 KiB pages), so the huge-page figure is refreshed only every
     * 30th pass. */
    static uint64_t huge;
    static unsigned pass;
    if (read_proc("/proc/self/status", text, sizeof text)) {
        smp.rss = proc_field_kb(text, "VmRSS");
        smp.rss_anon = proc_field_kb(text, "RssAnon");
        smp.vsz = proc_field_kb(text, "VmSize");
    }
    if (pass++ % 30 == 0 && read_proc("/proc/self/smaps_rollup", text, sizeof text))
        huge = proc_field_kb(text, "AnonHugePages");
    smp.rss_huge = huge;
    be->snapshot(&smp.backend);
    if (with_stacks) {
        stack_refresh_objects();
        stack_check_fds();
    }

    /* Ages of the tracked blocks still live. */
    struct age_ctx ctx = { age, now_mono };
    memset(age, 0, sizeof age);
    table_scan(age_add, &ctx);

    pthread_mutex_lock(&sampler_mu);
    __atomic_store_n(&ages->seq, ages->seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    ages->at_ns = now_mono;
    ages->dropped = __atomic_load_n(&seg->tracked_dropped, __ATOMIC_RELAXED);
    memcpy(ages->count, age, sizeof age);
    __atomic_store_n(&ages->seq, ages->seq + 1, __ATOMIC_RELEASE);

    uint64_t n = series->head;
    struct seg_sample *dst = &samples[n % geo.series_cap];
    __atomic_store_n(&dst->seq, dst->seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    smp.seq = dst->seq;
    memcpy((char *)dst + 8, (char *)&smp + 8, sizeof smp - 8);
    __atomic_store_n(&dst->seq, dst->seq + 1, __ATOMIC_RELEASE);
    if (smp.rss > series->peak_rss) {
        series->peak_rss = smp.rss;
        series->peak_rss_ns = smp.t_ns;
    }
    __atomic_store_n(&series->head, n + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&seg->heartbeat_ns, smp.t_ns, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&sampler_mu);
    if (published == 0)
        publish();   /* the first pass: the copy, then its name */
    else if (published == 1)
        copy_refresh(COPY_PASS);
}

/* The program's threads alive, the caller included, not the sampler:
 * glibc's own count where it can be read (main's pthread_exit took itself
 * off it), else /proc's, less a main thread that has exited (a zombie
 * leader stays in Threads:) and less the sampler. */
static long program_threads(void)
{
    char text[1024];
    if (nptl_nthreads)
        return (long)__atomic_load_n(nptl_nthreads, __ATOMIC_ACQUIRE) - 1;
    /* /proc/self/stat: after the command's closing parenthesis, field 3 is
     * the main thread's state and field 20 num_threads. Unknown: assume
     * somebody else is there (2), so that nothing stops. */
    const char *p = read_proc("/proc/self/stat", text, sizeof text) ? strrchr(text, ')') : NULL;
    if (!p || p[1] != ' ')
        return 2;
    long zombie = p[2] == 'Z', n = -1;
    for (int field = 3; field < 20 && p; field++)
        p = strchr(p + 1, ' ');
    if (p)
        n = strtol(p + 1, NULL, 10);
    return n >= 1 ? n - zombie - 1 : 2;
}

/* Runs fn(arg) with the calling thread's allocations counted in shim_own,
 * outside the segment, and none tracked: what the shim makes a program
 * thread allocate or free is not the program's. */
static int as_shim(int (*fn)(void *), void *arg)
{
    struct seg_counters *cls = rt.cls;
    struct seg_tracked *trk = rt.trk;
    long countdown = rt.countdown;
    rt.cls = shim_own.cls;
    rt.trk = shim_own.trk;
    rt.countdown = LONG_MAX;
    int r = fn(arg);
    rt.cls = cls;
    rt.trk = trk;
    rt.countdown = countdown;
    return r;
}

/* Waits until `until` (CLOCK_MONOTONIC, absolute) or a change of
 * sampler_state from `seen`, whichever comes first. */
static void sampler_wait(const struct timespec *until, int seen)
{
    syscall(SYS_futex, &sampler_state, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, seen, until,
            NULL, FUTEX_BITSET_MATCH_ANY);
}

/* How long the sampler sleeps at most between looks at the thread count:
 * a program thread that never called the malloc family has none of our
 * thread-exit hooks, so when it is the last to go, the sampler finds
 * itself alone at its next look. */
#define SAMPLER_LOOK_NS 100000000L

/* Sleeps until `next` (absolute), looking at the thread count every
 * SAMPLER_LOOK_NS. Returns 1 to go on, 0 when the sampler must end: asked
 * to (S_STOP), or alone in the process, where it takes S_STOP itself. */
static int sampler_sleep(const struct timespec *next)
{
    for (;;) {
        struct timespec now, until;
        int st = __atomic_load_n(&sampler_state, __ATOMIC_ACQUIRE);
        if (st == S_STOP)
            return 0;
        if (st == S_RUN && program_threads() <= 0 &&
            __atomic_compare_exchange_n(&sampler_state, &st, S_STOP, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            return 0;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next->tv_sec || (now.tv_sec == next->tv_sec && now.tv_nsec >= next->tv_nsec))
            return 1;
        until = now;
        until.tv_nsec += SAMPLER_LOOK_NS;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        if (until.tv_sec > next->tv_sec || (until.tv_sec == next->tv_sec && until.tv_nsec > next->tv_nsec))
            until = *next;
        sampler_wait(&until, st);
    }
}

static void ts_add_ms(struct timespec *t, long ms)
{
    t->tv_nsec += (ms % 1000) * 1000000L;
    t->tv_sec += ms / 1000 + t->tv_nsec / 1000000000L;
    t->tv_nsec %= 1000000000L;
}

/* The sampler thread. It returns (never pthread_exit, which would load
 * libgcc_s to unwind) when asked to stop or when it is alone: glibc then
 * takes it off its count, and if it was the last, ends the process with
 * exit(0) as the program's last thread would have. */
static void *sampler_main(void *arg)
{
    struct timespec next;
    long interval_ms = (long)(uintptr_t)arg;

    /* Its allocations are the shim's, not the program's (malloc_info's
     * FILE, under glibc): counted in a slot outside the segment, never
     * tracked, and no stacks. It frees only what it allocated. */
    rt.cls = sampler_own.cls;
    rt.trk = sampler_own.trk;
    rt.state = T_LIVE;
    rt.countdown = LONG_MAX;
    /* The first pass waits min(interval, 200 ms). Run at once, on the CPU
     * of the thread that created it (a program's allocating thread), it
     * kept that thread off its CPU for 2-5 ms in about one start in three
     * (a program timing its own malloc+free pairs saw max 3.5-5.2 ms where
     * its usual max is 0.5-0.8 ms, every backend); woken from a sleep, it
     * runs where there is room (max 0.4-1.5 ms in 47 starts of 48, one
     * 4.1 ms). */
    clock_gettime(CLOCK_MONOTONIC, &next);
    ts_add_ms(&next, interval_ms < 200 ? interval_ms : 200);
    if (!sampler_sleep(&next))
        return NULL;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (;;) {
        struct timespec now;
        sample_once();
        ts_add_ms(&next, interval_ms);
        /* After a pass that ran late, the next one is a whole interval from
         * now, rather than back to back. */
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec || (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec)) {
            next = now;
            ts_add_ms(&next, interval_ms);
        }
        if (!sampler_sleep(&next))
            return NULL;
    }
}

static int create_sampler(void *arg)
{
    pthread_attr_t attr;
    int err;
    (void)arg;
    /* The default stack size (address space only): when the program's
     * last thread is gone first, the process's exit (its atexit handlers
     * and static destructors) runs on this thread. */
    pthread_attr_init(&attr);
    err = pthread_create(&sampler_thread, &attr, sampler_main, (void *)(uintptr_t)sampler_interval);
    pthread_attr_destroy(&attr);
    return err;
}

/* Started by the first tracked allocation, so that short-lived processes
 * (a shell's children) never get a thread. All signals are blocked in it:
 * they belong to the program's threads. Joinable, for sampler_stop_if_last. */
static void start_sampler(void)
{
    int none = S_NONE, err = errno;
    sigset_t all, old;

    if (!__atomic_compare_exchange_n(&sampler_state, &none, S_STARTING, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (as_shim(create_sampler, NULL) == 0) {
        pthread_setname_np(sampler_thread, "mallocshim");
        __atomic_store_n(&sampler_state, S_RUN, __ATOMIC_RELEASE);
    } else {
        __atomic_store_n(&sampler_state, S_STOP, __ATOMIC_RELEASE);
        log_msg("cannot start the sampler thread; the time series stays empty");
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = err;   /* inside malloc: a success leaves errno alone */
}

static int join_sampler(void *arg)
{
    struct timespec deadline;
    (void)arg;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += 5;
    return pthread_clockjoin_np(sampler_thread, NULL, CLOCK_MONOTONIC, &deadline);
}

/* Called by each program thread on its way out (slot_exit). When it is the
 * program's last thread, the sampler ends first and is joined, so that this
 * thread is the last that glibc counts: its exit then ends the process with
 * exit(0), as without the shim, and a signal pending for the process is
 * handled as it would be. The join waits for a pass under way (milliseconds);
 * after 5 s it gives up with a line, and the sampler ends at its next look. */
static void sampler_stop_if_last(void)
{
    int run = S_RUN;
    if (__atomic_load_n(&sampler_state, __ATOMIC_ACQUIRE) != S_RUN || program_threads() > 1 ||
        !__atomic_compare_exchange_n(&sampler_state, &run, S_STOP, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return;
    syscall(SYS_futex, &sampler_state, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
    int cancel, saved = errno;
    /* The join is a cancellation point; a thread cancelled on its way out
     * must still see it done. */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    int err = as_shim(join_sampler, NULL);
    pthread_setcancelstate(cancel, NULL);
    errno = saved;
    if (err)
        log_msg("the sampler thread did not end: %s", strerrordesc_np(err));
}

/* ---- The segment's file ---- */

/* Removes `path` if it is a regular file of ours that no live process
 * holds: left by an earlier image of this pid (an exec) or by a dead process
 * whose pid came round again. Every live writer holds a shared flock on its
 * segment, so an exclusive one that succeeds proves the file is stale, even
 * across pid namespaces that share the directory. */
static int remove_stale(const char *path)
{
    struct stat st, fst;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK), gone = 0;
    if (fd < 0)
        return 0;
    if (fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode) && fst.st_uid == geteuid() &&
        flock(fd, LOCK_EX | LOCK_NB) == 0 && lstat(path, &st) == 0 &&
        st.st_ino == fst.st_ino && st.st_dev == fst.st_dev)
        gone = unlink(path) == 0;
    close(fd);
    return gone;
}

/* A descriptor of ours, moved above the standard three: a daemon started
 * with stdin or stdout closed must not find the segment there. */
static int above_std(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int err = errno;
    close(fd);
    errno = err;
    return moved;
}

/* An unnamed file in dir, or, where O_TMPFILE is not supported, the named
 * file itself (then *named is set); never descriptor 0, 1 or 2. */
static int create_segment(const char *dir, const char *path, int *named)
{
    int fd = above_std(open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
    *named = 0;
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
    *named = 1;
    for (int attempt = 0; attempt < 2; attempt++) {
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            if ((fd = above_std(fd)) < 0)
                unlink(path);
            break;
        }
        if (errno != EEXIST || !remove_stale(path))
            break;
    }
    return fd;
}

static int same_file(int fd)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_ino == seg_ino && st.st_dev == seg_dev;
}

/* Makes fd (from live_create, mapped at seg) the live segment's memory
 * file, and seals it: it can no longer shrink, grow, or be written by
 * anyone but the mapping that exists, so that no other process (the
 * owner, root, a cleanup script) can make a page of it vanish under the
 * program's threads. Without F_SEAL_FUTURE_WRITE (before Linux 5.1) the
 * size seals alone. */
static void live_set(int fd)
{
    struct stat st;
    live_fd = fd;
    if (fd < 0 || fstat(fd, &st) != 0) {
        live_fd = -1;
        return;
    }
    live_dev = st.st_dev;
    live_ino = st.st_ino;
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0 &&
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
        log_msg("cannot seal the segment's memory file: %s; whoever may open it could shrink "
                "it under the program", strerrordesc_np(errno));
}

static int same_live(int fd)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_ino == live_ino && st.st_dev == live_dev;
}

/* Calls fn(off, len, ctx) on each range of [from, size) of the live
 * segment that may hold data, in order: the memory file `fd`'s data ranges
 * (SEEK_DATA), or where there is none, the resident pages of the mapping
 * (mincore), so that a copy never writes the megabytes that nothing has
 * touched. Returns 0 or the first error (an errno value). */
static int seg_ranges(int fd, size_t from, size_t size, int (*fn)(size_t, size_t, void *), void *ctx)
{
    if (fd >= 0) {
        off_t off = (off_t)from;
        while ((size_t)off < size) {
            off_t d = lseek(fd, off, SEEK_DATA), h;
            if (d < 0)
                return errno == ENXIO ? 0 : errno;
            if ((size_t)d >= size)
                break;
            h = lseek(fd, d, SEEK_HOLE);
            if (h < 0 || (size_t)h > size)
                h = (off_t)size;
            int err = fn((size_t)d, (size_t)(h - d), ctx);
            if (err)
                return err;
            off = h;
        }
        return 0;
    }
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char vec[4096];
    for (size_t base = from & ~(pg - 1); base < size; base += sizeof vec * pg) {
        size_t len = size - base < sizeof vec * pg ? size - base : sizeof vec * pg;
        if (mincore((char *)seg + base, len, vec) != 0)
            return errno;
        for (size_t i = 0; i * pg < len; i++) {
            if (!(vec[i] & 1))
                continue;
            size_t lo = base + i * pg, hi = lo + pg < size ? lo + pg : size;
            if (lo < from)
                lo = from;
            int err = fn(lo, hi - lo, ctx);
            if (err)
                return err;
        }
    }
    return 0;
}

static int pwrite_range(size_t off, size_t len, void *ctx)
{
    int fd = *(int *)ctx;
    while (len) {
        ssize_t w = pwrite(fd, (const char *)seg + off, len, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : EIO;
        off += (size_t)w;
        len -= (size_t)w;
    }
    return 0;
}

static int memcpy_range(size_t off, size_t len, void *ctx)
{
    memcpy((char *)ctx + off, (const char *)seg + off, len);
    return 0;
}

/* A shared mapping of `size` bytes of a new memory file for the live
 * segment (*fd), not sealed yet (live_set does that, once every writable
 * mapping of it is made); or, where memfd_create is missing, private
 * memory (*fd = -1). Where a segment is mapped already (seg, in a fork
 * child), it starts as a copy of it (from_fd: see seg_ranges). Returns
 * MAP_FAILED when there is neither. */
static void *live_create(size_t size, int *fd, int from_fd)
{
    void *m;
    /* MFD_NOEXEC_SEAL (Linux 6.3) where vm.memfd_noexec asks for it */
    *fd = (int)syscall(SYS_memfd_create, "mallocshim", MFD_CLOEXEC | MFD_ALLOW_SEALING | 0x0008U);
    if (*fd < 0 && errno == EINVAL)
        *fd = (int)syscall(SYS_memfd_create, "mallocshim", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    *fd = above_std(*fd);
    if (*fd >= 0) {
        /* From a fork's parent: its data written in (pwrite allocates the
         * pages as it goes; copying through a new mapping would fault each
         * one in first). */
        if (ftruncate(*fd, (off_t)size) == 0 &&
            (!seg || seg_ranges(from_fd, 0, size, pwrite_range, fd) == 0) &&
            (m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0)) != MAP_FAILED)
            return m;
        close(*fd);
        *fd = -1;
    }
    m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED && seg && seg_ranges(from_fd, 0, size, memcpy_range, m) != 0) {
        munmap(m, size);
        m = MAP_FAILED;
    }
    return m;
}


/* Writes the copy's header to fd: the live one's, marked as the copy,
 * with copy_seq and copy_ns. Precondition: copy_mu held. */
static int copy_header(int fd, uint32_t extra_flags)
{
    struct seg_header h;
    memcpy(&h, seg, sizeof h);
    h.flags |= SEG_F_COPY | extra_flags;
    h.copy_seq = copy_seq;
    h.copy_ns = copy_ns;
    ssize_t w = pwrite(fd, &h, sizeof h, 0);
    return w == (ssize_t)sizeof h ? 0 : w < 0 ? errno : EIO;
}

/* Opens the copy again by its name, after the program closed our
 * descriptor of it (a daemon closing every descriptor at start): only the
 * same file, and only once it has its name. Returns 1 when seg_fd is good
 * again. Precondition: copy_mu held. */
static int copy_reopen(void)
{
    struct stat st;
    if (published != 1)
        return 0;
    int fd = above_std(open(seg_path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (fd < 0)
        return 0;
    if (fstat(fd, &st) != 0 || st.st_ino != seg_ino || st.st_dev != seg_dev) {
        close(fd);
        return 0;
    }
    seg_fd = fd;
    flock(fd, LOCK_SH);   /* "alive" again: the closed descriptor's lock went with it */
    return 1;
}

/* A descriptor of the copy for one rewrite, or -1: once named, opened by
 * name (and checked to be the same file) for this rewrite alone, so that a
 * descriptor number the program closes and reuses meanwhile never takes
 * our bytes; before that, seg_fd. *own says whether to close it after.
 * Precondition: copy_mu held. */
static int copy_open(int *own)
{
    struct stat st;
    *own = 0;
    if (!same_file(seg_fd))
        copy_reopen();   /* for the lock that says "alive" */
    if (published != 1)
        return same_file(seg_fd) ? seg_fd : -1;
    int fd = open(seg_path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && (errno == EACCES || errno == EPERM) && same_file(seg_fd))
        return seg_fd;   /* a process that became another user: the one it opened */
    if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_ino != seg_ino || st.st_dev != seg_dev)) {
        close(fd);
        fd = -1;
        errno = ESTALE;
    }
    *own = fd >= 0;
    return fd;
}

/* Rewrites the copy from the live segment (seg.h, "Two files"): only with
 * pwrite, so that a full file system, a truncation or a removal of the
 * copy is an error here, never a fault in the program. The live segment's
 * resident pages are written (mincore: no descriptor of the program's is
 * touched; a page swapped out keeps its last copy, which nothing has
 * changed since). A failure leaves the copy as of its last rewrite, marked
 * SEG_F_COPY_STALE until one succeeds; recording goes on, and the next pass
 * tries again. Says one line when the copy goes stale, when it is current
 * again, and when someone truncated it.
 *   COPY_PASS   the sampler's: at most one rewrite started per
 *               COPY_EVERY_NS (a short interval_ms would otherwise spend a
 *               core on it), until one fails
 *   COPY_NOW    before the copy is named, and in a fork child
 *   COPY_FINAL  at exit: the last one (copy_lock: waits for one under
 *               way at most 2 s) */
#define COPY_EVERY_NS 900000000ull
/* Synchronization: copy_mu. The final rewrite was made; when the last
 * rewrite started (CLOCK_MONOTONIC). */
static int copy_done;
static uint64_t copy_start;

/* Takes copy_mu; at exit (COPY_FINAL) waiting 2 s at most (a rewrite
 * under way on a loaded machine, not a thread that never lets go).
 * Returns 0 when it is held. */
static int copy_lock(int mode)
{
    if (mode != COPY_FINAL)
        return pthread_mutex_lock(&copy_mu);
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += 2;
    return pthread_mutex_clocklock(&copy_mu, CLOCK_MONOTONIC, &dl);
}

/* copy_refresh's work. Precondition: copy_mu held. */
static void copy_write(int mode)
{
    struct stat st;
    int err = 0, saved = errno, own, fd;

    uint64_t now = clock_ns(CLOCK_MONOTONIC);
    if (copy_done || (mode == COPY_PASS && !copy_err && copy_start && now - copy_start < COPY_EVERY_NS))
        goto out;
    copy_start = now;
    if (live_fd >= 0 && !same_live(live_fd)) {
        /* The program closed it: readers find the copy instead. */
        live_fd = -1;
        __atomic_store_n(&seg->live_fd, -1, __ATOMIC_RELAXED);
    }
    if ((fd = copy_open(&own)) < 0) {
        err = errno ? errno : EBADF;
    } else if (fstat(fd, &st) == 0 && (uint64_t)st.st_size != geo.total_size) {
        if (!copy_cut)
            log_msg("%s was cut to %lld bytes while the process ran; it is written again whole",
                    seg_path, (long long)st.st_size);
        copy_cut = 1;
        if (ftruncate(fd, (off_t)geo.total_size) != 0)
            err = errno;
    }
    copy_seq |= 1;   /* odd: readers of the copy wait */
    if (!err)
        err = copy_header(fd, copy_err ? SEG_F_COPY_STALE : 0);
    if (!err)
        err = seg_ranges(-1, sizeof(struct seg_header), geo.total_size, pwrite_range, &fd);
    copy_seq++;
    if (!err) {
        copy_ns = clock_ns(CLOCK_REALTIME);
        err = copy_header(fd, 0);
    }
    if (err) {
        if (fd >= 0)
            copy_header(fd, SEG_F_COPY_STALE);   /* at least say so, if the header page is there */
        if (!copy_err)
            log_msg("cannot write %s: %s; it stays as it was (marked stale), recording goes on, "
                    "and `shimdump %d` reads the process itself", seg_path, strerrordesc_np(err),
                    (int)getpid());
    } else if (copy_err) {
        log_msg("%s is written again", seg_path);
    }
    copy_err = err;
    if (own)
        close(fd);
out:
    errno = saved;
}

static void copy_refresh(int mode)
{
    if (copy_lock(mode) != 0)
        return;
    copy_write(mode);
    pthread_mutex_unlock(&copy_mu);
}

/* Gives the copy its name, once it is complete. Runs once: from the
 * sampler's first pass (never in a program thread: the first rewrite of
 * the copy is megabytes of pwrite in a process that ran a while; a process
 * that ends before its first pass leaves no name),
 * or at start in a process running as root, which may switch to another
 * user before that (mariadbd with user=mysql) and could then no longer link
 * a root-owned file (fs.protected_hardlinks). Not at fork: a child that
 * _exit()s would leave its name behind. */
static void publish(void)
{
    char proc[64];
    int first = 0;

    /* Under copy_mu: the process's exit (record_exit) either sees the name
     * and removes it, or stops it from being given. */
    pthread_mutex_lock(&copy_mu);
    if (published || copy_done)
        goto done;
    if (!same_file(seg_fd)) {
        published = -1;
        log_msg("the segment's descriptor %d was closed by the program; %s is not created, "
                "so shimdump cannot find pid %d", seg_fd, seg_path, (int)getpid());
        goto done;
    }
    /* A name is only ever given to a complete copy. */
    copy_write(COPY_NOW);
    fmt_buf(proc, sizeof proc, "/proc/self/fd/%d", seg_fd);
    for (int attempt = 0; attempt < 2; attempt++) {
        /* The /proc link is the way that needs no privilege; the fallback
         * needs CAP_DAC_READ_SEARCH. Report the first one's error. */
        if (linkat(AT_FDCWD, proc, AT_FDCWD, seg_path, AT_SYMLINK_FOLLOW) == 0) {
            published = 1;
            goto done;
        }
        first = errno;
        if (linkat(seg_fd, "", AT_FDCWD, seg_path, AT_EMPTY_PATH) == 0) {
            published = 1;
            goto done;
        }
        if (first != EEXIST || !remove_stale(seg_path))
            break;
    }
    published = -1;
    log_msg("cannot create %s: %s%s; shimdump cannot find pid %d", seg_path,
            strerrordesc_np(first), first == EPERM && geteuid() != 0 && seg->uid == 0
                ? " (the file is root's and this process no longer is)" : "",
            (int)getpid());
done:
    pthread_mutex_unlock(&copy_mu);
}

static void fill_header(const struct conf *c, const struct seg_geometry *g)
{
    char text[SEG_CONFIG_MAX];
    seg->version = SEG_VERSION;
    seg_layout(seg, g);
    seg->pid = (uint32_t)getpid();
    seg->uid = (uint32_t)getuid();
    seg->start_ns = clock_ns(CLOCK_REALTIME);
    seg->start_mono_ns = clock_ns(CLOCK_MONOTONIC);
    realtime_offset = seg->start_ns - seg->start_mono_ns;
    seg->backend = (uint32_t)be->id;
    seg->sample = (uint32_t)c->sample;
    seg->interval_ms = (uint32_t)c->interval_ms;
    seg->flags = c->sample == 1 ? SEG_F_EXACT_REQ : 0;
    if (read_proc("/proc/self/comm", text, sizeof seg->comm)) {
        char *nl = strchr(text, '\n');
        if (nl)
            *nl = '\0';
        fmt_buf(seg->comm, sizeof seg->comm, "%s", text);
    }
    fmt_buf(seg->backend_name, sizeof seg->backend_name, "%s", be->name);
    be->version(seg->backend_version, sizeof seg->backend_version);
    conf_format(c, seg->config, sizeof seg->config);
}

static void map_regions(void)
{
    char *b = (char *)seg;
    geo = *seg;
    slots = (struct seg_slot *)(b + geo.off_slots);
    overflow = (struct seg_slot *)(b + geo.off_overflow);
    retired = (struct seg_slot *)(b + geo.off_retired);
    cstates = (struct seg_cstate *)(b + geo.off_cstate);
    cslots = (struct seg_cslot *)(b + geo.off_cslots);
    ages = (struct seg_ages *)(b + geo.off_ages);
    series = (struct seg_series *)(b + geo.off_series);
    samples = (struct seg_sample *)(series + 1);
    events = (struct seg_events *)(b + geo.off_events);
    evs = (struct seg_event *)(events + 1);
    table = (struct seg_track *)(b + geo.off_track);
    filter = (uint8_t *)(b + geo.off_filter);
    track_mask = geo.track_cap - 1;
    ev_mask = (geo.events_cap & (geo.events_cap - 1)) == 0 ? geo.events_cap - 1 : 0;
    filter_shift = 64 - geo.filter_bits;
}

/* ---- fork and exit ---- */

static void fork_prepare(void)
{
    stack_fork_prepare();
    pthread_mutex_lock(&sampler_mu);
    spin_lock(&fold_lock);
}

static void fork_parent(void)
{
    spin_unlock(&fold_lock);
    pthread_mutex_unlock(&sampler_mu);
    stack_fork_done(0);
}


/* The child gets its own live segment, a copy of the parent's as of the
 * fork (its heap is a copy too), over the same address so that every
 * pointer stays good, and its own copy file, named when it first tracks a
 * block. The parent's threads may still write the parent's segment while
 * it is copied, so the child's counts are marked approximate (inherited),
 * and its filter is rebuilt from its table so the two agree. The slots of
 * the parent's other threads, which the child does not have, fold into
 * retired. If no copy file can be made, the child records all the same
 * (shimdump reads it through /proc); if not even a live segment can be
 * had, it stops recording: never into the parent's. */
static void fork_child_segment(void)
{
    struct seg_slot *mine = rt.slot;
    size_t size = geo.total_size;
    int fd = -1, named = 0, err = ENOENT, parent_copy = seg_fd;
    int parent_live = same_live(live_fd) ? live_fd : -1;
    int new_live;
    struct stat st;

    spin_unlock(&fold_lock);
    pthread_mutex_init(&sampler_mu, NULL);
    pthread_mutex_init(&copy_mu, NULL);
    sampler_state = S_NONE;
    rt.tid = 0;
    seg_fd = -1;
    published = -1;
    copy_seq = copy_ns = copy_start = 0;
    copy_err = copy_cut = copy_done = 0;
    /* The parent's copy, known by identity: ours is made below. */
    int parent_copy_ok = same_file(parent_copy);

    void *m = live_create(size, &new_live, parent_live);
    if (m == MAP_FAILED || mremap(m, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, seg) == MAP_FAILED) {
        /* Nothing of its own: stop recording in this child, and let
         * nothing of it (a thread's exit folds its slot) write the
         * parent's segment: zero pages of its own over the range. */
        if (m != MAP_FAILED)
            munmap(m, size);
        if (new_live >= 0)
            close(new_live);
        mmap(seg, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (parent_live >= 0)
            close(parent_live);
        if (parent_copy_ok)
            close(parent_copy);
        seg_path[0] = '\0';
        log_msg("fork child %d: no memory for its segment; recording stops", (int)getpid());
        __atomic_store_n(&dispatch_ops, be, __ATOMIC_RELEASE);
        stack_detach();
        return;
    }
    if (parent_live >= 0)
        close(parent_live);   /* the parent's; never one of the program's */
    live_set(new_live);

    if (seg_path[0] && parent_copy_ok) {
        /* seg_path is "<dir>/mallocshim.<pid>": the same with our pid. */
        char *slash = strrchr(seg_path, '/'), *dot = strrchr(seg_path, '.');
        char dir[sizeof seg_path];
        size_t dl = slash && slash != seg_path ? (size_t)(slash - seg_path) : 1;
        memcpy(dir, seg_path, dl);
        dir[dl] = '\0';
        fmt_buf(dot + 1, sizeof seg_path - (size_t)(dot + 1 - seg_path), "%u", (unsigned)getpid());
        fd = create_segment(dir, seg_path, &named);
        err = fd < 0 ? errno : ftruncate(fd, (off_t)size) != 0 || fstat(fd, &st) != 0 ? errno : 0;
        if (err == 0) {
            seg_fd = fd;
            seg_dev = st.st_dev;
            seg_ino = st.st_ino;
            flock(fd, LOCK_SH);
            published = named;
        } else if (fd >= 0) {
            close(fd);
            if (named)
                unlink(seg_path);
        }
    }
    if (parent_copy_ok)
        close(parent_copy);   /* the parent's file (checked before ours replaced its identity) */
    if (seg_fd < 0) {
        if (seg_path[0])
            log_msg("fork child %d: cannot create %s: %s; recording goes on, and `shimdump %d` "
                    "reads the process itself", (int)getpid(), seg_path, strerrordesc_np(err),
                    (int)getpid());
        seg_path[0] = '\0';
    }
    seg->pid = (uint32_t)getpid();
    seg->start_ns = clock_ns(CLOCK_REALTIME);
    seg->start_mono_ns = clock_ns(CLOCK_MONOTONIC);
    seg->heartbeat_ns = 0;
    seg->flags |= SEG_F_INHERITED;
    seg->live_fd = live_fd;
    for (uint32_t i = 0; i < geo.nslots; i++)
        if (&slots[i] != mine && slots[i].state == SEG_SLOT_LIVE) {
            fold_locked((uint64_t *)slots[i].cls, SLOT_WORDS, &slots[i].state);
            seg->slots_in_use--;
        }
    for (uint32_t i = 0; i < geo.ncslots && i < seg->cslots_high; i++)
        if (i + 1 != rt.cslot && cstates[i].state == SEG_SLOT_LIVE) {
            fold_locked((uint64_t *)cslots[i].cls, CSLOT_WORDS, &cstates[i].state);
            seg->slots_in_use--;
        }
    if (published == 1)
        copy_refresh(COPY_NOW);   /* created under its name (no O_TMPFILE): complete it now */
    if (hot.filter == filter_all)
        return;
    /* Every entry, not only resident pages: an entry the filter missed
     * would never be untracked. */
    memset(filter, 0, (size_t)1 << geo.filter_bits);
    for (uint32_t i = 0; i <= track_mask; i++)
        if (table[i].addr > 1)
            filter_add(&table[i], NULL);
}

/* The child's own segment first; then stacks may be taken again (into it,
 * not the parent's). */
static void fork_child(void)
{
    fork_child_segment();
    stack_fork_done(1);
}

/* At normal exit the file goes, if the name is still ours (same inode: a
 * process in another pid namespace sharing the directory may use the name
 * too). A process that has switched to another user since start may not be
 * allowed to remove it; the FINISHED flag then says it exited. */
__attribute__((destructor)) static void record_exit(void)
{
    struct stat st;
    if (!seg || seg->pid != (uint32_t)getpid())
        return;
    __atomic_fetch_or(&seg->flags, SEG_F_FINISHED, __ATOMIC_RELAXED);
    /* Under copy_mu, so that no name is given (publish) nor rewrite made
     * after this; unless the lock is not had in 2 s. */
    if (copy_lock(COPY_FINAL) != 0)
        return;
    if (published == 1 && same_file(seg_fd) &&
        !(lstat(seg_path, &st) == 0 && st.st_ino == seg_ino && st.st_dev == seg_dev &&
          unlink(seg_path) == 0))
        copy_write(COPY_FINAL);   /* the file stays: as of now, saying the process exited */
    copy_done = 1;
    pthread_mutex_unlock(&copy_mu);
}

/* ---- Start ---- */

const char *record_path(void)
{
    return seg_path;
}

/* Fills uc_for from usable_for. Returns 1, or 0 when usable_for does not
 * answer alike for the 8 requests of some step, or gives a usable size
 * that does not fit (then uc_for is not used). */
static int uc_fill(size_t (*usable_for)(size_t))
{
    for (size_t n = 0; n <= UC_MAX; n++) {
        size_t u = usable_for(n);
        size_t g = (n + 7) >> 3;
        if (u < n || u > 0xffff)
            return 0;
        uint32_t e = (uint32_t)u | (uint32_t)sizeclass_of(u) << 16;
        if (n == 0 || (n & 7) == 1)
            uc_for[g] = e;   /* the first request of its step (0 alone in step 0) */
        else if (uc_for[g] != e)
            return 0;
    }
    return 1;
}

long record_stack_depth(const struct conf *c)
{
    if (!(c->set_mask & (1u << CONF_K_STACKS)) && c->sample == 1)
        return 0;   /* unwinding every allocation: only when asked for */
    return c->stacks;
}

int record_start(const struct conf *c, const struct backend_ops *backend,
                 const struct backend_ops **ops)
{
    struct seg_geometry g;
    struct seg_header probe;
    void *map;
    int fd, lfd, err, named;
    struct stat st;

    if (!c->record)
        return ENOTSUP;
    seg_default_geometry(&g);
    g.series_cap = (uint32_t)c->series;
    g.nslots = (uint32_t)c->slots;
    g.ncslots = (uint32_t)c->counter_slots;
    g.stack_depth = (uint32_t)record_stack_depth(c);
    memset(&probe, 0, sizeof probe);
    if (seg_layout(&probe, &g) != 0)
        return EINVAL;
    fmt_buf(seg_path, sizeof seg_path, "%s/mallocshim.%u", c->shm_dir, (unsigned)getpid());
    map = live_create(probe.total_size, &lfd, -1);
    if (map == MAP_FAILED) {
        err = errno;
        log_msg("cannot map %llu bytes for the segment: %s; recording is off",
                (unsigned long long)probe.total_size, strerrordesc_np(err));
        seg_path[0] = '\0';
        return err;
    }
    if ((err = pthread_key_create(&slot_key, slot_exit)) != 0) {
        log_msg("cannot create a thread key: %s; recording is off", strerrordesc_np(err));
        munmap(map, probe.total_size);
        if (lfd >= 0)
            close(lfd);
        seg_path[0] = '\0';
        return err;
    }
    /* The copy (seg.h): sparse, its size fixed now, its pages written only
     * by copy_refresh. A setuid program's stays its effective user's:
     * handing a file that the process writes to the invoking user would let
     * that user steer a privileged process. */
    fd = create_segment(c->shm_dir, seg_path, &named);
    if (fd >= 0 && ftruncate(fd, (off_t)probe.total_size) == 0 && fstat(fd, &st) == 0) {
        seg_fd = fd;
        seg_dev = st.st_dev;
        seg_ino = st.st_ino;
        published = named;
        flock(fd, LOCK_SH);   /* "alive": see remove_stale */
        /* An earlier image of this pid (exec) that never named its file left
         * nothing; one that did, left this name: clear it now. */
        if (!named)
            remove_stale(seg_path);
    } else {
        err = errno;
        if (fd >= 0) {
            close(fd);
            if (named)
                unlink(seg_path);
        }
        log_msg("cannot create %s: %s; recording goes on, and `shimdump %d` reads the process "
                "itself", seg_path, strerrordesc_np(err), (int)getpid());
        seg_path[0] = '\0';
        published = -1;
    }
    be = backend;
    seg = map;
    live_set(lfd);
    fill_header(c, &g);
    seg->live_fd = live_fd;
    map_regions();
    if (geo.stack_depth) {
        with_stacks = stack_start(seg, &geo) == 0;
        if (!with_stacks)
            seg->flags |= SEG_F_NO_UNWINDER;
    }
    sample_n = c->sample;
    tsc_start();
    log_keep = log1p(-1.0 / (double)(sample_n > 1 ? sample_n : 2));
    sampler_interval = c->interval_ms;
    nptl_nthreads = dlvsym(RTLD_DEFAULT, "__nptl_nthreads", "GLIBC_PRIVATE");
    pthread_atfork(fork_prepare, fork_parent, fork_child);

    hot.malloc = backend->malloc;
    hot.free = backend->free;
    hot.usable = backend->usable_live;
    hot.usable_for = backend->usable_for;
    uc_table = backend->usable_for && uc_fill(backend->usable_for);
    hot.filter = sample_n > 1 ? filter : filter_all;
    hot.filter_shift = sample_n > 1 ? filter_shift : 63;
    rec_ops = *backend;
    /* The backend's own variants, so the hot path tests nothing about it. */
    /* (a backend whose usable_for answers unevenly within 8 bytes: from
     * the block, as glibc's) */
    rec_ops.malloc = uc_table ? rec_malloc_table : rec_malloc;
    rec_ops.free = rec_free;
    rec_ops.free_sized = uc_table ? rec_free_sized_table : rec_free_sized;
    rec_ops.calloc = rec_calloc;
    rec_ops.realloc = rec_realloc;
    rec_ops.aligned = rec_aligned;
    /* The header is complete: make it findable. */
    __atomic_store_n(&seg->magic, SEG_MAGIC, __ATOMIC_RELEASE);
    if (geteuid() == 0)
        publish();   /* see publish(): root may become someone else first */
    else if (published == 1)
        copy_refresh(COPY_NOW);   /* created under its name (no O_TMPFILE): complete it now */
    *ops = &rec_ops;
    return 0;
}
