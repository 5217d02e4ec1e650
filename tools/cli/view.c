/* view: the text renderings of a struct dump (see view.h). Laid out for
 * 100 columns; block characters when the locale is UTF-8, ASCII otherwise;
 * ANSI attributes only when asked (a tty without NO_COLOR). */
#include "config.h"

#include "view.h"

#include "figfmt.h"
#include "figures.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROWS_DEFAULT 16     /* size classes in the one-screen view */
#define CHART_W 60          /* columns of the over-time chart */

static char *count_str(char *dst, size_t cap, double v)
{
    return figfmt_count(dst, cap, v);
}

static char *dur_str(char *dst, size_t cap, uint64_t ns)
{
    return figfmt_dur(dst, cap, ns, FF_TERSE);
}

static char *clock_str(char *dst, size_t cap, uint64_t real_ns)
{
    return figfmt_hms(dst, cap, real_ns, 1);
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

/* lead, then text, words wrapped within the view's width (100 columns at
 * most, as every view is laid out), later lines indented under the text,
 * all in colour col. */
static void wrapped(FILE *f, const struct view_opts *o, const char *col, const char *lead,
                    const char *text)
{
    size_t ind = strlen(lead), at = ind;
    size_t w = o->width > 0 && o->width < 100 ? (size_t)o->width : 100;
    if (w < ind + 20)
        w = ind + 20;
    fprintf(f, "%s%s", on(o, col), lead);
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, " ");
        if (at > ind && at + 1 + n > w) {
            fprintf(f, "\n%*s", (int)ind, "");
            at = ind;
        } else if (at > ind) {
            fputc(' ', f);
            at++;
        }
        fwrite(p, 1, n, f);
        at += n;
        p += n;
        while (*p == ' ')
            p++;
    }
    fprintf(f, "%s\n", on(o, OFF));
}

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

static void wf_row(FILE *f, const struct view_opts *o, const struct fig_step *st, uint64_t top)
{
    char b[24], age[48] = "";
    const char *col = st->ratio >= 2.5 ? RED : st->ratio >= 1.5 ? YELLOW : "";
    int w = 40;
    for (const char *c = st->label; *c; c++)
        w += ((unsigned char)*c & 0xC0) == 0x80;   /* UTF-8 bytes past a character's first */
    if (!st->have) {
        fprintf(f, "  %-40s %11s\n", st->label, "(no sample yet)");
        return;
    }
    fprintf(f, "  %-*s %11s  %s%6.2f%s  ", w, st->label, figfmt_bytes(b, sizeof b, st->v),
            on(o, col), st->ratio, *col ? on(o, OFF) : "");
    bar(f, o, top ? (double)st->v / (double)top : 0, 26);
    if (st->age.stale)
        snprintf(age, sizeof age, " taken %s ago", dur_str(b, sizeof b, st->age.ns));
    if (*age)
        fprintf(f, "%s%s%s", on(o, YELLOW), age, on(o, OFF));
    fputc('\n', f);
}

static void waterfall(FILE *f, const struct dump *d, const struct view_opts *o)
{
    const struct dump_sample *s = dump_last(d);
    struct fig_step st[FS_COUNT];
    struct fig_alloc a;
    char b1[24], b2[24], b3[24], when[16], ago[24];
    uint64_t top = 0;

    fig_waterfall(d, st);
    fig_alloc_of(d, s, &a);
    for (int k = FS_REQ; k <= FS_RSS; k++)
        if (st[k].have && st[k].v > top)
            top = st[k].v;
    title(f, o, "WHERE THE MEMORY GOES", "bytes, and each step as a multiple of live requested bytes");
    for (int k = FS_REQ; k <= FS_RSS; k++)
        wf_row(f, o, &st[k], top);
    if (st[FS_PEAK].have) {
        struct fig_age pa = fig_age_of(d, st[FS_PEAK].t_ns);
        fprintf(f, "  %-40s %11s  %6.2f   at %s (%s ago)\n", st[FS_PEAK].label,
                figfmt_bytes(b1, sizeof b1, st[FS_PEAK].v), st[FS_PEAK].ratio,
                clock_str(when, sizeof when, st[FS_PEAK].t_ns), dur_str(ago, sizeof ago, pa.ns));
    }
    if (s) {
        struct fig_age ha = fig_age_of(d, s->rss_huge_ns);
        fprintf(f, "  %sRSS: anonymous %s, in huge pages %s", on(o, DIM),
                figfmt_bytes(b1, sizeof b1, s->rss_anon), figfmt_bytes(b2, sizeof b2, s->rss_huge));
        if (ha.stale)
            fprintf(f, " (taken %s ago)", dur_str(ago, sizeof ago, ha.ns));
        fprintf(f, ", virtual size %s%s\n", figfmt_bytes(b3, sizeof b3, s->vsz), on(o, OFF));
    }
    if (a.have && a.nmore) {
        fprintf(f, "  %s%s:", on(o, DIM), d->backend);
        for (size_t i = 0; i < a.nmore; i++)
            fprintf(f, "%s %s %s", i ? "," : "", a.more[i].label,
                    a.more[i].bytes ? figfmt_bytes(b1, sizeof b1, a.more[i].v)
                                    : count_str(b1, sizeof b1, (double)a.more[i].v));
        fprintf(f, "%s\n", on(o, OFF));
    }
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
    fprintf(f, "  %s\n", figfmt_bytes(b, sizeof b, now));
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

/* The chart of RSS and live requested bytes over the history (from
 * --since), each column the span of its points, their highest. */
static void over_time(FILE *f, const struct dump *d, const struct view_opts *o)
{
    struct fig_history h;
    struct fig_point bins[CHART_W];
    size_t col[CHART_W];
    uint64_t rss[CHART_W], live[CHART_W], max = 0;
    char span[24], note[200];
    int peak_col = -1;

    if (fig_history(d, &h) != 0 || h.npts == 0) {
        title(f, o, "OVER TIME", "(fewer than two samples yet)");
        free(h.pts);
        return;
    }
    uint64_t t1 = h.pts[h.npts - 1].t_ns, since = 0;
    if (o->since_ns && t1 > o->since_ns)
        since = t1 - o->since_ns;
    size_t from = fig_history_from(&h, since), cnt = h.npts - from;
    if (cnt < 2) {
        title(f, o, "OVER TIME", "(fewer than two samples yet)");
        free(h.pts);
        return;
    }
    /* the window: from the first point's span (or from --since, when the
     * history reaches back beyond it) to the latest point */
    uint64_t t0 = h.pts[from].t_ns, span0 = h.pts[from].samples * d->interval_ms * 1000000ull;
    t0 = t0 > span0 ? t0 - span0 : 0;
    if (t0 < d->start_ns)
        t0 = d->start_ns;
    if (since && (from > 0 || t0 < since))
        t0 = since;
    if (t0 > t1)
        t0 = t1;   /* a clock stepped back: the points' own times */
    size_t ncols = cnt < CHART_W ? cnt : CHART_W;
    size_t nb = fig_bin(&h, from, t0, t1, ncols, bins, col);
    /* a column without a point of its own is inside the span of the next
     * point, which shows there: its extremes cover its span */
    memset(rss, 0, sizeof rss);
    memset(live, 0, sizeof live);
    for (size_t i = 0, c = 0; c < ncols && i < nb; c++) {
        while (i < nb && col[i] < c)
            i++;
        if (i == nb)
            break;
        rss[c] = bins[i].rss_max;
        live[c] = bins[i].live_max;
        if (rss[c] > max)
            max = rss[c];
        if (live[c] > max)
            max = live[c];
        if (col[i] == c && d->peak_rss && bins[i].rss_max == d->peak_rss && peak_col < 0)
            peak_col = (int)c;
    }
    /* the points' steps: the series' alone, or from the finest to the
     * coarsest tier the range reaches */
    uint64_t lo = UINT64_MAX, hi = 0;
    char steps[48], s1[24], s2[24];
    for (size_t i = from; i < h.npts; i++) {
        if (h.pts[i].step_ms < lo)
            lo = h.pts[i].step_ms;
        if (h.pts[i].step_ms > hi)
            hi = h.pts[i].step_ms;
    }
    step_str(s1, sizeof s1, lo);
    if (hi > lo)
        snprintf(steps, sizeof steps, "%s-%s", s1, step_str(s2, sizeof s2, hi));
    else
        snprintf(steps, sizeof steps, "%s", s1);
    snprintf(note, sizeof note, "the last %s, %zu points of %s, the highest per column; both rows "
             "on one scale", dur_str(span, sizeof span, t1 - t0), cnt, steps);
    title(f, o, "OVER TIME", note);
    chart_row(f, o, "RSS", rss, (int)ncols, max, h.pts[h.npts - 1].rss);
    chart_row(f, o, "live", live, (int)ncols, max, h.pts[h.npts - 1].live);
    if (peak_col >= 0)
        fprintf(f, "        %*s%s peak RSS\n", peak_col, "", o->utf8 ? "▲" : "^");
    time_axis(f, d, o, t0, t1, (int)ncols);
    free(h.pts);
}

/* ---- Size classes ---- */

static void size_classes(FILE *f, const struct dump *d, const struct view_opts *o)
{
    unsigned pick[SIZECLASS_COUNT];
    int more, n = fig_pick_classes(&d, 1, FK_LIVE, o->all ? 0 : ROWS_DEFAULT, pick, &more);
    uint64_t top = 0, rest = d->total.live_usable;
    char note[96], a[24], b[24], c[24], e[24], g[24];

    for (int i = 0; i < n; i++)
        if (d->cls[pick[i]].live_usable > top)
            top = d->cls[pick[i]].live_usable;
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
        struct fig_class fc;
        fig_class_of(d, pick[i], &fc);
        fprintf(f, "  %-13s %8s %8s %8s %10s %10s %5.1f%%  ",
                figfmt_class(a, sizeof a, pick[i], FF_TERSE), count_str(b, sizeof b, (double)k->allocs),
                count_str(c, sizeof c, (double)k->frees), count_str(e, sizeof e, (double)k->live_count),
                figfmt_bytes(g, sizeof g, k->live_req), figfmt_bytes(note, sizeof note, k->live_usable),
                fc.waste * 100);
        bar(f, o, top ? (double)k->live_usable / (double)top : 0, 25);
        fputc('\n', f);
        rest = rest > k->live_usable ? rest - k->live_usable : 0;
    }
    if (more)
        fprintf(f, "  %s... %d more classes hold %s live%s\n", on(o, DIM), more,
                figfmt_bytes(a, sizeof a, rest), on(o, OFF));
}

/* ---- Heat maps ---- */

static const char *shade(const struct view_opts *o, double v, double max)
{
    static const char *const u[] = { "   ", "░░░", "▒▒▒", "▓▓▓", "███" };
    static const char *const a[] = { "   ", "...", ":::", "ooo", "###" };
    int lvl = 0;
    if (v > 0) {
        double r = max > 0 ? v / max : 1;
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
    int more, n = fig_pick_classes(&d, 1, ages ? FK_AGE : FK_LIFE, o->all ? 0 : 12, pick, &more);
    struct fig_class fc[SIZECLASS_COUNT];
    double max = 0;
    char note[160], a[24], b[24];

    for (int i = 0; i < n; i++) {
        fig_class_of(d, pick[i], &fc[i]);
        for (unsigned k = 0; k < LIFEBUCKET_COUNT; k++) {
            double v = ages ? fc[i].age[k] : fc[i].life[k];
            if (v > max)
                max = v;
        }
    }
    snprintf(note, sizeof note, "%s; %s",
             ages ? "size class x age, blocks still live" : "size class x lifetime, blocks freed",
             fig_every_block(d) ? "every block tracked" : "estimated from the tracked blocks");
    title(f, o, ages ? "AGES OF LIVE BLOCKS" : "LIFETIMES", note);
    if (n == 0) {
        fprintf(f, "  (no tracked %s yet)\n", ages ? "live blocks" : "frees");
        return;
    }
    heat_axis(f);
    int few = 0;   /* rows that rest on few tracked blocks */
    for (int i = 0; i < n; i++) {
        int rough = ages ? fc[i].age_few : fc[i].life_few;
        fprintf(f, "  %-13s ", figfmt_class(a, sizeof a, pick[i], FF_TERSE));
        for (unsigned k = 0; k < LIFEBUCKET_COUNT; k++)
            fputs(shade(o, ages ? fc[i].age[k] : fc[i].life[k], max), f);
        fprintf(f, " %8s", count_str(b, sizeof b, ages ? fc[i].age_all : fc[i].life_all));
        uint64_t nt = ages ? fc[i].age_n : fc[i].life_n;
        if (rough && nt)
            fprintf(f, " %s(n=%llu)%s", on(o, DIM), (unsigned long long)nt, on(o, OFF));
        else if (rough)   /* (ages are of the sampler's last pass; n is of now) */
            fprintf(f, " %s(few)%s", on(o, DIM), on(o, OFF));
        fputc('\n', f);
        few += rough;
    }
    if (more)
        fprintf(f, "  %s... %d more classes%s\n", on(o, DIM), more, on(o, OFF));
    if (few)
        fprintf(f, "  %s(n=N), (few): the row rests on N tracked blocks, fewer than %d: its shape "
                "is rough;\n  shimdump --set sample:64 PID tracks 4 times more small blocks%s\n",
                on(o, DIM), FIG_FEW_TRACKED, on(o, OFF));
    fprintf(f, "  %scells: %s <=1%%  %s <=10%%  %s <=50%%  %s >50%% of the busiest cell%s\n",
            on(o, DIM), shade(o, 1, 100), shade(o, 10, 100), shade(o, 50, 100),
            shade(o, 100, 100), on(o, OFF));
}

/* ---- Call sites ---- */

static void heading(FILE *f, const struct dump *d, const struct view_opts *o);

static char *bucket_str(char *dst, size_t cap, int b)
{
    return figfmt_bucket(dst, cap, b, FF_TERSE);
}

/* A median's bucket of d's blocks: its bound, or the uptime where that is
 * less (fig_bucket_le_ns): "<=4.5m" for a process up 4.5 min, not "<=18m". */
static char *median_str(char *dst, size_t cap, const struct dump *d, int b)
{
    int clamped;
    if (b < 0)
        return bucket_str(dst, cap, b);
    uint64_t le = fig_bucket_le_ns(d, b, &clamped);
    return clamped ? figfmt_le(dst, cap, le, FF_TERSE) : bucket_str(dst, cap, b);
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

static void stack_ranking(FILE *f, const struct dump *d, const struct view_opts *o,
                          enum fig_rank r, int top, int nframes)
{
    struct fig_site site[64];
    size_t n = fig_sites(d, r, o->long_bucket, site, top > 64 ? 64 : (size_t)top);
    char a[24], b[24], c[24], e[24], g[24];

    if (n == 0) {
        fprintf(f, "  %s(none)%s\n", on(o, DIM), on(o, OFF));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct fig_site *x = &site[i];
        if (r == FR_RATE) {
            if (x->allocs_per_s < 10)
                snprintf(a, sizeof a, "%.2f", x->allocs_per_s);
            else
                count_str(a, sizeof a, x->allocs_per_s);
            fprintf(f, "  %s%2zu%s  %9s allocs/s  %10s/s  avg %-9s  lifetime median %-8s  live %s\n",
                    on(o, BOLD), i + 1, on(o, OFF), a, figfmt_bytes(b, sizeof b, (uint64_t)x->bytes_per_s),
                    figfmt_bytes(c, sizeof c, x->avg_alloc), median_str(e, sizeof e, d, x->life_median),
                    count_str(g, sizeof g, x->live_blocks));
        } else if (r == FR_PEAK) {
            char h[24];
            fprintf(f, "  %s%2zu%s  %10s at the peak %-8s %8s blocks   now %10s live  %s blocks\n",
                    on(o, BOLD), i + 1, on(o, OFF),
                    figfmt_bytes(a, sizeof a, (uint64_t)(x->peak_bytes + 0.5)),
                    figfmt_err(h, sizeof h, x->peak_bytes_err, x->peak_bytes, FF_TERSE),
                    count_str(b, sizeof b, x->peak_blocks),
                    figfmt_bytes(c, sizeof c, (uint64_t)(x->live_bytes + 0.5)),
                    count_str(g, sizeof g, x->live_blocks));
        } else {
            fprintf(f, "  %s%2zu%s  %10s live  %8s blocks  avg %-9s  age median %-8s  %s allocs\n",
                    on(o, BOLD), i + 1, on(o, OFF),
                    figfmt_bytes(a, sizeof a, (uint64_t)(r == FR_LIVE ? x->live_bytes : x->long_bytes)),
                    count_str(b, sizeof b, x->live_blocks), figfmt_bytes(c, sizeof c, x->avg_live),
                    median_str(e, sizeof e, d, x->age_median), count_str(g, sizeof g, x->allocs));
        }
        stack_frames(f, d, x->s, o, nframes);
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
                count_str(b, sizeof b, (double)d->stacks_failed), on(o, OFF));
    if (d->stacks_dropped)
        fprintf(f, "  %snote: the stack table was full for %s tracked allocations (not shown)%s\n",
                on(o, YELLOW), count_str(a, sizeof a, (double)d->stacks_dropped), on(o, OFF));
    if (d->nostack_live_count)
        fprintf(f, "  %s%s live tracked blocks (%s) have no stack%s\n", on(o, DIM),
                count_str(a, sizeof a, (double)d->nostack_live_count),
                figfmt_bytes(b, sizeof b, d->nostack_live_req), on(o, OFF));
}

/* How much of the live bytes (now, or at the peak) the top `top` sites of
 * that ranking hold, under its title (figures.h, fig_coverage). */
static void cover_line(FILE *f, const struct dump *d, const struct view_opts *o, int top,
                       int at_peak)
{
    struct fig_site site[64];
    struct fig_cover c;
    char text[600];
    size_t n = fig_sites(d, at_peak ? FR_PEAK : FR_LIVE, o->long_bucket, site,
                         top > 64 ? 64 : (size_t)top);
    fig_coverage(d, site, n, at_peak, &c);
    if (!c.have)
        return;
    wrapped(f, o, c.rest_big ? YELLOW : DIM, "  ", fig_cover_text(&c, text, sizeof text, FF_TERSE));
}

/* The peak of live bytes: its time and age as a title's note, and what
 * was live and resident then as a line. */
static char *peak_note(char *dst, size_t cap, const struct fig_peak *p)
{
    char t[24], ago[24], up[24];
    snprintf(dst, cap, "%s, %s ago (%s after start)", clock_str(t, sizeof t, p->t_ns),
             dur_str(ago, sizeof ago, p->ago_ns), figfmt_elapsed(up, sizeof up, p->since_start_s));
    return dst;
}

static char *peak_then(char *dst, size_t cap, const struct fig_peak *p)
{
    char lu[24], lr[24], rss[24];
    snprintf(dst, cap, "then: live %s requested, %s usable; RSS %s",
             figfmt_bytes(lr, sizeof lr, p->live_req), figfmt_bytes(lu, sizeof lu, p->live_usable),
             figfmt_bytes(rss, sizeof rss, p->rss));
    return dst;
}

/* The call sites at the peak of live bytes: the section of --stacks. */
static void peak_sites(FILE *f, const struct dump *d, const struct view_opts *o, int top,
                       int nframes)
{
    struct fig_peak p;
    char note[240];
    fig_peak(d, &p);
    if (!p.have) {
        title(f, o, "AT THE PEAK OF LIVE BYTES", NULL);
        wrapped(f, o, DIM, "  ", "none known: no sampler pass has seen live bytes yet (a fork "
                "child's own comes with its first), or a snapshot from before they were kept");
        return;
    }
    title(f, o, "AT THE PEAK OF LIVE BYTES", peak_note(note, sizeof note, &p));
    wrapped(f, o, "", "  ", peak_then(note, sizeof note, &p));
    cover_line(f, d, o, top, 1);
    stack_ranking(f, d, o, FR_PEAK, top, nframes);
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
             d->stack_depth, fig_every_block(d) ? "exact (sample:1)" : "estimated from the tracked blocks");
    title(f, o, "CALL SITES BY LIVE BYTES", note);
    stacks_notes(f, d, o);
    cover_line(f, d, o, top, 0);
    stack_ranking(f, d, o, FR_LIVE, top, nframes);
    peak_sites(f, d, o, top, nframes);
    snprintf(note, sizeof note, "live bytes of blocks older than %s",
             bucket_str(a, sizeof a, (int)o->long_bucket) + 2);
    title(f, o, "LONG-LIVED CALL SITES", note);
    stack_ranking(f, d, o, FR_LONG, top, nframes);
    title(f, o, "CALL SITES BY ALLOCATION RATE", "allocations per second since start");
    stack_ranking(f, d, o, FR_RATE, top, nframes);
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
    stack_ranking(f, d, o, FR_LONG, 3, 2);
    /* and the peak's top site, in two lines */
    struct fig_peak p;
    struct fig_site top;
    char b[24], t[24];
    fig_peak(d, &p);
    if (p.have && fig_sites(d, FR_PEAK, o->long_bucket, &top, 1) == 1) {
        fprintf(f, "  %sat the peak of live bytes (%s, %s ago, %s live): the top site held %s%s\n",
                on(o, DIM), clock_str(t, sizeof t, p.t_ns), dur_str(a, sizeof a, p.ago_ns),
                figfmt_bytes(b, sizeof b, p.live_req),
                figfmt_bytes(note, sizeof note, (uint64_t)(top.peak_bytes + 0.5)), on(o, OFF));
        stack_frames(f, d, top.s, o, 1);
    }
}

/* ---- RSS class by class, and the diagnosis ---- */

/* RSS the way the kernel counts it (figures.h, fig_memory): each class,
 * then its parts; "~" marks a part that is attributed, not measured. */
static void rss_classes(FILE *f, const struct dump *d, const struct view_opts *o)
{
    struct fig_mem m;
    char b[24], c[24], when[16];
    fig_memory(d, &m);
    if (!m.have) {
        wrapped(f, o, DIM, "  RSS class by class: ", m.why);
    } else {
        fprintf(f, "  %sRSS class by class%s, read from /proc at %s in %s (the kernel's counts; "
                "~ attributed):\n", on(o, BOLD), on(o, OFF), clock_str(when, sizeof when, m.t_ns),
                dur_str(c, sizeof c, m.read_ns));
        for (int k = 0; k < FMC_COUNT; k++) {
            fprintf(f, "    %-36s %11s  %5.1f%%\n", fig_mem_class_name[k],
                    figfmt_bytes(b, sizeof b, m.cls[k]),
                    m.rss ? 100.0 * (double)m.cls[k] / (double)m.rss : 0);
            for (int p = 0; p < FM_COUNT; p++)
                if ((int)m.part[p].cls == k)
                    fprintf(f, "      %s%-32s%s %s%11s  %5.1f%%\n", on(o, DIM), m.part[p].name,
                            on(o, OFF), m.part[p].exact ? " " : "~",
                            figfmt_bytes(b, sizeof b, m.part[p].v),
                            m.rss ? 100.0 * (double)m.part[p].v / (double)m.rss : 0);
        }
        fprintf(f, "    %-36s %11s\n", "= RSS", figfmt_bytes(b, sizeof b, m.rss));
        wrapped(f, o, DIM, "    heap: ", m.part[FM_HEAP].how);
        wrapped(f, o, DIM, "    stacks: ", m.part[FM_STACKS].how);
    }
    if (m.vsz_note[0])
        wrapped(f, o, YELLOW, "  note: ", m.vsz_note);
}

static void diagnosis(FILE *f, const struct dump *d, const struct view_opts *o)
{
    static const char *const sev_col[] = { "", YELLOW, RED };
    struct fig_finding fd[FIG_FINDINGS_MAX];
    size_t n = fig_diagnose(d, fd, FIG_FINDINGS_MAX);
    char lead[64];
    title(f, o, "DIAGNOSIS", "what the figures show, and what to try");
    for (size_t i = 0; i < n; i++) {
        snprintf(lead, sizeof lead, "  %s (%s): ", fd[i].id, fig_conf_name[fd[i].conf]);
        wrapped(f, o, sev_col[fd[i].sev], lead, fd[i].what);
        if (fd[i].fix[0])
            wrapped(f, o, "", "    fix: ", fd[i].fix);
        if (fd[i].check[0])
            wrapped(f, o, "", "    check: ", fd[i].check);
        wrapped(f, o, DIM, "    from: ", fd[i].rests_on);
    }
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
    static const char *const sev_col[] = { DIM, YELLOW, RED };
    struct fig_note notes[FIG_NOTES_MAX];
    size_t nn = fig_notes(d, notes, FIG_NOTES_MAX);
    char up[24], ver[SEG_BACKEND_VERSION_MAX];
    const char *col = d->state == DS_ALIVE ? "" : RED;

    fig_backend_release(d, ver, sizeof ver);
    fprintf(f, "%spid %u (%s)%s  %s%s%s  up %s   backend %s %s\n", on(o, BOLD), d->pid, d->comm,
            on(o, OFF), on(o, col), state_word(d->state), *col ? on(o, OFF) : "",
            dur_str(up, sizeof up, (uint64_t)(fig_uptime_s(d) * 1e9)), d->backend, ver);
    if (d->saved) {
        char when[40];
        fprintf(f, "  %sa saved snapshot, taken %s%s\n", on(o, YELLOW),
                figfmt_utc(when, sizeof when, d->snap_ns), on(o, OFF));
    }
    /* cut to the view's 100 columns (a long shm_dir and a name pass them);
     * --json has it whole */
    int cw = (int)strlen(d->config) > 90 ? 87 : 90;
    fprintf(f, "  %sconfig: %.*s%s%s\n", on(o, DIM), cw, d->config,
            (int)strlen(d->config) > 90 ? "..." : "", on(o, OFF));
    char smp[120];
    if (d->sample <= 1 && !d->track_off)
        fprintf(f, "  sampling: every block tracked (sample:1); live requested bytes %s\n",
                d->exact ? "exact" : "estimated (some blocks could not be tracked)");
    else if (d->track_off)
        fprintf(f, "  sampling: no block tracked (track:off); counts and usable bytes exact\n");
    else
        fprintf(f, "  sampling: %s tracked; counts and usable bytes exact\n",
                fig_sampling(d, smp, sizeof smp));
    for (size_t i = 0; i < nn; i++)
        wrapped(f, o, sev_col[notes[i].sev], "  note: ", notes[i].text);
}

static void rates(FILE *f, const struct dump *d, const struct view_opts *o)
{
    struct fig_rates r;
    char a[24], b[24], c[24];
    if (!o->prev || !fig_rates(o->prev, d, &r))
        return;
    fprintf(f, "  rates over %.1f s: %s allocs/s, %s frees/s, %s/s requested\n", r.dt_s,
            count_str(a, sizeof a, r.allocs), count_str(b, sizeof b, r.frees),
            figfmt_bytes(c, sizeof c, (uint64_t)r.req_bytes));
}

void view_main(FILE *f, const struct dump *d, const struct view_opts *o)
{
    char a[24], b[24], c[24], e[24], g[24];
    heading(f, d, o);
    rates(f, d, o);
    fprintf(f, "  totals: %s allocs, %s frees, %s reallocs; %s live blocks; %s requested in all\n",
            count_str(a, sizeof a, (double)d->total.allocs), count_str(b, sizeof b, (double)d->total.frees),
            count_str(c, sizeof c, (double)d->total.reallocs),
            count_str(e, sizeof e, (double)d->total.live_count),
            figfmt_bytes(g, sizeof g, d->total.req_bytes));
    waterfall(f, d, o);
    rss_classes(f, d, o);
    diagnosis(f, d, o);
    over_time(f, d, o);
    size_classes(f, d, o);
    heat_map(f, d, o, 0);
    heat_map(f, d, o, 1);
    long_sites(f, d, o);
}

/* ---- Diff ---- */

static void diff_row(FILE *f, const struct fig_row *r)
{
    char x[24], y[24];
    if (r->kind == FV_RATIO) {
        fprintf(f, "  %-34s %14.2f %14.2f %10.2f\n", r->name, r->a, r->b, r->ratio);
        return;
    }
    if (r->kind == FV_BYTES) {
        figfmt_bytes(x, sizeof x, (uint64_t)r->a);
        figfmt_bytes(y, sizeof y, (uint64_t)r->b);
    } else {
        figfmt_count(x, sizeof x, r->a);
        figfmt_count(y, sizeof y, r->b);
    }
    if (r->a > 0)
        fprintf(f, "  %-34s %14s %14s %10.2f\n", r->name, x, y, r->ratio);
    else
        fprintf(f, "  %-34s %14s %14s %10s\n", r->name, x, y, "-");
}

void view_diff(FILE *f, const struct dump *a, const struct dump *b, const struct view_opts *o)
{
    struct fig_row rows[FIG_DIFF_MAX];
    size_t head;
    int more;
    size_t n = fig_diff(a, b, o->all, rows, &head, &more);
    char la[40], lb[40];

    fprintf(f, "%sA%s  pid %u (%s) %s, %s %s; %s\n", on(o, BOLD), on(o, OFF), a->pid, a->comm,
            state_word(a->state), a->backend, a->backend_version, a->source);
    fprintf(f, "%sB%s  pid %u (%s) %s, %s %s; %s\n", on(o, BOLD), on(o, OFF), b->pid, b->comm,
            state_word(b->state), b->backend, b->backend_version, b->source);
    snprintf(la, sizeof la, "A: %s", a->backend);
    snprintf(lb, sizeof lb, "B: %s", b->backend);
    title(f, o, "SIDE BY SIDE", NULL);
    fprintf(f, "  %s%-34s %14s %14s %10s%s\n", on(o, DIM), "", la, lb, "B/A", on(o, OFF));
    for (size_t i = 0; i < head; i++)
        diff_row(f, &rows[i]);
    title(f, o, "LIVE USABLE BYTES BY SIZE CLASS", more
          ? "the classes with the most live bytes in A or B (--all shows every one)" : NULL);
    for (size_t i = head; i < n; i++)
        diff_row(f, &rows[i]);
}

/* ---- List ---- */

void view_list_header(FILE *f, const struct view_opts *o)
{
    fprintf(f, "%s%8s  %-16s %-9s %10s %11s %11s  %-8s%s\n", on(o, BOLD), "PID", "COMMAND",
            "BACKEND", "UPTIME", "LIVE", "RSS", "STATE", on(o, OFF));
}

void view_list_row(FILE *f, const struct dump *d, const struct view_opts *o)
{
    struct fig_step st[FS_COUNT];
    char up[24], live[24], rss[24];
    const char *col = d->state == DS_ALIVE ? "" : RED;
    fig_waterfall(d, st);
    fprintf(f, "%8u  %-16s %-9s %10s %11s %11s  %s%-8s%s\n", d->pid, d->comm, d->backend,
            dur_str(up, sizeof up, (uint64_t)(fig_uptime_s(d) * 1e9)),
            figfmt_bytes(live, sizeof live, st[FS_REQ].v),
            st[FS_RSS].have ? figfmt_bytes(rss, sizeof rss, st[FS_RSS].v) : "-", on(o, col),
            d->state == DS_ALIVE ? "alive" : d->state == DS_EXITED ? "exited" : "dead",
            *col ? on(o, OFF) : "");
}
