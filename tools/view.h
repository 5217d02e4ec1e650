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
};

/* The default view: waterfall, over-time chart, size classes, and the two
 * heat maps (size class x lifetime, size class x age). */
void view_main(FILE *f, const struct dump *d, const struct view_opts *o);

/* Two dumps side by side, with B/A ratios. */
void view_diff(FILE *f, const struct dump *a, const struct dump *b, const struct view_opts *o);

/* The header line and one row of --list. */
void view_list_header(FILE *f, const struct view_opts *o);
void view_list_row(FILE *f, const struct dump *d, const struct view_opts *o);

/* The Prometheus text exposition of n dumps (one label set per process). */
void view_prometheus(FILE *f, const struct dump *const *d, size_t n);

/* Formats bytes as "512 B", "16.0 KiB", "1.02 GiB". Returns dst. */
char *view_bytes(char *dst, size_t cap, uint64_t v);

#endif
