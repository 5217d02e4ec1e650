/* mktrace: writes a trace file (src/trace.h) through the writer API from a
 * deterministic pseudo-workload, and the figures a replay of it must give.
 * The workload: N threads share a block cache whose 4-16 KiB blocks one
 * thread makes and, on eviction, another frees; each thread also churns
 * small blocks (malloc, calloc, realloc, memalign and its kin, C++ new and
 * the sized and aligned deletes); a starting heap of blocks made before
 * the capture (the cache starts full of them) that the trace partly frees;
 * and the awkward cases: calls that failed, realloc(p, 0), free(NULL), a
 * free of a block nobody made (an orphan), and a realloc stamped late
 * (after its call, trace.h) whose old block another thread was given, and
 * kept or freed, before the realloc's time.
 * Usage: mktrace [--seed=S] [--threads=N] [--events=N] [--cache=BLOCKS]
 *                [--chunk=EVENTS] [--level=ZSTD_LEVEL] [--gap=NS] [--expect=FILE] OUT
 * The writer runs with this program's malloc family made to abort: it must
 * not allocate.
 * --expect writes "key value" lines: events, chunks, threads, ops, failed,
 * cross_thread, start_blocks, start_bytes, start_freed, orphans,
 * peak_live_bytes, end_live_bytes (as shimreplay --info --json names
 * them). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"

#define SMALL_MAX 24           /* live small blocks per thread */

/* The writer must never allocate (it runs inside the preload's malloc):
 * while it runs, this program's malloc family aborts. */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
static int in_writer;

static void no_alloc(void)
{
    static const char msg[] = "mktrace: the trace writer allocated\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
        /* abort anyway */
    }
    abort();
}

void *malloc(size_t n)
{
    if (in_writer)
        no_alloc();
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    if (in_writer)
        no_alloc();
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    if (in_writer)
        no_alloc();
    return __libc_realloc(p, n);
}

void free(void *p)
{
    if (in_writer && p)
        no_alloc();
    __libc_free(p);
}

struct block {
    uint64_t id;
    uint64_t req;
    uint32_t usable;
    uint32_t thread;           /* that made it; UINT32_MAX: the starting heap */
    uint8_t op;
    uint8_t align;
};

struct gthread {
    struct trace_event *buf;
    uint32_t n, flush_at;
    uint64_t events;
    struct block small[SMALL_MAX];
    uint32_t nsmall;
    uint64_t last_t;           /* its last event's time */
    uint64_t realloc_start;    /* for its next realloc: when the call began (0: right
                                  after its event before) */
};

static struct {
    uint64_t rng;
    uint32_t nth, chunk;
    uint64_t events_max, cache_cap;
    struct gthread *th;
    struct block *cache;       /* the shared cache */
    uint64_t ncache;
    struct block *start_small; /* small blocks of the starting heap, not freed yet */
    uint64_t nstart_small;
    uint64_t t;                /* the virtual clock, ns */
    uint64_t gap;              /* each event 1..gap ns after the one before */
    uint64_t next_addr;
    uint64_t *pool;            /* addresses freed, for reuse (LIFO) */
    uint64_t npool, cappool;
    struct trace_writer w;
    struct trace_header h;
    /* the expected figures */
    uint64_t events, failed, cross, start_blocks, start_bytes, start_freed, orphans, orphan_bytes;
    int64_t diff, max_diff;    /* live bytes minus the starting heap's (and orphans') */
} g;

static uint64_t rnd(void)
{
    g.rng ^= g.rng << 13;
    g.rng ^= g.rng >> 7;
    g.rng ^= g.rng << 17;
    return g.rng;
}

static uint64_t range(uint64_t lo, uint64_t hi)   /* [lo, hi] */
{
    return lo + rnd() % (hi - lo + 1);
}

static void die(const char *what, int e)
{
    fprintf(stderr, "mktrace: %s: %s\n", what, strerror(e));
    exit(1);
}

static uint32_t usable_of(uint64_t req)
{
    uint64_t u = req < 24 ? 24 : ((req + 8 + 15) & ~15ull) - 8;
    return u > UINT32_MAX ? UINT32_MAX : (uint32_t)u;
}

static uint64_t new_addr(uint64_t req)
{
    uint64_t a;
    if (g.npool && rnd() % 4) {
        uint64_t i = g.npool - 1 - rnd() % (g.npool < 8 ? g.npool : 8);
        a = g.pool[i];
        g.pool[i] = g.pool[--g.npool];
        return a;
    }
    a = g.next_addr;
    g.next_addr += (req + 31) & ~15ull;
    return a;
}

static void reuse_addr(uint64_t a)
{
    if (g.npool == g.cappool) {
        g.cappool = g.cappool ? 2 * g.cappool : 1024;
        if (!(g.pool = realloc(g.pool, g.cappool * sizeof *g.pool)))
            die("out of memory", ENOMEM);
    }
    g.pool[g.npool++] = a;
}

static void flush(uint32_t ti)
{
    struct gthread *t = &g.th[ti];
    int rc;
    if (!t->n)
        return;
    in_writer = 1;
    rc = trace_writer_chunk(&g.w, 1000 + ti, t->buf, t->n);
    in_writer = 0;
    if (rc != 0)
        die("writing a chunk", rc);
    t->n = 0;
    t->flush_at = (uint32_t)range(g.chunk / 2 ? g.chunk / 2 : 1, g.chunk);
}

/* Records an event of thread ti at the next tick of the clock. */
static void emit(uint32_t ti, struct trace_event e)
{
    struct gthread *t = &g.th[ti];
    g.t += range(1, g.gap);
    e.t_ns = g.t;
    if (e.op == TRACE_OP_REALLOC) {
        /* its length, rounded down as the capture does (trace.h) */
        uint64_t start = t->realloc_start ? t->realloc_start : t->last_t + 1;
        uint16_t len = trace_dur_encode(e.t_ns - start);
        e.align = (uint8_t)len;
        e.reserved = (uint8_t)(len >> 8);
        t->realloc_start = 0;
    }
    t->last_t = e.t_ns;
    t->buf[t->n++] = e;
    t->events++;
    g.events++;
    if (t->n == t->flush_at)
        flush(ti);
}

static void live_add(uint64_t n)
{
    g.diff += (int64_t)n;
    if (g.diff > g.max_diff)
        g.max_diff = g.diff;
}

/* Thread ti makes a block with op (an allocation) of req bytes. */
static struct block make(uint32_t ti, uint8_t op, uint64_t req, uint8_t align)
{
    struct block b = { 0, req, usable_of(req), ti, op, align };
    struct trace_event e = { 0 };
    b.id = new_addr(req);
    e.op = op;
    e.id = b.id;
    e.size = req;
    e.usable = b.usable;
    e.align = align;
    if (op == TRACE_OP_CALLOC) {
        e.aux = 4;
        e.size = req / 4;
        b.req = e.size * 4;
    }
    emit(ti, e);
    live_add(b.req);
    return b;
}

/* The free to record for block b: the one its maker pairs with. */
static uint8_t free_op(const struct block *b, uint64_t *size)
{
    *size = 0;
    switch (b->op) {
    case TRACE_OP_NEW:
        if (rnd() % 2) {
            *size = b->req;
            return TRACE_OP_DELETE_SIZED;
        }
        return TRACE_OP_DELETE;
    case TRACE_OP_NEW_ARRAY:
        if (rnd() % 2) {
            *size = b->req;
            return TRACE_OP_DELETE_ARRAY_SIZED;
        }
        return TRACE_OP_DELETE_ARRAY;
    case TRACE_OP_NEW_ALIGNED:
        if (rnd() % 2) {
            *size = b->req;
            return TRACE_OP_DELETE_SIZED_ALIGNED;
        }
        return TRACE_OP_DELETE_ALIGNED;
    default:
        return TRACE_OP_FREE;
    }
}

/* Thread ti frees block b. */
static void unmake(uint32_t ti, const struct block *b)
{
    struct trace_event e = { 0 };
    uint64_t size;
    e.op = free_op(b, &size);
    e.id = b->id;
    e.size = size;
    e.usable = b->usable;
    if (trace_op_aligned(e.op))
        e.align = b->align;
    emit(ti, e);
    if (b->thread == UINT32_MAX) {
        g.start_freed++;
    } else if (b->thread != ti) {
        g.cross++;
    }
    g.diff -= (int64_t)(b->thread == UINT32_MAX ? b->usable : b->req);
    reuse_addr(b->id);
}

/* Thread ti reallocs block *b to req bytes (in place, or at a new address
 * `to` when not 0). */
static void re(uint32_t ti, struct block *b, uint64_t req, uint64_t to)
{
    struct trace_event e = { 0 };
    e.op = TRACE_OP_REALLOC;
    e.aux = b->id;
    e.size = req;
    e.usable = b->usable;
    if (b->thread == UINT32_MAX)
        g.start_freed++;
    else if (b->thread != ti)
        g.cross++;
    g.diff -= (int64_t)(b->thread == UINT32_MAX ? b->usable : b->req);
    if (!to)
        to = rnd() % 2 ? b->id : new_addr(req);
    if (to != b->id && b->id)
        reuse_addr(b->id);
    e.id = to;
    emit(ti, e);
    live_add(req);
    b->id = to;
    b->req = req;
    b->usable = usable_of(req);
    b->thread = ti;
    b->op = TRACE_OP_REALLOC;
    b->align = 0;
}

static void small_op(uint32_t ti)
{
    struct gthread *t = &g.th[ti];
    uint64_t r = rnd() % 100;
    if (t->nsmall && (t->nsmall == SMALL_MAX || r < 40)) {
        uint32_t i = (uint32_t)(rnd() % t->nsmall);
        struct block *b = &t->small[i];
        if (r < 8 && b->op != TRACE_OP_NEW && b->op != TRACE_OP_NEW_ARRAY &&
            b->op != TRACE_OP_NEW_ALIGNED && !trace_op_aligned(b->op) &&
            b->op != TRACE_OP_VALLOC) {
            re(ti, b, range(16, 2048), 0);
            return;
        }
        unmake(ti, b);
        *b = t->small[--t->nsmall];
        return;
    }
    {
        static const uint8_t kinds[] = {
            TRACE_OP_MALLOC, TRACE_OP_MALLOC, TRACE_OP_MALLOC, TRACE_OP_NEW, TRACE_OP_NEW,
            TRACE_OP_CALLOC, TRACE_OP_NEW_ARRAY, TRACE_OP_MEMALIGN, TRACE_OP_POSIX_MEMALIGN,
            TRACE_OP_ALIGNED_ALLOC, TRACE_OP_NEW_ALIGNED, TRACE_OP_VALLOC,
        };
        uint8_t op = kinds[rnd() % sizeof kinds];
        uint8_t align = 0;
        uint64_t req = range(16, 512);
        if (op == TRACE_OP_VALLOC && rnd() % 8)
            op = TRACE_OP_MALLOC;   /* valloc is rare */
        if (op == TRACE_OP_MEMALIGN || op == TRACE_OP_POSIX_MEMALIGN || op == TRACE_OP_ALIGNED_ALLOC)
            align = (uint8_t)range(4, 7);
        if (op == TRACE_OP_NEW_ALIGNED)
            align = 6;
        if (op == TRACE_OP_ALIGNED_ALLOC)
            req = (req + 127) & ~127ull;
        t->small[t->nsmall++] = make(ti, op, req, align);
    }
}

static void cache_op(uint32_t ti)
{
    uint64_t req = range(4096, 16384);
    uint8_t op = rnd() % 4 ? TRACE_OP_MALLOC : TRACE_OP_NEW_ARRAY;
    struct block b = make(ti, op, req, 0);
    if (g.ncache == g.cache_cap) {   /* evict one, made by whichever thread */
        uint64_t i = rnd() % g.ncache;
        if (rnd() % 64 == 0 && g.cache[i].op != TRACE_OP_NEW_ARRAY) {
            /* a cached block grown in place or moved: maybe another thread's */
            re(ti, &g.cache[i], g.cache[i].req + 256, 0);
            i = (i + 1) % g.ncache;
        }
        unmake(ti, &g.cache[i]);
        g.cache[i] = g.cache[--g.ncache];
    }
    g.cache[g.ncache++] = b;
}

/* The awkward cases, each now and then. */
static void odd_op(uint32_t ti)
{
    struct gthread *t = &g.th[ti];
    struct trace_event e = { 0 };
    switch (rnd() % 6) {
    case 0:   /* malloc that failed */
        e.op = TRACE_OP_MALLOC;
        e.size = 1ull << 46;
        emit(ti, e);
        g.failed++;
        break;
    case 1:   /* realloc that failed: the block stays */
        if (!t->nsmall || t->small[0].op != TRACE_OP_MALLOC)
            return;
        e.op = TRACE_OP_REALLOC;
        e.aux = t->small[0].id;
        e.size = 1ull << 46;
        e.usable = t->small[0].usable;
        emit(ti, e);
        g.failed++;
        break;
    case 2:   /* free(NULL) */
        e.op = TRACE_OP_FREE;
        emit(ti, e);
        break;
    case 3:   /* realloc(p, 0): frees p */
        if (!t->nsmall || t->small[0].op != TRACE_OP_MALLOC)
            return;
        e.op = TRACE_OP_REALLOC;
        e.aux = t->small[0].id;
        e.usable = t->small[0].usable;
        emit(ti, e);
        g.diff -= (int64_t)t->small[0].req;
        reuse_addr(t->small[0].id);
        t->small[0] = t->small[--t->nsmall];
        break;
    case 4: { /* realloc(NULL, n) */
        if (t->nsmall == SMALL_MAX)
            return;
        struct block b = { 0, range(16, 256), 0, ti, TRACE_OP_REALLOC, 0 };
        b.usable = usable_of(b.req);
        b.id = new_addr(b.req);
        e.op = TRACE_OP_REALLOC;
        e.id = b.id;
        e.size = b.req;
        emit(ti, e);
        live_add(b.req);
        t->small[t->nsmall++] = b;
        break;
    }
    default: { /* a realloc whose old block's address is given to another
                * thread during the call, which keeps it or frees it before
                * the realloc's time (as that thread's block, neither is a
                * cross-thread free): the realloc's own block, or one of the
                * starting heap, which the trace never saw made. Its start
                * just before the other thread's malloc (exact in 16 bits
                * while the gaps are short). */
        uint32_t o = (uint32_t)((ti + 1) % g.nth);
        struct gthread *u = &g.th[o];
        struct block *b = &t->small[0], sb;
        int from_start = g.nstart_small && g.gap <= 512 && rnd() % 2;
        if (from_start) {
            uint64_t i = rnd() % g.nstart_small;
            sb = g.start_small[i];
            b = &sb;
        }
        if (o == ti || u->nsmall == SMALL_MAX ||
            (!from_start && (!t->nsmall || b->op != TRACE_OP_MALLOC)))
            return;
        if (from_start)   /* taken now that it is used */
            for (uint64_t i = 0; i < g.nstart_small; i++)
                if (g.start_small[i].id == sb.id) {
                    g.start_small[i] = g.start_small[--g.nstart_small];
                    break;
                }
        uint64_t req = range(16, 256);
        struct block got = { b->id, req, usable_of(req), o, TRACE_OP_MALLOC, 0 };
        int keep = (int)(rnd() % 2);
        e.op = TRACE_OP_MALLOC;
        e.id = got.id;
        e.size = req;
        e.usable = got.usable;
        emit(o, e);
        live_add(req);
        t->realloc_start = u->last_t - 1;
        if (!keep) {
            struct trace_event f = { 0 };
            f.op = TRACE_OP_FREE;
            f.id = got.id;
            f.usable = got.usable;
            emit(o, f);
            g.diff -= (int64_t)req;
        }
        re(ti, b, b->req + 64, new_addr(b->req + 64));
        if (keep) {
            g.npool--;   /* re gave the old address back to the pool: o has it */
            u->small[u->nsmall++] = got;
        }
        if (from_start) {   /* now this thread's */
            if (t->nsmall < SMALL_MAX)
                t->small[t->nsmall++] = sb;
            else
                unmake(ti, &sb);
        }
        break;
    }
    }
}

/* The starting heap: the cache full of blocks made before the capture,
 * and small blocks besides. */
static void starting_heap(uint64_t nsmall)
{
    struct block b = { 0 };
    b.thread = UINT32_MAX;
    b.op = TRACE_OP_MALLOC;
    for (uint64_t i = 0; i < g.cache_cap + nsmall; i++) {
        b.req = i < g.cache_cap ? range(4096, 16384) : range(16, 1024);
        b.usable = usable_of(b.req);
        b.id = new_addr(b.req);
        g.h.start[sizeclass_of(b.usable)].live_count++;
        g.h.start[sizeclass_of(b.usable)].live_usable += b.usable;
        g.start_blocks++;
        g.start_bytes += b.usable;
        if (i < g.cache_cap)
            g.cache[g.ncache++] = b;
        else
            g.start_small[g.nstart_small++] = b;
    }
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "seed", required_argument, NULL, 's' },
        { "threads", required_argument, NULL, 'n' },
        { "events", required_argument, NULL, 'e' },
        { "cache", required_argument, NULL, 'c' },
        { "chunk", required_argument, NULL, 'k' },
        { "level", required_argument, NULL, 'l' },
        { "gap", required_argument, NULL, 'g' },
        { "expect", required_argument, NULL, 'x' },
        { "start-free", required_argument, NULL, 'f' },
        { "arenas", required_argument, NULL, 'a' },
        { NULL, 0, NULL, 0 },
    };
    const char *expect = NULL;
    uint64_t seed = 1, nsmall, start_free = UINT64_MAX;
    long arenas = 0;
    size_t wslen;
    void *ws;
    int c, fd, rc, level = 3;
    FILE *x;

    g.nth = 8;
    g.events_max = 200000;
    g.cache_cap = 2000;
    g.chunk = 512;
    g.gap = 200;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 's': seed = strtoull(optarg, NULL, 10); break;
        case 'n': g.nth = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'e': g.events_max = strtoull(optarg, NULL, 10); break;
        case 'c': g.cache_cap = strtoull(optarg, NULL, 10); break;
        case 'k': g.chunk = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'l': level = atoi(optarg); break;
        case 'g': g.gap = strtoull(optarg, NULL, 10); break;
        case 'x': expect = optarg; break;
        case 'f': start_free = strtoull(optarg, NULL, 10); break;
        case 'a': arenas = strtol(optarg, NULL, 10); break;
        default: goto usage;
        }
    }
    if (argc - optind != 1 || g.nth < 2 || g.nth > 1024 || g.chunk < 1 ||
        g.chunk > TRACE_CHUNK_EVENTS_MAX || g.cache_cap < 1 || g.gap < 1 ||
        g.gap > 1000000000)
        goto usage;
    g.rng = seed * 0x9E3779B97F4A7C15ull + 1;
    g.next_addr = 0x7f3a00000000ull;
    g.th = calloc(g.nth, sizeof *g.th);
    g.cache = calloc(g.cache_cap, sizeof *g.cache);
    nsmall = g.cache_cap / 2;
    g.start_small = calloc(nsmall + 1, sizeof *g.start_small);
    if (!g.th || !g.cache || !g.start_small)
        die("out of memory", ENOMEM);
    for (uint32_t i = 0; i < g.nth; i++) {
        if (!(g.th[i].buf = calloc(g.chunk, sizeof *g.th[i].buf)))
            die("out of memory", ENOMEM);
        g.th[i].flush_at = (uint32_t)range(g.chunk / 2 ? g.chunk / 2 : 1, g.chunk);
    }
    starting_heap(nsmall);

    fd = open(argv[optind], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die(argv[optind], errno);
    wslen = trace_writer_workspace(g.chunk, level);
    if (!wslen)
        goto usage;
    if (!(ws = aligned_alloc(64, (wslen + 63) & ~(size_t)63)))
        die("out of memory", ENOMEM);
    g.h.pid = 4242;
    g.h.page_size = 4096;
    g.h.flags = TRACE_F_START_EXACT;
    g.h.backend = 0;
    g.h.start_ns = 1767225600ull * 1000000000ull;
    g.h.start_mono_ns = 0;
    snprintf(g.h.comm, sizeof g.h.comm, "mktrace");
    snprintf(g.h.backend_name, sizeof g.h.backend_name, "glibc");
    if (arenas)
        snprintf(g.h.config, sizeof g.h.config, "backend:glibc,seed:%" PRIu64 ",arenas:%ld", seed,
                 arenas);
    else
        snprintf(g.h.config, sizeof g.h.config, "backend:glibc,seed:%" PRIu64, seed);
    if (start_free != UINT64_MAX) {
        g.h.flags |= TRACE_F_START_FREE;
        g.h.start_free = start_free;
    }
    in_writer = 1;
    rc = trace_writer_begin(&g.w, fd, &g.h, g.chunk, level, ws, wslen);
    in_writer = 0;
    if (rc != 0)
        die("writing the header", rc);

    /* One orphan: a free of a block nobody made, of a class the starting
     * heap has none of (3 MiB). */
    {
        struct trace_event e = { 0 };
        e.op = TRACE_OP_FREE;
        e.id = 0x10000;
        e.usable = 3u << 20;
        emit(0, e);
        g.orphans++;
        g.orphan_bytes += e.usable;
        g.diff -= (int64_t)e.usable;
    }
    while (g.events < g.events_max) {
        uint32_t ti = (uint32_t)(rnd() % g.nth);
        uint64_t r = rnd() % 1000;
        if (r < 250)
            cache_op(ti);
        else if (r < 262 && g.nstart_small) {   /* a small block from before the capture */
            uint64_t i = rnd() % g.nstart_small;
            struct block b = g.start_small[i];
            g.start_small[i] = g.start_small[--g.nstart_small];
            if (rnd() % 3 == 0) {
                re(ti, &b, b.req + 32, 0);   /* realloc'ed, then kept by this thread */
                if (g.th[ti].nsmall < SMALL_MAX)
                    g.th[ti].small[g.th[ti].nsmall++] = b;
                else
                    unmake(ti, &b);
            } else {
                struct trace_event e = { 0 };
                e.op = rnd() % 2 ? TRACE_OP_FREE : TRACE_OP_DELETE_SIZED;
                e.id = b.id;
                e.usable = b.usable;
                e.size = e.op == TRACE_OP_DELETE_SIZED ? b.req : 0;
                emit(ti, e);
                g.start_freed++;
                g.diff -= (int64_t)b.usable;
                reuse_addr(b.id);
            }
        } else if (r < 266)
            odd_op(ti);
        else
            small_op(ti);
    }
    for (uint32_t i = 0; i < g.nth; i++) {
        if (!g.th[i].events) {   /* every thread says something */
            struct block b = make(i, TRACE_OP_MALLOC, 64, 0);
            unmake(i, &b);
        }
        flush(i);
    }
    g.w.threads = g.nth;
    in_writer = 1;
    rc = trace_writer_end(&g.w, 0, g.t + 1);
    in_writer = 0;
    if (rc != 0)
        die("writing the trailer", rc);
    if (close(fd) != 0)
        die(argv[optind], errno);

    if (expect) {
        int64_t base = (int64_t)(g.start_bytes + g.orphan_bytes);
        if (!(x = fopen(expect, "w")))
            die(expect, errno);
        fprintf(x, "events %" PRIu64 "\nchunks %" PRIu64 "\nthreads %u\nops %" PRIu64
                   "\nfailed %" PRIu64 "\ncross_thread %" PRIu64 "\nstart_blocks %" PRIu64
                   "\nstart_bytes %" PRIu64 "\nstart_freed %" PRIu64 "\norphans %" PRIu64
                   "\npeak_live_bytes %" PRId64 "\nend_live_bytes %" PRId64 "\n",
                g.events, g.w.chunks, g.nth, g.events - g.failed, g.failed, g.cross, g.start_blocks,
                g.start_bytes, g.start_freed, g.orphans, base + g.max_diff, base + g.diff);
        if (fclose(x) != 0)
            die(expect, errno);
    }
    return 0;
usage:
    fprintf(stderr, "usage: mktrace [--seed=S] [--threads=N (2..1024)] [--events=N] "
                    "[--cache=BLOCKS] [--chunk=EVENTS] [--level=-7..19] [--gap=NS] [--expect=FILE]\n"
                    "       [--start-free=BYTES] [--arenas=N] OUT\n");
    return 2;
}
