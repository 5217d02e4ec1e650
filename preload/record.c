/* record: the recording table of operations, hot path first: malloc and
 * free as the program calls them, then the rest of the table, the slow
 * paths and the threads' slots. What it shares with the rest of record
 * (track.c, clock.c, sampler.c, segfile.c, lifecycle.c) is in rec.h.
 *
 * record counts every allocation into the shared-memory segment, tracks a
 * sample of them for lifetimes and ages, and keeps the time series.
 *
 * The common path (an untracked malloc or free) reads the block's usable
 * size from the backend, bumps its own thread's counters in the segment
 * (plain adds, see own_add), takes the block's cost from a thread-local
 * countdown, and on free tests one byte of a counting filter: no lock, no
 * atomic read-modify-write, no cache line that another thread writes. A
 * sample of the blocks, by bytes (seg_track_p: about 1 in `sample` of the
 * small ones, every block far above `sample_bytes`), is tracked (track.c):
 * its address, size, time and weight go into a table in the segment, found
 * again at free through the filter. */
#include "config.h"

#include "rec.h"

#include <math.h>
#include <string.h>
#include <sys/mman.h>

#include "debug.h"
#include "seg.h"
#include "sizeclass.h"
#include "stack.h"

/* ---- The hot path: the recording malloc and free ---- */

/* The hot path. What is not the common case (no slot of its own, the
 * countdown run out, a block the filter does not rule out) is out of line
 * and a tail call, so the common case keeps few registers live across
 * calls: n and p across the backend's calls, nothing after. */

/* Declared, with their rules, in rec.h. */
struct rec_hot hot __attribute__((aligned(64)));
const uint8_t *filter_all;
/* Where a thread without counters of its own counts on the hot path, so
 * that rt.cls is never NULL and the hot path tests nothing before its adds:
 * every class's allocs and frees start at SINK_START, negative as signed
 * 64-bit numbers, so the sign of the last add (allocs at allocation, frees
 * at free) sends the call to the slow path, which counts it where it
 * belongs. What goes into the sink is nobody's: it is never read, and the
 * plain adds of several threads may race there. Each race loses adds, and
 * no value ever leaves [SINK_START, SINK_START + calls], so the sign holds
 * for 2^62 calls. */
#define SINK_START 0xc000000000000000ull
/* Whole cache lines of its own (4 classes are 3 lines): a thread that
 * writes the sink never takes a line that every thread reads, such as
 * dispatch_ops. */
#define SINK_N ((SIZECLASS_COUNT + 3) / 4 * 4)
_Static_assert(SINK_N * sizeof(struct seg_counters) % 64 == 0, "the sink is whole cache lines");
struct seg_counters rec_sink[SINK_N] __attribute__((aligned(64))) = {
    [0 ... SINK_N - 1] = { .allocs = SINK_START, .frees = SINK_START },
};
/* rt.cls starts at the sink in every thread: the dynamic linker copies
 * this image, relocated, into each thread's TLS before the thread runs
 * (the main thread's after relocation, before any constructor). */
__thread struct rec_thread rt __attribute__((tls_model("initial-exec"))) = { .cls = rec_sink };
/* A class's counters are at this byte offset in a thread's counters: the
 * hot path adds it rather than multiplying the class. */
#define KOFF(c) ((size_t)(c) * sizeof(struct seg_counters))
#define KCLASS(off) ((unsigned)((off) / sizeof(struct seg_counters)))
_Static_assert(KOFF(SIZECLASS_LAST) <= 0xffff, "a class's offset fits 16 bits");
/* KOFF(sizeclass_of(u)) for every u up to KOFF_U_MAX, indexed by u itself
 * (16 KiB: on every free, an add and a shift fewer than by 16-byte steps,
 * and no computed class for the 4 and 8 KiB blocks, whose usable sizes
 * under glibc are 4104 and 8200). Filled by rec_ops_init, read-only after. */
#define KOFF_U_MAX 8200
static uint16_t koff_by_u[KOFF_U_MAX + 1];
/* Past it, up to KOFF_U16_MAX, the same by 16-byte granules: granule
 * (u + 15) >> 4 holds the usable sizes (16 (g - 1), 16 g], and a class
 * there begins one byte past a multiple of 2 KiB (sizeclass_of), so each
 * granule lies in one class. An add, a shift and a load where the class's
 * computation took about 10, at the malloc and free of RocksDB's 16 KiB
 * blocks and MariaDB's 32 and 64 KiB buffers under glibc (whose usable size
 * comes from the block) and at tcmalloc's free (8 KiB, not 8 of them
 * touched but where blocks of those sizes live). Filled by rec_ops_init,
 * read-only after. */
#define KOFF_U16_MAX 65536
static uint16_t koff_by16[(KOFF_U16_MAX >> 4) + 1];
/* For requests up to UC_MAX bytes, where the backend can tell the usable
 * size from the request (usable_for): the usable size and KOFF(class) of
 * every request n, at uc_for[n] (16 KiB), so that malloc makes two loads
 * instead of a call and a class lookup. Filled by rec_ops_init from
 * usable_for (uc_table). Read-only after start. */
#define UC_MAX 4096
struct uc {
    uint16_t usable, koff;
};
static struct uc uc_for[UC_MAX + 1];
static int uc_table;
/* Above UC_MAX, up to UG_MAX, the same by granules of 128 bytes: granule g
 * holds the requests (UC_MAX + 128 g, UC_MAX + 128 (g + 1)], where the
 * backend's size classes are 128 bytes apart or more (above 4 KiB,
 * jemalloc's 1 KiB at least, Debian's tcmalloc's 512 bytes: every granule
 * whole under both), so that one usable size serves the whole granule.
 * uc_fill checks that at start: usable 0 marks a granule across a class
 * boundary, which asks usable_for. An array pointer and a shift where a
 * size-class rule of jemalloc's took about 17 instructions and tcmalloc's
 * nallocx about 15, at each malloc and sized delete over 4 KiB (RocksDB's
 * blocks are 4 to 16 KiB). */
#define UG_SHIFT 7
#define UG_MAX 65536
#define UG_N ((UG_MAX - UC_MAX) >> UG_SHIFT)
struct ug {
    uint32_t usable, koff;
};
static struct ug ug_for[UG_N];

/* *f += v by the thread that owns the counter, as one add to memory: a
 * plain (not locked) read-modify-write, so one instruction where a load, an
 * add and a store were three. Readers load each word whole (seg.h's double
 * collect), and an aligned 8-byte store is single-copy atomic on x86-64.
 * volatile keeps these adds in program order among themselves, which x86's
 * stores then keep for readers: a class's allocs (or frees) is added last,
 * so a reader that sees it sees the bytes that came with it. */
static inline __attribute__((always_inline)) void own_add(uint64_t *f, uint64_t v)
{
#if defined(__x86_64__)
    __asm__ volatile("addq %1, %0" : "+m"(*f) : "er"(v));
#else
    __atomic_store_n(f, *f + v, __ATOMIC_RELEASE);
#endif
}

/* own_add(f, 1) that returns whether the sum is negative as a signed
 * number: 1 only in the sink (rec_sink). The add's own flags, one branch. */
static inline __attribute__((always_inline)) int own_inc_sink(uint64_t *f)
{
#if defined(__x86_64__)
    int neg;
    __asm__ volatile("addq $1, %0" : "+m"(*f), "=@ccs"(neg));
    return neg;
#else
    uint64_t v = *f + 1;
    __atomic_store_n(f, v, __ATOMIC_RELEASE);
    return (int64_t)v < 0;
#endif
}

/* (rt.countdown -= u + rt.cost_b) <= 0: an allocation of usable size u
 * spends its cost of the countdown (seg_track_p), as one subtract from
 * memory and a branch on its flags. */
static inline __attribute__((always_inline)) int countdown_out(size_t u)
{
    long cost = (long)u + rt.cost_b;
#if defined(__x86_64__)
    int le;
    __asm__ volatile("subq %2, %0" : "+m"(rt.countdown), "=@ccle"(le) : "r"(cost));
    return le;
#else
    return (rt.countdown -= cost) <= 0;
#endif
}

/* Out of line, below (the slow paths). */
static void *malloc_slow(size_t n);
static void *malloc_tracked(size_t n);
static void *uncount(size_t n);
static void *alloc_slow(void *p, size_t req, size_t u, unsigned c, int is_realloc);
static void free_slow(void *p, size_t u, int counted);
static void free_sized_slow(void *p, size_t n, size_t u, int counted);

/* KOFF of the class of a block of u usable bytes. */
static inline __attribute__((always_inline)) size_t koff_of(size_t u)
{
    if (likely(u <= KOFF_U_MAX))
        return koff_by_u[u];
    if (likely(u <= KOFF_U16_MAX))
        return koff_by16[(u + 15) >> 4];
    return KOFF(sizeclass_of(u));
}

/* The usable size (returned) and KOFF (*off) of a request of n > UC_MAX
 * bytes from ug_for: 0 where that has none (over UG_MAX, or a granule
 * across a class boundary). */
static inline __attribute__((always_inline)) size_t ug_of(size_t n, size_t *off)
{
    if (n > UG_MAX)
        return 0;
    const struct ug *g = &ug_for[(n - UC_MAX - 1) >> UG_SHIFT];
    *off = g->koff;
    return g->usable;
}

/* The usable size (returned) and its class's KOFF (*off) of a request of n
 * bytes, where uc_table holds: from uc_for up to UC_MAX, from ug_for up to
 * UG_MAX where its granule has one, from usable_for otherwise. */
static inline __attribute__((always_inline)) size_t uc_of(size_t n, size_t *off)
{
    if (likely(n <= UC_MAX)) {
        const struct uc *e = &uc_for[n];
        *off = e->koff;
        return e->usable;
    }
    size_t u = ug_of(n, off);
    if (likely(u != 0))
        return u;
    u = hot.usable_for(n);
    *off = koff_of(u);
    return u;
}

/* Counts an allocation in the thread's own counters (its class's at byte
 * offset off), and draws for tracking. Returns p. */
static inline __attribute__((always_inline)) void *on_alloc_uo(void *p, size_t req, size_t u,
                                                               size_t off, int is_realloc)
{
    struct seg_counters *k = (struct seg_counters *)((char *)rt.cls + off);
    if (is_realloc)
        own_add(&k->reallocs, 1);
    own_add(&k->req_bytes, req);
    own_add(&k->usable_alloc, u);
    if (unlikely(own_inc_sink(&k->allocs)))
        return alloc_slow(p, req, u, KCLASS(off), is_realloc);
    if (unlikely(countdown_out(u)))
        return maybe_track(p, req, u, KCLASS(off));
    return p;
}

static inline __attribute__((always_inline)) void *on_alloc_u(void *p, size_t req, size_t u,
                                                              int is_realloc)
{
    return on_alloc_uo(p, req, u, koff_of(u), is_realloc);
}

/* Whether p may be tracked: one byte of the counting filter, 0 for nearly
 * every untracked block. */
static inline __attribute__((always_inline)) int maybe_tracked(const void *p)
{
#if defined(__x86_64__)
    /* the relaxed load as the operand of a compare: one instruction */
    int nz;
    __asm__("cmpb $0, %1" : "=@ccne"(nz) : "m"(hot.filter[filter_idx(p)]));
    return nz;
#else
    return __atomic_load_n(&hot.filter[filter_idx(p)], __ATOMIC_RELAXED) != 0;
#endif
}

/* rec_malloc_table's malloc of n bytes, whose usable size u and class (at
 * offset off) come from the request (uc_for, ug_for). The block is counted
 * before the backend's call, so that only n lives across it, and uncounted
 * if the call fails (a reader may see it counted meanwhile, as it may see
 * any allocation under way). */
static inline __attribute__((always_inline)) void *malloc_uo(size_t n, size_t u, size_t off)
{
    struct seg_counters *k = (struct seg_counters *)((char *)rt.cls + off);
    own_add(&k->req_bytes, n);
    own_add(&k->usable_alloc, u);
    if (unlikely(own_inc_sink(&k->allocs)))
        return malloc_slow(n);   /* counted in the sink: counts it again, where it belongs */
    if (unlikely(countdown_out(u)))
        return malloc_tracked(n);
    void *p = hot.malloc(n);
    if (unlikely(p == NULL))
        return uncount(n);   /* a tail call: no frame to keep p in */
    return p;
}

/* rec_malloc_table's request over UC_MAX: from ug_for, else by
 * malloc_slow. Out of line, so that the common case keeps its registers. */
__attribute__((noinline))
static void *malloc_big(size_t n)
{
    size_t off, u = ug_of(n, &off);
    if (unlikely(u == 0))
        return malloc_slow(n);
    return malloc_uo(n, u, off);
}

/* malloc, with the usable size and class from the request. */
static void *rec_malloc_table(size_t n)
{
    if (unlikely(n > UC_MAX))
        return malloc_big(n);
    const struct uc *e = &uc_for[n];
    return malloc_uo(n, e->usable, e->koff);
}

/* malloc, with the usable size from the block. */
static void *rec_malloc(size_t n)
{
    void *p = hot.malloc(n);
    if (unlikely(p == NULL))
        return p;
    return on_alloc_u(p, n, hot.usable(p), 0);
}

/* The same where the backend is glibc and its usable_live the chunk
 * header's (glibc_usable_chunk): read inline, without the call. */
static void *rec_malloc_chunk(size_t n)
{
    void *p = hot.malloc(n);
    if (unlikely(p == NULL))
        return p;
    return on_alloc_u(p, n, glibc_usable_inline(p), 0);
}

/* free of p != NULL, whose usable size is u and its class's KOFF off. */
static inline __attribute__((always_inline)) void free_uo(void *p, size_t u, size_t off)
{
    struct seg_counters *k = (struct seg_counters *)((char *)rt.cls + off);
    own_add(&k->usable_free, u);
    if (unlikely(own_inc_sink(&k->frees)))
        return free_slow(p, u, 0);
    if (unlikely(maybe_tracked(p)))
        return free_slow(p, u, 1);
    hot.free(p);
}

/* free of p != NULL, whose usable size is u. */
static inline __attribute__((always_inline)) void free_u(void *p, size_t u)
{
    free_uo(p, u, koff_of(u));
}

static void rec_free(void *p)
{
    if (p == NULL)
        return;
    free_u(p, hot.usable(p));
}

/* rec_free where the backend's usable size is a method of its own
 * (usable_of: tcmalloc's GetAllocatedSize), called directly. */
static void rec_free_of(void *p)
{
    if (p == NULL)
        return;
    free_u(p, hot.usable_of(hot.usable_self, p));
}

/* rec_free with glibc's chunk header read inline (rec_malloc_chunk): no
 * call before the backend's, so no frame. */
static void rec_free_chunk(void *p)
{
    if (p == NULL)
        return;
    free_u(p, glibc_usable_inline(p));
}

#ifdef HAVE_JEMALLOC
/* The usable size and KOFF of each of jemalloc's size classes, for
 * rec_free_je (its large classes reach far past 4 GiB): filled by
 * rec_ops_init from its table, read-only after. */
static struct {
    size_t usable, koff;
} je_cls[JE_NSIZES];

/* rec_free_je's block that the tree does not know: the backend's answer. */
__attribute__((noinline))
static void free_je_call(void *p)
{
    size_t u = hot.usable(p);
    free_uo(p, u, koff_of(u));
}

/* rec_free with jemalloc's size class read inline from its radix tree
 * (je_class_inline), where its backend checked that at start: no call
 * before the backend's, about 12 instructions where the call took 40, and
 * the class's usable size and counters from je_cls. */
static void rec_free_je(void *p)
{
    if (p == NULL)
        return;
    unsigned c = je_class_inline(p);
    if (unlikely(c >= JE_NSIZES))
        return free_je_call(p);
    free_uo(p, je_cls[c].usable, je_cls[c].koff);
}
#endif

/* C++'s sized delete under glibc, its chunk header read inline: glibc's
 * sized free is its free (glibc_free_sized), so this is rec_free_chunk's
 * path, where rec_free_sized would count through my_cls with a frame. */
static void rec_free_sized_chunk(void *p, size_t n)
{
    (void)n;
    free_u(p, glibc_usable_inline(p));
}

/* ---- The rest of the table ---- */

/* The owning thread's update of one class: one plain add per counter
 * (own_add), no lock and no read-modify-write on a shared line. The counters only grow, so
 * a reader that reads a class twice and sees the same values has a
 * consistent snapshot of it (seg.h); no sequence counter is needed, which
 * keeps the stores of one call off the critical path of the next. The
 * overflow slot, shared, takes atomic adds instead. */
static inline void count_alloc(struct seg_counters *cls, unsigned c, size_t req, size_t usable,
                               int is_realloc)
{
    struct seg_counters *k = &cls[c];
    SHIM_ASSERT(c < SIZECLASS_COUNT);
    if (unlikely(cls == overflow->cls)) {
        /* the bytes before the count, as own_add's callers do (seg.h) */
        __atomic_fetch_add(&k->reallocs, (uint64_t)is_realloc, __ATOMIC_RELAXED);
        __atomic_fetch_add(&k->req_bytes, req, __ATOMIC_RELAXED);
        __atomic_fetch_add(&k->usable_alloc, usable, __ATOMIC_RELAXED);
        __atomic_fetch_add(&k->allocs, 1, __ATOMIC_RELEASE);
        return;
    }
    if (unlikely(is_realloc))
        own_add(&k->reallocs, 1);
    own_add(&k->req_bytes, req);
    own_add(&k->usable_alloc, usable);
    own_add(&k->allocs, 1);
}

static inline void count_free(struct seg_counters *cls, unsigned c, size_t usable)
{
    struct seg_counters *k = &cls[c];
    SHIM_ASSERT(c < SIZECLASS_COUNT);
    if (unlikely(cls == overflow->cls)) {
        __atomic_fetch_add(&k->usable_free, usable, __ATOMIC_RELAXED);
        __atomic_fetch_add(&k->frees, 1, __ATOMIC_RELEASE);
        return;
    }
    own_add(&k->usable_free, usable);
    own_add(&k->frees, 1);
}

/* Takes back count_free's count (a realloc that failed): the counter
 * slot's owner at once, so seg.h's one exception to the counters' growing
 * applies. */
static void uncount_free(struct seg_counters *cls, unsigned c, size_t usable)
{
    struct seg_counters *k = &cls[c];
    if (unlikely(cls == overflow->cls)) {
        __atomic_fetch_sub(&k->frees, 1, __ATOMIC_RELAXED);
        __atomic_fetch_sub(&k->usable_free, usable, __ATOMIC_RELAXED);
        return;
    }
    own_add(&k->frees, (uint64_t)-1);
    own_add(&k->usable_free, (uint64_t)0 - usable);
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
 * program that replaces operator new or delete never gets here (cxx.c).
 * The hot path's form, as rec_free's; a request whose usable size takes the
 * backend's answer (over UG_MAX, or a granule of ug_for that has none) out
 * of line, so that the common case keeps no frame. */
static inline __attribute__((always_inline)) void free_sized_uo(void *p, size_t n, size_t u,
                                                                size_t off)
{
    struct seg_counters *k = (struct seg_counters *)((char *)rt.cls + off);
    own_add(&k->usable_free, u);
    if (unlikely(own_inc_sink(&k->frees)))
        return free_sized_slow(p, n, u, 0);
    if (unlikely(maybe_tracked(p)))
        return free_sized_slow(p, n, u, 1);
    hot.free_sized(p, n);
}

/* Where neither uc_for nor ug_for has n's answer: the backend's. */
__attribute__((noinline))
static void free_sized_big(void *p, size_t n)
{
    size_t u = hot.usable_for(n);
    free_sized_uo(p, n, u, koff_of(u));
}

static void rec_free_sized_table(void *p, size_t n)
{
    size_t u, off;
    if (likely(n <= UC_MAX)) {
        const struct uc *e = &uc_for[n];
        u = e->usable;
        off = e->koff;
    } else if ((u = ug_of(n, &off)) == 0) {
        return free_sized_big(p, n);
    }
    free_sized_uo(p, n, u, off);
}

static void *rec_calloc(size_t n, size_t size)
{
    void *p = be->calloc(n, size);
    if (likely(p != NULL))
        on_alloc_u(p, n * size, hot.usable_for ? hot.usable_for(n * size) : hot.usable(p), 0);
    return p;
}

/* calloc where uc_table holds: the usable size and class from the request,
 * as rec_malloc_table's (n * size cannot overflow once calloc succeeded). */
static void *rec_calloc_table(size_t n, size_t size)
{
    void *p = be->calloc(n, size);
    if (unlikely(p == NULL))
        return p;
    size_t off;
    size_t u = uc_of(n * size, &off);
    return on_alloc_uo(p, n * size, u, off, 0);
}

static void *rec_aligned(size_t align, size_t n)
{
    void *p = be->aligned(align, n);
    if (likely(p != NULL))
        on_alloc_u(p, n, hot.usable(p), 0);
    return p;
}

/* Removes p from the table if it is tracked; *out gets its entry. */
static int untrack_take(const void *p, struct seg_track *out)
{
    if (likely(__atomic_load_n(&hot.filter[filter_idx(p)], __ATOMIC_RELAXED) == 0))
        return 0;
    return untrack_remove(p, addr_hash(p), out);
}

/* A realloc ends the old block (its class, its usable size, its lifetime if
 * tracked) and begins the new one. The old block is untracked before the
 * call, so that its address, once free, cannot be tracked again by another
 * thread before we are done with it; a failed realloc puts it back. Its
 * free is counted before the call too, and taken back if the call fails,
 * so that the counted live bytes never hold a block the backend has
 * already let go (seg.h: the backend's in-use figure is at least live_lo):
 * the new block is counted after, as every block is but malloc's
 * (rec_malloc_table), which counts before. */
static void *rec_realloc(void *p, size_t n)
{
    struct seg_track e;
    struct seg_counters *cls;
    size_t ou;
    int was;
    void *q;

    if (p == NULL)
        return rec_malloc(n);
    ou = hot.usable(p);
    was = untrack_take(p, &e);
    cls = my_cls();
    count_free(cls, sizeclass_of(ou), ou);
    q = be->realloc(p, n);
    if (q == NULL && n != 0) {
        uncount_free(cls, sizeclass_of(ou), ou);
        if (was)
            untrack_undo(p, &e);
        return NULL;
    }
    if (was)
        untrack_finish(p, &e);
    if (q != NULL)
        on_alloc_u(q, n, hot.usable(q), 1);
    return q;
}

/* ---- The slow paths ---- */

/* An allocation by a thread without a slot of its own (see rec_thread).
 * Returns p. */
__attribute__((noinline))
static void *alloc_slow(void *p, size_t req, size_t u, unsigned c, int is_realloc)
{
    count_alloc(slot_slow(), c, req, u, is_realloc);
    if (countdown_out(u))
        maybe_track(p, req, u, c);
    return p;
}

/* rec_malloc_table's malloc by a thread without counters of its own (which
 * counted it in the sink first), or of a request whose usable size takes the
 * backend's answer (over UG_MAX, or a granule of ug_for that has none):
 * counted after the backend's call. */
__attribute__((noinline))
static void *malloc_slow(size_t n)
{
    void *p = hot.malloc(n);
    if (unlikely(p == NULL))
        return p;
    size_t off;
    size_t u = uc_of(n, &off);
    return on_alloc_uo(p, n, u, off, 0);
}

/* Takes back rec_malloc_table's count of a malloc of n bytes that failed.
 * Returns NULL, the failed malloc's result. */
__attribute__((noinline))
static void *uncount(size_t n)
{
    size_t off;
    size_t u = uc_of(n, &off);
    /* the counters that counted it: the thread's own, still */
    SHIM_ASSERT(rt.cls != rec_sink);
    struct seg_counters *k = (struct seg_counters *)((char *)rt.cls + off);
    own_add(&k->allocs, (uint64_t)-1);
    own_add(&k->usable_alloc, (uint64_t)0 - u);
    own_add(&k->req_bytes, (uint64_t)0 - n);
    return NULL;
}

/* rec_malloc_table's malloc (counted already) whose countdown ran out. */
__attribute__((noinline))
static void *malloc_tracked(size_t n)
{
    void *p = hot.malloc(n);
    if (unlikely(p == NULL)) {
        uncount(n);
        countdown_redraw();
        return p;
    }
    size_t off;
    size_t u = uc_of(n, &off);
    return maybe_track(p, n, u, KCLASS(off));
}

/* A free by a thread without a slot of its own (counted != 0: counted
 * already, in its own counters), or of a block that may be tracked. */
static inline void free_slow_count(void *p, size_t u, int counted)
{
    if (!counted)
        count_free(slot_slow(), sizeclass_of(u), u);
    if (maybe_tracked(p))
        untrack_free(p);
}

/* free_slow_count, then the backend's free. */
__attribute__((noinline))
static void free_slow(void *p, size_t u, int counted)
{
    free_slow_count(p, u, counted);
    hot.free(p);
}

/* The same for rec_free_sized_table: then the backend's sized free. */
__attribute__((noinline))
static void free_sized_slow(void *p, size_t n, size_t u, int counted)
{
    free_slow_count(p, u, counted);
    hot.free_sized(p, n);
}

/* ---- Per-thread slots ---- */

/* Declared, with their rules, in rec.h. */
int fold_lock;
pthread_key_t slot_key;

/* Adds `words` words at src (a slot's cls and trk, or a counter slot's
 * cls) into retired's, from its cls on, clears them and frees the slot
 * (*state), inside one odd period of retired's seq. Precondition:
 * fold_lock held. */
void fold_locked(uint64_t *src, size_t words, uint32_t *state)
{
    uint64_t *dst = (uint64_t *)retired->cls;
    /* even: no other fold is half done (fold_lock; fork takes it too) */
    SHIM_ASSERT(((retired->seq & 1) == 0 || rec_inherited()) && words <= SLOT_WORDS);
    __atomic_store_n(&retired->seq, retired->seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    for (size_t k = 0; k < words; k++) {
        __atomic_store_n(&dst[k], dst[k] + src[k], __ATOMIC_RELAXED);
        __atomic_store_n(&src[k], 0, __ATOMIC_RELAXED);
    }
    __atomic_store_n(state, SEG_SLOT_FREE, __ATOMIC_RELEASE);
    __atomic_store_n(&retired->seq, retired->seq + 1, __ATOMIC_RELEASE);
}

/* pthread key destructor: the thread is exiting (every thread that
 * allocated has the key set, to its counters or to overflow's). Later
 * allocations of this thread (other destructors) count in the overflow
 * slot. */
void slot_exit(void *arg)
{
    struct seg_slot *s = rt.slot;
    uint32_t cs = rt.cslot;
    (void)arg;
    SHIM_ASSERT((s == NULL || (size_t)(s - slots) < geo.nslots) && cs <= geo.ncslots);
    sampler_stop_if_last();
    stack_thread_exit();
    rt.state = T_DEAD;
    rt.cls = rec_sink;
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

/* The counters to count in when rt.cls is the sink: claims a slot, else a
 * counter slot, for a new thread, else (re-entered before the claim found
 * one, none free, exiting) overflow's. */
__attribute__((noinline))
struct seg_counters *slot_slow(void)
{
    if (rt.state != T_NEW)
        return overflow->cls;
    rt.state = T_CLAIMING;
    __atomic_fetch_add(&seg->threads_seen, 1, __ATOMIC_RELAXED);
    long i = claim(&slots[0].state, sizeof *slots, geo.nslots);
    if (i >= 0) {
        SHIM_ASSERT((uint64_t)i < geo.nslots);
        slots[i].tid = my_tid();
        rt.slot = &slots[i];
        rt.trk = slots[i].trk;
        rt.cls = slots[i].cls;
    } else if (geo.ncslots && (i = claim(&cstates[0].state, sizeof *cstates, geo.ncslots)) >= 0) {
        SHIM_ASSERT((uint64_t)i < geo.ncslots);
        cstates[i].tid = my_tid();
        /* Readers look this far before the thread's first count. */
        uint64_t high = __atomic_load_n(&seg->cslots_high, __ATOMIC_RELAXED);
        while (high < (uint64_t)i + 1 &&
               !__atomic_compare_exchange_n(&seg->cslots_high, &high, (uint64_t)i + 1, 0,
                                            __ATOMIC_RELEASE, __ATOMIC_RELAXED))
            ;
        SHIM_ASSERT(__atomic_load_n(&seg->cslots_high, __ATOMIC_RELAXED) <= geo.ncslots);
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

/* ---- The table's start ---- */

/* Fills uc_for from usable_for. Returns 1, or 0 when usable_for gives a
 * usable size that does not fit (then uc_for is not used). */
static int uc_fill(size_t (*usable_for)(size_t))
{
    for (size_t n = 0; n <= UC_MAX; n++) {
        size_t u = usable_for(n);
        if (u < n || u > 0xffff)
            return 0;
        uc_for[n] = (struct uc){ (uint16_t)u, (uint16_t)KOFF(sizeclass_of(u)) };
    }
    /* A usable size never falls as the request grows (it is the smallest
     * class that holds the request), so one that is the same at both ends
     * of a granule is the same throughout. */
    for (size_t g = 0; g < UG_N; g++) {
        size_t lo = UC_MAX + (g << UG_SHIFT) + 1, hi = UC_MAX + ((g + 1) << UG_SHIFT);
        size_t u = usable_for(lo);
        if (u == usable_for(hi) && u >= hi && u <= UINT32_MAX)
            ug_for[g] = (struct ug){ (uint32_t)u, (uint32_t)KOFF(sizeclass_of(u)) };
    }
    return 1;
}

/* The recording table: the backend's, with the recording functions above
 * in place of its own. Filled by rec_ops_init, read-only after. */
static struct backend_ops rec_ops;

const struct backend_ops *rec_ops_init(const struct backend_ops *backend)
{
    /* the hot path's classes come from this table (and uc_for, from
     * sizeclass_of, which clamps): each must index a thread's counters */
    for (size_t u = 0; u <= KOFF_U_MAX; u++) {
        SHIM_ASSERT(sizeclass_of(u) < SIZECLASS_COUNT);
        koff_by_u[u] = (uint16_t)KOFF(sizeclass_of(u));
    }
    for (size_t g = (KOFF_U_MAX + 1 + 15) >> 4; g <= KOFF_U16_MAX >> 4; g++) {
        /* the granule's first and last size share a class (above) */
        SHIM_ASSERT(sizeclass_of(16 * g - 15) == sizeclass_of(16 * g));
        koff_by16[g] = (uint16_t)KOFF(sizeclass_of(16 * g));
    }
    hot.malloc = backend->malloc;
    hot.free = backend->free;
    hot.free_sized = backend->free_sized;
    hot.usable = backend->usable_live;
    hot.usable_for = backend->usable_for;
    hot.usable_of = backend->usable_of;
    hot.usable_self = backend->usable_self;
    uc_table = backend->usable_for && uc_fill(backend->usable_for);
    hot.filter = filter;
    if (sample_n == 1) {
        /* 256 KiB of ones, once (sample:1 only); without it, the filter
         * counts as with sampling */
        size_t n = (size_t)1 << SEG_FILTER_BITS;
        void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED) {
            memset(m, 1, n);
            mprotect(m, n, PROT_READ);
            hot.filter = filter_all = m;
        }
    }
    rec_ops = *backend;
    /* The backend's own variants, so the hot path tests nothing about it. */
    /* (a backend whose usable_for answers unevenly within 8 bytes: from
     * the block, as glibc's) */
    /* glibc's chunk header, read inline where the backend checked it */
    int chunk = backend->usable_live == glibc_usable_chunk;
    rec_ops.malloc = uc_table ? rec_malloc_table : chunk ? rec_malloc_chunk : rec_malloc;
    rec_ops.free = chunk ? rec_free_chunk : backend->usable_of ? rec_free_of : rec_free;
#ifdef HAVE_JEMALLOC
    if (backend->usable_live == je_usable_tree) {
        for (unsigned c = 0; c < JE_NSIZES; c++) {
            je_cls[c].usable = je_sz_index2size_tab[c];
            je_cls[c].koff = koff_of(je_cls[c].usable);
        }
        rec_ops.free = rec_free_je;
    }
#endif
    rec_ops.free_sized = uc_table ? rec_free_sized_table
                                  : chunk  ? rec_free_sized_chunk
                                           : rec_free_sized;
    rec_ops.calloc = uc_table ? rec_calloc_table : rec_calloc;
    rec_ops.realloc = rec_realloc;
    rec_ops.aligned = rec_aligned;
    return &rec_ops;
}
