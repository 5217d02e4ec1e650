/* Unit tests of tools/figures: the history merged from hand-built dumps'
 * series and tiers, checked to the value; the waterfall, ages, class and
 * call-site picks, the difference of two snapshots, the amounts as text,
 * and every invariant of figcheck.c, each broken once. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "figfmt.h"
#include "figures.h"
#include "sizeclass.h"

#define MS 1000000ull                  /* ns */
#define T0 (1000000ull * 1000000000ull) /* the finest tier's first sample */

/* Each point is made from a seed so that every figure can be checked:
 * rss seed*10 (the span's from seed*10-3 to seed*10+7), live requested
 * seed*10-5 (at most seed*10+4), be.v[k] seed*100+k. */
static void mk(struct dump_point *q, uint64_t t_ns, uint64_t seed, uint32_t samples)
{
    memset(q, 0, sizeof *q);
    q->last.t_ns = t_ns;
    q->last.rss = seed * 10;
    q->last.live_req = seed * 10 - 5;
    for (int k = 0; k < 6; k++)
        q->last.be.v[k] = seed * 100 + (uint64_t)k;
    q->rss_min = seed * 10 - 3;
    q->rss_max = seed * 10 + 7;
    q->live_req_max = seed * 10 + 4;
    q->samples = samples;
}

static struct dump *new_dump(void)
{
    struct dump *d = calloc(1, sizeof *d);
    ck_assert_ptr_nonnull(d);
    d->interval_ms = 10;
    return d;
}

/* Tier t of d: n points, allocated, filled by the caller. */
static struct dump_point *tier(struct dump *d, size_t t, size_t n, uint64_t step_ms)
{
    struct dump_tier *tr = &d->tiers[t];
    tr->step_ms = step_ms;
    tr->npoints = n;
    tr->points = calloc(n, sizeof *tr->points);
    ck_assert_ptr_nonnull(tr->points);
    if (d->ntiers < t + 1)
        d->ntiers = t + 1;
    return tr->points;
}

static void free_dump(struct dump *d)
{
    for (size_t t = 0; t < DUMP_TIERS_MAX; t++)
        free(d->tiers[t].points);
    free(d->series);
    free(d);
}

/* p is the point q made with `seed` (mk) kept as it is. */
static void check_pt(const struct fig_point *p, uint64_t t_ns, uint64_t seed, uint64_t samples)
{
    ck_assert_uint_eq(p->t_ns, t_ns);
    ck_assert_uint_eq(p->rss, seed * 10);
    ck_assert_uint_eq(p->rss_min, seed * 10 - 3);
    ck_assert_uint_eq(p->rss_max, seed * 10 + 7);
    ck_assert_uint_eq(p->live, seed * 10 - 5);
    ck_assert_uint_eq(p->live_max, seed * 10 + 4);
    for (int k = 0; k < 6; k++)
        ck_assert_uint_eq(p->be.v[k], seed * 100 + (uint64_t)k);
    ck_assert_uint_eq(p->samples, samples);
}

/* p is a straddling coarse point: placed at t_ns, the values of the first
 * finer point (made with seed `fine`), its own extremes (seed `coarse`). */
static void check_straddle(const struct fig_point *p, uint64_t t_ns, uint64_t coarse, uint64_t fine,
                           uint64_t samples)
{
    ck_assert_uint_eq(p->t_ns, t_ns);
    ck_assert_uint_eq(p->rss, fine * 10);
    ck_assert_uint_eq(p->live, fine * 10 - 5);
    for (int k = 0; k < 6; k++)
        ck_assert_uint_eq(p->be.v[k], fine * 100 + (uint64_t)k);
    ck_assert_uint_eq(p->rss_min, coarse * 10 - 3);
    ck_assert_uint_eq(p->rss_max, coarse * 10 + 7);
    ck_assert_uint_eq(p->live_max, coarse * 10 + 4);
    ck_assert_uint_eq(p->samples, samples);
}

/* The finest tier (the series as points): n points 10 ms apart from T0,
 * seeds 1, 2, ...; it has let older points go, so that a coarser tier may
 * span samples it lacks (see coarse_whole_life for one that has not). */
static void fine_tier(struct dump *d, size_t n)
{
    struct dump_point *q = tier(d, 0, n, 10);
    for (size_t i = 0; i < n; i++)
        mk(&q[i], T0 + i * 10 * MS, 1 + i, 1);
    d->tiers[0].dropped = 7;
}

static void check_fine(const struct fig_history *h, size_t from, size_t n)
{
    ck_assert_uint_eq(h->nfine, n);
    ck_assert_uint_eq(h->npts, from + n);
    for (size_t i = 0; i < n; i++)
        check_pt(&h->pts[from + i], T0 + i * 10 * MS, 1 + i, 1);
}

/* (1) The series alone: with no tiers (d->series), and as the only tier. */
START_TEST(series_only)
{
    struct dump *d = new_dump();
    struct fig_history h;
    d->nseries = 3;
    d->series = calloc(3, sizeof *d->series);
    ck_assert_ptr_nonnull(d->series);
    for (size_t i = 0; i < 3; i++) {
        struct dump_sample *s = &d->series[i];
        s->t_ns = T0 + i * 10 * MS;
        s->rss = 100 + i;
        s->live_req = 50 + i;
        s->live_usable = 999;
        for (int k = 0; k < 6; k++)
            s->be.v[k] = 1000 * (i + 1) + (uint64_t)k;
    }
    ck_assert_int_eq(fig_history(d, &h), 0);
    ck_assert_uint_eq(h.npts, 3);
    ck_assert_uint_eq(h.nfine, 3);
    for (size_t i = 0; i < 3; i++) {
        const struct fig_point *p = &h.pts[i];
        ck_assert_uint_eq(p->t_ns, T0 + i * 10 * MS);
        ck_assert_uint_eq(p->rss, 100 + i);
        ck_assert_uint_eq(p->rss_min, 100 + i);
        ck_assert_uint_eq(p->rss_max, 100 + i);
        ck_assert_uint_eq(p->live, 50 + i);
        ck_assert_uint_eq(p->live_max, 50 + i);
        for (int k = 0; k < 6; k++)
            ck_assert_uint_eq(p->be.v[k], 1000 * (i + 1) + (uint64_t)k);
        ck_assert_uint_eq(p->samples, 1);
    }
    free(h.pts);

    /* the same dump read with its series as its one tier: the tier wins */
    fine_tier(d, 4);
    ck_assert_int_eq(fig_history(d, &h), 0);
    check_fine(&h, 0, 4);
    free(h.pts);
    free_dump(d);

    /* nothing at all */
    d = new_dump();
    ck_assert_int_eq(fig_history(d, &h), 0);
    ck_assert_ptr_null(h.pts);
    ck_assert_uint_eq(h.npts, 0);
    ck_assert_uint_eq(h.nfine, 0);
    free_dump(d);
}
END_TEST

/* (2) A coarse tier wholly before the series: its points first, then the
 * series, none left out. */
START_TEST(coarse_before)
{
    struct dump *d = new_dump();
    struct fig_history h;
    struct dump_point *q;
    fine_tier(d, 4);
    q = tier(d, 1, 3, 50);
    mk(&q[0], T0 - 150 * MS, 20, 5);
    mk(&q[1], T0 - 100 * MS, 21, 5);
    mk(&q[2], T0 - 50 * MS, 22, 3);  /* its span ends just before the series */
    ck_assert_int_eq(fig_history(d, &h), 0);
    check_pt(&h.pts[0], T0 - 150 * MS, 20, 5);
    check_pt(&h.pts[1], T0 - 100 * MS, 21, 5);
    check_pt(&h.pts[2], T0 - 50 * MS, 22, 3);
    check_fine(&h, 3, 4);
    free(h.pts);

    /* extremes that leave out the last sample are widened to it */
    q[1].rss_min = 500;
    q[1].rss_max = 1;
    q[1].live_req_max = 2;
    ck_assert_int_eq(fig_history(d, &h), 0);
    ck_assert_uint_eq(h.pts[1].rss_min, 210);
    ck_assert_uint_eq(h.pts[1].rss_max, 210);
    ck_assert_uint_eq(h.pts[1].live_max, 205);
    free(h.pts);
    free_dump(d);
}
END_TEST

/* (3) A coarse tier whose first point ends after the series begins but
 * spans samples from before it: kept, placed just before the series with
 * the first fine point's values and its own extremes. */
START_TEST(coarse_straddles)
{
    struct dump *d = new_dump();
    struct fig_history h;
    struct dump_point *q;
    fine_tier(d, 4);
    q = tier(d, 1, 1, 50);
    mk(&q[0], T0 + 20 * MS, 30, 5);  /* spans T0 - 30 ms .. T0 + 20 ms */
    ck_assert_int_eq(fig_history(d, &h), 0);
    check_straddle(&h.pts[0], T0 - 1, 30, 1, 5);
    check_fine(&h, 1, 4);
    free(h.pts);
    free_dump(d);

    /* a later point of the tier, the one before it ahead of the series:
     * kept the same way, whatever its span */
    d = new_dump();
    fine_tier(d, 3);
    q = tier(d, 1, 2, 50);
    mk(&q[0], T0 - 50 * MS, 31, 5);
    mk(&q[1], T0 + 20 * MS, 32, 1);  /* spans T0 + 10 ms .. T0 + 20 ms */
    ck_assert_int_eq(fig_history(d, &h), 0);
    check_pt(&h.pts[0], T0 - 50 * MS, 31, 5);
    check_straddle(&h.pts[1], T0 - 1, 32, 1, 1);
    check_fine(&h, 2, 3);
    free(h.pts);
    free_dump(d);
}
END_TEST

/* (4) Coarse points wholly after the series begins: left out. */
START_TEST(coarse_after_dropped)
{
    struct dump *d = new_dump();
    struct fig_history h;
    struct dump_point *q;
    fine_tier(d, 4);
    q = tier(d, 1, 1, 50);
    mk(&q[0], T0 + 100 * MS, 40, 5);  /* spans T0 + 50 ms .. T0 + 100 ms */
    ck_assert_int_eq(fig_history(d, &h), 0);
    check_fine(&h, 0, 4);
    free(h.pts);
    free_dump(d);

    /* its span beginning exactly where the series begins: left out too */
    d = new_dump();
    fine_tier(d, 2);
    q = tier(d, 1, 1, 50);
    mk(&q[0], T0 + 50 * MS, 41, 5);
    ck_assert_int_eq(fig_history(d, &h), 0);
    check_fine(&h, 0, 2);
    free(h.pts);
    free_dump(d);

    /* after a straddling point: left out, and the straddling one kept */
    d = new_dump();
    fine_tier(d, 4);
    q = tier(d, 1, 2, 50);
    mk(&q[0], T0 + 20 * MS, 42, 5);
    mk(&q[1], T0 + 70 * MS, 43, 5);
    ck_assert_int_eq(fig_history(d, &h), 0);
    check_straddle(&h.pts[0], T0 - 1, 42, 1, 5);
    check_fine(&h, 1, 4);
    free(h.pts);
    free_dump(d);
}
END_TEST

/* (5) Three tiers: each coarser one before the next finer one begins, the
 * coarsest's straddling point given the middle tier's first values. */
/* (5) A series that holds the whole life (nothing dropped): no coarse
 * point is drawn, however its span was reckoned (a partial point's
 * samples x interval reaches one interval before its first sample). */
START_TEST(coarse_whole_life)
{
    struct dump *d = new_dump();
    struct fig_history h;
    struct dump_point *q;
    fine_tier(d, 4);
    d->tiers[0].dropped = 0;
    q = tier(d, 1, 1, 50);
    mk(&q[0], T0 + 30 * MS, 30, 4);  /* the four samples of the series */
    ck_assert_int_eq(fig_history(d, &h), 0);
    check_fine(&h, 0, 4);
    free(h.pts);
    free_dump(d);
}
END_TEST

/* (6) A fork child: its segment goes on from its parent's copy, so its
 * tiers begin with the parent's points, from before its start. They are
 * left out (drawn at its start they made one column of the parent's whole
 * life, a band up to its peak), and the series, which reaches back past
 * the start, holds the child's whole life however much it dropped: the
 * coarse point that spans the fork is not drawn either. */
START_TEST(fork_child)
{
    struct dump *d = new_dump();
    struct fig_history h;
    struct dump_point *q;
    fine_tier(d, 6);                 /* T0 .. T0 + 50 ms, seeds 1..6, dropped 7 */
    d->start_ns = T0 + 25 * MS;      /* forked between the third and the fourth */
    d->inherited = 1;
    q = tier(d, 1, 3, 50);
    mk(&q[0], T0 - 50 * MS, 70, 5);  /* the parent's */
    mk(&q[1], T0, 71, 5);            /* the parent's, ending at the series' first */
    mk(&q[2], T0 + 50 * MS, 72, 5);  /* spans the fork: the parent's samples and ours */
    d->tiers[1].dropped = 30;
    ck_assert_int_eq(fig_history(d, &h), 0);
    ck_assert_uint_eq(h.nfine, 3);
    ck_assert_uint_eq(h.npts, 3);
    for (size_t i = 0; i < 3; i++)
        check_pt(&h.pts[i], T0 + (3 + i) * 10 * MS, 4 + i, 1);
    free(h.pts);

    /* with no tiers, the series alone: the same cut */
    free(d->tiers[0].points);
    free(d->tiers[1].points);
    memset(d->tiers, 0, sizeof d->tiers);
    d->ntiers = 0;
    d->nseries = 4;
    d->series = calloc(4, sizeof *d->series);
    ck_assert_ptr_nonnull(d->series);
    for (size_t i = 0; i < 4; i++)
        d->series[i].t_ns = T0 + i * 10 * MS;
    ck_assert_int_eq(fig_history(d, &h), 0);
    ck_assert_uint_eq(h.npts, 1);
    ck_assert_uint_eq(h.nfine, 1);
    ck_assert_uint_eq(h.pts[0].t_ns, T0 + 30 * MS);
    free(h.pts);
    free_dump(d);
}
END_TEST

START_TEST(three_tiers)
{
    struct dump *d = new_dump();
    struct fig_history h;
    struct dump_point *q1, *q2;
    fine_tier(d, 3);
    q1 = tier(d, 1, 3, 50);
    mk(&q1[0], T0 - 100 * MS, 50, 5);
    mk(&q1[1], T0 - 50 * MS, 51, 5);
    mk(&q1[2], T0 + 10 * MS, 52, 2);  /* after a point ahead of the series: straddles it */
    d->tiers[1].dropped = 2;
    q2 = tier(d, 2, 4, 200);
    mk(&q2[0], T0 - 500 * MS, 60, 20);
    mk(&q2[1], T0 - 300 * MS, 61, 20);
    mk(&q2[2], T0 - 80 * MS, 62, 20);   /* spans T0 - 280 ms .. T0 - 80 ms */
    mk(&q2[3], T0 + 120 * MS, 63, 20);  /* after the straddling one: left out */
    ck_assert_int_eq(fig_history(d, &h), 0);
    check_pt(&h.pts[0], T0 - 500 * MS, 60, 20);
    check_pt(&h.pts[1], T0 - 300 * MS, 61, 20);
    check_straddle(&h.pts[2], T0 - 100 * MS - 1, 62, 50, 20);
    check_pt(&h.pts[3], T0 - 100 * MS, 50, 5);
    check_pt(&h.pts[4], T0 - 50 * MS, 51, 5);
    check_straddle(&h.pts[5], T0 - 1, 52, 1, 2);
    check_fine(&h, 6, 3);
    free(h.pts);
    free_dump(d);
}
END_TEST


/* ---- The rest of the figures, on a hand-built healthy snapshot ---- */

#define S 1000000000ull                /* ns */
#define KIB 1024ull

/* A snapshot that holds every invariant: glibc, a sample a second from
 * T0 + 95 s to T0 + 100 s, two classes, one stack; read at T0 + 105 s,
 * alive. */
static struct dump *healthy(void)
{
    struct dump *d = new_dump();
    static const unsigned cls[2] = { 3, 10 };
    d->interval_ms = 1000;
    d->state = DS_ALIVE;
    d->backend_id = SEG_BACKEND_GLIBC;
    snprintf(d->backend, sizeof d->backend, "glibc");
    d->start_ns = T0;
    d->heartbeat_ns = T0 + 100 * S;   /* the last sample */
    d->snap_ns = T0 + 105 * S;
    d->sample = 1;
    d->exact = d->consistent = d->counts_ok = 1;
    for (int i = 0; i < 2; i++) {
        struct dump_class *k = &d->cls[cls[i]];
        k->allocs = 15 + (uint64_t)i;
        k->frees = 5;
        k->live_count = k->allocs - k->frees;
        k->live_usable = k->live_count * sizeclass_max(cls[i]);
        k->live_req = k->live_usable - k->live_count;
        d->total.allocs += k->allocs;
        d->total.frees += k->frees;
        d->total.live_count += k->live_count;
        d->total.live_usable += k->live_usable;
        d->total.live_req += k->live_req;
    }
    d->live_usable_hi = d->total.live_usable;
    d->nseries = 6;
    d->series = calloc(d->nseries, sizeof *d->series);
    ck_assert_ptr_nonnull(d->series);
    for (size_t i = 0; i < d->nseries; i++) {
        struct dump_sample *s = &d->series[i];
        s->t_ns = T0 + (95 + i) * S;
        s->allocs = 20 + i;
        s->frees = 4 + i;
        s->live_count = s->allocs - s->frees;
        s->live_usable = d->total.live_usable;
        s->live_req = d->total.live_req;
        s->rss = (1000 + 10 * i) * KIB;
        s->be.v[0] = 900 * KIB;   /* arena */
        s->be.v[1] = 100 * KIB;   /* hblkhd */
        s->be.v[2] = 300 * KIB;   /* fordblks */
        s->be.v[4] = 600 * KIB;   /* uordblks */
        s->be.v[5] = 1;
        s->be.t_ns = s->t_ns;
        s->be.live_lo = d->total.live_usable;
        if (s->rss > d->peak_rss) {
            d->peak_rss = s->rss;
            d->peak_rss_ns = s->t_ns;
        }
    }
    ck_assert_int_eq(dump_fine_tier(d, 0), 0);
    d->nstacks = 1;
    d->stacks = calloc(1, sizeof *d->stacks);
    ck_assert_ptr_nonnull(d->stacks);
    d->stacks[0].id = 1;
    d->stacks[0].allocs = 12;
    d->stacks[0].live_count = 4;
    d->stacks[0].live_req = 100;
    d->stacks[0].live_usable = 4 * sizeclass_max(3);
    d->stacks[0].age_count[12] = 3;
    d->stacks[0].age_req[12] = 75;
    d->stacks[0].age_count[2] = 1;
    d->stacks[0].age_req[2] = 25;
    return d;
}

static void free_healthy(struct dump *d)
{
    free(d->stacks);
    free_dump(d);
}

/* The tier of the series made again after the series was changed. */
static void refine(struct dump *d)
{
    free(d->tiers[0].points);
    memset(&d->tiers[0], 0, sizeof d->tiers[0]);
    ck_assert_int_eq(dump_fine_tier(d, 0), 0);
}

/* fig_check finds d broken, every failure under `name`. */
static void fails_only(const struct dump *d, const char *name)
{
    struct fig_fail f[FIG_FAILS_MAX];
    size_t n = fig_check(d, f, FIG_FAILS_MAX);
    ck_assert_msg(n >= 1, "not broken: %s", name);
    for (size_t i = 0; i < n && i < FIG_FAILS_MAX; i++)
        ck_assert_str_eq(f[i].name, name);
}

START_TEST(waterfall_and_ages)
{
    struct dump *d = healthy();
    struct fig_step st[FS_COUNT];
    struct fig_note notes[FIG_NOTES_MAX];
    fig_waterfall(d, st);
    ck_assert_str_eq(st[FS_INUSE].key, "alloc_in_use");
    ck_assert_uint_eq(st[FS_INUSE].v, 700 * KIB);      /* uordblks + hblkhd */
    ck_assert_uint_eq(st[FS_FOOT].v, 1000 * KIB);      /* arena + hblkhd */
    ck_assert_str_eq(st[FS_INUSE].label, "glibc in use (uordblks+hblkhd)");
    ck_assert_uint_eq(st[FS_RSS].v, 1050 * KIB);
    ck_assert(st[FS_RSS].ratio > 0);
    ck_assert_str_eq(st[FS_REQ].label, "live requested (exact)");
    /* the last sample 5 s before the read: stale, and said */
    ck_assert(st[FS_RSS].age.known && st[FS_RSS].age.stale);
    ck_assert_uint_eq(st[FS_RSS].age.ns, 5 * S);
    size_t n = fig_notes(d, notes, FIG_NOTES_MAX);
    ck_assert_uint_eq(n, 2);
    ck_assert_ptr_nonnull(strstr(notes[0].text, "the last sample is 5 s old"));
    ck_assert_ptr_nonnull(strstr(notes[1].text, "the allocator's own figures were taken 5 s before"));
    /* read a second after the last sample: fresh, no notes */
    d->snap_ns = d->series[5].t_ns + S;
    fig_waterfall(d, st);
    ck_assert(st[FS_INUSE].age.known && !st[FS_INUSE].age.stale);
    ck_assert_uint_eq(fig_notes(d, notes, FIG_NOTES_MAX), 0);
    /* the backend's figures 3 s older than the sample: stale */
    d->series[5].be.t_ns -= 3 * S;
    fig_waterfall(d, st);
    ck_assert(st[FS_INUSE].age.stale && !st[FS_RSS].age.stale);
    ck_assert_uint_eq(st[FS_INUSE].age.ns, 4 * S);
    /* gone: as of the last heartbeat */
    d->state = DS_DEAD;
    d->heartbeat_ns = d->series[5].t_ns;
    d->snap_ns = d->heartbeat_ns + 60 * S;
    ck_assert_uint_eq(fig_as_of(d), d->heartbeat_ns);
    ck_assert(fig_notes(d, notes, FIG_NOTES_MAX) >= 1);
    ck_assert_ptr_nonnull(strstr(notes[0].text, "gone without exiting normally"));
    ck_assert_ptr_nonnull(strstr(notes[0].text, "1 min 0 s before this read"));
    free_healthy(d);
}
END_TEST

/* Each backend's figures by name: in use and what it holds. */
START_TEST(allocators)
{
    struct dump *d = healthy();
    struct fig_alloc a;
    struct dump_sample *s = &d->series[5];
    for (int k = 0; k < 6; k++)
        s->be.v[k] = (uint64_t)(k + 1) * 1000;
    d->backend_id = SEG_BACKEND_JEMALLOC;
    fig_alloc_of(d, s, &a);
    ck_assert(a.have);
    ck_assert_uint_eq(a.in_use, 2000);       /* active */
    ck_assert_uint_eq(a.footprint, 3000);    /* resident */
    ck_assert_str_eq(a.in_use_name, "jemalloc active");
    ck_assert_str_eq(a.more[0].label, "allocated");
    ck_assert_uint_eq(a.more[0].v, 1000);
    d->backend_id = SEG_BACKEND_TCMALLOC;
    fig_alloc_of(d, s, &a);
    ck_assert_uint_eq(a.in_use, 1000);       /* current_allocated_bytes */
    ck_assert_uint_eq(a.footprint, 0);   /* heap 2000 less unmapped 4000: not below 0 */
    s->be.v[3] = 500;
    fig_alloc_of(d, s, &a);
    ck_assert_uint_eq(a.footprint, 1500);
    d->backend_id = SEG_BACKEND_GLIBC;
    fig_alloc_of(d, s, &a);
    ck_assert_uint_eq(a.in_use, 5000 + 2000);   /* uordblks + hblkhd */
    ck_assert_uint_eq(a.footprint, 1000 + 2000);   /* arena + hblkhd */
    ck_assert_str_eq(a.more[0].label, "arenas");
    ck_assert_int_eq(a.more[0].bytes, 0);
    d->backend_id = 7;   /* none of the three */
    fig_alloc_of(d, s, &a);
    ck_assert(!a.have);
    fig_alloc_of(d, NULL, &a);
    ck_assert(!a.have);
    free_healthy(d);
}
END_TEST

START_TEST(classes_sites_diff)
{
    struct dump *a = healthy(), *b = healthy();
    const struct dump *both[2] = { a, b };
    unsigned pick[SIZECLASS_COUNT];
    int more;
    b->cls[20].live_count = 1000;
    b->cls[20].live_usable = 1000 * sizeclass_max(20);
    ck_assert_int_eq(fig_pick_classes(both, 2, FK_USABLE, 0, pick, &more), 3);
    ck_assert_uint_eq(pick[0], 3);
    ck_assert_uint_eq(pick[2], 20);
    ck_assert_int_eq(more, 0);
    ck_assert_int_eq(fig_pick_classes(both, 2, FK_USABLE, 1, pick, &more), 1);
    ck_assert_uint_eq(pick[0], 20);   /* the most live bytes */
    ck_assert_int_eq(more, 2);

    /* sites: the dump's stacks hold estimates (weighted already), which
     * the figures take as they are, with the errors the dump states */
    a->sample = 10;
    a->stacks[0].live_req *= 10;
    a->stacks[0].live_count *= 10;
    a->stacks[0].live_req_err = 300;
    for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++) {
        a->stacks[0].age_count[b] *= 10;
        a->stacks[0].age_req[b] *= 10;
    }
    a->stacks[0].age_req_err[12] = 30;
    a->stacks[0].age_req_err[13] = 40;
    a->stacks[0].age_req_err[2] = 1000;
    struct fig_site site[4];
    ck_assert_uint_eq(fig_sites(a, FR_LIVE, 5, site, 4), 1);
    ck_assert(site[0].live_bytes == 1000);
    ck_assert(site[0].long_bytes == 750);     /* age bucket 12 > 5, bucket 2 not */
    ck_assert(site[0].live_blocks == 40);
    ck_assert(site[0].live_bytes_err == 300);
    ck_assert(fabs(site[0].long_bytes_err - 50) < 1e-9);   /* buckets independent: root of squares */
    ck_assert_int_eq(site[0].age_median, 12);
    ck_assert_uint_eq(site[0].avg_live, 25);
    ck_assert_uint_eq(fig_sites(a, FR_LONG, 13, site, 4), 0);   /* none older */

    /* the difference: the waterfall, ratios, counts, then the classes */
    struct fig_row rows[FIG_DIFF_MAX];
    size_t head;
    b->total.allocs = 2 * a->total.allocs;
    size_t n = fig_diff(a, b, 0, rows, &head, &more);
    ck_assert_uint_eq(head, 12);
    ck_assert_uint_eq(n, head + 3);
    ck_assert_str_eq(rows[0].name, "live requested (exact)");
    ck_assert_str_eq(rows[8].key, "allocs");
    ck_assert(rows[8].ratio == 2.0);
    ck_assert_str_eq(rows[head].key, "class_live_usable");

    struct fig_rates r;
    b->snap_ns = a->snap_ns + 2 * S;
    ck_assert_int_eq(fig_rates(a, b, &r), 1);
    ck_assert(r.allocs == (double)a->total.allocs / 2);
    ck_assert_int_eq(fig_rates(b, a, &r), 0);
    free_healthy(a);
    free_healthy(b);
}
END_TEST

/* Coverage: three stacks, two shown; the parts make the live bytes, the
 * errors add as independent ones, and a rest beyond its errors is said.
 * The peak: ranked by the bytes then, with its time; none before it is
 * known (at_peak.ns 0), and the peak's coverage against its own total. */
START_TEST(coverage_and_peak)
{
    struct dump *d = healthy();
    struct fig_site site[4];
    struct fig_cover c;
    struct fig_peak p;
    char text[600];
    static const uint64_t req[3] = { 600, 300, 60 }, err[3] = { 30, 40, 0 };
    static const uint64_t peak[3] = { 100, 0, 5000 };
    free(d->stacks);
    d->nstacks = 3;
    d->stacks = calloc(3, sizeof *d->stacks);
    ck_assert_ptr_nonnull(d->stacks);
    d->stack_depth = 8;
    for (int i = 0; i < 3; i++) {
        d->stacks[i].id = (uint32_t)i + 1;
        d->stacks[i].live_req = req[i];
        d->stacks[i].live_count = 1;
        d->stacks[i].live_req_err = err[i];
        d->stacks[i].peak_req = peak[i];
        d->stacks[i].peak_req_err = 50;
        d->stacks[i].peak_count = peak[i] / 100;
    }
    d->total.live_req = 1000;
    d->total.live_req_err = 0;
    d->nostack_live_req = 30;
    d->nostack_live_req_err = 0;

    ck_assert_uint_eq(fig_sites(d, FR_LIVE, 5, site, 2), 2);
    fig_coverage(d, site, 2, 0, &c);
    ck_assert(c.have);
    ck_assert_uint_eq(c.shown, 2);
    ck_assert_uint_eq(c.stacks, 3);
    ck_assert(c.sites == 900 && c.all == 960 && c.nostack == 30 && c.live == 1000);
    ck_assert(c.rest == 10);   /* 1000 - 960 - 30 */
    ck_assert(fabs(c.sites_err - 50) < 1e-9);   /* root of 30^2 + 40^2 */
    ck_assert(fabs(c.rest_err - 50) < 1e-9);
    ck_assert(fabs(c.share - 0.9) < 1e-12);
    ck_assert(!c.rest_big);
    fig_cover_text(&c, text, sizeof text, FF_TERSE);
    ck_assert_msg(strstr(text, "the 2 sites shown hold 900 B +/-5.6% of 1000 B live requested "
                               "bytes (90%); all 3 stacks with live bytes hold 960 B") != NULL,
                  "%s", text);
    ck_assert_ptr_null(strstr(text, "in no tracked entry"));

    d->total.live_req = 2000;   /* a rest of 1010 B, far beyond its errors */
    d->dropped = 7;
    fig_coverage(d, site, 2, 0, &c);
    ck_assert(c.rest_big);
    fig_cover_text(&c, text, sizeof text, FF_TERSE);
    ck_assert_msg(strstr(text, "1010 B in no tracked entry (7 tracked allocations found the "
                               "tracked table full)") != NULL, "%s", text);

    /* no peak known: nothing at the peak */
    fig_peak(d, &p);
    ck_assert(!p.have);
    ck_assert_uint_eq(fig_sites(d, FR_PEAK, 5, site, 4), 0);
    fig_coverage(d, site, 0, 1, &c);
    ck_assert(!c.have);

    d->at_peak.ns = T0 + 40 * S;
    d->at_peak.live_req = 5200;
    d->at_peak.live_usable = 6000;
    d->at_peak.rss = 9000;
    d->at_peak.nostack_req = 50;
    fig_peak(d, &p);
    ck_assert(p.have);
    ck_assert(fabs(p.since_start_s - 40) < 1e-9);
    ck_assert_uint_eq(p.ago_ns, 65 * S);   /* as of the read, T0 + 105 s */
    ck_assert_uint_eq(p.live_usable, 6000);
    ck_assert_uint_eq(fig_sites(d, FR_PEAK, 5, site, 4), 2);   /* the one with none left out */
    ck_assert_uint_eq(site[0].index, 2);
    ck_assert(site[0].peak_bytes == 5000 && site[0].live_bytes == 60);
    ck_assert(site[1].peak_bytes == 100 && site[1].peak_blocks == 1);
    fig_coverage(d, site, 1, 1, &c);
    ck_assert(c.have && c.sites == 5000 && c.all == 5100 && c.nostack == 50 && c.live == 5200);
    ck_assert(c.rest == 50 && c.live_err == 0);
    ck_assert_uint_eq(c.stacks, 2);
    free_healthy(d);
}
END_TEST

/* A median's bucket bound is shown no later than the uptime: a process up
 * 4.5 min has no block older, so not "<=18m"; a fork child's blocks from
 * its parent can be, so its bounds are the buckets' own. */
START_TEST(bucket_bounds)
{
    struct dump *d = healthy();
    char b[64];
    int clamped;
    unsigned b18m = lifebucket_of(17 * 60 * S);   /* <= 17.9 min */
    d->snap_ns = T0 + 270 * S;                     /* up 4.5 min */
    ck_assert_str_eq(figfmt_bucket(b, sizeof b, (int)b18m, FF_TERSE), "<=18m");
    uint64_t le = fig_bucket_le_ns(d, (int)b18m, &clamped);
    ck_assert_int_eq(clamped, 1);
    ck_assert_uint_eq(le, 270 * S);
    ck_assert_str_eq(figfmt_le(b, sizeof b, le, FF_TERSE), "<=4.5m");
    ck_assert_str_eq(figfmt_le(b, sizeof b, le, FF_WORDS), "4.5 min");
    /* the last bucket, unbounded, bounded by the uptime too */
    ck_assert_uint_eq(fig_bucket_le_ns(d, LIFEBUCKET_LAST, &clamped), 270 * S);
    ck_assert_int_eq(clamped, 1);
    /* a bucket that ends before the uptime: its own bound */
    ck_assert_uint_eq(fig_bucket_le_ns(d, 10, &clamped), lifebucket_max_ns(10));
    ck_assert_int_eq(clamped, 0);
    /* a fork child's */
    d->inherited = 1;
    ck_assert_uint_eq(fig_bucket_le_ns(d, (int)b18m, &clamped), lifebucket_max_ns(b18m));
    ck_assert_int_eq(clamped, 0);
    free_healthy(d);
    /* rounded up, never down: 57.3 s is "<=58s", 59.5 s "<=1m" */
    ck_assert_str_eq(figfmt_le(b, sizeof b, 57300 * MS, FF_TERSE), "<=58s");
    ck_assert_str_eq(figfmt_le(b, sizeof b, 59500 * MS, FF_TERSE), "<=1m");
    ck_assert_str_eq(figfmt_le(b, sizeof b, 59500 * MS, FF_WORDS), "1 min");
}
END_TEST

/* A standard error that rounds to nothing is not shown as none: "<0.1%",
 * not "+/-0.0%" (issue 36); in the view's and JSON's label and in the
 * page's words. */
START_TEST(small_errors)
{
    struct dump *d = healthy();
    struct fig_step st[FS_COUNT];
    char b[64];
    ck_assert_str_eq(figfmt_err(b, sizeof b, 3, 10000, FF_TERSE), "+/-<0.1%");
    ck_assert_str_eq(figfmt_err(b, sizeof b, 3, 10000, FF_WORDS), "\u00b1<0.1%");
    ck_assert_str_eq(figfmt_err(b, sizeof b, 5, 10000, FF_TERSE), "+/-0.1%");
    ck_assert_str_eq(figfmt_err(b, sizeof b, 34, 1000, FF_TERSE), "+/-3.4%");
    ck_assert_str_eq(figfmt_err(b, sizeof b, 123, 1000, FF_TERSE), "+/-12%");
    ck_assert_str_eq(figfmt_err(b, sizeof b, 0, 1000, FF_TERSE), "");
    ck_assert_str_eq(figfmt_err(b, sizeof b, 5, 0, FF_TERSE), "");
    d->exact = 0;
    d->total.live_req_err = d->total.live_req / 5000 + 1;   /* 0.02% */
    fig_waterfall(d, st);
    ck_assert_str_eq(st[FS_REQ].label, "live requested (estimate +/-<0.1%)");
    d->total.live_req_err = d->total.live_req / 40;         /* 2.5% */
    fig_waterfall(d, st);
    ck_assert_str_eq(st[FS_REQ].label, "live requested (estimate +/-2.5%)");
    free_healthy(d);
}
END_TEST

/* A class's lifetimes or ages that rest on fewer than FIG_FEW_TRACKED
 * tracked blocks are marked rough (issue 33), where the count is known (a
 * segment, JSON format 5 on); none is marked for a class with none. */
START_TEST(few_tracked)
{
    struct dump *d = new_dump();
    struct fig_class fc;
    d->json_version = 5;
    d->cls[3].life[4] = 2560;
    d->cls[3].tracked_freed = FIG_FEW_TRACKED - 1;
    d->cls[3].age[2] = 512;
    d->cls[3].tracked_live = FIG_FEW_TRACKED;
    fig_class_of(d, 3, &fc);
    ck_assert(fc.life_few && fc.life_n == FIG_FEW_TRACKED - 1);
    ck_assert(!fc.age_few && fc.age_n == FIG_FEW_TRACKED);
    fig_class_of(d, 4, &fc);
    ck_assert(!fc.life_few && !fc.age_few);
    d->json_version = 4;   /* an old snapshot: not known, not said */
    fig_class_of(d, 3, &fc);
    ck_assert(!fc.life_few);
    free(d);
}
END_TEST

START_TEST(amounts)
{
    char b[64];
    ck_assert_str_eq(figfmt_bytes(b, sizeof b, 512), "512 B");
    ck_assert_str_eq(figfmt_bytes(b, sizeof b, 16 * KIB), "16.0 KiB");
    ck_assert_str_eq(figfmt_bytes(b, sizeof b, 1100 * KIB * KIB), "1.07 GiB");
    ck_assert_str_eq(figfmt_count(b, sizeof b, 1234), "1234");
    ck_assert_str_eq(figfmt_count(b, sizeof b, 12345), "12.3K");
    ck_assert_str_eq(figfmt_count(b, sizeof b, -1), "0");
    ck_assert_str_eq(figfmt_dur(b, sizeof b, 725 * S, FF_TERSE), "12m05s");
    ck_assert_str_eq(figfmt_dur(b, sizeof b, 725 * S, FF_WORDS), "12 min 5 s");
    ck_assert_str_eq(figfmt_dur(b, sizeof b, 850 * MS, FF_WORDS), "850 ms");
    ck_assert_str_eq(figfmt_bucket(b, sizeof b, 10, FF_TERSE), "<=1s");
    ck_assert_str_eq(figfmt_bucket(b, sizeof b, 10, FF_WORDS), "1 s");
    ck_assert_str_eq(figfmt_bucket(b, sizeof b, -1, FF_WORDS), "-");
    ck_assert_str_eq(figfmt_bucket(b, sizeof b, LIFEBUCKET_LAST, FF_TERSE), ">3.2d");
    ck_assert_str_eq(figfmt_bucket(b, sizeof b, LIFEBUCKET_LAST, FF_WORDS), "> 3.2 d");
    ck_assert_str_eq(figfmt_class(b, sizeof b, 0, FF_TERSE), "<=16 B");
    ck_assert_str_eq(figfmt_class(b, sizeof b, 0, FF_WORDS), "\u226416 B");
    ck_assert_str_eq(figfmt_elapsed(b, sizeof b, 3725), "1:02:05");
}
END_TEST

START_TEST(bins)
{
    struct dump *d = healthy();
    struct fig_history h;
    struct fig_point out[6];
    size_t col[6];
    ck_assert_int_eq(fig_history(d, &h), 0);
    ck_assert_uint_eq(h.npts, 6);
    /* 6 points 1 s apart over 5 s in 2 columns: 3 and 3 */
    size_t nb = fig_bin(&h, 0, h.pts[0].t_ns, h.pts[5].t_ns, 2, out, col);
    ck_assert_uint_eq(nb, 2);
    ck_assert_uint_eq(col[0], 0);
    ck_assert_uint_eq(col[1], 1);
    ck_assert_uint_eq(out[0].samples, 3);
    ck_assert_uint_eq(out[0].rss, 1020 * KIB);
    ck_assert_uint_eq(out[0].rss_min, 1000 * KIB);
    ck_assert_uint_eq(out[1].rss_max, 1050 * KIB);
    ck_assert_uint_eq(fig_history_from(&h, h.pts[4].t_ns), 4);
    free(h.pts);
    free_healthy(d);
}
END_TEST

/* (each) Every invariant holds on the healthy snapshot, and each breaks
 * alone when its figure is made wrong. */
START_TEST(invariants)
{
    struct dump *d = healthy();
    struct fig_fail f[FIG_FAILS_MAX];
    size_t n = fig_check(d, f, FIG_FAILS_MAX);
    if (n)
        ck_abort_msg("healthy: %s: %s", f[0].name, f[0].detail);
    free_healthy(d);

    d = healthy();
    d->cls[3].frees = d->cls[3].allocs + 1;
    d->total.frees += d->cls[3].frees - 5;
    fails_only(d, "frees <= allocations in every class");
    d->inherited = 1;   /* approximate counts: not held to it */
    ck_assert_uint_eq(fig_check(d, f, FIG_FAILS_MAX), 0);
    free_healthy(d);

    d = healthy();
    d->total.allocs++;
    fails_only(d, "totals = the sum of the classes");
    free_healthy(d);

    d = healthy();
    d->cls[3].live_usable += 10 * sizeclass_max(3);
    d->total.live_usable += 10 * sizeclass_max(3);
    d->live_usable_hi = d->total.live_usable;
    fails_only(d, "live usable bytes fit their class");
    free_healthy(d);

    d = healthy();
    d->cls[10].live_req = d->cls[10].live_usable + 1;
    d->total.live_req = d->cls[3].live_req + d->cls[10].live_req;
    fails_only(d, "live requested <= live usable");
    free_healthy(d);

    d = healthy();
    d->series[5].be.v[4] = d->series[5].be.v[1] = 0;   /* uordblks, hblkhd */
    refine(d);
    fails_only(d, "allocator in use >= live usable then");
    free_healthy(d);

    d = healthy();
    d->series[2].be.v[0] = 0;   /* arena */
    refine(d);
    fails_only(d, "allocator footprint >= in use");
    free_healthy(d);

    /* 31 samples, the last carrying the first's figures: held (30 passes
     * apart); one older than that: broken */
    d = healthy();
    struct dump_sample *more = realloc(d->series, 31 * sizeof *more);
    ck_assert_ptr_nonnull(more);
    d->series = more;
    for (size_t i = 6; i < 31; i++) {
        d->series[i] = d->series[5];
        d->series[i].t_ns = d->series[i - 1].t_ns + S;
        d->series[i].be.t_ns = d->series[i].t_ns;
    }
    d->nseries = 31;
    d->heartbeat_ns = d->series[30].t_ns;
    d->snap_ns = d->heartbeat_ns + S;
    d->series[30].be.t_ns = d->series[0].t_ns;
    refine(d);
    ck_assert_uint_eq(fig_check(d, f, FIG_FAILS_MAX), 0);
    d->series[30].be.t_ns = d->series[0].t_ns - 1;
    refine(d);
    fails_only(d, "allocator figures refreshed every 30 samples");
    free_healthy(d);

    d = healthy();
    d->stacks[0].live_usable = d->live_usable_hi + 65536;   /* one block in flight: holds */
    ck_assert_uint_eq(fig_check(d, f, FIG_FAILS_MAX), 0);
    free_healthy(d);

    d = healthy();
    d->peak_rss = 1010 * KIB;
    fails_only(d, "peak RSS >= every RSS of the history");
    free_healthy(d);

    d = healthy();
    d->tiers[0].points[3].rss_max = d->tiers[0].points[3].last.rss - 1;
    fails_only(d, "history points inside their spans");
    free_healthy(d);

    d = healthy();
    d->series[2].live_count++;
    refine(d);
    fails_only(d, "live blocks = allocations - frees in every sample");
    free_healthy(d);

    d = healthy();
    d->series[3].allocs = d->series[2].allocs - 1;
    d->series[3].live_count = d->series[3].allocs - d->series[3].frees;
    refine(d);
    fails_only(d, "cumulative counts never fall");
    free_healthy(d);

    d = healthy();
    d->stacks[0].live_usable = d->live_usable_hi + 65537;   /* past one block in flight */
    fails_only(d, "call sites hold no more than is live");
    free_healthy(d);
}
END_TEST


#define MIB_ (1024ull * 1024)

/* RSS class by class: the kernel's classes, the parts summing to them, the
 * heap attributed from the allocator's count within the room it can live
 * in, a disagreement taken off the attributed parts, "not known" said. */
START_TEST(memory_classes)
{
    struct dump *d = healthy();
    struct dump_sample *s = &d->series[5];
    struct fig_mem m;
    d->mem.have = 1;
    d->mem.rss_anon = 100 * MIB_;
    d->mem.rss_file = 10 * MIB_;
    d->mem.rss_shmem = 5 * MIB_;
    d->mem.rss = 115 * MIB_;
    d->mem.brk = 2 * MIB_;
    d->mem.anon_maps = 90 * MIB_;
    d->mem.main_stack = 1 * MIB_;
    d->mem.thread_stacks = 3 * MIB_;
    d->mem.anon_in_files = 1 * MIB_;
    d->mem.file_code = 8 * MIB_;
    d->mem.shim_seg = 4 * MIB_;
    s->be.v[0] = 40 * MIB_;   /* glibc arena */
    s->be.v[1] = 10 * MIB_;   /* hblkhd */
    fig_memory(d, &m);
    ck_assert(m.have);
    ck_assert_uint_eq(m.rss, 115 * MIB_);
    ck_assert_uint_eq(m.part[FM_HEAP].v, 50 * MIB_);
    ck_assert_uint_eq(m.part[FM_STACKS].v, 4 * MIB_);
    ck_assert_uint_eq(m.part[FM_ANON_OTHER].v, 100 * MIB_ - 50 * MIB_ - 4 * MIB_ - 1 * MIB_);
    ck_assert_uint_eq(m.part[FM_CODE].v, 8 * MIB_);
    ck_assert_uint_eq(m.part[FM_FILE_OTHER].v, 2 * MIB_);
    ck_assert_uint_eq(m.part[FM_SHIM].v, 4 * MIB_);
    ck_assert_uint_eq(m.part[FM_SHMEM_OTHER].v, 1 * MIB_);
    uint64_t sum = 0;
    for (int k = 0; k < FM_COUNT; k++)
        sum += m.part[k].v;
    ck_assert_uint_eq(sum, m.rss);
    ck_assert(!m.part[FM_HEAP].exact && m.part[FM_CODE].exact);
    ck_assert_str_eq(m.vsz_note, "");
    /* more than the room: capped at [heap] and the anonymous mappings */
    s->be.v[0] = 400 * MIB_;
    fig_memory(d, &m);
    ck_assert_uint_eq(m.part[FM_HEAP].v, 92 * MIB_);
    ck_assert_uint_eq(m.part[FM_ANON_OTHER].v, 3 * MIB_);
    /* smaps said more than status a moment before: off the heap first */
    d->mem.rss_anon = 90 * MIB_;
    d->mem.rss = 105 * MIB_;
    fig_memory(d, &m);
    ck_assert_uint_eq(m.part[FM_HEAP].v, 85 * MIB_);
    ck_assert_uint_eq(m.part[FM_ANON_OTHER].v, 0);
    sum = 0;
    for (int k = 0; k < FM_COUNT; k++)
        sum += m.part[k].v;
    ck_assert_uint_eq(sum, m.rss);
    /* a huge reservation, remarked */
    d->mem.vsz = 8ull << 40;
    d->mem.largest_vsz = (8ull << 40) - (1ull << 30);
    d->mem.largest_noaccess = 1;
    fig_memory(d, &m);
    ck_assert_ptr_nonnull(strstr(m.vsz_note, "virtual size 8.00 TiB"));
    ck_assert_ptr_nonnull(strstr(m.vsz_note, "one no-access mapping"));
    /* not known, and why */
    memset(&d->mem, 0, sizeof d->mem);
    d->saved = 1;
    fig_memory(d, &m);
    ck_assert(!m.have);
    ck_assert_ptr_nonnull(strstr(m.why, "saved without it"));
    d->saved = 0;
    d->state = DS_DEAD;
    fig_memory(d, &m);
    ck_assert_ptr_nonnull(strstr(m.why, "the process is gone"));
    d->state = DS_ALIVE;
    d->mem.err = EACCES;
    fig_memory(d, &m);
    ck_assert_ptr_nonnull(strstr(m.why, "to its user or root"));
    free_healthy(d);
}
END_TEST

/* How many findings of d have id, and the first of them in *f. */
static int found(const struct dump *d, const char *id, struct fig_finding *f)
{
    struct fig_finding all[FIG_FINDINGS_MAX];
    size_t n = fig_diagnose(d, all, FIG_FINDINGS_MAX);
    int k = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(all[i].id, id) && k++ == 0 && f)
            *f = all[i];
    return k;
}

/* The rules' thresholds, each side of the line. */
START_TEST(diagnosis_rules)
{
    struct dump *d = healthy();
    struct dump_sample *s = &d->series[5];
    struct fig_finding f;
    ck_assert_int_eq(found(d, "healthy", &f), 1);
    ck_assert_int_eq(f.sev, FN_INFO);
    ck_assert_ptr_nonnull(strstr(f.what, "nothing stands out"));

    /* glibc: free held, 16 MiB and 15% of a resident 100 MiB */
    s->rss = 200 * MIB_;
    s->be.v[0] = 100 * MIB_;
    s->be.v[1] = 0;
    s->be.v[4] = 70 * MIB_;
    s->be.v[5] = 8;
    s->be.v[2] = 15 * MIB_;
    d->mem.cpus = 2;
    ck_assert_int_eq(found(d, "alloc_free_held", NULL), 0);
    s->be.v[2] = 16 * MIB_;
    ck_assert_int_eq(found(d, "alloc_free_held", &f), 1);
    ck_assert_int_eq(f.conf, FC_MEDIUM);
    ck_assert_ptr_nonnull(strstr(f.what, "in 8 arenas on 2 CPUs"));
    ck_assert_ptr_nonnull(strstr(f.fix, "`arenas = 2`"));
    ck_assert_ptr_nonnull(strstr(f.check, "shimreplay --all"));
    ck_assert_int_eq(found(d, "healthy", NULL), 0);
    s->be.v[2] = 30 * MIB_;
    ck_assert_int_eq(found(d, "alloc_free_held", &f), 1);
    ck_assert_int_eq(f.conf, FC_HIGH);
    /* counted only as far as resident: RSS 80 MiB leaves 10 MiB free */
    s->rss = 80 * MIB_;
    ck_assert_int_eq(found(d, "alloc_free_held", NULL), 0);
    s->rss = 1000 * KIB;
    s->be.v[0] = 900 * KIB;
    s->be.v[2] = 300 * KIB;
    s->be.v[4] = 600 * KIB;
    s->be.v[5] = 1;

    /* rounding: 10% and 4 MiB of the live usable bytes */
    d->total.live_usable = 50 * MIB_;
    d->total.live_req = 46 * MIB_;
    ck_assert_int_eq(found(d, "class_rounding", NULL), 0);
    d->total.live_req = 45 * MIB_;
    ck_assert_int_eq(found(d, "class_rounding", &f), 1);
    ck_assert_int_eq(f.conf, FC_HIGH);
    d->total.live_usable = d->total.live_req = 0;

    /* a leak: 2 MiB more every second, nothing freed */
    for (size_t i = 0; i < d->nseries; i++) {
        d->series[i].live_req = (1 + 2 * i) * MIB_;
        d->series[i].req_bytes = (1 + 2 * i) * MIB_;
    }
    refine(d);
    ck_assert_int_eq(found(d, "leak_suspect", NULL), 0);   /* 6 points, 5 steps: too few */
    free(d->series);
    d->nseries = 12;
    d->series = calloc(d->nseries, sizeof *d->series);
    ck_assert_ptr_nonnull(d->series);
    for (size_t i = 0; i < d->nseries; i++) {
        d->series[i].t_ns = T0 + (90 + i) * S;
        d->series[i].live_req = d->series[i].req_bytes = (1 + 2 * i) * MIB_;
    }
    refine(d);
    ck_assert_int_eq(found(d, "leak_suspect", &f), 1);
    ck_assert_int_eq(f.conf, FC_LOW);   /* over less than a minute, no site */
    /* the same growth in one burst is not a leak */
    for (size_t i = 0; i < d->nseries; i++)
        d->series[i].live_req = d->series[i].req_bytes = i < 6 ? MIB_ : 23 * MIB_;
    refine(d);
    ck_assert_int_eq(found(d, "leak_suspect", NULL), 0);
    /* nor a growth whose bytes were mostly freed as they came */
    for (size_t i = 0; i < d->nseries; i++) {
        d->series[i].live_req = (1 + 2 * i) * MIB_;
        d->series[i].req_bytes = (1 + 5 * i) * MIB_;
    }
    refine(d);
    ck_assert_int_eq(found(d, "leak_suspect", NULL), 0);
    free_healthy(d);
}
END_TEST

static Suite *figures_suite(void)
{
    Suite *s = suite_create("figures");
    TCase *m = tcase_create("history");
    TCase *f = tcase_create("figures");
    tcase_add_test(m, series_only);
    tcase_add_test(m, coarse_before);
    tcase_add_test(m, coarse_straddles);
    tcase_add_test(m, coarse_after_dropped);
    tcase_add_test(m, coarse_whole_life);
    tcase_add_test(m, three_tiers);
    tcase_add_test(m, fork_child);
    tcase_add_test(f, waterfall_and_ages);
    tcase_add_test(f, allocators);
    tcase_add_test(f, classes_sites_diff);
    tcase_add_test(f, coverage_and_peak);
    tcase_add_test(f, amounts);
    tcase_add_test(f, small_errors);
    tcase_add_test(f, bucket_bounds);
    tcase_add_test(f, few_tracked);
    tcase_add_test(f, bins);
    tcase_add_test(f, invariants);
    tcase_add_test(f, memory_classes);
    tcase_add_test(f, diagnosis_rules);
    suite_add_tcase(s, m);
    suite_add_tcase(s, f);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(figures_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
