/* seg: the layout of the per-process shared-memory segment that
 * libmallocshim.so writes and shimdump reads. The one place that defines it.
 *
 * Two files. The live segment, which the process's threads write, is a
 * memory file (memfd "mallocshim") sealed against shrinking, growing and
 * any new writer, so that nothing done to a file can make a write of the
 * program fault (SIGBUS); readers open it as /proc/<pid>/fd/<live_fd>. The
 * copy, <shm_dir>/mallocshim.<pid> (default /dev/shm), mode 0600, created
 * O_EXCL|O_NOFOLLOW, is what others find by name: the sampler thread
 * rewrites it with pwrite at each pass, at most about once a second (a
 * full file system or a truncation is then an error it reports, never a
 * fault), between an odd and an even copy_seq, and it outlives a process
 * that dies. Both have the same layout;
 * the copy carries SEG_F_COPY. The copy is removed at normal exit. A fork
 * child gets its own two; an exec'ed image replaces the copy of the image
 * before it.
 *
 * Writer/reader protocol. Writers never wait for readers.
 * - Per-thread slots (and counter slots) are written only by their owning
 *   thread, each counter with one whole 8-byte store (an add to memory, in
 *   program order: a class's allocs or frees last). The counters only grow,
 *   but for one case: the owner may at once take back its last count of a
 *   malloc, or of a realloc's free, whose backend call failed (allocs or
 *   frees first): a reader may see such a count meanwhile, as it may see
 *   any call under way. So a
 *   reader that reads a class's six counters twice and finds them equal
 *   has a consistent snapshot of that class (a double collect,
 *   src/segread.c). The overflow slot takes atomic adds; the same read
 *   applies.
 * - The retired total changes only when an exiting thread folds its slot
 *   into it, under the fold lock (a spinlock between exiting threads and
 *   fork, never taken by malloc or free), inside one odd period of the
 *   retired slot's `seq`: a sum of every slot taken across an unchanged,
 *   even retired seq counts each thread once.
 * - The age histograms and each time-series entry are guarded by a sequence
 *   counter (seqlock): the sampler thread makes it odd, writes, and makes it
 *   even with release order; a reader reads it (acquire), copies, re-reads
 *   it, and retries while it was odd or changed.
 * - The tracked aggregates live in the slots too, under the same rules.
 * - The history's points (struct seg_history) are written by the sampler
 *   alone, each under its own seqlock and numbered, and a tier's head is
 *   stored with release once its point is complete.
 * - Event-ring entries are published through their own `seq` (see struct
 *   seg_event).
 * - Stack-table entries are claimed with a CAS on `hash` and published
 *   through `ready` (see struct seg_stack); mapped objects through the
 *   count in struct seg_objs. Both are immutable once published, apart from
 *   a stack's counters, which only grow (atomic adds).
 *
 * All integers are little-endian, fixed-width, and naturally aligned. Offsets
 * are from the start of the segment. Bump SEG_VERSION, and say so in NEWS,
 * on every incompatible change. */
#ifndef MALLOCSHIM_SEG_H
#define MALLOCSHIM_SEG_H

#include <stddef.h>
#include <stdint.h>

#include "sizeclass.h"

#define SEG_MAGIC   0x314d48534c4c414dULL   /* "MALLSHM1" */
#define SEG_VERSION 7u

#define SEG_SLOTS_DEFAULT   128u
#define SEG_CSLOTS_DEFAULT  3968u           /* with the slots: 4096 threads */
#define SEG_SERIES_DEFAULT  3600u           /* one hour at 1 s */
#define SEG_TIERS_MAX       3u              /* history tiers beyond the series */
#define SEG_TIER_POINTS_MAX (1u << 20)
#define SEG_TIER_STEP_MAX   1000000u
#define SEG_TIER1_STEP_DEFAULT   10u        /* a day at 10 s (at interval_ms 1000) */
#define SEG_TIER1_POINTS_DEFAULT 8640u
#define SEG_TIER2_STEP_DEFAULT   60u        /* a week at 1 min */
#define SEG_TIER2_POINTS_DEFAULT 10080u
#define SEG_EVENTS_DEFAULT  32768u
#define SEG_TRACK_DEFAULT   (1u << 17)      /* tracked-block table entries */
#define SEG_FILTER_BITS     18u             /* 2^18 one-byte counters */
#define SEG_TRACK_PROBE     64u             /* max linear-probe distance */
#define SEG_STACKS_DEFAULT  4096u           /* stack table entries (stacks:N > 0) */
#define SEG_STACK_PROBE     32u             /* max linear-probe distance */
#define SEG_STACK_DEPTH_MAX 64u             /* frames kept per stack, at most */
#define SEG_OBJS_DEFAULT    512u            /* mapped objects (stacks:N > 0) */

/* One size class's counters. For a class c, summed over all slots, the
 * overflow slot and the retired total:
 *   live blocks       = allocs - frees
 *   live usable bytes = usable_alloc - usable_free
 * A realloc counts as a free of the old block (old class, old usable size)
 * and an allocation of the new one, plus one in `reallocs` of the new class. */
struct seg_counters {
    uint64_t allocs;
    uint64_t frees;
    uint64_t reallocs;
    uint64_t req_bytes;       /* bytes requested, at allocation */
    uint64_t usable_alloc;    /* the backend's usable size, at allocation */
    uint64_t usable_free;     /* the backend's usable size, at free */
};

/* Weights. A block is tracked with a probability p that grows with its
 * size (sampling by bytes, see struct seg_header's sample and
 * sample_bytes), and stands for w = 1/p blocks: every estimate is a sum of
 * weights over tracked blocks (Horvitz-Thompson), unbiased whatever the mix
 * of sizes. Weighted counts are kept in fixed point, SEG_W_ONE to one block;
 * weighted bytes in bytes (w * bytes, rounded). A block's weight is fixed
 * when it is tracked (struct seg_track), so that its free subtracts what
 * its allocation added, under any later settings. */
#define SEG_W_SHIFT 8
#define SEG_W_ONE   (1u << SEG_W_SHIFT)

/* w in fixed point, and w * bytes: the one rounding that writers use at
 * allocation and at free alike. */
static inline uint64_t seg_w_count(float w)
{
    double v = (double)w * SEG_W_ONE + 0.5;   /* a reader's w may be anything a file says */
    return v < 1.8e19 ? (uint64_t)v : UINT64_MAX;
}

static inline uint64_t seg_w_bytes(float w, uint64_t bytes)
{
    double v = (double)w * (double)bytes + 0.5;
    return v < 1.8e19 ? (uint64_t)v : UINT64_MAX;
}

/* The sampled ("tracked") blocks of one class, kept per thread slot like
 * the counters (summed by readers). allocs and frees count tracked blocks
 * (unweighted: how many the estimates rest on); the byte figures are
 * weighted bytes (seg_w_bytes), live = alloc - free; lifetime[b] is the
 * weighted count (SEG_W_ONE a block) of tracked blocks freed after a
 * lifetime in bucket b. */
struct seg_tracked {
    uint64_t allocs;
    uint64_t frees;
    uint64_t req_alloc;
    uint64_t req_free;
    uint64_t usable_alloc;
    uint64_t usable_free;
    uint64_t lifetime[LIFEBUCKET_COUNT];
};

enum seg_slot_state { SEG_SLOT_FREE = 0, SEG_SLOT_LIVE = 1 };

/* One thread's counters. Synchronization: the counters are written by the
 * owning thread only (see the protocol above); `state` and `tid` are set
 * with a CAS when a thread claims the slot and cleared when it folds into
 * retired. `seq` is used by the retired slot only (0 elsewhere). */
struct seg_slot {
    uint64_t seq;
    uint32_t state;
    uint32_t tid;
    uint64_t reserved[6];
    struct seg_counters cls[SIZECLASS_COUNT];
    struct seg_tracked trk[SIZECLASS_COUNT];
    uint64_t pad[3];           /* to a whole number of cache lines */
};

/* The counters of a thread beyond the nslots full slots: the same counters
 * as a slot's `cls`, one page each (page aligned, so that one that no
 * thread has used costs no memory), written by the owning thread only with
 * the same protocol. Such a thread's tracked figures go to the overflow
 * slot's `trk`, with atomic adds (only tracked allocations write them). The
 * state of counter slot i is cstate[i]: claimed with a CAS, cleared when the
 * thread exits and its counters fold into retired. Readers look at the
 * first `cslots_high` only (the highest index ever claimed, plus one:
 * threads claim the lowest free one). */
struct seg_cslot {
    struct seg_counters cls[SIZECLASS_COUNT];
    uint64_t pad[2];           /* to one page */
};

struct seg_cstate {
    uint32_t state;            /* enum seg_slot_state */
    uint32_t tid;
};

/* Ages of tracked blocks still live, per class, as of `at_ns`: weighted
 * counts (SEG_W_ONE a block). Written by the sampler thread under `seq`. */
struct seg_ages {
    uint64_t seq;
    uint64_t at_ns;            /* CLOCK_MONOTONIC */
    uint64_t dropped;          /* tracked blocks the table had no room for */
    uint64_t reserved;
    uint64_t count[SIZECLASS_COUNT][LIFEBUCKET_COUNT];
};

enum seg_backend_id { SEG_BACKEND_GLIBC = 0, SEG_BACKEND_JEMALLOC = 1, SEG_BACKEND_TCMALLOC = 2 };

/* The backend's own statistics, in its own terms (unused fields are 0):
 *   glibc:    a = mallinfo2.arena, b = hblkhd, c = fordblks, d = keepcost,
 *             e = uordblks, f = number of arenas
 *   jemalloc: a = stats.allocated, b = active, c = resident, d = mapped,
 *             e = retained, f = metadata (after an epoch refresh)
 *   tcmalloc: a = generic.current_allocated_bytes, b = generic.heap_size,
 *             c = tcmalloc.pageheap_free_bytes,
 *             d = tcmalloc.pageheap_unmapped_bytes
 * The sampler takes them less often than it samples when they are costly
 * (preload/sampler.c says how often), and each sample carries the latest:
 * t_ns says when they were taken (CLOCK_REALTIME; 0: not yet).
 * live_lo is a floor under the program's live usable bytes at that moment:
 * the usable bytes of allocations counted before the snapshot began, less
 * those of frees counted by its end, less one block (or one transfer of a
 * thread cache) in flight per program thread, SEG_INFLIGHT_BYTES each (a
 * malloc is counted just before the backend's call when its usable size
 * comes from the request). Every backend counts each live block at no less
 * than its usable size, so the allocator's in-use figure is at least
 * live_lo (glibc: uordblks + hblkhd; jemalloc: active, which holds allocated; tcmalloc:
 * current_allocated_bytes): an invariant shimdump --check holds it to.
 * tcmalloc's figure is read across moves between its caches, and can fall
 * below it: the sampler takes such a snapshot again, and leaves live_lo 0
 * where every take fell below (preload/sampler.c, BE_TAKES); the others'
 * are held to it as read.
 * live_hi is the ceiling: allocations counted by the end less frees
 * counted before the start. Between the two lie the live usable bytes at
 * every moment of the snapshot; a sample's own live bytes (counted just
 * before it) may differ from the allocator's figure by what moved in
 * between, and shimdump says so where it shows. */
struct seg_backend_stats {
    uint64_t a, b, c, d, e, f;
    uint64_t t_ns;
    uint64_t live_lo, live_hi;
};

#define SEG_INFLIGHT_BYTES 65536u   /* per program thread, in live_lo */

/* One time-series snapshot, written by the sampler thread. */
struct seg_sample {
    uint64_t seq;              /* seqlock for this entry */
    uint64_t t_ns;             /* CLOCK_REALTIME */
    uint64_t live_count;       /* exact */
    uint64_t live_usable;      /* exact */
    uint64_t live_req;         /* exact with sample:1, else estimated */
    uint64_t allocs;           /* cumulative */
    uint64_t frees;            /* cumulative */
    uint64_t req_bytes;        /* cumulative bytes requested */
    uint64_t rss;              /* bytes */
    uint64_t rss_anon;
    uint64_t rss_huge;         /* AnonHugePages, as of rss_huge_ns */
    uint64_t vsz;
    uint64_t rss_huge_ns;      /* CLOCK_REALTIME when rss_huge was read (smaps_rollup,
                                  read less often: sampler.c); 0: not yet */
    struct seg_backend_stats backend;   /* as of backend.t_ns */
};

/* The time series: a ring of `series_cap` samples; entry i % cap holds
 * sample number i. Synchronization: `head` (the count of samples written)
 * is stored with release by the sampler after the entry is complete. */
struct seg_series {
    uint64_t head;
    uint64_t peak_rss;         /* the highest sample's; 0: none yet (a fork child's
                                  before its first pass: its own, not its parent's) */
    uint64_t peak_rss_ns;      /* CLOCK_REALTIME */
    uint64_t reserved[5];
    /* struct seg_sample entries[series_cap] follow */
};

/* One point of a history tier: the span of `samples` consecutive samples
 * of the series. `last` is the span's last sample (its seq is the point's
 * seqlock, its t_ns the point's time); the extremes keep what the last
 * value alone would lose: a spike of RSS or of live bytes inside the span. */
struct seg_point {
    struct seg_sample last;
    uint64_t number;           /* the point's number in its tier (entry number % cap) */
    uint64_t rss_min, rss_max;
    uint64_t live_usable_max;
    uint64_t live_req_max;
    uint32_t samples;          /* samples in the span so far: `step` once complete */
    uint32_t reserved;
};

/* The history: seg_header.ntiers tiers, coarser one after another. Tier t
 * is a ring of tier_cap[t] points (at seg_tier_off), each spanning
 * tier_step[t] samples (so tier_step[t] * interval_ms milliseconds).
 * Points number from 0; entry i % cap holds point i. heads[t] counts the
 * complete points. The sampler (the one writer) rewrites point heads[t]
 * (entry heads[t] % cap, in place of point heads[t] - cap) at every pass
 * until its span is complete, then stores heads[t] + 1 with release: a
 * reader finds up to cap - 1 complete points and the newest, partial one.
 * Each entry is written under its seqlock (last.seq); a reader keeps it
 * only when its `number` is the one it wanted. A fork child moves heads[t]
 * past its parent's point under way (lifecycle.c): that point, left short
 * of its step, is not read, and no point mixes the two processes' samples. */
struct seg_history {
    uint64_t heads[SEG_TIERS_MAX];
    uint64_t reserved[8 - SEG_TIERS_MAX];
    /* the points of tier 0, then of tier 1, ... follow */
};

enum seg_event_kind { SEG_EV_ALLOC = 1, SEG_EV_FREE = 2 };

/* One tracked event. Entry i % cap holds event number i, valid when its
 * `seq` equals i + 1 before and after the copy. */
struct seg_event {
    uint64_t seq;
    uint64_t t_ns;             /* CLOCK_REALTIME */
    uint64_t addr;
    uint64_t size;             /* requested */
    uint64_t lifetime_ns;      /* frees only */
    uint32_t tid;
    uint32_t kind;             /* enum seg_event_kind */
};

/* The event ring. Synchronization: each writing thread claims numbers 16 at
 * a time with an atomic fetch-add on `head`, then fills entries and
 * publishes each through its `seq`. So `head` runs ahead of what is written,
 * and a number a thread claimed but has not used (yet, or ever: it exited)
 * stays unwritten: a reader skips every entry whose seq is not its number
 * plus one. */
struct seg_events {
    uint64_t head;
    uint64_t reserved[7];
    /* struct seg_event entries[events_cap] follow */
};

/* A tracked block in the table. addr 0 is empty, 1 a deleted entry.
 * Synchronization: an entry is claimed by a CAS on addr and filled by the
 * allocating thread; it is deleted by the thread that frees the block
 * (which the allocator orders after the allocation). Readers skip entries
 * whose alloc_ns is still 0. */
struct seg_track {
    uint64_t addr;
    uint64_t alloc_ns;         /* CLOCK_MONOTONIC */
    uint64_t req;
    uint64_t usable;
    uint32_t stack;            /* the allocating call stack: index + 1 in the
                                  stack table, 0 when none was recorded */
    uint32_t tid;              /* the allocating thread */
    uint32_t weight;           /* w = 1/p, an IEEE binary32 (seg_track_weight) */
    uint32_t reserved;
};

/* A tracked block's weight, from its bits. */
static inline float seg_track_weight(uint32_t bits)
{
    union { uint32_t u; float f; } v = { bits };
    return v.f >= 1.0f && v.f < 1e30f ? v.f : 1.0f;
}

/* The stack table (stacks:N > 0): the call stacks of tracked allocations,
 * each stored once. A tracked block names its stack (seg_track.stack), so
 * a reader finds each stack's live blocks, bytes and ages in the tracked
 * table; the entry itself keeps what the table cannot: how many tracked
 * blocks were allocated there, and the lifetimes of those freed.
 *   live tracked blocks of stack s = allocs - frees
 *                                  = entries of the tracked table naming s
 *                                    (+ those dropped from it)
 * Entry i starts at off_stacks + sizeof(struct seg_stacks) + i * stack_stride,
 * and its `depth` return addresses (innermost first; the shim's own frames
 * left out) follow the struct. Synchronization: claimed by a CAS of `hash`
 * from 0; the claiming thread writes depth and frames, then stores `ready`
 * = 1 with release; readers (and other writers comparing stacks) use an
 * entry only once `ready` is 1 (acquire). The counters take relaxed atomic
 * adds from any thread that tracks a block of that stack. */
struct seg_stack {
    uint64_t hash;             /* of the frames; 0 = empty */
    uint32_t depth;            /* frames stored, <= stack_depth */
    uint32_t ready;
    uint64_t allocs;           /* tracked allocations with this stack */
    uint64_t req_bytes;        /* their requested bytes, weighted (seg_w_bytes) */
    uint64_t frees;            /* tracked frees of those */
    uint64_t lifetime[LIFEBUCKET_COUNT];   /* those freed, by lifetime: weighted
                                              counts (SEG_W_ONE a block) */
    uint64_t w_allocs;         /* the allocations, weighted (SEG_W_ONE a block) */
    uint64_t w_frees;          /* the frees, weighted */
    /* Its live tracked blocks as they stood at the peak of live bytes
     * (struct seg_stacks, "The peak"): requested bytes, weighted
     * (seg_w_bytes); blocks, weighted (SEG_W_ONE a block); tracked blocks;
     * the variance of the bytes' estimate, sum w (w - 1) req^2, as an IEEE
     * binary64's bits. Written by the sampler only, under peak_seq. */
    uint64_t peak_req;
    uint64_t peak_count;
    uint64_t peak_tracked;
    uint64_t peak_var;
    /* uint64_t frames[depth] follow */
};

/* Head of the stack table. Synchronization: relaxed atomic adds. */
struct seg_stacks {
    uint64_t used;             /* entries claimed */
    uint64_t dropped;          /* tracked allocations whose stack found no room */
    uint64_t failed;           /* tracked allocations whose stack could not be taken */
    /* Threads taking their stacks with libunwind now (the others use
     * libgcc's unwinder), and how many moved to it in all. Written when a
     * thread moves or exits, not per stack. */
    uint64_t fast_threads;
    uint64_t fast_moves;
    /* The peak. The sampler keeps the call sites as they stood at the
     * highest live usable bytes (exact, from the counters) that any of its
     * passes saw: at a pass that finds a new high, it sums the tracked
     * table's live blocks by stack, as it takes their ages, and writes the
     * peak_* of each entry with live blocks then (zero for one that had
     * some at the peak before, and for every other as it was made) and these, inside
     * one odd period of peak_seq (release; a reader retries while it is odd
     * or changed, as with any seqlock here). So a peak between two passes
     * is not seen, and a new high at each pass of a growing heap rewrites
     * them each interval_ms. peak_ns 0: no peak yet. A fork child's start
     * as a copy of its parent's (peak_ns before the child's start_ns) until
     * its own first pass with blocks live. */
    uint64_t peak_seq;
    uint64_t peak_ns;              /* CLOCK_REALTIME of that pass */
    uint64_t peak_live_usable;     /* exact */
    uint64_t peak_live_req;        /* the pass's estimate (seg_live_req) */
    uint64_t peak_rss;
    uint64_t peak_nostack_req;     /* live tracked blocks without a stack: bytes, */
    uint64_t peak_nostack_count;   /* blocks (as the entries' peak_*) */
    uint64_t peak_nostack_var;     /* and the variance's bits */
    uint64_t peak_tracked_dropped; /* seg_header.tracked_dropped then */
    uint64_t reserved[2];
};

/* The bytes between two stack entries for frames of `depth`. */
static inline uint64_t seg_stack_stride(uint32_t depth)
{
    return (sizeof(struct seg_stack) + 8u * (uint64_t)depth + 63) & ~(uint64_t)63;
}

/* One object (the program, a shared library) mapped in the process, as the
 * dynamic loader lists it, so that a reader can name the functions of a
 * stack even after the process is gone: address = ELF vaddr + bias, and
 * [lo, hi) covers its loaded segments. Entries are only appended: an
 * object unloaded later stays (stacks may point into it); one loaded at the
 * same place afterwards comes later in the list. */
struct seg_obj {
    uint64_t bias;
    uint64_t lo, hi;
    uint32_t build_id_len;     /* 0: the object has none */
    uint32_t flags;            /* enum seg_obj_flags */
    uint8_t build_id[32];      /* the NT_GNU_BUILD_ID note's bytes */
    char path[448];            /* NUL-terminated absolute path */
};

enum seg_obj_flags {
    SEG_OBJ_MAIN = 1u << 0,        /* the program itself */
    SEG_OBJ_TRUNCATED = 1u << 1,   /* the path did not fit */
};

/* Head of the object list. Synchronization: written by the sampler thread
 * only; entry i is complete before `count` (release) exceeds i. */
struct seg_objs {
    uint64_t count;
    uint64_t dropped;          /* objects seen that found no room */
    uint64_t reserved[6];
    /* struct seg_obj entries[objs_cap] follow */
};

enum seg_flags {
    SEG_F_EXACT_REQ = 1u << 0,     /* sample:1: live requested bytes are exact */
    SEG_F_FINISHED = 1u << 1,      /* the process exited normally (file kept) */
    SEG_F_INHERITED = 1u << 2,     /* a fork child's: its counts start from a copy
                                      of the parent's taken while the parent ran,
                                      so they are approximate */
    SEG_F_NO_UNWINDER = 1u << 3,   /* stacks were asked for but the unwinder
                                      could not be used: every stack is 0 */
    SEG_F_STACKS_STOPPED = 1u << 4,   /* stacks stopped while the process ran:
                                         it closed libunwind's descriptors, or
                                         it forked during a capture */
    SEG_F_COPY = 1u << 5,          /* this file is the copy in shm_dir, not the
                                      live segment (see "Two files" above) */
    SEG_F_COPY_STALE = 1u << 6,    /* the copy could not be refreshed (its file
                                      system is full, say): as of copy_ns */
    SEG_F_TRACK_OFF = 1u << 7,     /* no block is being tracked (track:off);
                                      counting goes on */
    SEG_F_STACKS_OFF = 1u << 8,    /* blocks are tracked without a call stack
                                      (stacks switched off while it ran) */
    SEG_F_TRACK_WAS_OFF = 1u << 9, /* tracking was off for a while (never
                                      cleared): blocks allocated then are in
                                      no tracked figure */
};

/* One settings change (shimdump --set): what held from t_ns on. */
struct seg_change {
    uint64_t t_ns;             /* CLOCK_REALTIME of the change */
    uint64_t sample_bytes;
    uint32_t sample;
    uint32_t flags;            /* SEG_F_TRACK_OFF, SEG_F_STACKS_OFF */
};

#define SEG_CHANGES_MAX 5u

#define SEG_CONFIG_MAX 512
#define SEG_COMM_MAX   64
#define SEG_BACKEND_NAME_MAX 32
#define SEG_BACKEND_VERSION_MAX 96

struct seg_header {
    uint64_t magic;            /* SEG_MAGIC */
    uint32_t version;          /* SEG_VERSION */
    uint32_t header_size;      /* sizeof(struct seg_header) */
    uint64_t total_size;       /* the file's size */
    uint32_t pid;
    uint32_t uid;              /* the real uid at creation */
    uint64_t start_ns;         /* CLOCK_REALTIME at creation */
    uint64_t start_mono_ns;    /* CLOCK_MONOTONIC at creation */
    uint64_t heartbeat_ns;     /* CLOCK_REALTIME of the sampler's last pass */
    uint32_t flags;            /* enum seg_flags */
    uint32_t backend;          /* enum seg_backend_id */
    uint32_t sample;           /* small blocks: about 1 in `sample` is tracked
                                  (seg_track_p); 1: every block */
    uint32_t interval_ms;      /* the sampler's period */
    uint32_t nclasses;         /* SIZECLASS_COUNT */
    uint32_t nbuckets;         /* LIFEBUCKET_COUNT */
    uint32_t nslots;
    uint32_t series_cap;
    uint32_t events_cap;
    uint32_t track_cap;
    uint32_t filter_bits;
    uint32_t slots_in_use;     /* advisory */
    /* Offsets of the regions, each 64-byte aligned. */
    uint64_t off_slots;        /* struct seg_slot[nslots] */
    uint64_t off_overflow;     /* struct seg_slot: threads beyond nslots + ncslots,
                                  and the tracked figures of those in counter
                                  slots (atomic) */
    uint64_t off_retired;      /* struct seg_slot: threads that exited */
    uint64_t off_ages;         /* struct seg_ages */
    uint64_t off_series;       /* struct seg_series + seg_sample[series_cap] */
    uint64_t off_events;       /* struct seg_events + seg_event[events_cap] */
    uint64_t off_track;        /* struct seg_track[track_cap] */
    uint64_t off_filter;       /* uint8_t[1 << filter_bits] */
    uint64_t off_stacks;       /* struct seg_stacks + stacks_cap entries of
                                  stack_stride bytes (none when stack_depth is 0) */
    uint64_t off_objs;         /* struct seg_objs + seg_obj[objs_cap] */
    uint32_t stack_depth;      /* frames kept per stack (stacks:N); 0: no stacks */
    uint32_t stacks_cap;
    uint32_t objs_cap;
    uint32_t stack_stride;     /* seg_stack_stride(stack_depth) */
    uint64_t tracked_dropped;  /* tracked allocations the table had no room for */
    uint64_t threads_seen;     /* threads that claimed a slot or used overflow */
    char comm[SEG_COMM_MAX];   /* the command, from /proc/self/comm */
    char backend_name[SEG_BACKEND_NAME_MAX];
    char backend_version[SEG_BACKEND_VERSION_MAX];
    char config[SEG_CONFIG_MAX];   /* the effective config, MALLOCSHIM_CONF syntax */
    /* The copy (SEG_F_COPY): odd while the sampler rewrites it, even once
     * complete (0 in the live segment); the CLOCK_REALTIME of the last
     * complete copy; the descriptor of the live segment in the process
     * (/proc/<pid>/fd/<live_fd>), -1 when it has none (private memory). */
    uint64_t copy_seq;
    uint64_t copy_ns;
    int32_t live_fd;
    /* Counter slots for threads beyond nslots (0: none, as in segments
     * made before them): struct seg_cstate[ncslots] at off_cstate, struct
     * seg_cslot[ncslots] at off_cslots (page aligned), both after the
     * objects; readers read the first cslots_high of them (atomic max). */
    uint32_t ncslots;
    uint64_t off_cstate;
    uint64_t off_cslots;
    uint64_t cslots_high;
    /* The history (struct seg_history and the tiers' points), after the
     * counter slots: ntiers tiers, tier t of tier_cap[t] points of
     * tier_step[t] samples each (the unused entries 0). */
    uint64_t off_history;
    uint32_t ntiers;
    uint32_t tier_step[SEG_TIERS_MAX];
    uint32_t tier_cap[SEG_TIERS_MAX];
    uint32_t reserved32;
    /* Sampling by bytes (seg_track_p): the mean bytes between tracked
     * blocks as sizes grow; 0 when sizes do not count. */
    uint64_t sample_bytes;
    /* Settings changed while the process runs (shimdump --set), written by
     * the sampler thread alone: settings_seq is odd while it writes
     * sample, sample_bytes, the flags SEG_F_TRACK_OFF and SEG_F_STACKS_OFF
     * and the ring, even once done (a seqlock: readers copy and check it
     * did not move). settings_n counts the changes since the start; the
     * ring holds the last SEG_CHANGES_MAX, change k at changes[k %
     * SEG_CHANGES_MAX] (k from 0). Each thread takes new settings at its
     * next sampling draw, and a block keeps the weight of the settings it
     * was taken under (seg_track.weight), so estimates never mix them. */
    uint32_t settings_seq;
    uint32_t settings_n;
    struct seg_change changes[SEG_CHANGES_MAX];
    uint64_t reserved[1];
};

/* The probability that a block of usable size u is tracked, under sample
 * N and sample_bytes G. Each allocation costs u + B bytes of a Poisson
 * process of mean G over those costs, B = -G ln(1 - 1/N), and the block is
 * tracked when a point falls in its cost:
 *   p(u) = 1 - exp(-(u + B) / G) = 1 - (1 - 1/N) exp(-u / G)
 * the chance that a coin of 1/N or a Poisson process over its bytes picks
 * it: 1/N for the smallest blocks, about 1/N + u/G for blocks far below G,
 * and 1 for those far above it. N = 1: every block (p = 1). G = 0: sizes do
 * not count (SEG_GAP_OFF stands for it: p = 1/N, as good as exactly). */
#define SEG_GAP_OFF (1ull << 52)

static inline double seg_gap(uint64_t sample_bytes)
{
    return sample_bytes ? (double)sample_bytes : (double)SEG_GAP_OFF;
}

/* p(u) above, in (0, 1]. */
double seg_track_p(uint32_t sample, uint64_t sample_bytes, uint64_t usable);

_Static_assert(sizeof(struct seg_counters) == 48, "seg_counters layout");
_Static_assert(sizeof(struct seg_cslot) == 4096, "a counter slot is one page");
_Static_assert(sizeof(struct seg_slot) % 64 == 0, "seg_slot keeps slots on their own cache lines");
_Static_assert(offsetof(struct seg_slot, cls) == 64, "seg_slot header is one cache line");
_Static_assert(sizeof(struct seg_tracked) == 8 * (6 + LIFEBUCKET_COUNT), "seg_tracked layout");
_Static_assert(sizeof(struct seg_sample) == 8 * 22, "seg_sample layout");
_Static_assert(sizeof(struct seg_event) == 48, "seg_event layout");
_Static_assert(sizeof(struct seg_point) == 224, "seg_point layout");
_Static_assert(sizeof(struct seg_history) == 64, "history layout");
_Static_assert(sizeof(struct seg_track) == 48, "seg_track layout");
_Static_assert(sizeof(struct seg_stack) % 64 == 0 && sizeof(struct seg_stacks) == 128, "stack table layout");
_Static_assert(sizeof(struct seg_obj) == 512 && sizeof(struct seg_objs) == 64, "object list layout");
_Static_assert(sizeof(struct seg_series) == 64 && sizeof(struct seg_events) == 64, "ring headers");
_Static_assert(offsetof(struct seg_header, off_slots) == 104, "seg_header layout");
_Static_assert(sizeof(struct seg_change) == 24, "seg_change layout");
_Static_assert(sizeof(struct seg_header) % 64 == 0, "seg_header keeps regions aligned");

/* The geometry of a segment, from which seg_layout computes the offsets.
 * stack_depth 0 means no stack table and no object list (their caps are
 * then ignored and stored as 0). */
struct seg_geometry {
    uint32_t nslots, ncslots, series_cap, events_cap, track_cap, filter_bits;
    uint32_t stack_depth, stacks_cap, objs_cap;
    uint32_t ntiers;                        /* history tiers, 0..SEG_TIERS_MAX */
    uint32_t tier_step[SEG_TIERS_MAX];      /* samples per point: 2.., each greater
                                               than the one before */
    uint32_t tier_cap[SEG_TIERS_MAX];       /* points, 2..SEG_TIER_POINTS_MAX */
};

/* Fills the sizes and offsets of *h (and h->total_size) from g. Returns 0,
 * or EINVAL when g is out of range (each count at least 1, filter_bits
 * 8..28, stack_depth 0..SEG_STACK_DEPTH_MAX and, with stacks, 1..2^20
 * stacks and 1..65536 objects, tiers as struct seg_geometry says, total
 * under 1 GiB). */
int seg_layout(struct seg_header *h, const struct seg_geometry *g);

/* The offset of tier t's points (t < h->ntiers) in a segment laid out by
 * seg_layout. */
uint64_t seg_tier_off(const struct seg_header *h, unsigned t);

/* The default geometry and the size it gives (documented in README). */
void seg_default_geometry(struct seg_geometry *g);

/* Checks a header read from an untrusted file of `file_size` bytes: magic,
 * version, sizes and that every region lies inside the file. Returns 0,
 * EPROTO for a foreign or other-version file (see *version_out), EINVAL for
 * an inconsistent header or a truncated file. */
int seg_validate(const struct seg_header *h, uint64_t file_size, uint32_t *version_out);

#endif
