/* figfmt: amounts as text (see figfmt.h). */
#include "config.h"

#include "figfmt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sizeclass.h"

/* v over powers of `base`, three significant digits and the power's unit
 * name; below `plain`, v as it is, with plain_fmt. */
static char *scaled(char *dst, size_t cap, double v, double base, double plain,
                    const char *const unit[6], const char *plain_fmt)
{
    int u = -1;
    if (!(v >= 0))
        v = 0;
    if (v < plain) {
        snprintf(dst, cap, plain_fmt, v);
        return dst;
    }
    while (v >= base && u < 5) {
        v /= base;
        u++;
    }
    snprintf(dst, cap, v >= 100 ? "%.0f%s" : v >= 10 ? "%.1f%s" : "%.2f%s", v, unit[u < 0 ? 0 : u]);
    return dst;
}

char *figfmt_bytes(char *dst, size_t cap, uint64_t v)
{
    static const char *const unit[] = { " KiB", " MiB", " GiB", " TiB", " PiB", " EiB" };
    if (v < 1024) {
        snprintf(dst, cap, "%llu B", (unsigned long long)v);
        return dst;
    }
    return scaled(dst, cap, (double)v, 1024, 1024, unit, "%.0f B");
}

char *figfmt_count(char *dst, size_t cap, double v)
{
    static const char *const unit[] = { "K", "M", "G", "T", "P", "E" };
    return scaled(dst, cap, v, 1000, 9999.5, unit, "%.0f");
}

char *figfmt_dur(char *dst, size_t cap, uint64_t ns, enum figfmt_style st)
{
    unsigned long long s = ns / 1000000000ull;
    int w = st == FF_WORDS;
    if (s == 0)
        snprintf(dst, cap, w ? "%llu ms" : "%llums", (unsigned long long)(ns / 1000000ull));
    else if (s < 60)
        snprintf(dst, cap, w ? "%llu s" : "%llus", s);
    else if (s < 3600)
        snprintf(dst, cap, w ? "%llu min %llu s" : "%llum%02llus", s / 60, s % 60);
    else if (s < 86400)
        snprintf(dst, cap, w ? "%llu h %llu min" : "%lluh%02llum", s / 3600, s / 60 % 60);
    else
        snprintf(dst, cap, w ? "%llu d %llu h" : "%llud%02lluh", s / 86400, s / 3600 % 24);
    return dst;
}

char *figfmt_elapsed(char *dst, size_t cap, double s)
{
    unsigned long long v = s > 0 ? (unsigned long long)(s + 0.5) : 0;
    if (v < 60)
        snprintf(dst, cap, "%llu s", v);
    else if (v < 3600)
        snprintf(dst, cap, "%llu:%02llu", v / 60, v % 60);
    else if (v < 86400)
        snprintf(dst, cap, "%llu:%02llu:%02llu", v / 3600, v / 60 % 60, v % 60);
    else
        snprintf(dst, cap, "%llu d %02llu:%02llu:%02llu", v / 86400, v / 3600 % 24, v / 60 % 60, v % 60);
    return dst;
}

static char *strtime(char *dst, size_t cap, uint64_t ns, int local, const char *fmt)
{
    time_t t = (time_t)(ns / 1000000000ull);
    struct tm tm;
    if (!ns || !(local ? localtime_r(&t, &tm) : gmtime_r(&t, &tm)) || !strftime(dst, cap, fmt, &tm))
        snprintf(dst, cap, "-");
    return dst;
}

char *figfmt_hms(char *dst, size_t cap, uint64_t ns, int local)
{
    return strtime(dst, cap, ns, local, "%H:%M:%S");
}

char *figfmt_utc(char *dst, size_t cap, uint64_t ns)
{
    return strtime(dst, cap, ns, 0, "%Y-%m-%d %H:%M:%S UTC");
}

/* Each unit with its precision in either style: the page's microseconds
 * to three digits (1, 4.1, 16, 66, 262), the terminal's milliseconds to
 * three (4.1, 16.8). */
static const struct { double div; const char *terse, *words, *tfmt, *wfmt; int digits; } bound_unit[] = {
    { 1e3, "us", " \u00b5s", "<=%.0f%s", "%.3g%s", 3 }, { 1e6, "ms", " ms", "<=%.3g%s", "%.2g%s", 2 },
    { 1e9, "s", " s", "<=%.2g%s", "%.2g%s", 2 }, { 60e9, "m", " min", "<=%.2g%s", "%.2g%s", 2 },
    { 3600e9, "h", " h", "<=%.2g%s", "%.2g%s", 2 }, { 86400e9, "d", " d", "<=%.2g%s", "%.2g%s", 2 },
};

/* An upper bound of ns in its unit; rounded up to the digits shown where
 * `up` is set (a bound that is not a bucket's own must not read lower). */
static char *bound(char *dst, size_t cap, double ns, enum figfmt_style st, int up)
{
    static const double below[] = { 1e6, 1e9, 60e9, 3600e9, 86400e9, INFINITY };
    int w = st == FF_WORDS;
    unsigned u = 0;
    while (ns >= below[u])
        u++;
    double v = ns / bound_unit[u].div;
    if (up && v > 0) {
        double m = pow(10, floor(log10(v)) + 1 - bound_unit[u].digits);
        v = ceil(v / m - 1e-9) * m;
        if (v * bound_unit[u].div >= below[u]) {   /* 59.5 s: 1 min, not 60 s */
            v = v * bound_unit[u].div / bound_unit[u + 1].div;
            u++;
        }
    }
    snprintf(dst, cap, w ? bound_unit[u].wfmt : bound_unit[u].tfmt, v,
             w ? bound_unit[u].words : bound_unit[u].terse);
    return dst;
}

char *figfmt_bucket(char *dst, size_t cap, int b, enum figfmt_style st)
{
    int w = st == FF_WORDS;
    char t[32];
    if (b < 0)
        return snprintf(dst, cap, "-"), dst;
    if (b >= (int)LIFEBUCKET_LAST) {
        figfmt_bucket(t, sizeof t, LIFEBUCKET_LAST - 1, st);
        snprintf(dst, cap, w ? "> %s" : ">%s", w ? t : t + 2);
        return dst;
    }
    return bound(dst, cap, (double)lifebucket_max_ns((unsigned)b), st, 0);
}

char *figfmt_le(char *dst, size_t cap, uint64_t ns, enum figfmt_style st)
{
    return bound(dst, cap, (double)ns, st, 1);
}

char *figfmt_class(char *dst, size_t cap, unsigned c, enum figfmt_style st)
{
    char a[24], b[24];
    if (c == 0)
        snprintf(dst, cap, st == FF_WORDS ? "\u226416 B" : "<=16 B");
    else if (c >= SIZECLASS_LAST)
        snprintf(dst, cap, ">%s", figfmt_bytes(a, sizeof a, sizeclass_min(SIZECLASS_LAST) - 1));
    else if (c < 8)
        snprintf(dst, cap, "%zu-%zu B", sizeclass_min(c), sizeclass_max(c));
    else {
        /* "8-10K": both ends in the larger unit, without spaces */
        uint64_t lo = sizeclass_min(c) - 1, hi = sizeclass_max(c);
        const char *u = hi <= 1024 ? "" : hi <= (1u << 20) ? "K" : "M";
        double div = *u == 'K' ? 1024.0 : *u == 'M' ? 1048576.0 : 1.0;
        snprintf(a, sizeof a, "%.4g", lo / div);
        snprintf(b, sizeof b, "%.4g", hi / div);
        snprintf(dst, cap, "%s-%s%s", a, b, *u ? u : " B");
    }
    return dst;
}

char *figfmt_err(char *dst, size_t cap, double err, double v, enum figfmt_style st)
{
    const char *pm = st == FF_WORDS ? "\u00b1" : "+/-";
    double pct = v > 0 && err > 0 ? 100.0 * err / v : 0;
    if (!(pct > 0))
        snprintf(dst, cap, "%s", "");
    else if (pct < 0.05)   /* "0.0%" would say there is none */
        snprintf(dst, cap, "%s<0.1%%", pm);
    else
        snprintf(dst, cap, pct < 9.95 ? "%s%.1f%%" : "%s%.0f%%", pm, pct);
    return dst;
}
