/* rec: what the files of record share (record.c, the hot path; track.c,
 * clock.c, sampler.c, segfile.c, lifecycle.c): the state that record_start
 * sets, with its synchronization rules, the thread's own slot, and the
 * inline helpers that more than one of them needs. Internal to those files:
 * everything else goes through record.h. */
#ifndef MALLOCSHIM_REC_H
#define MALLOCSHIM_REC_H

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "attr.h"
#include "backend.h"
#include "conf.h"
#include "seg.h"

#pragma GCC visibility push(hidden)

/* ---- State; everything here is set by record_start and read-only after,
 * except where a Synchronization note says otherwise. ---- */

extern const struct backend_ops *be;
/* A private copy of the header as written at start: every size, count and
 * offset the writer uses comes from here, never from the shared file, which
 * anyone who can write it could change under us. */
extern struct seg_header geo;
extern uint64_t realtime_offset;   /* CLOCK_REALTIME - CLOCK_MONOTONIC at start */
extern struct seg_header *seg;
extern struct seg_slot *slots, *overflow, *retired;
/* The counter slots (seg.h) of threads beyond the slots, and their states. */
extern struct seg_cslot *cslots;
extern struct seg_cstate *cstates;
extern struct seg_ages *ages;
extern struct seg_series *series;
extern struct seg_sample *samples;
extern struct seg_history *history;
extern struct seg_point *tier_points[SEG_TIERS_MAX];   /* tier t's ring, geo.tier_cap[t] */
extern struct seg_events *events;
extern struct seg_event *evs;
extern struct seg_track *table;
extern uint8_t *filter;
extern uint32_t track_mask;
extern uint64_t ev_mask;         /* events_cap - 1 where that is a power of two, else 0 */
/* The sampling settings in force: the `sample`, `sample_bytes` and `track`
 * keys at start, changed by shimdump --set (settings_apply), with the cost
 * B of an allocation that they give (seg_track_p; 1 with sample:1) and
 * whether tracked blocks get a stack (stacks_on; with_stacks says whether
 * they can). Synchronization: written by the sampler thread alone, between
 * two increments of settings_gen (odd while it writes: a seqlock), after
 * record_start; a thread copies them into its own rt at its next draw
 * (track.c, adopt). */
extern long sample_n;
extern uint64_t sample_bytes;    /* 0: sizes do not count */
extern long sample_cost_b;
extern int track_on, stacks_on;
extern uint32_t settings_gen;
extern uint64_t sample_seed;     /* the `seed` key; 0: seeded from the clock */
extern char seg_path[CONF_PATH_MAX + 32];
extern pthread_key_t slot_key;
/* What the hot path reads, on one cache line: the backend's functions (no
 * hop through its table) and the filter. Chosen by record_start, read-only
 * after. With sample:1 every block is tracked and the filter would only add
 * two atomic updates per block: free then asks the table directly, through
 * a stand-in of the filter's size whose cells are all set (filter_all,
 * private memory; NULL with sampling). */
struct rec_hot {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void (*free_sized)(void *, size_t);
    size_t (*usable)(void *);           /* the backend's usable_live */
    size_t (*usable_for)(size_t);
    const uint8_t *filter;
    size_t (*usable_of)(const void *, const void *);   /* the backend's, or NULL */
    const void *usable_self;
};
_Static_assert(sizeof(struct rec_hot) <= 64, "the hot path's data is one cache line");
extern struct rec_hot hot __attribute__((aligned(64)));
extern const uint8_t *filter_all;
/* The segment's file is created unnamed (O_TMPFILE) and given its name
 * (linkat) when the process first tracks a block, so that the many short
 * processes a shell or mysqld_safe runs leave nothing behind. Kept: the
 * descriptor and its identity, to check that the program has not closed it
 * and reused the number. Synchronization: `published` changes from 0 in
 * record_start (root), in the sampler thread (publish), and in a fork child. */
extern int seg_fd;
extern dev_t seg_dev;
extern ino_t seg_ino;
extern int published;   /* 0: not yet, 1: named, -1: could not be named */
/* The live segment's memory file (seg.h, "Two files"), or -1 where the
 * segment is private memory; with its identity (segfile.c), so that a
 * number the program closed and reused is never taken for it. Set by
 * record_start (and in a fork child), read-only after. */
extern int live_fd;
/* The copy's writers (the sampler each pass, publish, exit) take copy_mu,
 * which guards copy_seq (odd while a rewrite is under way), copy_ns (the
 * last complete copy) and copy_err (the errno of the last failed rewrite,
 * 0 when current: a line is said when it changes). */
extern pthread_mutex_t copy_mu;
extern uint64_t copy_seq, copy_ns;
extern int copy_err;
extern int copy_cut;    /* a truncation was reported */
/* Synchronization: copy_mu. The final rewrite was made; when the last
 * rewrite started (CLOCK_MONOTONIC). */
extern int copy_done;
extern uint64_t copy_start;
/* Whether tracked blocks get a call stack (stacks:N > 0 and the unwinder
 * loaded); stack id 0 otherwise. */
extern int with_stacks;

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
extern int sampler_state;
/* Synchronization: a spinlock (atomic exchange) between threads that fold
 * their slot into retired, and fork. Never taken by malloc or free. */
extern int fold_lock;
/* Synchronization: held by the sampler while it writes the segment, and by
 * fork around the copy, so that a child never inherits a half-written
 * sample. */
extern pthread_mutex_t sampler_mu;

/* T_OVER: no slot was free, the thread counts in the overflow slot. */
enum { T_NEW = 0, T_CLAIMING, T_LIVE, T_OVER, T_DEAD };

struct rec_thread {
    /* The thread's own counters (its slot's, or its counter slot's), or
     * rec_sink: not claimed yet, or counting in the shared overflow slot
     * (T_OVER, T_DEAD, or re-entered before its claim found one). Never
     * NULL (rt starts at the sink). So the hot path adds first and tests
     * after: counters of its own took plain adds, or the sink's sign sends
     * the call to the out-of-line path (slot_slow), which claims or adds
     * atomically. */
    struct seg_counters *cls;
    /* Valid when cls is not the sink: where its tracked figures go, its
     * own slot's, or (a thread with a counter slot) the overflow slot's,
     * shared. */
    struct seg_tracked *trk;
    struct seg_slot *slot;   /* its own slot, or NULL */
    uint32_t cslot;          /* 1 + the index of its counter slot, or 0 */
    long countdown;          /* bytes of cost (usable + cost_b an
                                allocation) until the next draw */
    long cost_b;             /* B of the settings this thread drew under
                                (sample_cost_b when it took them; 0 before
                                its first draw) */
    /* The rest of the settings it draws under (adopt, track.c), so that a
     * block's weight is always that of the settings whose cost it paid: */
    double gap;              /* seg_gap(sample_bytes) */
    long n;                  /* sample */
    uint32_t gen;            /* settings_gen they were copied at */
    uint8_t on;              /* track_on */
    uint8_t skip;            /* the countdown ends at a chunk's end, not at a
                                point of the draw: redraw, track nothing */
    uint64_t rng;            /* xorshift64* state, 0 until seeded */
    uint64_t ev_next, ev_end; /* event numbers claimed and not yet used */
    uint32_t tid;
    int state;
    /* capture.c's: the thread's slot in the capture of epoch cap_epoch (or
     * NULL), and cap_off: 1 while the shim allocates for itself in a
     * program thread (as_shim), 2 in the sampler thread: never captured. */
    struct cap_slot *cap;
    uint32_t cap_epoch;
    int cap_off;
};
extern __thread struct rec_thread rt __attribute__((tls_model("initial-exec")));
/* The counters of threads without counters of their own (record.c): never
 * read; its allocs and frees are negative as signed numbers. */
extern struct seg_counters rec_sink[];

/* Whether this process's segment was inherited at fork: copied while the
 * parent's threads went on writing it (lifecycle.c), so that a sequence
 * number may be caught odd, or an entry of the tracked table in a state its
 * group count does not know. For the assertions (debug.h) that hold only
 * in a segment that the process wrote alone from the start. */
static inline int rec_inherited(void)
{
    return (__atomic_load_n(&seg->flags, __ATOMIC_RELAXED) & SEG_F_INHERITED) != 0;
}

/* ---- Clocks and ids (clock.c) ---- */

static inline uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The tracked path's clock, CLOCK_MONOTONIC's nanoseconds: the TSC where
 * the kernel keeps time by it, once the sampler has scaled it; else
 * clock_gettime. Never waits for the sampler (clock.c). */
uint64_t mono_now(void);

/* Records the TSC's origin and whether the clocksource is the TSC. Called
 * once by record_start. */
void tsc_start(void);

/* Refines the TSC's scale. Called once per sampler pass, under sampler_mu. */
void tsc_refine(void);

static inline uint32_t my_tid(void)
{
    if (!rt.tid)
        rt.tid = (uint32_t)syscall(SYS_gettid);
    return rt.tid;
}

/* ---- Per-thread slots (record.c) ---- */

static inline void spin_lock(int *l)
{
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(l, __ATOMIC_RELAXED))
            sched_yield();
}

static inline void spin_unlock(int *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

#define SLOT_WORDS ((sizeof overflow->cls + sizeof overflow->trk) / 8)
#define CSLOT_WORDS (sizeof overflow->cls / 8)

/* Adds `words` words at src into retired's and frees the slot (*state).
 * Precondition: fold_lock held. */
void fold_locked(uint64_t *src, size_t words, uint32_t *state);

/* slot_key's destructor: folds the exiting thread's slot into retired. */
void slot_exit(void *arg);

/* The counters to count in when rt.cls is the sink (claims a slot for a
 * new thread); never NULL, never the sink. */
struct seg_counters *slot_slow(void);

/* The counters the calling thread counts in: its own, or overflow's. */
static inline struct seg_counters *my_cls(void)
{
    struct seg_counters *k = rt.cls;
    return likely(k != rec_sink) ? k : slot_slow();
}

/* The recording table that wraps `backend`, with the hot path's data
 * (hot) set for it. Called once by record_start, once the segment's
 * regions, sample_n and the filter are set. */
const struct backend_ops *rec_ops_init(const struct backend_ops *backend);

/* ---- The tracked table, its filter, and sampling (track.c) ---- */

static inline uint64_t addr_hash(const void *p)
{
    return ((uint64_t)(uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull;
}

/* The filter's cell of block p: a multiplicative hash of the low 32 bits of
 * its address, one multiply by an immediate (straight from the register
 * that holds p) and a shift by a constant, for the hot path. Blocks are
 * 8- or 16-byte aligned: the product's low bits are then zero, and the cell
 * comes from its top bits, which the granule number's bits all reach. The
 * writer's filter always has SEG_FILTER_BITS bits (seg_default_geometry). */
static inline uint32_t filter_idx(const void *p)
{
    return ((uint32_t)(uintptr_t)p * 0x9E3779B1u) >> (32 - SEG_FILTER_BITS);
}

/* The end of the tracked table's entries that an insert may have written
 * (track.c puts blocks in its first entries while they hold them): those
 * after it are all 0, and pages that a reader should not touch. */
uint32_t table_written_end(void);

/* Counts one more tracked block in p's filter cell. */
void filter_inc(const void *p);

/* The countdown ran out: may track p, and draws the next countdown.
 * Returns p. */
void *maybe_track(void *p, size_t req, size_t usable, unsigned c);

/* The countdown ran out on an allocation that failed: the next allocation
 * draws afresh (a Poisson process has no memory). */
static inline void countdown_redraw(void)
{
    rt.countdown = 0;
    rt.skip = 1;
}

/* B = -G ln(1 - 1/N) of sample n and sample_bytes sb (seg_track_p),
 * rounded to a byte and at least 1; 1 for n <= 1. */
long cost_b_of(long n, uint64_t sb);

/* Applies "key:value,..." of the keys sample, sample_bytes, track and
 * stacks (stacks:on, stacks:off, stacks:0 or the depth it started with) to
 * the settings in force and records the change in the segment; on a
 * problem, changes nothing. Called by the sampler thread alone. Returns 0,
 * or an errno value with why[] saying why. The effective settings, as
 * "key:value,...", go to now[] either way. */
int settings_apply(const char *text, char *why, size_t whylen, char *now, size_t nowlen);

/* The settings in force, "sample:256,sample_bytes:524288,track:on,stacks:on". */
void settings_format(char *buf, size_t len);

/* Removes p (hash h) from the table if it is there: returns 1 and fills
 * *out with its entry, or 0 (the filter's false positive). */
int untrack_remove(const void *p, uint64_t h, struct seg_track *out);

/* Puts back an entry that untrack_remove took (a realloc that failed). */
void untrack_undo(const void *p, const struct seg_track *e);

/* Accounts the end of the life of the tracked block p, entry e. */
void untrack_finish(const void *p, const struct seg_track *e);

/* The end of a free that the filter did not rule out: p may be tracked. */
void untrack_free(const void *p);

/* Calls fn on every entry of the table that holds a block. */
void table_scan(void (*fn)(struct seg_track *e, void *ctx), void *ctx);

/* ---- The sampler thread (sampler.c) ---- */

/* Reads a small /proc file into buf (NUL-terminated); returns its length,
 * 0 when it cannot be read. */
size_t read_proc(const char *path, char *buf, size_t cap);
/* fd, or a copy of it above 2 (fd closed) when it is 0, 1 or 2; -1 stays -1. */
int above_std(int fd);
/* fd moved to 512 or above (fd closed), else as above_std: for every
 * descriptor the shim holds, however briefly (segfile.c). */
int high_fd(int fd);

/* Records interval_ms and finds glibc's thread count. Called once by
 * record_start. */
void sampler_init(long interval_ms);

/* Starts the sampler thread unless it was started; errno is kept. */
void start_sampler(void);

/* For a program thread on its way out: stops and joins the sampler when it
 * is the program's last thread. */
void sampler_stop_if_last(void);

/* ---- The segment's files (segfile.c) ---- */

/* Says once, in one line, where dir lets another user replace the copy's
 * name: writable by others without the sticky bit, or owned by a user other
 * than root and this process's. */
void shm_dir_check(const char *dir);

/* Removes `path` if it is a stale segment of ours; returns 1 if removed. */
int remove_stale(const char *path);

/* An unnamed file in dir for the copy, or path itself (*named set); never
 * descriptor 0, 1 or 2. Returns -1 with errno on failure. */
int create_segment(const char *dir, const char *path, int *named);

/* Whether fd is still the file of identity (dev, ino): a descriptor of
 * ours that the program may have closed and got again (segfile.c). */
int file_id_ok(int fd, dev_t dev, ino_t ino);

/* Whether fd is still the copy (seg_dev, seg_ino). */
int same_file(int fd);

/* Makes fd (from live_create, or -1) the live segment's memory file, and
 * seals it. */
void live_set(int fd);

/* Whether fd is still the live segment's memory file. */
int same_live(int fd);

/* A mapping of `size` bytes for the live segment, *fd its memory file or
 * -1; a copy of seg (read through from_fd) where one is mapped. Returns
 * MAP_FAILED with errno when there is no memory. */
void *live_create(size_t size, int *fd, int from_fd);

/* How copy_refresh is called (see there). */
enum { COPY_PASS, COPY_NOW, COPY_FINAL };

/* Takes copy_mu (COPY_FINAL: waits 2 s at most); returns 0 when held. */
int copy_lock(int mode);

/* Rewrites the copy. Precondition: copy_mu held. */
void copy_write(int mode);

/* Rewrites the copy from the live segment, under copy_mu. */
void copy_refresh(int mode);

/* Gives the copy its name, once; under copy_mu. */
void publish(void);

#pragma GCC visibility pop

#endif
