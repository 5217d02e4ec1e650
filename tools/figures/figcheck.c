/* figcheck: the invariants every snapshot must hold, checked in one place
 * (see figures.h). A figure that breaks one cannot be true: a torn read, a
 * stale figure shown as current, a bug in the recorder or the reader.
 * Where a snapshot says its counts are approximate (a fork child's, or
 * read while a writer kept changing them), the counting invariants are
 * not checked, and the rest are. */
#include "config.h"

#include "figures.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct ctx {
    const struct dump *d;
    const char *name;
    struct fig_fail *out;
    size_t max, n;
};

static void fail(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(struct ctx *c, const char *fmt, ...)
{
    va_list ap;
    if (c->n < c->max) {
        c->out[c->n].name = c->name;
        va_start(ap, fmt);
        vsnprintf(c->out[c->n].detail, sizeof c->out[c->n].detail, fmt, ap);
        va_end(ap);
    }
    c->n++;
}

/* Whether the snapshot's counts are exact enough to hold to arithmetic. */
static int counts_exact(const struct dump *d)
{
    return d->consistent && !d->inherited;
}

static void frees_le_allocs(struct ctx *c)
{
    const struct dump *d = c->d;
    if (!counts_exact(d))
        return;
    if (!d->counts_ok)
        fail(c, "the reader found a class with more frees than allocations");
    for (unsigned k = 0; k < SIZECLASS_COUNT; k++)
        if (d->cls[k].frees > d->cls[k].allocs)
            fail(c, "class %u: %llu frees > %llu allocations", k,
                 (unsigned long long)d->cls[k].frees, (unsigned long long)d->cls[k].allocs);
}

static void totals_sum(struct ctx *c)
{
    const struct dump *d = c->d;
    struct dump_class s;
    memset(&s, 0, sizeof s);
    for (unsigned k = 0; k < SIZECLASS_COUNT; k++) {
        s.allocs += d->cls[k].allocs;
        s.frees += d->cls[k].frees;
        s.live_count += d->cls[k].live_count;
        s.live_usable += d->cls[k].live_usable;
        s.live_req += d->cls[k].live_req;
    }
#define SAME(f)                                                                              \
    if (s.f != d->total.f)                                                                   \
        fail(c, "totals." #f " %llu, the classes' sum %llu", (unsigned long long)d->total.f, \
             (unsigned long long)s.f);
    SAME(allocs) SAME(frees) SAME(live_count) SAME(live_usable) SAME(live_req)
#undef SAME
}

/* A thread adds a block's usable size, then counts the block (at
 * allocation and at free): a read between the two, which a double collect
 * takes as a moment, sees the bytes without the block. One block per
 * thread may so be half counted: a free's bytes gone while the block is
 * still counted (the floor), an allocation's bytes there before the block
 * (the ceiling). threads_seen counts every thread the process had, so the
 * allowance is generous where threads come and go. */
static void class_sizes(struct ctx *c)
{
    const struct dump *d = c->d;
    double threads = d->threads_seen ? (double)d->threads_seen : 1;
    if (!counts_exact(d))
        return;
    for (unsigned k = 0; k < SIZECLASS_COUNT; k++) {
        const struct dump_class *x = &d->cls[k];
        double n = (double)x->live_count;
        double lo = (n > threads ? n - threads : 0) * (double)sizeclass_min(k);
        double hi = k == SIZECLASS_LAST ? INFINITY : (n + threads) * (double)sizeclass_max(k);
        if ((double)x->live_usable < lo || (double)x->live_usable > hi)
            fail(c, "class %u: %llu live blocks of %zu..%zu usable bytes hold %llu", k,
                 (unsigned long long)x->live_count, sizeclass_min(k),
                 k == SIZECLASS_LAST ? (size_t)-1 : sizeclass_max(k),
                 (unsigned long long)x->live_usable);
    }
}

static void req_le_usable(struct ctx *c)
{
    const struct dump *d = c->d;
    for (unsigned k = 0; k < SIZECLASS_COUNT; k++)
        if (d->cls[k].live_req > d->cls[k].live_usable)
            fail(c, "class %u: live requested %llu > live usable %llu", k,
                 (unsigned long long)d->cls[k].live_req, (unsigned long long)d->cls[k].live_usable);
}

/* Calls fn on the latest sample and on every point of the history, each
 * with where it is, for the message. */
static void each_sample(struct ctx *c, void (*fn)(struct ctx *, const struct dump_sample *, const char *))
{
    const struct dump *d = c->d;
    char where[64];
    if (dump_last(d))
        fn(c, dump_last(d), "the latest sample");
    for (size_t t = 0; t < d->ntiers && t < DUMP_TIERS_MAX; t++)
        for (size_t i = 0; i < d->tiers[t].npoints; i++) {
            snprintf(where, sizeof where, "tier %zu point %zu", t, i);
            fn(c, &d->tiers[t].points[i].last, where);
        }
}

static void in_use_at(struct ctx *c, const struct dump_sample *s, const char *where)
{
    struct fig_alloc a;
    fig_alloc_of(c->d, s, &a);
    if (a.have && a.t_ns && a.in_use < a.live_lo)
        fail(c, "%s: %s %llu < %llu live usable at least", where, a.in_use_name,
             (unsigned long long)a.in_use, (unsigned long long)a.live_lo);
}

static void footprint_at(struct ctx *c, const struct dump_sample *s, const char *where)
{
    struct fig_alloc a;
    fig_alloc_of(c->d, s, &a);
    if (a.have && a.t_ns && a.footprint < a.in_use)
        fail(c, "%s: %s %llu < %s %llu", where, a.fp_name, (unsigned long long)a.footprint,
             a.in_use_name, (unsigned long long)a.in_use);
}

static void alloc_in_use(struct ctx *c)
{
    each_sample(c, in_use_at);
}

static void alloc_footprint(struct ctx *c)
{
    each_sample(c, footprint_at);
}

/* The sampler takes the backend's figures at least every 30 passes
 * (preload/sampler.c, BE_AGE_MAX): sample i's are no older than sample
 * i - 30's time. */
#define BE_REFRESH_SAMPLES 30

static void alloc_fresh(struct ctx *c)
{
    const struct dump *d = c->d;
    for (size_t i = BE_REFRESH_SAMPLES; i < d->nseries; i++) {
        const struct dump_sample *s = &d->series[i], *o = &d->series[i - BE_REFRESH_SAMPLES];
        if (s->be.t_ns && o->be.t_ns && s->be.t_ns < o->t_ns)
            fail(c, "sample %zu of the series carries figures taken before sample %zu's time "
                 "(%llu < %llu ns)", i, i - BE_REFRESH_SAMPLES, (unsigned long long)s->be.t_ns,
                 (unsigned long long)o->t_ns);
    }
}

/* A fork child's peak RSS is its own, from its first pass; the samples
 * and points from before its start are its parent's (a point under way at
 * the fork is left behind as the parent's: lifecycle.c), held against no
 * peak here. */
static void peak_rss(struct ctx *c)
{
    const struct dump *d = c->d;
    uint64_t from = d->inherited ? d->start_ns : 0;
    if (!d->peak_rss)
        return;
    for (size_t i = 0; i < d->nseries; i++)
        if (d->series[i].t_ns >= from && d->series[i].rss > d->peak_rss)
            fail(c, "series sample %zu: RSS %llu > peak %llu", i, (unsigned long long)d->series[i].rss,
                 (unsigned long long)d->peak_rss);
    for (size_t t = 0; t < d->ntiers && t < DUMP_TIERS_MAX; t++)
        for (size_t i = 0; i < d->tiers[t].npoints; i++)
            if (d->tiers[t].points[i].last.t_ns >= from && d->tiers[t].points[i].rss_max > d->peak_rss)
                fail(c, "tier %zu point %zu: RSS up to %llu > peak %llu", t, i,
                     (unsigned long long)d->tiers[t].points[i].rss_max, (unsigned long long)d->peak_rss);
}

static void points_in_span(struct ctx *c)
{
    const struct dump *d = c->d;
    for (size_t t = 0; t < d->ntiers && t < DUMP_TIERS_MAX; t++)
        for (size_t i = 0; i < d->tiers[t].npoints; i++) {
            const struct dump_point *p = &d->tiers[t].points[i];
            if (p->samples == 0 || p->rss_min > p->last.rss || p->last.rss > p->rss_max ||
                p->last.live_req > p->live_req_max || p->last.live_usable > p->live_usable_max)
                fail(c, "tier %zu point %zu (%u samples): RSS %llu..%llu last %llu, live "
                     "requested %llu max %llu, live usable %llu max %llu", t, i, p->samples,
                     (unsigned long long)p->rss_min, (unsigned long long)p->rss_max,
                     (unsigned long long)p->last.rss, (unsigned long long)p->last.live_req,
                     (unsigned long long)p->live_req_max, (unsigned long long)p->last.live_usable,
                     (unsigned long long)p->live_usable_max);
        }
}

static void samples_add_up(struct ctx *c)
{
    const struct dump *d = c->d;
    for (size_t i = 0; i < d->nseries; i++) {
        const struct dump_sample *s = &d->series[i];
        if (s->allocs < s->frees || s->live_count != s->allocs - s->frees)
            fail(c, "series sample %zu: %llu live blocks of %llu allocations and %llu frees", i,
                 (unsigned long long)s->live_count, (unsigned long long)s->allocs,
                 (unsigned long long)s->frees);
    }
}

static void counts_grow(struct ctx *c)
{
    const struct dump *d = c->d;
    for (size_t i = 1; i < d->nseries; i++) {
        const struct dump_sample *a = &d->series[i - 1], *b = &d->series[i];
        if (b->allocs < a->allocs || b->frees < a->frees || b->req_bytes < a->req_bytes)
            fail(c, "series samples %zu to %zu: allocations %llu to %llu, frees %llu to %llu, "
                 "bytes requested %llu to %llu", i - 1, i, (unsigned long long)a->allocs,
                 (unsigned long long)b->allocs, (unsigned long long)a->frees,
                 (unsigned long long)b->frees, (unsigned long long)a->req_bytes,
                 (unsigned long long)b->req_bytes);
    }
}

/* With every block tracked (sample:1 from the start, each of weight 1), the stacks' live
 * blocks are live blocks: their usable bytes are at most the live usable
 * bytes while the snapshot was read, but for a block per thread whose free
 * was counted and whose entry was not yet removed (SEG_INFLIGHT_BYTES
 * each). Sampled, they are estimates, whose error is statistical and
 * stated where it is shown. */
static void sites_le_live(struct ctx *c)
{
    const struct dump *d = c->d;
    uint64_t usable = 0;
    if (!d->live_usable_hi || !d->nstacks || !counts_exact(d) || d->sample != 1 ||
        d->settings_n || d->track_off)
        return;   /* (blocks tracked before a change to sample:1 weigh more than 1) */
    for (size_t i = 0; i < d->nstacks; i++)
        usable += d->stacks[i].live_usable;
    uint64_t flight = (d->threads_seen ? d->threads_seen : 1) * (uint64_t)SEG_INFLIGHT_BYTES;
    if (usable > d->live_usable_hi + flight)
        fail(c, "the stacks' tracked live blocks hold %llu usable bytes > %llu live at most (and "
             "%llu in flight)", (unsigned long long)usable, (unsigned long long)d->live_usable_hi,
             (unsigned long long)flight);
}

static const struct check {
    const char *name, *why;
    void (*fn)(struct ctx *c);
} checks[] = {
    { "frees <= allocations in every class", "a block is freed after it is allocated", frees_le_allocs },
    { "totals = the sum of the classes", "one count, two places", totals_sum },
    { "live usable bytes fit their class",
      "a class holds blocks of its usable sizes only: live blocks x its smallest <= live usable <= "
      "live blocks x its largest, but for one block per thread between its two counts", class_sizes },
    { "live requested <= live usable", "no block's request exceeds its usable size", req_le_usable },
    { "allocator in use >= live usable then",
      "the allocator counts every live block at its usable size at least: at the moment of its "
      "figures, what it has in use holds the floor under live usable bytes (seg.h, live_lo)",
      alloc_in_use },
    { "allocator footprint >= in use", "what it holds includes what it has handed out", alloc_footprint },
    { "allocator figures refreshed every 30 samples",
      "the sampler takes them at least every 30 passes, so no figure shown is older", alloc_fresh },
    { "peak RSS >= every RSS of the history",
      "the peak is the highest sample (a fork child's, of its own life)", peak_rss },
    { "history points inside their spans",
      "a point's last RSS lies between its span's lowest and highest, its live bytes under their "
      "highest", points_in_span },
    { "live blocks = allocations - frees in every sample", "one sum", samples_add_up },
    { "cumulative counts never fall", "allocations, frees and bytes requested only grow", counts_grow },
    { "call sites hold no more than is live",
      "the stacks' tracked live blocks are live blocks: their usable bytes are at most the live "
      "usable bytes while the snapshot was read", sites_le_live },
};

size_t fig_check(const struct dump *d, struct fig_fail *out, size_t max)
{
    struct ctx c = { d, NULL, out, max, 0 };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        c.name = checks[i].name;
        checks[i].fn(&c);
    }
    return c.n;
}

void fig_check_list(void (*line)(const char *name, const char *why, void *ctx), void *ctx)
{
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        line(checks[i].name, checks[i].why, ctx);
}
