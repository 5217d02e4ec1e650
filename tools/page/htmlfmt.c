/* htmlfmt: the helpers of the sections of shimdump --html's page (see
 * htmlfmt.h): text, labels, colours and the axes of the charts. */
#include "config.h"

#include "htmlfmt.h"

#include "figfmt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- Text ---- */

/* s, HTML-escaped, its control and non-ASCII bytes replaced by '?' (text
 * from a segment or a symbol table may hold any byte). */
void htmlfmt_esc(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(c < 0x20 || c >= 0x7f ? '?' : c, f);
        }
    }
}

/* htmlfmt_esc(), with a line-break opportunity after each comma and
 * slash: for configs and paths in a narrow column. */
void htmlfmt_esc_wbr(FILE *f, const char *s)
{
    char one[2] = { 0, 0 };
    for (; *s; s++) {
        one[0] = *s;
        htmlfmt_esc(f, one);
        if (*s == ',' || *s == '/')
            fputs("<wbr>", f);
    }
}

/* A label of a time axis at v seconds, its ticks `step` apart: as precise
 * as the step needs ("30 s", "2:30", "45 min", "3 h", "6 d 12 h", "2 d"). */
static char *fmt_tick(char *dst, size_t cap, double v, double step)
{
    unsigned long long u = (unsigned long long)(v + 0.5);
    if (v == 0)
        snprintf(dst, cap, "0");
    else if (step < 1)
        snprintf(dst, cap, "%.1f s", v);
    else if (v < 120 && step < 60)
        snprintf(dst, cap, "%llu s", u);
    else if (step < 60 && v < 3600)
        snprintf(dst, cap, "%llu:%02llu", u / 60, u % 60);
    else if (step < 60 && v < 86400)
        snprintf(dst, cap, "%llu:%02llu:%02llu", u / 3600, u / 60 % 60, u % 60);
    else if (step < 60)
        snprintf(dst, cap, "%llu d %02llu:%02llu:%02llu", u / 86400, u / 3600 % 24, u / 60 % 60, u % 60);
    else if (step < 3600 && v < 7200)
        snprintf(dst, cap, "%llu min", u / 60);
    else if (step < 3600 && v < 86400)
        snprintf(dst, cap, "%llu:%02llu", u / 3600, u / 60 % 60);
    else if (step < 3600)
        snprintf(dst, cap, "%llu d %02llu:%02llu", u / 86400, u / 3600 % 24, u / 60 % 60);
    else if (step < 86400 && v < 172800)
        snprintf(dst, cap, "%llu h", u / 3600);
    else if (step < 86400)
        snprintf(dst, cap, "%llu d %llu h", u / 86400, u / 3600 % 24);
    else
        snprintf(dst, cap, "%llu d", u / 86400);
    return dst;
}

/* ---- Colours ---- */

/* Okabe and Ito's palette: told apart with the common colour-vision
 * deficiencies. Input i has htmlfmt_palette[i] on every chart. */
const char *const htmlfmt_palette[HTML_INPUTS_MAX] = {
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#666666", "#A08C00",
};

struct rgb {
    double r, g, b;
};

static struct rgb hex_rgb(const char *hex)
{
    unsigned v = (unsigned)strtoul(hex + 1, NULL, 16);
    struct rgb c = { (double)(v >> 16 & 255), (double)(v >> 8 & 255), (double)(v & 255) };
    return c;
}

/* A heat-map cell of `col` for frac in [0, 1]: a light tint at 0, the
 * colour itself at 0.7, darker above, so that the busiest cells stand out
 * for the light colours of the palette too. */
void htmlfmt_heat_colour(char *dst, size_t cap, const char *col, double frac)
{
    struct rgb c = hex_rgb(col), w = { 255, 255, 255 }, k = { 0, 0, 0 }, a, b;
    double m;
    if (frac < 0)
        frac = 0;
    if (frac > 1)
        frac = 1;
    if (frac <= 0.7) {
        a = w;
        b = c;
        m = 0.12 + 0.88 * frac / 0.7;
    } else {
        a = c;
        b = k;
        m = (frac - 0.7) / 0.3 * 0.45;
    }
    snprintf(dst, cap, "#%02x%02x%02x", (unsigned)(a.r + (b.r - a.r) * m + 0.5),
             (unsigned)(a.g + (b.g - a.g) * m + 0.5), (unsigned)(a.b + (b.b - a.b) * m + 0.5));
}

/* col toward black (amount < 0) or white (> 0). */
void htmlfmt_shade(char *dst, size_t cap, const char *col, double amount)
{
    struct rgb c = hex_rgb(col);
    double t = amount < 0 ? 0 : 255, m = fabs(amount);
    snprintf(dst, cap, "#%02x%02x%02x", (unsigned)(c.r + (t - c.r) * m + 0.5),
             (unsigned)(c.g + (t - c.g) * m + 0.5), (unsigned)(c.b + (t - c.b) * m + 0.5));
}

/* ---- Scales ---- */

double htmlfmt_at(const struct htmlfmt_scale *s, double v)
{
    if (s->v1 == s->v0)
        return s->p0;
    return s->p0 + (v - s->v0) * (s->p1 - s->p0) / (s->v1 - s->v0);
}

void htmlfmt_byte_ticks(uint64_t vmax, struct htmlfmt_byte_ticks *t)
{
    static const char *const names[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    double v = vmax ? (double)vmax : 1048576.0, raw, mag, r;
    int u = 0;
    t->unit = 1;
    while (v >= t->unit * 1024 && u < 5) {
        t->unit *= 1024;
        u++;
    }
    t->uname = names[u];
    raw = v / t->unit / 5;
    mag = pow(10, floor(log10(raw)));
    r = raw / mag;
    t->step = (r <= 1 ? 1 : r <= 2 ? 2 : r <= 2.5 ? 2.5 : r <= 5 ? 5 : 10) * mag;
    if (u == 0 && t->step < 1)
        t->step = 1;
    t->n = (int)ceil(v / t->unit / t->step - 1e-9);
    if (t->n < 1)
        t->n = 1;
    t->top = t->n * t->step * t->unit;
}

char *htmlfmt_tick_bytes(char *dst, size_t cap, const struct htmlfmt_byte_ticks *t, int i)
{
    double v = i * t->step;
    if (i == 0)
        snprintf(dst, cap, "0");
    else
        snprintf(dst, cap, v == floor(v) ? "%.0f %s" : "%.1f %s", v, t->uname);
    return dst;
}

/* The step of a time axis over `span` seconds: at most 8 ticks. */
static double time_step(double span)
{
    static const double steps[] = { 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900,
                                    1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800,
                                    345600, 604800, 1209600, 2419200 };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (span / steps[i] <= 8)
            return steps[i];
    return span / 8;
}

/* Draws the frame of a chart: horizontal grid lines and labels of a byte
 * axis (y), vertical ones of a time axis (x, seconds since start), and the
 * axis titles. */
void htmlfmt_axes(FILE *f, const struct htmlfmt_scale *x, const struct htmlfmt_scale *y,
                  const struct htmlfmt_byte_ticks *bt, const char *xtitle)
{
    char b[48];
    fputs("<g class=\"ax\">", f);
    for (int i = 0; i <= bt->n; i++) {
        double py = htmlfmt_at(y, i * bt->step * bt->unit);
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"%s/>", x->p0, x->p1, py,
                py, i == 0 ? " class=\"base\"" : "");
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>", x->p0 - 8, py + 4,
                htmlfmt_tick_bytes(b, sizeof b, bt, i));
    }
    double step = time_step(x->v1 - x->v0);
    for (double v = ceil(x->v0 / step - 1e-9) * step; v <= x->v1 + 1e-9; v += step) {
        double px = htmlfmt_at(x, v);
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"v\"/>", px, px,
                y->p0, y->p0 + 5);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", px, y->p0 + 19,
                fmt_tick(b, sizeof b, v, step));
    }
    fprintf(f, "<text class=\"at\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (x->p0 + x->p1) / 2,
            y->p0 + 38);
    htmlfmt_esc(f, xtitle);
    fputs("</text></g>\n", f);
}

