/* replayplan: building a replay plan from a trace (see replayplan.h). */
#include "config.h"

#include "replayplan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NIL UINT32_MAX
/* The most decoded events held at once (every thread's current chunk). */
#define MERGE_BYTES_MAX (1ull << 30)

/* A live block of the trace. Blocks of one id are kept oldest first in
 * their hash chain. */
struct live {
    uint64_t id;
    uint64_t req;              /* bytes asked for */
    uint64_t index;            /* the main op that made it, in its thread */
    uint32_t slot;
    uint32_t thread;
    uint32_t next;             /* in its hash chain, or in the free list */
    uint8_t op;                /* the trace op that made it */
    uint8_t align;
};

/* A thread of the trace: its input cursor and its plan so far. */
struct pthread_ {
    uint32_t next_chunk;       /* of its trace_thread's chunks */
    uint32_t nev, pos;
    struct trace_event *ev;    /* its current chunk */
    uint64_t t;                /* t_ns of ev[pos], never below the one before */
    int made_due;              /* ev[pos], a realloc, has taken its old block at its
                                  start; its new block is made at its t_ns */
    uint32_t made_slot;        /* ...into this slot */
    struct plan_op *buf;       /* main ops not written yet */
    uint32_t nbuf, capbuf;
    uint64_t main_ops;
    struct plan_block *blocks; /* its main blocks written */
    uint64_t nblocks, capblocks;
    uint32_t *free_slots;      /* slots it freed, to reuse */
    uint64_t nfree, capfree;
    struct plan_op *pre;       /* its prelude */
    uint64_t npre, cappre;
};

struct build {
    struct trace_file *f;
    int fd;                    /* -1: no file, the figures only */
    uint64_t wr;               /* the file's end */
    uint64_t max_bytes;        /* wr never passes it */
    char *why;
    size_t whylen;
    struct pthread_ *th;
    uint32_t nth;
    uint32_t *heap;            /* threads with events left, by (t, index) */
    uint32_t nheap;
    uint64_t held;             /* bytes of decoded events held */
    struct live *live;
    uint32_t nlive, caplive, free_live;
    uint32_t *buckets;
    uint32_t nbuckets;         /* a power of two */
    uint64_t next_slot;
    uint64_t start_base[SIZECLASS_COUNT];   /* the first slot of each class's starting blocks */
    uint64_t start_used[SIZECLASS_COUNT];   /* taken by frees, in order */
    uint64_t start_exact[SIZECLASS_COUNT];  /* bytes of those */
    __int128 diff, max_diff;   /* live bytes minus the starting heap's */
    uint64_t last_t;           /* the merged time of the last event stepped */
    struct plan_stats *st;
};

static int fail(struct build *b, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct build *b, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (b->why && b->whylen)
        vsnprintf(b->why, b->whylen, fmt, ap);
    va_end(ap);
    return rc;
}

/* Grows *p (elements of size sz, *cap of them) to hold n + 1. */
static int grow(void *p, uint64_t *cap, uint64_t n, size_t sz)
{
    void **pp = p;
    uint64_t c;
    void *q;
    if (n < *cap)
        return 0;
    c = *cap ? 2 * *cap : 16;
    if (c > SIZE_MAX / sz || !(q = realloc(*pp, (size_t)(c * sz))))
        return ENOMEM;
    *pp = q;
    *cap = c;
    return 0;
}

static int pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
    while (n > 0) {
        ssize_t k = pwrite(fd, p, n, (off_t)off);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (k == 0)
            return EIO;
        p = (const char *)p + k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

/* Appends ops[0..n) to the file (no file: counts them); returns the
 * offset written at in *at. */
static int append(struct build *b, const void *p, size_t n, uint64_t *at)
{
    int rc;
    if (n > b->max_bytes || b->wr > b->max_bytes - n)
        return fail(b, ENOSPC, "its plan outgrew the %llu KiB it may take",
                    (unsigned long long)(b->max_bytes >> 10));
    if (b->fd >= 0 && (rc = pwrite_all(b->fd, p, n, b->wr)) != 0)
        return fail(b, rc, "writing the plan: %s", strerror(rc));
    if (at)
        *at = b->wr;
    b->wr += n;
    return 0;
}

/* ---- Live blocks ---- */

static uint32_t bucket_of(const struct build *b, uint64_t id)
{
    return (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 32) & (b->nbuckets - 1);
}

/* Appends entry e at the end of its chain (the newest of its id). */
static void chain_append(struct build *b, uint32_t e)
{
    uint32_t *at = &b->buckets[bucket_of(b, b->live[e].id)];
    while (*at != NIL)
        at = &b->live[*at].next;
    b->live[e].next = NIL;
    *at = e;
}

static int rehash(struct build *b)
{
    uint32_t old_n = b->nbuckets, *old = b->buckets;
    uint32_t n = old_n ? 2 * old_n : 16;
    uint32_t *nb = malloc((size_t)n * sizeof *nb);
    if (!nb)
        return ENOMEM;
    memset(nb, 0xff, (size_t)n * sizeof *nb);
    b->buckets = nb;
    b->nbuckets = n;
    for (uint32_t i = 0; i < old_n; i++)
        for (uint32_t e = old[i], next; e != NIL; e = next) {
            next = b->live[e].next;   /* chains keep their order: oldest first */
            chain_append(b, e);
        }
    free(old);
    return 0;
}

/* A new live entry (not in any chain yet), or NIL when out of memory. */
static uint32_t live_new(struct build *b)
{
    uint32_t e;
    if (b->free_live != NIL) {
        e = b->free_live;
        b->free_live = b->live[e].next;
        return e;
    }
    if (b->nlive == b->caplive) {
        uint64_t cap = b->caplive;
        if (b->caplive >= NIL / 2 || grow(&b->live, &cap, b->nlive, sizeof *b->live))
            return NIL;
        b->caplive = (uint32_t)cap;
    }
    return b->nlive++;
}

static int live_add(struct build *b, uint32_t e)
{
    if ((uint64_t)(b->nlive + 1) > 2ull * b->nbuckets && rehash(b))
        return ENOMEM;
    chain_append(b, e);
    return 0;
}

/* Takes the oldest live entry of id (with `newest`, the newest) out of
 * its chain; NIL when none. Which one a call takes: trace.h's t_ns. */
static uint32_t live_take(struct build *b, uint64_t id, int newest)
{
    uint32_t *at = &b->buckets[bucket_of(b, id)], *found = NULL;
    for (; *at != NIL; at = &b->live[*at].next)
        if (b->live[*at].id == id) {
            found = at;
            if (!newest)
                break;
        }
    if (!found)
        return NIL;
    uint32_t e = *found;
    *found = b->live[e].next;
    return e;
}

static void live_release(struct build *b, uint32_t e)
{
    b->live[e].next = b->free_live;
    b->free_live = e;
}

/* ---- Slots and the live count ---- */

static int take_slot(struct build *b, struct pthread_ *t, uint32_t *slot)
{
    if (t->nfree) {
        *slot = t->free_slots[--t->nfree];
        return 0;
    }
    if (b->next_slot >= PLAN_NONE)
        return fail(b, E2BIG, "the trace needs more than %u blocks at once", PLAN_NONE - 1);
    *slot = (uint32_t)b->next_slot++;
    return 0;
}

static int give_slot(struct build *b, struct pthread_ *t, uint32_t slot)
{
    if (grow(&t->free_slots, &t->capfree, t->nfree, sizeof *t->free_slots))
        return fail(b, ENOMEM, "out of memory");
    t->free_slots[t->nfree++] = slot;
    return 0;
}

static void live_more(struct build *b, uint64_t n)
{
    b->diff += n;
    if (b->diff > b->max_diff)
        b->max_diff = b->diff;
}

/* ---- Ops ---- */

static int flush(struct build *b, struct pthread_ *t)
{
    uint64_t at;
    int rc;
    if (!t->nbuf)
        return 0;
    if ((rc = append(b, t->buf, (size_t)t->nbuf * sizeof *t->buf, &at)) != 0)
        return rc;
    if (grow(&t->blocks, &t->capblocks, t->nblocks, sizeof *t->blocks))
        return fail(b, ENOMEM, "out of memory");
    t->blocks[t->nblocks].off = at;
    t->blocks[t->nblocks].nops = t->nbuf;
    t->blocks[t->nblocks].prelude = 0;
    t->nblocks++;
    t->nbuf = 0;
    return 0;
}

/* Appends a main op to thread t's plan; its index is t->main_ops - 1. */
static int emit(struct build *b, struct pthread_ *t, const struct plan_op *op)
{
    int rc;
    if (!t->buf) {
        if (!(t->buf = malloc(PLAN_BLOCK_OPS * sizeof *t->buf)))
            return fail(b, ENOMEM, "out of memory");
        t->capbuf = PLAN_BLOCK_OPS;
    }
    t->buf[t->nbuf++] = *op;
    t->main_ops++;
    b->st->ops++;
    if (t->nbuf == t->capbuf && (rc = flush(b, t)) != 0)
        return rc;
    return 0;
}

static int prelude(struct build *b, struct pthread_ *t, uint8_t kind, uint32_t slot, uint64_t size,
                   uint64_t n)
{
    struct plan_op *op;
    if (grow(&t->pre, &t->cappre, t->npre, sizeof *t->pre))
        return fail(b, ENOMEM, "out of memory");
    op = &t->pre[t->npre++];
    if (plan_spaced(size))
        b->st->spaced_bytes += size * (kind == PLAN_START_RUN ? n : 1);
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->slot = slot;
    op->size = size;
    op->n = n;
    op->dep_thread = PLAN_NONE;
    op->old_slot = PLAN_NONE;
    return 0;
}

static int unaligned_alloc(unsigned op)
{
    return op == TRACE_OP_MALLOC || op == TRACE_OP_CALLOC || op == TRACE_OP_REALLOC ||
           op == TRACE_OP_NEW || op == TRACE_OP_NEW_ARRAY;
}

/* The free to replay for recorded free `op` of a block made by `made` with
 * alignment `align` (made 0: a block of the starting heap, made by
 * malloc): sized only when the block was made unaligned at a size we
 * know, aligned only when it was made aligned. */
static unsigned free_kind(unsigned op, unsigned made, int *sized, int *aligned)
{
    int arr = op == TRACE_OP_DELETE_ARRAY || op == TRACE_OP_DELETE_ARRAY_SIZED ||
              op == TRACE_OP_DELETE_ARRAY_ALIGNED || op == TRACE_OP_DELETE_ARRAY_SIZED_ALIGNED;
    int want_sized = op == TRACE_OP_DELETE_SIZED || op == TRACE_OP_DELETE_ARRAY_SIZED ||
                     op == TRACE_OP_DELETE_SIZED_ALIGNED || op == TRACE_OP_DELETE_ARRAY_SIZED_ALIGNED;
    int want_aligned = trace_op_aligned(op);
    if (op == TRACE_OP_FREE) {
        *sized = *aligned = 0;
        return TRACE_OP_FREE;
    }
    /* At most one of the two: a block is made aligned or not. */
    *sized = want_sized && made && unaligned_alloc(made);
    *aligned = want_aligned && made && trace_op_aligned(made);
    if (*sized)
        return arr ? TRACE_OP_DELETE_ARRAY_SIZED : TRACE_OP_DELETE_SIZED;
    if (*aligned)
        return arr ? TRACE_OP_DELETE_ARRAY_ALIGNED : TRACE_OP_DELETE_ALIGNED;
    return arr ? TRACE_OP_DELETE_ARRAY : TRACE_OP_DELETE;
}

/* The block an event frees (free, or a realloc's old block: `newest` for
 * a free in format 2 and later, trace.h): from the live blocks, or the
 * starting heap, or an orphan. Sets *slot, the wait in *op, and *e (the
 * live entry, released by the caller; NIL for the starting heap or an
 * orphan, whose size goes to *start_size). */
static int take_block(struct build *b, uint32_t ti, uint64_t id, uint32_t usable, int newest,
                      struct plan_op *op, uint32_t *e, uint64_t *start_size)
{
    struct pthread_ *t = &b->th[ti];
    unsigned c;
    uint32_t slot = PLAN_NONE;
    int rc;

    *e = live_take(b, id, newest);
    if (*e != NIL) {
        struct live *l = &b->live[*e];
        op->slot = l->slot;
        if (l->thread != ti) {
            op->dep_thread = l->thread;
            op->dep_index = l->index;
            b->st->cross++;
        }
        b->diff -= l->req;
        return 0;
    }
    /* A block from before the capture: one of its class's starting
     * blocks, made in this thread's prelude at its usable size. */
    c = sizeclass_of(usable);
    *start_size = usable;
    if (b->start_used[c] < b->f->hdr.start[c].live_count) {
        slot = (uint32_t)(b->start_base[c] + b->start_used[c]++);
        b->start_exact[c] += usable;
        b->st->start_freed++;
    } else {
        /* A fresh slot: the preludes' blocks all exist at once, before any
         * main op frees a slot for reuse. */
        if (b->next_slot >= PLAN_NONE)
            return fail(b, E2BIG, "the trace needs more than %u blocks at once", PLAN_NONE - 1);
        slot = (uint32_t)b->next_slot++;
        b->st->orphans++;
        b->st->orphan_bytes += usable;
    }
    if ((rc = prelude(b, t, PLAN_START, slot, usable, 0)) != 0)
        return rc;
    op->slot = slot;
    b->diff -= usable;
    return 0;
}

/* Records the block made by an op of thread ti into the live blocks. */
static int made(struct build *b, uint32_t ti, const struct trace_event *ev, uint64_t req,
                uint32_t slot)
{
    uint32_t e = live_new(b);
    struct live *l;
    if (e == NIL)
        return fail(b, ENOMEM, "out of memory");
    l = &b->live[e];
    l->id = ev->id;
    l->req = req;
    l->index = b->th[ti].main_ops - 1;
    l->slot = slot;
    l->thread = ti;
    l->op = ev->op;
    l->align = ev->align;
    live_more(b, req);
    if (live_add(b, e))
        return fail(b, ENOMEM, "out of memory");
    return 0;
}

static uint64_t calloc_bytes(uint64_t n, uint64_t size)
{
    uint64_t r;
    return __builtin_mul_overflow(n, size, &r) ? UINT64_MAX : r;
}

/* Whether ev is a realloc taken in two steps (trace.h): its old block at
 * its start, its new one at its t_ns. Format 1 had no start. */
static int two_steps(const struct build *b, const struct trace_event *ev)
{
    return b->f->hdr.version >= 2 && trace_op_kind(ev->op) == TRACE_KIND_REALLOC && ev->aux &&
           ev->id;
}

/* One event of thread ti, in the merged order. */
static int step(struct build *b, uint32_t ti, const struct trace_event *ev)
{
    struct pthread_ *t = &b->th[ti];
    struct plan_op op;
    uint32_t e = NIL, slot = PLAN_NONE;
    uint64_t start_size = 0;
    int rc, sized, aligned;

    memset(&op, 0, sizeof op);
    op.dep_thread = PLAN_NONE;
    op.slot = op.old_slot = PLAN_NONE;
    op.t_ns = t->t;   /* set_time's, for this event */
    op.kind = ev->op;
    op.flags = ev->flags;
    switch (trace_op_kind(ev->op)) {
    case TRACE_KIND_ALLOC:
        if (!ev->id) {
            b->st->failed++;
            return 0;
        }
        if ((rc = take_slot(b, t, &slot)) != 0)
            return rc;
        op.slot = slot;
        op.size = ev->size;
        op.n = ev->aux;
        op.align = ev->align;
        if ((rc = emit(b, t, &op)) != 0)
            return rc;
        return made(b, ti, ev, ev->op == TRACE_OP_CALLOC ? calloc_bytes(ev->aux, ev->size) : ev->size,
                    slot);
    case TRACE_KIND_FREE:
        if (!ev->id) {   /* free(NULL): nothing to do but count it */
            op.kind = (uint8_t)free_kind(ev->op, 0, &sized, &aligned);
            return emit(b, t, &op);
        }
        if ((rc = take_block(b, ti, ev->id, ev->usable, b->f->hdr.version >= 2, &op, &e,
                             &start_size)) != 0)
            return rc;
        op.kind = (uint8_t)free_kind(ev->op, e != NIL ? b->live[e].op : 0, &sized, &aligned);
        if (sized)
            op.size = b->live[e].req;
        if (aligned)
            op.align = b->live[e].align;
        if (e != NIL)
            live_release(b, e);
        if ((rc = give_slot(b, t, op.slot)) != 0)
            return rc;
        return emit(b, t, &op);
    default:   /* TRACE_KIND_REALLOC */
        if (!ev->aux) {   /* realloc(NULL, n): an allocation */
            if (!ev->id) {
                b->st->failed++;
                return 0;
            }
            if ((rc = take_slot(b, t, &slot)) != 0)
                return rc;
            op.slot = slot;
            op.size = ev->size;
            if ((rc = emit(b, t, &op)) != 0)
                return rc;
            return made(b, ti, ev, ev->size, slot);
        }
        if (!ev->id && ev->size) {   /* failed: the old block stays */
            b->st->failed++;
            return 0;
        }
        if (t->made_due) {   /* its second step, at its t_ns (merge) */
            t->made_due = 0;
            return made(b, ti, ev, ev->size, t->made_slot);
        }
        if ((rc = take_block(b, ti, ev->aux, ev->usable, 0, &op, &e, &start_size)) != 0)
            return rc;
        op.old_slot = op.slot;
        op.size = ev->size;
        if (e != NIL)
            live_release(b, e);
        if (!ev->id) {   /* realloc(p, 0) freed p */
            op.slot = PLAN_NONE;
            if ((rc = give_slot(b, t, op.old_slot)) != 0)
                return rc;
            return emit(b, t, &op);
        }
        if ((rc = emit(b, t, &op)) != 0)
            return rc;
        if (two_steps(b, ev)) {
            t->made_due = 1;
            t->made_slot = op.old_slot;
            return 0;
        }
        return made(b, ti, ev, ev->size, op.old_slot);
    }
}

/* ---- The merge ---- */

static int before(const struct build *b, uint32_t x, uint32_t y)
{
    return b->th[x].t < b->th[y].t || (b->th[x].t == b->th[y].t && x < y);
}

static void sift_down(struct build *b, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, m = i, tmp;
        if (l < b->nheap && before(b, b->heap[l], b->heap[m]))
            m = l;
        if (l + 1 < b->nheap && before(b, b->heap[l + 1], b->heap[m]))
            m = l + 1;
        if (m == i)
            return;
        tmp = b->heap[i];
        b->heap[i] = b->heap[m];
        b->heap[m] = tmp;
        i = m;
    }
}

/* Loads thread ti's next chunk. Returns 0 (t->nev 0 when it has none
 * left) or an error. */
static int load_chunk(struct build *b, uint32_t ti)
{
    struct pthread_ *t = &b->th[ti];
    const struct trace_thread *tt = &b->f->threads[ti];
    const struct trace_ref *r;
    int rc;

    b->held -= (uint64_t)t->nev * sizeof *t->ev;
    free(t->ev);
    t->ev = NULL;
    t->nev = t->pos = 0;
    if (t->next_chunk >= tt->nchunks)
        return 0;
    r = &tt->chunks[t->next_chunk++];
    if ((b->held += (uint64_t)r->count * sizeof *t->ev) > MERGE_BYTES_MAX)
        return fail(b, E2BIG, "the threads' current chunks need more than %llu MiB to merge",
                    MERGE_BYTES_MAX >> 20);
    if (!(t->ev = malloc((size_t)r->count * sizeof *t->ev)))
        return fail(b, ENOMEM, "out of memory");
    t->nev = r->count;
    if ((rc = trace_read_chunk(b->f, r, t->ev, b->why, b->whylen)) != 0)
        return rc;
    return 0;
}

/* Sets thread ti's t from its current event (never going back): a
 * realloc's start for its first step. */
static void set_time(struct build *b, uint32_t ti)
{
    struct pthread_ *t = &b->th[ti];
    const struct trace_event *ev = &t->ev[t->pos];
    uint64_t v = !t->made_due && two_steps(b, ev) ? trace_realloc_start(ev) : ev->t_ns;
    if (v < t->t) {
        b->st->clamped++;
        v = t->t;
    }
    t->t = v;
}

static int merge(struct build *b, plan_progress_fn progress, void *ctx)
{
    uint64_t done = 0, total = b->f->nevents, next_report = 0;
    int rc;

    for (uint32_t i = 0; i < b->f->nthreads; i++) {
        if ((rc = load_chunk(b, i)) != 0)
            return rc;
        if (b->th[i].nev) {
            set_time(b, i);
            b->heap[b->nheap++] = i;
        }
    }
    for (uint32_t i = b->nheap / 2; i-- > 0;)
        sift_down(b, i);
    while (b->nheap) {
        uint32_t ti = b->heap[0];
        struct pthread_ *t = &b->th[ti];
        b->last_t = t->t;
        if ((rc = step(b, ti, &t->ev[t->pos])) != 0)
            return rc;
        if (t->made_due) {   /* the same event again, at its t_ns */
            set_time(b, ti);
            sift_down(b, 0);
            continue;
        }
        done++;
        if (++t->pos == t->nev) {
            if ((rc = load_chunk(b, ti)) != 0)
                return rc;
            if (!t->nev) {
                b->heap[0] = b->heap[--b->nheap];
                if (b->nheap)
                    sift_down(b, 0);
                continue;
            }
        }
        set_time(b, ti);
        sift_down(b, 0);
        if (progress && done >= next_report) {
            progress(ctx, done, total);
            next_report = done + (1u << 18);
        }
    }
    if (progress)
        progress(ctx, done, total);
    return 0;
}

/* ---- The starting heap's blocks that nothing freed ---- */

/* Deals class c's remaining starting blocks out to the threads: runs of
 * consecutive slots, their usable bytes shared evenly. */
static int deal_class(struct build *b, unsigned c)
{
    const struct trace_class *k = &b->f->hdr.start[c];
    uint64_t left = k->live_count - b->start_used[c];
    uint64_t bytes, base, extra, first = b->start_base[c] + b->start_used[c];
    uint64_t lo = sizeclass_min(c), hi = sizeclass_max(c);
    int rc;

    if (!left)
        return 0;
    bytes = k->live_usable > b->start_exact[c] ? k->live_usable - b->start_exact[c] : 0;
    base = bytes / left;
    extra = bytes % left;          /* the first `extra` blocks get one byte more */
    if (base < lo || base > hi) {
        base = base < lo ? lo : hi;
        extra = 0;
    }
    for (uint32_t i = 0; i < b->nth; i++) {
        /* Thread i's share: blocks [from, to) of the class's remaining ones. */
        uint64_t from = left * i / b->nth, to = left * (i + 1) / b->nth;
        if (from < extra && from < to) {
            uint64_t mid = to < extra ? to : extra;
            if ((rc = prelude(b, &b->th[i], PLAN_START_RUN, (uint32_t)(first + from), base + 1,
                              mid - from)) != 0)
                return rc;
            b->st->start_bytes += (mid - from) * (base + 1);
            from = mid;
        }
        if (from < to) {
            if ((rc = prelude(b, &b->th[i], PLAN_START_RUN, (uint32_t)(first + from), base,
                              to - from)) != 0)
                return rc;
            b->st->start_bytes += (to - from) * base;
        }
    }
    return 0;
}

/* ---- Writing the tables ---- */

static int write_tables(struct build *b)
{
    struct plan_header h;
    struct plan_thread *tt = calloc(b->nth, sizeof *tt);
    struct plan_block *bl = NULL;
    uint64_t nbl = 0, capbl = 0;
    int rc = 0;

    if (!tt)
        return fail(b, ENOMEM, "out of memory");
    for (uint32_t i = 0; i < b->nth; i++) {
        struct pthread_ *t = &b->th[i];
        tt[i].tid = i < b->f->nthreads ? b->f->threads[i].tid : 0;
        tt[i].prelude_ops = t->npre;
        tt[i].main_ops = t->main_ops;
        tt[i].first_block = nbl;
        for (uint64_t p = 0; p < t->npre; p += PLAN_BLOCK_OPS) {
            uint32_t n = (uint32_t)(t->npre - p < PLAN_BLOCK_OPS ? t->npre - p : PLAN_BLOCK_OPS);
            uint64_t at;
            if ((rc = append(b, t->pre + p, (size_t)n * sizeof *t->pre, &at)) != 0)
                goto out;
            if (grow(&bl, &capbl, nbl, sizeof *bl)) {
                rc = fail(b, ENOMEM, "out of memory");
                goto out;
            }
            bl[nbl].off = at;
            bl[nbl].nops = n;
            bl[nbl].prelude = 1;
            nbl++;
        }
        for (uint64_t k = 0; k < t->nblocks; k++) {
            if (grow(&bl, &capbl, nbl, sizeof *bl)) {
                rc = fail(b, ENOMEM, "out of memory");
                goto out;
            }
            bl[nbl++] = t->blocks[k];
        }
        tt[i].nblocks = nbl - tt[i].first_block;
    }
    memset(&h, 0, sizeof h);
    h.magic = PLAN_MAGIC;
    h.nslots = b->next_slot;
    h.nblocks = nbl;
    if ((rc = append(b, tt, (size_t)b->nth * sizeof *tt, &h.threads_off)) != 0 ||
        (nbl && (rc = append(b, bl, (size_t)nbl * sizeof *bl, &h.blocks_off)) != 0))
        goto out;
    if (!nbl)
        h.blocks_off = b->wr;
    h.size = b->wr;
    h.stats = *b->st;
    if (b->fd >= 0 && (rc = pwrite_all(b->fd, &h, sizeof h, 0)) != 0)
        rc = fail(b, rc, "writing the plan: %s", strerror(rc));
out:
    free(tt);
    free(bl);
    return rc;
}

uint64_t plan_size_estimate(const struct trace_file *f)
{
    uint64_t nth = f->nthreads ? f->nthreads : 1;
    uint64_t ops = f->nevents + 2 * SIZECLASS_COUNT * nth;   /* deal_class: 2 runs a class */
    uint64_t blocks = ops / PLAN_BLOCK_OPS + 2 * nth;        /* each thread's last two part full */
    uint64_t n;
    if (ops < f->nevents || __builtin_mul_overflow(ops, sizeof(struct plan_op), &n) ||
        __builtin_add_overflow(n, blocks * sizeof(struct plan_block) + nth * sizeof(struct plan_thread) +
                               sizeof(struct plan_header), &n))
        return UINT64_MAX;
    return n;
}

int plan_build(struct trace_file *f, int out_fd, struct plan_stats *st, plan_progress_fn progress,
               void *ctx, char *why, size_t whylen)
{
    return plan_build_within(f, out_fd, UINT64_MAX, st, progress, ctx, why, whylen);
}

int plan_build_within(struct trace_file *f, int out_fd, uint64_t max_bytes, struct plan_stats *st,
                      plan_progress_fn progress, void *ctx, char *why, size_t whylen)
{
    struct build b;
    uint64_t start = 0;
    int rc;

    memset(&b, 0, sizeof b);
    memset(st, 0, sizeof *st);
    b.f = f;
    b.fd = out_fd;
    b.max_bytes = max_bytes;
    b.why = why;
    b.whylen = whylen;
    b.st = st;
    b.free_live = NIL;
    b.wr = sizeof(struct plan_header);
    b.nth = f->nthreads ? f->nthreads : 1;   /* a trace of no events still has its starting heap */
    st->threads = b.nth;
    st->events = f->nevents;
    st->chunks = f->nchunks;
    st->dropped = f->trl.dropped;
    st->duration_ns = f->trl.end_ns;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        b.start_base[c] = start;
        start += f->hdr.start[c].live_count;   /* at most TRACE_START_BLOCKS_MAX in all */
    }
    st->start_blocks = start;
    b.next_slot = start;
    b.th = calloc(b.nth, sizeof *b.th);
    b.heap = calloc(b.nth, sizeof *b.heap);
    if (!b.th || !b.heap || rehash(&b)) {
        rc = fail(&b, ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = merge(&b, progress, ctx)) != 0)
        goto out;
    st->last_ns = b.last_t;
    if (f->cut)
        st->duration_ns = b.last_t;   /* no trailer to say: its last call's time */
    for (uint32_t i = 0; i < b.nth; i++)
        if ((rc = flush(&b, &b.th[i])) != 0)
            goto out;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        st->start_bytes += b.start_exact[c];
        if ((rc = deal_class(&b, c)) != 0)
            goto out;
    }
    {
        __int128 peak = (__int128)st->start_bytes + st->orphan_bytes + b.max_diff;
        __int128 end = (__int128)st->start_bytes + st->orphan_bytes + b.diff;
        st->peak_live = peak > (__int128)UINT64_MAX ? UINT64_MAX : (uint64_t)peak;
        st->end_live = end < 0 ? 0 : end > (__int128)UINT64_MAX ? UINT64_MAX : (uint64_t)end;
    }
    st->slots = b.next_slot;
    rc = write_tables(&b);
out:
    for (uint32_t i = 0; b.th && i < b.nth; i++) {
        free(b.th[i].ev);
        free(b.th[i].buf);
        free(b.th[i].blocks);
        free(b.th[i].free_slots);
        free(b.th[i].pre);
    }
    free(b.th);
    free(b.heap);
    free(b.live);
    free(b.buckets);
    return rc;
}

int plan_check(const struct plan_header *h, uint64_t file_size, const struct plan_thread *threads,
               const struct plan_block *blocks)
{
    uint64_t expect = 0;
    if (h->magic != PLAN_MAGIC || h->size != file_size || !h->stats.threads ||
        h->stats.threads > TRACE_THREADS_MAX || h->nslots >= PLAN_NONE ||
        h->threads_off < sizeof *h || h->threads_off > file_size ||
        (file_size - h->threads_off) / sizeof *threads < h->stats.threads ||
        h->blocks_off < sizeof *h || h->blocks_off > file_size ||
        (file_size - h->blocks_off) / sizeof *blocks < h->nblocks)
        return EBADMSG;
    if (!threads)
        return 0;   /* the header alone */
    for (uint32_t i = 0; i < h->stats.threads; i++) {
        const struct plan_thread *t = &threads[i];
        uint64_t pre = 0, main = 0;
        if (t->first_block != expect || t->nblocks > h->nblocks - expect)
            return EBADMSG;
        for (uint64_t k = t->first_block; k < t->first_block + t->nblocks; k++) {
            const struct plan_block *bl = &blocks[k];
            if (bl->nops < 1 || bl->nops > PLAN_BLOCK_OPS || bl->off < sizeof *h ||
                bl->off > file_size || (file_size - bl->off) / sizeof(struct plan_op) < bl->nops)
                return EBADMSG;
            if (bl->prelude) {
                if (main)
                    return EBADMSG;   /* the prelude comes first */
                pre += bl->nops;
            } else {
                main += bl->nops;
            }
        }
        if (pre != t->prelude_ops || main != t->main_ops)
            return EBADMSG;
        expect += t->nblocks;
    }
    return expect == h->nblocks ? 0 : EBADMSG;
}
