/* view: the text renderings of a struct dump (see view.h). Laid out for
 * 100 columns; block characters when the locale is UTF-8, ASCII otherwise;
 * ANSI attributes only when asked (a tty without NO_COLOR). */
#include "config.h"

#include "view.h"

#include <math.h>
#include <string.h>
#include <time.h>

#define ROWS_DEFAULT 16     /* size classes in the one-screen view */
#define CHART_W 60          /* columns of the over-time chart */

/* ---- Formatting ---- */

/* v in units of `base` (1024 or 1000) with three significant digits:
 * "%.2f", "%.1f" or "%.0f" and the unit's name; below `plain`, v as is. */
static char *scaled(char *dst, size_t cap, uint64_t v, double base, uint64_t plain,
                    const char *const unit[6], const char *as_is)
{
    double x = (double)v;
    int u = -1;
    if (v < plain) {
        snprintf(dst, cap, as_is, (unsigned long long)v);
        return dst;
    }
    while (x >= base && u < 5) {
        x /= base;
        u++;
    }
    snprintf(dst, cap, x >= 100 ? "%.0f%s" : x >= 10 ? "%.1f%s" : "%.2f%s", x, unit[u < 0 ? 0 : u]);
    return dst;
}

char *view_bytes(char *dst, size_t cap, uint64_t v)
{
    static const char *const unit[] = { " KiB", " MiB", " GiB", " TiB", " PiB", " EiB" };
    return scaled(dst, cap, v, 1024, 1024, unit, "%llu B");
}

static char *count_str(char *dst, size_t cap, uint64_t v)
{
    static const char *const unit[] = { "K", "M", "G", "T", "P", "E" };
    return scaled(dst, cap, v, 1000, 10000, unit, "%llu");
}

static char *dur_str(char *dst, size_t cap, uint64_t ns)
{
    uint64_t s = ns / 1000000000ull;
    if (s == 0)
        snprintf(dst, cap, "%llums", (unsigned long long)(ns / 1000000ull));
    else if (s < 60)
        snprintf(dst, cap, "%llus", (unsigned long long)s);
    else if (s < 3600)
        snprintf(dst, cap, "%llum%02llus", (unsigned long long)(s / 60), (unsigned long long)(s % 60));
    else if (s < 86400)
        snprintf(dst, cap, "%lluh%02llum", (unsigned long long)(s / 3600),
                 (unsigned long long)(s / 60 % 60));
    else
        snprintf(dst, cap, "%llud%02lluh", (unsigned long long)(s / 86400),
                 (unsigned long long)(s / 3600 % 24));
    return dst;
}

static char *clock_str(char *dst, size_t cap, uint64_t real_ns)
{
    time_t t = (time_t)(real_ns / 1000000000ull);
    struct tm tm;
    if (!localtime_r(&t, &tm) || !strftime(dst, cap, "%H:%M:%S", &tm))
        snprintf(dst, cap, "?");
    return dst;
}

char *view_class_label(char *dst, size_t cap, unsigned c)
{
    char a[16], b[16];
    if (c == 0)
        snprintf(dst, cap, "<=16 B");
    else if (c == SIZECLASS_LAST)
        snprintf(dst, cap, ">%s", view_bytes(a, sizeof a, sizeclass_min(c) - 1));
    else if (c < 8)
        snprintf(dst, cap, "%zu-%zu B", sizeclass_min(c), sizeclass_max(c));
    else {
        /* "8-10K": both ends in the larger unit, without spaces. */
        uint64_t lo = sizeclass_min(c) - 1, hi = sizeclass_max(c);
        const char *u = hi <= 1024 ? "" : hi <= (1u << 20) ? "K" : "M";
        double div = *u == 'K' ? 1024.0 : *u == 'M' ? 1048576.0 : 1.0;
        snprintf(a, sizeof a, "%.4g", lo / div);
        snprintf(b, sizeof b, "%.4g", hi / div);
        snprintf(dst, cap, "%s-%s%s", a, b, *u ? u : " B");
    }
    return dst;
}

static double ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0.0;
}

/* ---- Terminal attributes ---- */

static const char *on(const struct view_opts *o, const char *code)
{
    return o->color ? code : "";
}

#define BOLD "\033[1m"
#define DIM "\033[2m"
#define RED "\033[31m"
#define YELLOW "\033[33m"
#define CYAN "\033[36m"
#define OFF "\033[0m"

static void title(FILE *f, const struct view_opts *o, const char *t, const char *note)
{
    fprintf(f, "\n%s%s%s%s%s%s\n", on(o, BOLD), on(o, CYAN), t, on(o, OFF),
            note ? "  " : "", note ? note : "");
}

/* A bar of `len` cells of `frac` (0..1) filled, with eighth blocks in UTF-8. */
static void bar(FILE *f, const struct view_opts *o, double frac, int len)
{
    static const char *const eighth[] = { "", "▏", "▎", "▍", "▌", "▋", "▊", "▉" };
    if (!(frac > 0))
        return;
    if (frac > 1)
        frac = 1;
    int units = (int)(frac * len * 8 + 0.5);
    if (units == 0)
        units = 1;
    for (int i = 0; i < units / 8; i++)
        fputs(o->utf8 ? "█" : "#", f);
    if (units % 8)
        fputs(o->utf8 ? eighth[units % 8] : (units % 8 >= 4 ? "#" : "|"), f);
}

/* ---- The waterfall ---- */

int view_alloc_figures(const struct dump *d, const struct dump_sample *s, struct view_alloc *a)
{
    if (!s)
        return 0;
    switch (d->backend_id) {
    case SEG_BACKEND_GLIBC:
        a->in_use = s->be[4] + s->be[1];
        a->footprint = s->be[0] + s->be[1];
        a->in_use_name = "glibc in use (uordblks+hblkhd)";
        a->fp_name = "glibc arenas + mmap (arena+hblkhd)";
        return 1;
    case SEG_BACKEND_JEMALLOC:
        a->in_use = s->be[1];
        a->footprint = s->be[2];
        a->in_use_name = "jemalloc active";
        a->fp_name = "jemalloc resident";
        return 1;
    case SEG_BACKEND_TCMALLOC:
        a->in_use = s->be[0];
        a->footprint = s->be[1] > s->be[3] ? s->be[1] - s->be[3] : 0;
        a->in_use_name = "tcmalloc allocated";
        a->fp_name = "tcmalloc heap, mapped";
        return 1;
    }
    return 0;
}

static void wf_row(FILE *f, const struct view_opts *o, const char *name, uint64_t v, uint64_t base,
                   uint64_t top, const char *note)
{
    char b[24];
    double r = ratio(v, base);
    const char *col = r >= 2.5 ? RED : r >= 1.5 ? YELLOW : "";
    int w = 40;
    for (const char *c = name; *c; c++)
        w += ((unsigned char)*c & 0xC0) == 0x80;   /* UTF-8 bytes past a character's first */
    fprintf(f, "  %-*s %11s  %s%6.2f%s  ", w, name, view_bytes(b, sizeof b, v), on(o, col), r,
            *col ? on(o, OFF) : "");
    bar(f, o, ratio(v, top), 26);
    if (note)
        fprintf(f, "%s %s%s", on(o, DIM), note, on(o, OFF));
    fputc('\n', f);
}

static void waterfall(FILE *f, const struct dump *d, const struct view_opts *o)
{
    const struct dump_sample *s = dump_last(d);
    const struct dump_class *t = &d->total;
    struct view_alloc a;
    char b1[24], b2[24], note[96];
    uint64_t req = t->live_req, top = t->live_usable;
    int have_a = view_alloc_figures(d, s, &a);

    if (have_a && a.footprint > top)
        top = a.footprint;
    if (have_a && a.in_use > top)
        top = a.in_use;
    if (s && s->rss > top)
        top = s->rss;
    title(f, o, "WHERE THE MEMORY GOES", "bytes, and each step as a multiple of live requested bytes");
    if (d->exact)
        snprintf(note, sizeof note, "live requested (exact)");
    else if (req && t->live_req_err)
        snprintf(note, sizeof note, "live requested (estimate %s%.1f%%)", o->utf8 ? "±" : "+/-",
                 100.0 * ratio(t->live_req_err, req));
    else
        snprintf(note, sizeof note, "live requested (estimate)");
    wf_row(f, o, note, req, req, top, NULL);
    snprintf(note, sizeof note, "live usable (exact; +%s rounding)",
             view_bytes(b1, sizeof b1, t->live_usable > req ? t->live_usable - req : 0));
    wf_row(f, o, note, t->live_usable, req, top, NULL);
    if (have_a) {
        wf_row(f, o, a.in_use_name, a.in_use, req, top, NULL);
        wf_row(f, o, a.fp_name, a.footprint, req, top, NULL);
    } else {
        fprintf(f, "  %-40s %11s\n", "allocator", "(no sample yet)");
    }
    if (s) {
        wf_row(f, o, "process RSS", s->rss, req, top, NULL);
    } else {
        fprintf(f, "  %-40s %11s\n", "process RSS", "(no sample yet)");
    }
    if (d->peak_rss) {
        char when[16], ago[24];
        uint64_t now = d->state == DS_ALIVE ? d->snap_ns : d->heartbeat_ns;
        fprintf(f, "  %-40s %11s  %6.2f   at %s (%s ago)\n", "peak RSS",
                view_bytes(b1, sizeof b1, d->peak_rss), ratio(d->peak_rss, req),
                clock_str(when, sizeof when, d->peak_rss_ns),
                dur_str(ago, sizeof ago, now > d->peak_rss_ns ? now - d->peak_rss_ns : 0));
    }
    if (s)
        fprintf(f, "  %sRSS: anonymous %s, in huge pages %s, virtual size %s%s\n", on(o, DIM),
                view_bytes(b1, sizeof b1, s->rss_anon), view_bytes(b2, sizeof b2, s->rss_huge),
                view_bytes(note, sizeof note, s->vsz), on(o, OFF));
    if (s && d->backend_id == SEG_BACKEND_GLIBC)
        fprintf(f, "  %sglibc: %llu arena%s, %s free inside them, %s keepcost%s\n", on(o, DIM),
                (unsigned long long)s->be[5], s->be[5] == 1 ? "" : "s", view_bytes(b1, sizeof b1, s->be[2]),
                view_bytes(b2, sizeof b2, s->be[3]), on(o, OFF));
    else if (s && d->backend_id == SEG_BACKEND_JEMALLOC) {
        char b3[24];
        fprintf(f, "  %sjemalloc: mapped %s, retained %s, metadata %s%s\n", on(o, DIM),
                view_bytes(b1, sizeof b1, s->be[3]), view_bytes(b2, sizeof b2, s->be[4]),
                view_bytes(b3, sizeof b3, s->be[5]), on(o, OFF));
    } else if (s && d->backend_id == SEG_BACKEND_TCMALLOC)
        fprintf(f, "  %stcmalloc: page heap free %s, unmapped %s%s\n", on(o, DIM),
                view_bytes(b1, sizeof b1, s->be[2]), view_bytes(b2, sizeof b2, s->be[3]),
                on(o, OFF));
}

/* ---- Over time ---- */

static void chart_row(FILE *f, const struct view_opts *o, const char *name, const uint64_t *v,
                      int n, uint64_t max, uint64_t now)
{
    static const char *const blk[] = { " ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" };
    static const char asc[] = " _.-~=*#@";
    char b[24];
    fprintf(f, "  %-5s ", name);
    for (int i = 0; i < n; i++) {
        int lvl = max ? (int)ceil((double)v[i] / (double)max * 8.0) : 0;
        if (lvl > 8)
            lvl = 8;
        if (v[i] && lvl == 0)
            lvl = 1;
        if (o->utf8)
            fputs(blk[lvl], f);
        else
            fputc(asc[lvl], f);
    }
    fprintf(f, "  %s\n", view_bytes(b, sizeof b, now));
}

/* A point's span as text: "1s", "10s", "1m", "500ms". */
static char *step_str(char *dst, size_t cap, uint64_t ms)
{
    if (ms % 1000 || ms == 0)
        snprintf(dst, cap, "%llums", (unsigned long long)ms);
    else
        dur_str(dst, cap, ms * 1000000ull);
    return dst;
}

/* The time axis under the chart: the start's age, the middle's, and the
 * end ("now" for a live process, else its time of day). */
static void time_axis(FILE *f, const struct dump *d, const struct view_opts *o, uint64_t t0,
                      uint64_t t1, int n)
{
    char a[24], m[24], e[24], line[CHART_W + 64];
    int live = d->state == DS_ALIVE && !d->saved;
    snprintf(a, sizeof a, "-%s", dur_str(m, sizeof m, t1 - t0));
    snprintf(m, sizeof m, "-%s", dur_str(e, sizeof e, (t1 - t0) / 2));
    if (live)
        snprintf(e, sizeof e, "now");
    else
        clock_str(e, sizeof e, t1);
    memset(line, ' ', sizeof line);
    int la = (int)strlen(a), lm = (int)strlen(m), le = (int)strlen(e);
    memcpy(line, a, (size_t)la);
    if (n / 2 - lm / 2 > la + 1 && n / 2 + lm - lm / 2 < n - le - 1)
        memcpy(line + n / 2 - lm / 2, m, (size_t)lm);
    /* the end under the chart's last column, or after the start when the
     * chart is too narrow for both */
    int at = n - le > la ? n - le : la + 1;
    memcpy(line + at, e, (size_t)le);
    line[at + le] = '\0';
    fprintf(f, "        %s%s%s\n", on(o, DIM), line, on(o, OFF));
}

static void over_time(FILE *f, const struct dump *d, const struct view_opts *o)
{
    uint64_t rss[CHART_W], live[CHART_W], max = 0, since = 0;
    int peak_col = -1, n;
    size_t per, first = 0, cnt;
    char span[24], step[24], note[128];
    const struct dump_tier *k;
    const struct dump_sample *last = dump_last(d);

    /* The end: the latest sample, or a tier's newest point, read after
     * the series when the process runs on. */
    uint64_t end = last ? last->t_ns : 0;
    for (size_t t = 0; t < d->ntiers && t < DUMP_TIERS_MAX; t++)
        if (d->tiers[t].npoints && d->tiers[t].points[d->tiers[t].npoints - 1].last.t_ns > end)
            end = d->tiers[t].points[d->tiers[t].npoints - 1].last.t_ns;
    if (o->since_ns && end > o->since_ns)
        since = end - o->since_ns;
    k = dump_tier_for(d, since);
    if (k)
        while (first < k->npoints && k->points[first].last.t_ns < since)
            first++;
    cnt = k ? k->npoints - first : 0;
    if (cnt < 2) {
        title(f, o, "OVER TIME", "(fewer than two samples yet)");
        return;
    }
    const struct dump_point *pt = k->points + first;
    per = (cnt + CHART_W - 1) / CHART_W;
    n = (int)((cnt + per - 1) / per);
    memset(rss, 0, sizeof rss);
    memset(live, 0, sizeof live);
    uint64_t top_rss = 0;
    for (size_t i = 0; i < cnt; i++) {
        size_t col = i / per;
        /* a coarse point's extremes: its span's spike shows */
        if (pt[i].rss_max > rss[col])
            rss[col] = pt[i].rss_max;
        if (pt[i].live_req_max > live[col])
            live[col] = pt[i].live_req_max;
        if (pt[i].rss_max > max)
            max = pt[i].rss_max;
        if (pt[i].live_req_max > max)
            max = pt[i].live_req_max;
        if (pt[i].rss_max > top_rss) {
            top_rss = pt[i].rss_max;
            if (d->peak_rss && top_rss == d->peak_rss)
                peak_col = (int)col;
        }
    }
    /* The window: from the first point's span (or from --since, when the
     * tier held points before it) to the latest sample. */
    uint64_t t1 = pt[cnt - 1].last.t_ns, t0 = pt[0].last.t_ns;
    uint64_t span0 = (uint64_t)pt[0].samples * d->interval_ms * 1000000ull;
    t0 = t0 > span0 ? t0 - span0 : 0;
    if (since && (first > 0 || t0 < since))
        t0 = since;
    if (end > t1)
        t1 = end;
    if (t1 < t0)
        t1 = t0;
    snprintf(note, sizeof note, "the last %s, %zu points of %s, max per column; both rows on one scale",
             dur_str(span, sizeof span, t1 - t0), cnt, step_str(step, sizeof step, k->step_ms));
    title(f, o, "OVER TIME", note);
    chart_row(f, o, "RSS", rss, n, max, pt[cnt - 1].last.rss);
    chart_row(f, o, "live", live, n, max, pt[cnt - 1].last.live_req);
    if (peak_col >= 0)
        fprintf(f, "        %*s%s peak RSS\n", peak_col, "", o->utf8 ? "▲" : "^");
    time_axis(f, d, o, t0, t1, n);
}

/* ---- Size classes ---- */

/* Picks the classes to show: every class with allocations, or the `max`
 * with the most live usable bytes (then the most allocations), in size
 * order. Returns how many; *more gets how many were left out. */
static int pick_classes(const struct dump *d, int max, unsigned *out, int *more,
                        uint64_t (*key)(const struct dump_class *))
{
    unsigned all[SIZECLASS_COUNT];
    int n = 0;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++)
        if (key(&d->cls[c]))
            all[n++] = c;
    *more = 0;
    if (max <= 0 || n <= max) {
        memcpy(out, all, (size_t)n * sizeof *out);
        return n;
    }
    /* Selection by key, largest first; then back to size order. */
    for (int i = 0; i < max; i++) {
        int best = i;
        for (int k = i + 1; k < n; k++)
            if (key(&d->cls[all[k]]) > key(&d->cls[all[best]]))
                best = k;
        unsigned tmp = all[i];
        all[i] = all[best];
        all[best] = tmp;
    }
    *more = n - max;
    for (int i = 0; i < max; i++)
        out[i] = all[i];
    for (int i = 1; i < max; i++)
        for (int k = i; k > 0 && out[k - 1] > out[k]; k--) {
            unsigned tmp = out[k];
            out[k] = out[k - 1];
            out[k - 1] = tmp;
        }
    return max;
}

static uint64_t key_live(const struct dump_class *k)
{
    /* live bytes first; classes with only past allocations after them */
    return k->live_usable ? k->live_usable + (1ull << 62) : k->allocs;
}

static uint64_t key_usable(const struct dump_class *k)
{
    return k->live_usable;
}

static uint64_t key_life(const struct dump_class *k)
{
    uint64_t s = 0;
    for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++)
        s += k->life[b];
    return s;
}

static uint64_t key_age(const struct dump_class *k)
{
    uint64_t s = 0;
    for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++)
        s += k->age[b];
    return s;
}

static void size_classes(FILE *f, const struct dump *d, const struct view_opts *o)
{
    unsigned pick[SIZECLASS_COUNT];
    int more, n = pick_classes(d, o->all ? 0 : ROWS_DEFAULT, pick, &more, key_live);
    uint64_t top = 0, rest = 0;
    char note[96], a[24], b[24], c[24], e[24], g[24];

    for (int i = 0; i < n; i++)
        if (d->cls[pick[i]].live_usable > top)
            top = d->cls[pick[i]].live_usable;
    for (unsigned k = 0; k < SIZECLASS_COUNT; k++)
        rest += d->cls[k].live_usable;
    if (more)
        snprintf(note, sizeof note, "the %d with the most live bytes of %d (--all shows every one)",
                 n, n + more);
    else
        snprintf(note, sizeof note, "every class with allocations; bars: live usable bytes");
    title(f, o, "SIZE CLASSES", note);
    fprintf(f, "  %s%-13s %8s %8s %8s %10s %10s %6s  %s%s\n", on(o, DIM), "usable size", "allocs",
            "frees", "live", "live req", "live use", "waste", "live usable bytes", on(o, OFF));
    for (int i = 0; i < n; i++) {
        const struct dump_class *k = &d->cls[pick[i]];
        double waste = k->live_usable ? 1.0 - ratio(k->live_req, k->live_usable) : 0;
        fprintf(f, "  %-13s %8s %8s %8s %10s %10s %5.1f%%  ",
                view_class_label(a, sizeof a, pick[i]), count_str(b, sizeof b, k->allocs),
                count_str(c, sizeof c, k->frees), count_str(e, sizeof e, k->live_count),
                view_bytes(g, sizeof g, k->live_req), view_bytes(note, sizeof note, k->live_usable),
                waste < 0 ? 0.0 : waste * 100);
        bar(f, o, ratio(k->live_usable, top), 25);
        fputc('\n', f);
        rest -= k->live_usable;
    }
    if (more)
        fprintf(f, "  %s... %d more classes hold %s live%s\n", on(o, DIM), more,
                view_bytes(a, sizeof a, rest), on(o, OFF));
}

/* ---- Heat maps ---- */

static const char *shade(const struct view_opts *o, uint64_t v, uint64_t max)
{
    static const char *const u[] = { "   ", "░░░", "▒▒▒", "▓▓▓", "███" };
    static const char *const a[] = { "   ", "...", ":::", "ooo", "###" };
    int lvl = 0;
    if (v) {
        double r = ratio(v, max);
        lvl = r <= 0.01 ? 1 : r <= 0.1 ? 2 : r <= 0.5 ? 3 : 4;
    }
    return o->utf8 ? u[lvl] : a[lvl];
}

static void heat_axis(FILE *f)
{
    /* Labels at the columns of 1 us, 1 ms, 1 s, 4.5 min, 72 min, 19 h, > 3.2 d. */
    static const struct { int col; const char *s; } tick[] = {
        { 0, "1us" }, { 5, "1ms" }, { 10, "1s" }, { 14, "4.5m" }, { 16, "72m" }, { 18, "19h" },
        { 20, ">3d" },
    };
    char line[128];
    memset(line, ' ', sizeof line);
    for (size_t i = 0; i < sizeof tick / sizeof tick[0]; i++)
        memcpy(line + tick[i].col * 3, tick[i].s, strlen(tick[i].s));
    int end = 20 * 3 + 3;
    line[end] = '\0';
    fprintf(f, "  %-13s %s\n", "", line);
}

static void heat_map(FILE *f, const struct dump *d, const struct view_opts *o, int ages)
{
    unsigned pick[SIZECLASS_COUNT];
    int more, n = pick_classes(d, o->all ? 0 : 12, pick, &more, ages ? key_age : key_life);
    uint64_t max = 0;
    char note[160], a[24], b[24];
    uint64_t scale = d->sample ? d->sample : 1;

    for (int i = 0; i < n; i++)
        for (unsigned k = 0; k < LIFEBUCKET_COUNT; k++) {
            const uint64_t *v = ages ? d->cls[pick[i]].age : d->cls[pick[i]].life;
            if (v[k] > max)
                max = v[k];
        }
    snprintf(note, sizeof note, "%s; tracked blocks%s%s",
             ages ? "size class x age, blocks still live" : "size class x lifetime, blocks freed",
             scale > 1 ? ", counts scaled by " : " (every block)",
             scale > 1 ? count_str(a, sizeof a, scale) : "");
    title(f, o, ages ? "AGES OF LIVE BLOCKS" : "LIFETIMES", note);
    if (n == 0) {
        fprintf(f, "  (no tracked %s yet)\n", ages ? "live blocks" : "frees");
        return;
    }
    heat_axis(f);
    for (int i = 0; i < n; i++) {
        const uint64_t *v = ages ? d->cls[pick[i]].age : d->cls[pick[i]].life;
        uint64_t sum = 0;
        fprintf(f, "  %-13s ", view_class_label(a, sizeof a, pick[i]));
        for (unsigned k = 0; k < LIFEBUCKET_COUNT; k++) {
            fputs(shade(o, v[k], max), f);
            sum += v[k];
        }
        fprintf(f, " %8s\n", count_str(b, sizeof b, sum * scale));
    }
    if (more)
        fprintf(f, "  %s... %d more classes%s\n", on(o, DIM), more, on(o, OFF));
    fprintf(f, "  %scells: %s <=1%%  %s <=10%%  %s <=50%%  %s >50%% of the busiest cell%s\n",
            on(o, DIM), shade(o, 1, 100), shade(o, 10, 100), shade(o, 50, 100),
            shade(o, 100, 100), on(o, OFF));
}

/* ---- Call sites ---- */

static void heading(FILE *f, const struct dump *d, const struct view_opts *o);

static uint64_t rank_key(const struct dump_stack *s, enum view_rank r, unsigned long_bucket)
{
    switch (r) {
    case VR_LIVE: return s->live_req;
    case VR_LONG: return dump_stack_older(s, long_bucket);
    default: return s->allocs;
    }
}

size_t view_rank_stacks(const struct dump *d, enum view_rank rank, unsigned long_bucket,
                        size_t *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < d->nstacks; i++) {
        uint64_t k = rank_key(&d->stacks[i], rank, long_bucket);
        if (k == 0)
            continue;
        /* insertion into the top `max`, best first; ties keep table order */
        size_t at = n < max ? n : max;
        while (at > 0 && rank_key(&d->stacks[out[at - 1]], rank, long_bucket) < k)
            at--;
        if (at >= max)
            continue;
        size_t last = n < max ? n : max - 1;
        memmove(out + at + 1, out + at, (last - at) * sizeof *out);
        out[at] = i;
        if (n < max)
            n++;
    }
    return n;
}

int view_median_bucket(const uint64_t *v)
{
    uint64_t sum = 0, acc = 0;
    for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++)
        sum += v[b];
    if (!sum)
        return -1;
    for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++)
        if ((acc += v[b]) * 2 >= sum)
            return (int)b;
    return LIFEBUCKET_LAST;
}

/* "<=4.2s"-style label of a bucket's bound. */
static char *bucket_str(char *dst, size_t cap, int b)
{
    if (b < 0)
        return snprintf(dst, cap, "-"), dst;
    if (b == LIFEBUCKET_LAST) {
        char t[16];
        snprintf(dst, cap, ">%s", bucket_str(t, sizeof t, LIFEBUCKET_LAST - 1) + 2);
        return dst;
    }
    double ns = (double)lifebucket_max_ns((unsigned)b);
    if (ns < 1e6)
        snprintf(dst, cap, "<=%.0fus", ns / 1e3);
    else if (ns < 1e9)
        snprintf(dst, cap, "<=%.3gms", ns / 1e6);
    else if (ns < 60e9)
        snprintf(dst, cap, "<=%.2gs", ns / 1e9);
    else if (ns < 3600e9)
        snprintf(dst, cap, "<=%.2gm", ns / 60e9);
    else if (ns < 86400e9)
        snprintf(dst, cap, "<=%.2gh", ns / 3600e9);
    else
        snprintf(dst, cap, "<=%.2gd", ns / 86400e9);
    return dst;
}

/* The base name of an object's path. */
static const char *obj_name(const struct dump *d, int obj)
{
    if (obj < 0 || (size_t)obj >= d->nobjs)
        return NULL;
    const char *p = d->objs[obj].path, *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* One frame, on one line cut to the width: "function+0x1a  object", or
 * with its source "function+0x1a at file.c:42  object" (the file's base
 * name: JSON has the path). A name too long is cut before " at", so that
 * the line number stays. */
static void frame_line(FILE *f, const struct dump *d, const struct dump_frame *fr,
                       const struct view_opts *o, const char *lead)
{
    char text[1400], name[1100], obj[96], src[140] = "";
    const char *on_ = obj_name(d, fr->obj);
    int width = (o->width > 40 ? o->width : 100) - (int)strlen(lead) - 2;

    if (on_)
        dump_clean_text(obj, sizeof obj, on_, strlen(on_));
    if (fr->func) {
        dump_clean_text(name, sizeof name, fr->func, strlen(fr->func));
        snprintf(text, sizeof text, "%s+0x%llx", name, (unsigned long long)fr->func_off);
    } else if (on_) {
        char note[128];
        if (fr->note)
            dump_clean_text(note, sizeof note, fr->note, strlen(fr->note));
        snprintf(text, sizeof text, "%s+0x%llx%s%s%s", obj, (unsigned long long)fr->obj_off,
                 fr->note ? " (" : "", fr->note ? note : "", fr->note ? ")" : "");
    } else {
        snprintf(text, sizeof text, "0x%llx", (unsigned long long)fr->addr);
    }
    if (fr->file && *fr->file && fr->line) {
        const char *base = strrchr(fr->file, '/');
        char file[120];
        base = base && base[1] ? base + 1 : fr->file;
        dump_clean_text(file, sizeof file, base, strlen(base));
        snprintf(src, sizeof src, " at %s:%u", file, fr->line);
    }
    int olen = fr->func && on_ ? (int)strlen(obj) + 2 : 0;
    int room = width - olen;
    if (room < 20)
        room = 20;
    /* The source keeps its place while 12 columns of name fit beside it;
     * else it is cut with the name, as one text. */
    int keep = (int)strlen(src) <= room - 12 ? (int)strlen(src) : 0;
    if (!keep)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s", src);
    if ((int)strlen(text) > room - keep) {
        text[room - keep - 3] = '\0';
        strcat(text, "...");
    }
    if (keep)
        strcat(text, src);
    fprintf(f, "%s%s", lead, text);
    if (olen)
        fprintf(f, "%*s%s%s%s", room - (int)strlen(text) + 2, "", on(o, DIM), obj, on(o, OFF));
    fputc('\n', f);
}

static void stack_frames(FILE *f, const struct dump *d, const struct dump_stack *s,
                         const struct view_opts *o, int nframes)
{
    for (uint32_t i = 0; i < s->depth && (int)i < nframes && s->frame0 + i < d->nframes; i++)
        frame_line(f, d, &d->frames[s->frame0 + i], o, i == 0 ? "      " : "      < ");
    if ((int)s->depth > nframes)
        fprintf(f, "      %s< ... %u more frame%s%s\n", on(o, DIM), s->depth - (uint32_t)nframes,
                s->depth - (uint32_t)nframes == 1 ? "" : "s", on(o, OFF));
}

/* Seconds the process has run, as of the dump. */
static double uptime_s(const struct dump *d)
{
    uint64_t end = d->state == DS_ALIVE ? d->snap_ns : d->heartbeat_ns ? d->heartbeat_ns : d->snap_ns;
    return end > d->start_ns ? (double)(end - d->start_ns) / 1e9 : 0;
}

static void stack_ranking(FILE *f, const struct dump *d, const struct view_opts *o,
                          enum view_rank r, int top, int nframes)
{
    size_t idx[64];
    size_t n = view_rank_stacks(d, r, o->long_bucket, idx, top > 64 ? 64 : (size_t)top);
    uint64_t scale = d->sample ? d->sample : 1;
    double up = uptime_s(d);
    char a[24], b[24], c[24], e[24];

    if (n == 0) {
        fprintf(f, "  %s(none)%s\n", on(o, DIM), on(o, OFF));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct dump_stack *s = &d->stacks[idx[i]];
        if (r == VR_RATE) {
            double per = up > 0 ? (double)s->allocs * (double)scale / up : 0;
            char g[24];
            if (per < 10)
                snprintf(a, sizeof a, "%.2f", per);
            else
                count_str(a, sizeof a, (uint64_t)per);
            fprintf(f, "  %s%2zu%s  %9s allocs/s  %10s/s  avg %-9s  lifetime median %-8s  live %s\n",
                    on(o, BOLD), i + 1, on(o, OFF), a,
                    view_bytes(b, sizeof b, up > 0 ? (uint64_t)((double)s->req_bytes * (double)scale / up) : 0),
                    view_bytes(c, sizeof c, s->allocs ? s->req_bytes / s->allocs : 0),
                    bucket_str(e, sizeof e, view_median_bucket(s->life)),
                    count_str(g, sizeof g, s->live_count * scale));
        } else {
            uint64_t v = r == VR_LIVE ? s->live_req : dump_stack_older(s, o->long_bucket);
            char g[24];
            fprintf(f, "  %s%2zu%s  %10s live  %8s blocks  avg %-9s  age median %-8s  %s allocs\n",
                    on(o, BOLD), i + 1, on(o, OFF), view_bytes(a, sizeof a, v * scale),
                    count_str(b, sizeof b, s->live_count * scale),
                    view_bytes(c, sizeof c, s->live_count ? s->live_req / s->live_count : 0),
                    bucket_str(e, sizeof e, view_median_bucket(s->age_count)),
                    count_str(g, sizeof g, s->allocs * scale));
        }
        stack_frames(f, d, s, o, nframes);
    }
}

/* The note under a CALL SITES title: sampling, table state. */
static void stacks_notes(FILE *f, const struct dump *d, const struct view_opts *o)
{
    char a[24], b[24];
    if (d->no_unwinder)
        fprintf(f, "  %sthe process could load no unwinder (its stderr says why): no stacks "
                   "were recorded%s\n", on(o, YELLOW), on(o, OFF));
    if (d->stacks_stopped)
        fprintf(f, "  %sstacks stopped while the process ran (it closed libunwind's descriptors, "
                   "forked during a capture, or registered unwind tables without libunwind; its "
                   "stderr says which)%s\n", on(o, YELLOW),
                on(o, OFF));
    if (d->stacks_failed)
        fprintf(f, "  %s%s tracked allocations got no stack (inside the unwinder, on a signal "
                   "stack, during a fork, or after stacks stopped)%s\n", on(o, DIM),
                count_str(b, sizeof b, d->stacks_failed), on(o, OFF));
    if (d->stacks_dropped)
        fprintf(f, "  %snote: the stack table was full for %s tracked allocations (not shown)%s\n",
                on(o, YELLOW), count_str(a, sizeof a, d->stacks_dropped), on(o, OFF));
    if (d->nostack_live_count)
        fprintf(f, "  %s%s live tracked blocks (%s) have no stack%s\n", on(o, DIM),
                count_str(a, sizeof a, d->nostack_live_count),
                view_bytes(b, sizeof b, d->nostack_live_req), on(o, OFF));
}

void view_stacks(FILE *f, const struct dump *d, const struct view_opts *o)
{
    char note[200], a[24];
    int top = o->top > 0 ? o->top : 5, nframes = o->frames > 0 ? o->frames : 6;

    heading(f, d, o);
    if (d->stack_depth == 0) {
        fprintf(f, "\n  no call stacks in this segment (stacks:0%s)\n",
                d->sample == 1 ? ", the default with sample:1" : "");
        return;
    }
    snprintf(note, sizeof note, "%zu stacks of up to %u frames; figures %s", d->nstacks,
             d->stack_depth, d->sample > 1 ? "scaled from the tracked blocks" : "exact (sample:1)");
    title(f, o, "CALL SITES BY LIVE BYTES", note);
    stacks_notes(f, d, o);
    stack_ranking(f, d, o, VR_LIVE, top, nframes);
    snprintf(note, sizeof note, "live bytes of blocks older than %s",
             bucket_str(a, sizeof a, (int)o->long_bucket) + 2);
    title(f, o, "LONG-LIVED CALL SITES", note);
    stack_ranking(f, d, o, VR_LONG, top, nframes);
    title(f, o, "CALL SITES BY ALLOCATION RATE", "allocations per second since start");
    stack_ranking(f, d, o, VR_RATE, top, nframes);
}

/* The main view's short form: the top long-lived sites, two frames each. */
static void long_sites(FILE *f, const struct dump *d, const struct view_opts *o)
{
    char note[160], a[24];
    if (d->stack_depth == 0 || d->nstacks == 0)
        return;
    snprintf(note, sizeof note, "live bytes older than %s; shimdump --stacks for more",
             bucket_str(a, sizeof a, (int)o->long_bucket) + 2);
    title(f, o, "LONG-LIVED CALL SITES", note);
    stack_ranking(f, d, o, VR_LONG, 3, 2);
}

/* ---- The whole view ---- */

static const char *state_word(int s)
{
    switch (s) {
    case DS_ALIVE: return "alive";
    case DS_EXITED: return "EXITED";
    case DS_DEAD: return "DEAD";
    default: return "from a file";
    }
}

static void heading(FILE *f, const struct dump *d, const struct view_opts *o)
{
    char up[24], when[16], ago[24];
    uint64_t end = d->state == DS_ALIVE ? d->snap_ns : d->heartbeat_ns ? d->heartbeat_ns : d->snap_ns;
    const char *col = d->state == DS_ALIVE ? "" : RED;

    char ver[24];
    /* "5.3.0-0-g54eaed1d8b..." is jemalloc's: the release is enough here. */
    snprintf(ver, sizeof ver, "%.*s", (int)strcspn(d->backend_version, "- "), d->backend_version);
    fprintf(f, "%spid %u (%s)%s  %s%s%s  up %s   backend %s %s\n", on(o, BOLD), d->pid, d->comm,
            on(o, OFF), on(o, col), state_word(d->state), *col ? on(o, OFF) : "",
            dur_str(up, sizeof up, end > d->start_ns ? end - d->start_ns : 0), d->backend, ver);
    if (d->saved)
        fprintf(f, "  %sa saved snapshot, taken at %s%s\n", on(o, YELLOW),
                clock_str(when, sizeof when, d->snap_ns), on(o, OFF));
    if (d->state == DS_DEAD || d->state == DS_EXITED)
        fprintf(f, "%s  %s: the figures are as of its last sample, %s (%s ago)%s\n", on(o, RED),
                d->state == DS_DEAD ? "the process is gone without exiting normally"
                                    : "the process has exited",
                d->heartbeat_ns ? clock_str(when, sizeof when, d->heartbeat_ns) : "never",
                dur_str(ago, sizeof ago, d->snap_ns > end ? d->snap_ns - end : 0), on(o, OFF));
    fprintf(f, "  %sconfig: %s%s\n", on(o, DIM), d->config, on(o, OFF));
    if (d->sample <= 1)
        fprintf(f, "  sampling: every block tracked (sample:1); live requested bytes %s\n",
                d->exact ? "exact" : "estimated (some blocks could not be tracked)");
    else
        fprintf(f, "  sampling: 1 in %u blocks tracked; counts and usable bytes exact, requested "
                   "bytes estimated\n", d->sample);
    if (d->inherited)
        fprintf(f, "  %snote: a fork child's segment; counts from before the fork are approximate%s\n",
                on(o, YELLOW), on(o, OFF));
    if (d->copy && d->state == DS_ALIVE)
        fprintf(f, "  %snote: read from the copy in the segment directory, as of %s; the process's "
                   "own segment could not be opened (another user's process, or it closed the descriptor)%s\n", on(o, YELLOW),
                d->copy_ns ? clock_str(when, sizeof when, d->copy_ns) : "never", on(o, OFF));
    if (d->copy_stale)
        fprintf(f, "  %snote: the copy could not be written since then (its file system is full?): "
                   "the figures are stale%s\n", on(o, RED), on(o, OFF));
    if (!d->consistent)
        fprintf(f, "  %snote: some figures kept changing while read; they are as close as could "
                   "be read%s\n", on(o, YELLOW), on(o, OFF));
    if (!d->counts_ok)
        fprintf(f, "  %snote: some classes count more frees than allocations (a corrupt or torn "
                   "segment)%s\n", on(o, YELLOW), on(o, OFF));
    if (d->dropped)
        fprintf(f, "  %snote: %llu tracked allocations found the table full and are not in the "
                   "heat maps%s\n", on(o, YELLOW), (unsigned long long)d->dropped, on(o, OFF));
}

static void rates(FILE *f, const struct dump *d, const struct view_opts *o)
{
    const struct dump *p = o->prev;
    char a[24], b[24], c[24];
    if (!p || d->snap_ns <= p->snap_ns)
        return;
    double dt = (double)(d->snap_ns - p->snap_ns) / 1e9;
    double al = d->total.allocs >= p->total.allocs ? (double)(d->total.allocs - p->total.allocs) : 0;
    double fr = d->total.frees >= p->total.frees ? (double)(d->total.frees - p->total.frees) : 0;
    double by = d->total.req_bytes >= p->total.req_bytes
                    ? (double)(d->total.req_bytes - p->total.req_bytes) : 0;
    fprintf(f, "  rates over %.1f s: %s allocs/s, %s frees/s, %s/s requested\n", dt,
            count_str(a, sizeof a, (uint64_t)(al / dt)), count_str(b, sizeof b, (uint64_t)(fr / dt)),
            view_bytes(c, sizeof c, (uint64_t)(by / dt)));
}

void view_main(FILE *f, const struct dump *d, const struct view_opts *o)
{
    char a[24], b[24], c[24], e[24], g[24];
    heading(f, d, o);
    rates(f, d, o);
    fprintf(f, "  totals: %s allocs, %s frees, %s reallocs; %s live blocks; %s requested in all\n",
            count_str(a, sizeof a, d->total.allocs), count_str(b, sizeof b, d->total.frees),
            count_str(c, sizeof c, d->total.reallocs),
            count_str(e, sizeof e, d->total.live_count),
            view_bytes(g, sizeof g, d->total.req_bytes));
    waterfall(f, d, o);
    over_time(f, d, o);
    size_classes(f, d, o);
    heat_map(f, d, o, 0);
    heat_map(f, d, o, 1);
    long_sites(f, d, o);
}

/* ---- Diff ---- */

static void diff_row(FILE *f, const char *name, uint64_t a, uint64_t b, int bytes)
{
    char x[24], y[24];
    if (bytes) {
        view_bytes(x, sizeof x, a);
        view_bytes(y, sizeof y, b);
    } else {
        count_str(x, sizeof x, a);
        count_str(y, sizeof y, b);
    }
    if (a)
        fprintf(f, "  %-34s %14s %14s %10.2f\n", name, x, y, ratio(b, a));
    else
        fprintf(f, "  %-34s %14s %14s %10s\n", name, x, y, "-");
}

static void diff_ratio_row(FILE *f, const char *name, double a, double b)
{
    fprintf(f, "  %-34s %14.2f %14.2f %10.2f\n", name, a, b, a > 0 ? b / a : 0.0);
}

void view_diff(FILE *f, const struct dump *a, const struct dump *b, const struct view_opts *o)
{
    const struct dump_sample *sa = dump_last(a), *sb = dump_last(b);
    struct view_alloc fa = { 0, 0, "", "" }, fb = { 0, 0, "", "" };
    char la[40], lb[40];
    unsigned pick[SIZECLASS_COUNT];
    int n = 0;

    view_alloc_figures(a, sa, &fa);
    view_alloc_figures(b, sb, &fb);
    fprintf(f, "%sA%s  pid %u (%s) %s, %s %s; %s\n", on(o, BOLD), on(o, OFF), a->pid, a->comm,
            state_word(a->state), a->backend, a->backend_version, a->source);
    fprintf(f, "%sB%s  pid %u (%s) %s, %s %s; %s\n", on(o, BOLD), on(o, OFF), b->pid, b->comm,
            state_word(b->state), b->backend, b->backend_version, b->source);
    snprintf(la, sizeof la, "A: %s", a->backend);
    snprintf(lb, sizeof lb, "B: %s", b->backend);
    title(f, o, "SIDE BY SIDE", NULL);
    fprintf(f, "  %s%-34s %14s %14s %10s%s\n", on(o, DIM), "", la, lb, "B/A", on(o, OFF));
    diff_row(f, a->exact && b->exact ? "live requested (exact)" : "live requested",
             a->total.live_req, b->total.live_req, 1);
    diff_row(f, "live usable", a->total.live_usable, b->total.live_usable, 1);
    diff_row(f, "allocator in use", fa.in_use, fb.in_use, 1);
    diff_row(f, "allocator footprint", fa.footprint, fb.footprint, 1);
    diff_row(f, "process RSS", sa ? sa->rss : 0, sb ? sb->rss : 0, 1);
    diff_row(f, "peak RSS", a->peak_rss, b->peak_rss, 1);
    diff_ratio_row(f, "RSS / live requested", ratio(sa ? sa->rss : 0, a->total.live_req),
                   ratio(sb ? sb->rss : 0, b->total.live_req));
    diff_ratio_row(f, "peak RSS / live requested", ratio(a->peak_rss, a->total.live_req),
                   ratio(b->peak_rss, b->total.live_req));
    diff_row(f, "allocations", a->total.allocs, b->total.allocs, 0);
    diff_row(f, "frees", a->total.frees, b->total.frees, 0);
    diff_row(f, "live blocks", a->total.live_count, b->total.live_count, 0);
    diff_row(f, "bytes requested in all", a->total.req_bytes, b->total.req_bytes, 1);

    /* The classes with the most live usable bytes in either: picked like
     * the view's, by max(A, B). */
    static struct dump both;
    int more;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++)
        both.cls[c].live_usable = a->cls[c].live_usable > b->cls[c].live_usable
                                      ? a->cls[c].live_usable : b->cls[c].live_usable;
    n = pick_classes(&both, o->all ? 0 : ROWS_DEFAULT, pick, &more, key_usable);
    title(f, o, "LIVE USABLE BYTES BY SIZE CLASS", more
          ? "the classes with the most live bytes in A or B (--all shows every one)" : NULL);
    for (int i = 0; i < n; i++) {
        char lab[40];
        diff_row(f, view_class_label(lab, sizeof lab, pick[i]), a->cls[pick[i]].live_usable,
                 b->cls[pick[i]].live_usable, 1);
    }
}

/* ---- List ---- */

void view_list_header(FILE *f, const struct view_opts *o)
{
    fprintf(f, "%s%8s  %-16s %-9s %10s %11s %11s  %-8s%s\n", on(o, BOLD), "PID", "COMMAND",
            "BACKEND", "UPTIME", "LIVE", "RSS", "STATE", on(o, OFF));
}

void view_list_row(FILE *f, const struct dump *d, const struct view_opts *o)
{
    const struct dump_sample *s = dump_last(d);
    char up[24], live[24], rss[24];
    uint64_t end = d->state == DS_ALIVE ? d->snap_ns : d->heartbeat_ns ? d->heartbeat_ns : d->snap_ns;
    const char *col = d->state == DS_ALIVE ? "" : RED;
    fprintf(f, "%8u  %-16s %-9s %10s %11s %11s  %s%-8s%s\n", d->pid, d->comm, d->backend,
            dur_str(up, sizeof up, end > d->start_ns ? end - d->start_ns : 0),
            view_bytes(live, sizeof live, d->total.live_req),
            s ? view_bytes(rss, sizeof rss, s->rss) : "-", on(o, col),
            d->state == DS_ALIVE ? "alive" : d->state == DS_EXITED ? "exited" : "dead",
            *col ? on(o, OFF) : "");
}

/* ---- Prometheus ---- */

static void prom_labels(FILE *f, const struct dump *d)
{
    /* comm is already free of control characters; escape \ and ". */
    fprintf(f, "{pid=\"%u\",comm=\"", d->pid);
    for (const char *p = d->comm; *p; p++) {
        if (*p == '\\' || *p == '"')
            fputc('\\', f);
        fputc(*p, f);
    }
    fprintf(f, "\",backend=\"%s\"", d->backend);
}

struct prom_metric {
    const char *name, *type, *help;
    int (*get)(const struct dump *d, uint64_t *v);
};

#define GETTER(fn, expr) \
    static int fn(const struct dump *d, uint64_t *v) \
    { \
        const struct dump_sample *s = dump_last(d); \
        (void)s; \
        expr; \
    }
GETTER(g_up, *v = d->state == DS_ALIVE; return 1)
GETTER(g_allocs, *v = d->total.allocs; return 1)
GETTER(g_frees, *v = d->total.frees; return 1)
GETTER(g_reallocs, *v = d->total.reallocs; return 1)
GETTER(g_req, *v = d->total.req_bytes; return 1)
GETTER(g_live_count, *v = d->total.live_count; return 1)
GETTER(g_live, *v = d->total.live_req; return 1)
GETTER(g_live_exact, *v = (uint64_t)d->exact; return 1)
GETTER(g_live_err, *v = d->total.live_req_err; return 1)
GETTER(g_live_usable, *v = d->total.live_usable; return 1)
GETTER(g_rss, if (!s) return 0; *v = s->rss; return 1)
GETTER(g_rss_anon, if (!s) return 0; *v = s->rss_anon; return 1)
GETTER(g_rss_huge, if (!s) return 0; *v = s->rss_huge; return 1)
GETTER(g_vsz, if (!s) return 0; *v = s->vsz; return 1)
GETTER(g_peak, if (!d->peak_rss) return 0; *v = d->peak_rss; return 1)
GETTER(g_sample, *v = d->sample; return 1)
GETTER(g_start, *v = d->start_ns / 1000000000ull; return 1)
#undef GETTER

static const struct prom_metric metrics[] = {
    { "mallocshim_up", "gauge", "1 while the process runs, 0 once it is gone", g_up },
    { "mallocshim_allocations_total", "counter", "Allocations, every one counted", g_allocs },
    { "mallocshim_frees_total", "counter", "Frees, every one counted", g_frees },
    { "mallocshim_reallocs_total", "counter", "Reallocations", g_reallocs },
    { "mallocshim_requested_bytes_total", "counter", "Bytes requested by allocations", g_req },
    { "mallocshim_live_blocks", "gauge", "Blocks allocated and not yet freed", g_live_count },
    { "mallocshim_live_bytes", "gauge",
      "Requested bytes of live blocks (estimate unless mallocshim_live_bytes_exact is 1)", g_live },
    { "mallocshim_live_bytes_exact", "gauge", "1 when mallocshim_live_bytes is exact (sample:1)",
      g_live_exact },
    { "mallocshim_live_bytes_stderr", "gauge",
      "Standard error of mallocshim_live_bytes, 0 when exact", g_live_err },
    { "mallocshim_live_usable_bytes", "gauge", "Usable bytes of live blocks, exact", g_live_usable },
    { "mallocshim_rss_bytes", "gauge", "Process resident set size", g_rss },
    { "mallocshim_rss_anon_bytes", "gauge", "Anonymous part of the RSS", g_rss_anon },
    { "mallocshim_rss_huge_bytes", "gauge", "Anonymous huge pages in the RSS", g_rss_huge },
    { "mallocshim_vsz_bytes", "gauge", "Process virtual size", g_vsz },
    { "mallocshim_peak_rss_bytes", "gauge", "Highest RSS seen", g_peak },
    { "mallocshim_sample_rate", "gauge", "1 in this many allocations is tracked", g_sample },
    { "mallocshim_start_time_seconds", "gauge", "When recording started, Unix time", g_start },
};

void view_prometheus(FILE *f, const struct dump *const *d, size_t n)
{
    for (size_t m = 0; m < sizeof metrics / sizeof metrics[0]; m++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", metrics[m].name, metrics[m].help,
                metrics[m].name, metrics[m].type);
        for (size_t i = 0; i < n; i++) {
            uint64_t v;
            if (!metrics[m].get(d[i], &v))
                continue;
            fputs(metrics[m].name, f);
            prom_labels(f, d[i]);
            fprintf(f, "} %llu\n", (unsigned long long)v);
        }
    }
    fputs("# HELP mallocshim_backend_stat The backend's own statistics, as named in shimdump --json\n"
          "# TYPE mallocshim_backend_stat gauge\n", f);
    for (size_t i = 0; i < n; i++) {
        const struct dump_sample *s = dump_last(d[i]);
        if (!s)
            continue;
        for (unsigned k = 0; k < 6; k++) {
            const char *name = dump_be_field(d[i]->backend_id, k);
            if (!*name)
                continue;
            fputs("mallocshim_backend_stat", f);
            prom_labels(f, d[i]);
            fprintf(f, ",stat=\"%s\"} %llu\n", name, (unsigned long long)s->be[k]);
        }
    }
    fputs("# HELP mallocshim_class_live_usable_bytes Live usable bytes per size class "
          "(le: the class's largest usable size)\n"
          "# TYPE mallocshim_class_live_usable_bytes gauge\n", f);
    for (size_t i = 0; i < n; i++)
        for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
            if (!d[i]->cls[c].live_usable)
                continue;
            fputs("mallocshim_class_live_usable_bytes", f);
            prom_labels(f, d[i]);
            if (c == SIZECLASS_LAST)
                fprintf(f, ",le=\"+Inf\"} %llu\n", (unsigned long long)d[i]->cls[c].live_usable);
            else
                fprintf(f, ",le=\"%zu\"} %llu\n", sizeclass_max(c),
                        (unsigned long long)d[i]->cls[c].live_usable);
        }
}
