/* view: shimdump's text renderings of a struct dump: the one-screen view
 * (and --watch's), the call sites, the side-by-side diff and the list of
 * segments. They format what figures.h makes. */
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

#endif
