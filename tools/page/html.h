/* html: shimdump --html, one self-contained HTML page (inline SVG and CSS,
 * nothing fetched from anywhere) that draws one or more dumps side by side
 * on one scale, each chart with the table of its numbers. */
#ifndef MALLOCSHIM_HTML_H
#define MALLOCSHIM_HTML_H

#include <stdint.h>
#include <stdio.h>

#include "dump.h"

/* Inputs on one page: one colour each, from a palette of this many. */
#define HTML_INPUTS_MAX 8

struct html_opts {
    int top;                   /* call sites per input (--top) */
    int frames;                /* frames shown per call site; the rest folded (--frames) */
    unsigned long_bucket;      /* "long-lived": age bucket above this (--min-age) */
    uint64_t now_ns;           /* CLOCK_REALTIME: when the page says it was made */
};

/* Writes the page of the n dumps d[0..n) (1 <= n <= HTML_INPUTS_MAX) to f.
 * Returns 0, or ENOMEM, in which case f holds part of a page: write f to
 * a memory stream, and pass its contents on only after a 0. */
int html_report(FILE *f, const struct dump *const *d, size_t n, const struct html_opts *o);

#endif
