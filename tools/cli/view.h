/* view: shimdump's renderings of a struct dump: the one-screen view, the
 * side-by-side diff, the list of segments and the Prometheus exposition. */
#ifndef MALLOCSHIM_VIEW_H
#define MALLOCSHIM_VIEW_H

#include <stdio.h>

#include "dump.h"

struct view_opts {
    int color;                 /* ANSI attributes */
    int utf8;                  /* block characters; else ASCII */
    int width;                 /* columns; the views are laid out for 100 */
    int all;                   /* every size class, not the busiest */
    const struct dump *prev;   /* --watch: the previous refresh, for rates */
    int top;                   /* stacks per ranking (--top) */
    int frames;                /* frames shown per stack (--frames) */
    unsigned long_bucket;      /* "long-lived": age bucket above this (--min-age) */
    uint64_t since_ns;         /* OVER TIME: this far back from the last sample
                                  (--since); 0: the whole history */
};

/* The rankings of call sites that view_stacks and --stacks --json show. */
enum view_rank { VR_LIVE, VR_LONG, VR_RATE, VR_COUNT };

/* Fills out[0..max) with the indexes (in d->stacks) of the top stacks by
 * `rank`, best first, leaving out stacks with nothing to rank by. Returns
 * how many. */
size_t view_rank_stacks(const struct dump *d, enum view_rank rank, unsigned long_bucket,
                        size_t *out, size_t max);

/* The call sites: top stacks by live bytes, by live bytes older than the
 * long-lived bound, and by allocation rate, each with its frames. */
void view_stacks(FILE *f, const struct dump *d, const struct view_opts *o);

/* The default view: waterfall, over-time chart, size classes, the two
 * heat maps (size class x lifetime, size class x age), and the top
 * long-lived call sites when the segment has stacks. */
void view_main(FILE *f, const struct dump *d, const struct view_opts *o);

/* Two dumps side by side, with B/A ratios. */
void view_diff(FILE *f, const struct dump *a, const struct dump *b, const struct view_opts *o);

/* The header line and one row of --list. */
void view_list_header(FILE *f, const struct view_opts *o);
void view_list_row(FILE *f, const struct dump *d, const struct view_opts *o);

/* The Prometheus text exposition of n dumps (one label set per process). */
void view_prometheus(FILE *f, const struct dump *const *d, size_t n);

/* The backend's own figures of the waterfall, from sample s: what it has
 * handed out (as it counts) and what it holds, with their names for the
 * views ("glibc in use (uordblks+hblkhd)"). */
struct view_alloc {
    uint64_t in_use, footprint;
    const char *in_use_name, *fp_name;
};

/* Fills *a from sample s of d. Returns 1, or 0 (a untouched) when s is
 * NULL or the backend is none of the three. */
int view_alloc_figures(const struct dump *d, const struct dump_sample *s, struct view_alloc *a);

/* The label of size class c: "<=16 B", "17-32 B", "8-10K", ">64.0 MiB".
 * Returns dst. */
char *view_class_label(char *dst, size_t cap, unsigned c);

/* The lifetime bucket below which half of the counts in v[LIFEBUCKET_COUNT]
 * lie, or -1 when they are all 0. */
int view_median_bucket(const uint64_t *v);

/* Formats bytes as "512 B", "16.0 KiB", "1.02 GiB". Returns dst. */
char *view_bytes(char *dst, size_t cap, uint64_t v);

#endif
