/* htmlhist: the history that shimdump --html draws over time: a dump's
 * tiers (or its series) merged into one list of points, oldest first. */
#ifndef MALLOCSHIM_HTMLHIST_H
#define MALLOCSHIM_HTMLHIST_H

#include <stddef.h>
#include <stdint.h>

#include "dump.h"

/* One point of the history as drawn: the span of one or more points of a
 * tier (or samples of the series), oldest first. */
struct htmlhist_pt {
    uint64_t t_ns;                  /* the span's last sample, CLOCK_REALTIME */
    uint64_t rss, rss_min, rss_max;
    uint64_t live, live_max;        /* live requested bytes: last, highest */
    uint64_t be[6];                 /* the backend's figures of the last sample */
    uint64_t samples;
};

/* A dump's whole history. */
struct htmlhist {
    struct htmlhist_pt *pts;        /* malloc'ed (NULL when npts is 0), oldest first */
    size_t npts;
    size_t nfine;                   /* the last nfine points are the finest tier (the series) */
};

/* Fills *h with the whole history of d, oldest first: each coarser tier's
 * points from before the finer tiers begin, then the finer ones; d's
 * series when it has no tiers (d->ntiers 0). The coarse point whose span
 * (its last.t_ns less samples * d->interval_ms) reaches into the finer
 * tiers is kept too, placed just before them (t_ns one less than their
 * first) with the values of the first finer point and its own extremes:
 * they cover samples that no finer point holds. Tiers past DUMP_TIERS_MAX
 * are ignored. Returns 0, or ENOMEM with h->pts NULL and no points. The
 * caller frees h->pts. */
int htmlhist_merge(const struct dump *d, struct htmlhist *h);

#endif
