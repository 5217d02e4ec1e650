/* Unit tests of tools/page/htmlhist.c: the history that shimdump --html draws,
 * merged from hand-built dumps' series and tiers, checked to the value. */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "htmlhist.h"

#define MS 1000000ull                  /* ns */
#define T0 (1000000ull * 1000000000ull) /* the finest tier's first sample */

/* Each point is made from a seed so that every figure can be checked:
 * rss seed*10 (the span's from seed*10-3 to seed*10+7), live requested
 * seed*10-5 (at most seed*10+4), be[k] seed*100+k. */
static void mk(struct dump_point *q, uint64_t t_ns, uint64_t seed, uint32_t samples)
{
    memset(q, 0, sizeof *q);
    q->last.t_ns = t_ns;
    q->last.rss = seed * 10;
    q->last.live_req = seed * 10 - 5;
    for (int k = 0; k < 6; k++)
        q->last.be[k] = seed * 100 + (uint64_t)k;
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
static void check_pt(const struct htmlhist_pt *p, uint64_t t_ns, uint64_t seed, uint64_t samples)
{
    ck_assert_uint_eq(p->t_ns, t_ns);
    ck_assert_uint_eq(p->rss, seed * 10);
    ck_assert_uint_eq(p->rss_min, seed * 10 - 3);
    ck_assert_uint_eq(p->rss_max, seed * 10 + 7);
    ck_assert_uint_eq(p->live, seed * 10 - 5);
    ck_assert_uint_eq(p->live_max, seed * 10 + 4);
    for (int k = 0; k < 6; k++)
        ck_assert_uint_eq(p->be[k], seed * 100 + (uint64_t)k);
    ck_assert_uint_eq(p->samples, samples);
}

/* p is a straddling coarse point: placed at t_ns, the values of the first
 * finer point (made with seed `fine`), its own extremes (seed `coarse`). */
static void check_straddle(const struct htmlhist_pt *p, uint64_t t_ns, uint64_t coarse, uint64_t fine,
                           uint64_t samples)
{
    ck_assert_uint_eq(p->t_ns, t_ns);
    ck_assert_uint_eq(p->rss, fine * 10);
    ck_assert_uint_eq(p->live, fine * 10 - 5);
    for (int k = 0; k < 6; k++)
        ck_assert_uint_eq(p->be[k], fine * 100 + (uint64_t)k);
    ck_assert_uint_eq(p->rss_min, coarse * 10 - 3);
    ck_assert_uint_eq(p->rss_max, coarse * 10 + 7);
    ck_assert_uint_eq(p->live_max, coarse * 10 + 4);
    ck_assert_uint_eq(p->samples, samples);
}

/* The finest tier (the series as points): n points 10 ms apart from T0,
 * seeds 1, 2, ... */
static void fine_tier(struct dump *d, size_t n)
{
    struct dump_point *q = tier(d, 0, n, 10);
    for (size_t i = 0; i < n; i++)
        mk(&q[i], T0 + i * 10 * MS, 1 + i, 1);
}

static void check_fine(const struct htmlhist *h, size_t from, size_t n)
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
    struct htmlhist h;
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
            s->be[k] = 1000 * (i + 1) + (uint64_t)k;
    }
    ck_assert_int_eq(htmlhist_merge(d, &h), 0);
    ck_assert_uint_eq(h.npts, 3);
    ck_assert_uint_eq(h.nfine, 3);
    for (size_t i = 0; i < 3; i++) {
        const struct htmlhist_pt *p = &h.pts[i];
        ck_assert_uint_eq(p->t_ns, T0 + i * 10 * MS);
        ck_assert_uint_eq(p->rss, 100 + i);
        ck_assert_uint_eq(p->rss_min, 100 + i);
        ck_assert_uint_eq(p->rss_max, 100 + i);
        ck_assert_uint_eq(p->live, 50 + i);
        ck_assert_uint_eq(p->live_max, 50 + i);
        for (int k = 0; k < 6; k++)
            ck_assert_uint_eq(p->be[k], 1000 * (i + 1) + (uint64_t)k);
        ck_assert_uint_eq(p->samples, 1);
    }
    free(h.pts);

    /* the same dump read with its series as its one tier: the tier wins */
    fine_tier(d, 4);
    ck_assert_int_eq(htmlhist_merge(d, &h), 0);
    check_fine(&h, 0, 4);
    free(h.pts);
    free_dump(d);

    /* nothing at all */
    d = new_dump();
    ck_assert_int_eq(htmlhist_merge(d, &h), 0);
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
    struct htmlhist h;
    struct dump_point *q;
    fine_tier(d, 4);
    q = tier(d, 1, 3, 50);
    mk(&q[0], T0 - 150 * MS, 20, 5);
    mk(&q[1], T0 - 100 * MS, 21, 5);
    mk(&q[2], T0 - 50 * MS, 22, 3);  /* its span ends just before the series */
    ck_assert_int_eq(htmlhist_merge(d, &h), 0);
    check_pt(&h.pts[0], T0 - 150 * MS, 20, 5);
    check_pt(&h.pts[1], T0 - 100 * MS, 21, 5);
    check_pt(&h.pts[2], T0 - 50 * MS, 22, 3);
    check_fine(&h, 3, 4);
    free(h.pts);

    /* extremes that leave out the last sample are widened to it */
    q[1].rss_min = 500;
    q[1].rss_max = 1;
    q[1].live_req_max = 2;
    ck_assert_int_eq(htmlhist_merge(d, &h), 0);
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
    struct htmlhist h;
    struct dump_point *q;
    fine_tier(d, 4);
    q = tier(d, 1, 1, 50);
    mk(&q[0], T0 + 20 * MS, 30, 5);  /* spans T0 - 30 ms .. T0 + 20 ms */
    ck_assert_int_eq(htmlhist_merge(d, &h), 0);
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
    ck_assert_int_eq(htmlhist_merge(d, &h), 0);
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
    struct htmlhist h;
    struct dump_point *q;
    fine_tier(d, 4);
    q = tier(d, 1, 1, 50);
    mk(&q[0], T0 + 100 * MS, 40, 5);  /* spans T0 + 50 ms .. T0 + 100 ms */
    ck_assert_int_eq(htmlhist_merge(d, &h), 0);
    check_fine(&h, 0, 4);
    free(h.pts);
    free_dump(d);

    /* its span beginning exactly where the series begins: left out too */
    d = new_dump();
    fine_tier(d, 2);
    q = tier(d, 1, 1, 50);
    mk(&q[0], T0 + 50 * MS, 41, 5);
    ck_assert_int_eq(htmlhist_merge(d, &h), 0);
    check_fine(&h, 0, 2);
    free(h.pts);
    free_dump(d);

    /* after a straddling point: left out, and the straddling one kept */
    d = new_dump();
    fine_tier(d, 4);
    q = tier(d, 1, 2, 50);
    mk(&q[0], T0 + 20 * MS, 42, 5);
    mk(&q[1], T0 + 70 * MS, 43, 5);
    ck_assert_int_eq(htmlhist_merge(d, &h), 0);
    check_straddle(&h.pts[0], T0 - 1, 42, 1, 5);
    check_fine(&h, 1, 4);
    free(h.pts);
    free_dump(d);
}
END_TEST

/* (5) Three tiers: each coarser one before the next finer one begins, the
 * coarsest's straddling point given the middle tier's first values. */
START_TEST(three_tiers)
{
    struct dump *d = new_dump();
    struct htmlhist h;
    struct dump_point *q1, *q2;
    fine_tier(d, 3);
    q1 = tier(d, 1, 3, 50);
    mk(&q1[0], T0 - 100 * MS, 50, 5);
    mk(&q1[1], T0 - 50 * MS, 51, 5);
    mk(&q1[2], T0 + 10 * MS, 52, 2);  /* after a point ahead of the series: straddles it */
    q2 = tier(d, 2, 4, 200);
    mk(&q2[0], T0 - 500 * MS, 60, 20);
    mk(&q2[1], T0 - 300 * MS, 61, 20);
    mk(&q2[2], T0 - 80 * MS, 62, 20);   /* spans T0 - 280 ms .. T0 - 80 ms */
    mk(&q2[3], T0 + 120 * MS, 63, 20);  /* after the straddling one: left out */
    ck_assert_int_eq(htmlhist_merge(d, &h), 0);
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

static Suite *html_suite(void)
{
    Suite *s = suite_create("html");
    TCase *m = tcase_create("history");
    tcase_add_test(m, series_only);
    tcase_add_test(m, coarse_before);
    tcase_add_test(m, coarse_straddles);
    tcase_add_test(m, coarse_after_dropped);
    tcase_add_test(m, three_tiers);
    suite_add_tcase(s, m);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(html_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
