/* htmlhist: a dump's tiers merged into the one history that shimdump
 * --html draws (see htmlhist.h). */
#include "config.h"

#include "htmlhist.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void point_from_sample(struct htmlhist_pt *p, const struct dump_sample *s)
{
    memset(p, 0, sizeof *p);
    p->t_ns = s->t_ns;
    p->rss = p->rss_min = p->rss_max = s->rss;
    p->live = p->live_max = s->live_req;
    memcpy(p->be, s->be, sizeof p->be);
    p->samples = 1;
}

int htmlhist_merge(const struct dump *d, struct htmlhist *h)
{
    size_t cap = 0;

    h->pts = NULL;
    h->npts = h->nfine = 0;
    if (d->ntiers > 0) {
        size_t nt = d->ntiers < DUMP_TIERS_MAX ? d->ntiers : DUMP_TIERS_MAX;
        uint64_t cut[DUMP_TIERS_MAX], first = UINT64_MAX;
        struct htmlhist_pt *straddle = NULL;
        for (size_t t = 0; t < nt; t++) {
            cut[t] = first;   /* tier t is drawn only before the finer tiers begin */
            if (d->tiers[t].npoints && d->tiers[t].points[0].last.t_ns < first)
                first = d->tiers[t].points[0].last.t_ns;
            cap += d->tiers[t].npoints;
        }
        if (cap && !(h->pts = malloc(cap * sizeof *h->pts)))
            return ENOMEM;
        for (size_t t = nt; t-- > 0;) {
            const struct dump_tier *tr = &d->tiers[t];
            for (size_t i = 0; i < tr->npoints; i++) {
                const struct dump_point *q = &tr->points[i];
                struct htmlhist_pt *p;
                /* at or after the finer tiers' start: kept only when its
                 * span begins before it (it follows a point before it, or,
                 * the tier's first, it spans samples from before) */
                uint64_t span = (uint64_t)q->samples * d->interval_ms * 1000000ull;
                int straddles = i > 0 ? tr->points[i - 1].last.t_ns < cut[t]
                                      : q->last.t_ns - (q->last.t_ns > span ? span : q->last.t_ns) < cut[t];
                if (q->last.t_ns >= cut[t] && (!straddles || cut[t] == 0))
                    continue;
                p = &h->pts[h->npts++];
                point_from_sample(p, &q->last);
                p->rss_min = q->rss_min < q->last.rss ? q->rss_min : q->last.rss;
                p->rss_max = q->rss_max > q->last.rss ? q->rss_max : q->last.rss;
                p->live_max = q->live_req_max > q->last.live_req ? q->live_req_max : q->last.live_req;
                p->samples = q->samples;
                if (straddle) {
                    /* the first point after a straddling one: its values there */
                    straddle->rss = p->rss;
                    straddle->live = p->live;
                    memcpy(straddle->be, p->be, sizeof p->be);
                    straddle = NULL;
                }
                if (q->last.t_ns >= cut[t]) {
                    p->t_ns = cut[t] - 1;
                    straddle = p;
                }
                if (t == 0)
                    h->nfine++;
            }
        }
        return 0;
    }
    if (d->nseries && !(h->pts = malloc(d->nseries * sizeof *h->pts)))
        return ENOMEM;
    for (size_t i = 0; i < d->nseries; i++)
        point_from_sample(&h->pts[h->npts++], &d->series[i]);
    h->nfine = h->npts;
    return 0;
}

