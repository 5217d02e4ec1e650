/* htmlfmt: what every section of shimdump --html's page (html.c) writes
 * with, beside figfmt.h's amounts: escaped text, the inputs' colours, and
 * the scales and axes of the charts. */
#ifndef MALLOCSHIM_HTMLFMT_H
#define MALLOCSHIM_HTMLFMT_H

#include <stdint.h>
#include <stdio.h>

#include "html.h"

/* ---- Text ---- */

/* Writes s to f HTML-escaped, its control and non-ASCII bytes replaced by
 * '?' (text from a segment or a symbol table may hold any byte). */
void htmlfmt_esc(FILE *f, const char *s);

/* htmlfmt_esc(), with a line-break opportunity after each comma and
 * slash: for configs and paths in a narrow column. */
void htmlfmt_esc_wbr(FILE *f, const char *s);

/* ---- Colours ---- */

/* Okabe and Ito's palette: told apart with the common colour-vision
 * deficiencies. Input i has htmlfmt_palette[i] ("#rrggbb") on every chart. */
extern const char *const htmlfmt_palette[HTML_INPUTS_MAX];

/* Writes to dst (cap >= 8) the "#rrggbb" of a heat-map cell of colour col
 * ("#rrggbb") for frac in [0, 1] (clamped): a light tint at 0, the colour
 * itself at 0.7, darker above, so that the busiest cells stand out for the
 * light colours of the palette too. */
void htmlfmt_heat_colour(char *dst, size_t cap, const char *col, double frac);

/* Writes to dst (cap >= 8) col ("#rrggbb") moved toward black (amount < 0)
 * or white (> 0) by |amount| in [0, 1]. */
void htmlfmt_shade(char *dst, size_t cap, const char *col, double amount);

/* ---- Scales ---- */

/* A linear map of values [v0, v1] onto pixels [p0, p1]. */
struct htmlfmt_scale {
    double v0, v1;       /* values */
    double p0, p1;       /* pixels */
};

/* The pixel of value v on s; p0 when s has no span of values. */
double htmlfmt_at(const struct htmlfmt_scale *s, double v);

/* Ticks of a byte axis from 0: the step (1, 2, 2.5 or 5 times a power of
 * ten in KiB, MiB, GiB...) that gives about 5 ticks, and the axis's top. */
struct htmlfmt_byte_ticks {
    double unit, step, top;
    const char *uname;
    int n;
};

/* Fills *t for an axis up to vmax bytes (0: as for 1 MiB); t->n >= 1 and
 * t->top >= vmax. */
void htmlfmt_byte_ticks(uint64_t vmax, struct htmlfmt_byte_ticks *t);

/* The label of tick i (0 <= i <= t->n) of *t: "0", "2.5 MiB". Returns dst. */
char *htmlfmt_tick_bytes(char *dst, size_t cap, const struct htmlfmt_byte_ticks *t, int i);

/* Draws the frame of a chart into f: horizontal grid lines and labels of
 * the byte axis y (ticks *bt), vertical ones of the time axis x (seconds
 * since start, at most 8 ticks), and x's title, xtitle (plain text). */
void htmlfmt_axes(FILE *f, const struct htmlfmt_scale *x, const struct htmlfmt_scale *y,
                  const struct htmlfmt_byte_ticks *bt, const char *xtitle);

#endif
