/* html: the page of shimdump --html (see html.h). Every chart is inline SVG
 * drawn here from the dumps, on a scale shared by all inputs, with one
 * colour per input throughout; the numbers behind each chart follow it in a
 * table, with exact values in data-* attributes for scripts and tests. */
#include "config.h"

#include "html.h"

#include "figfmt.h"
#include "figures.h"
#include "htmlfmt.h"
#include "htmlmem.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Laid out for a page 1200 px wide (readable at 1280); the SVGs scale. */
#define PAGE_W 1160.0
#define HALF_W 566.0
#define BIN_PX 2.0          /* history: one column of points drawn per 2 px */
#define TABLE_PX 5.0        /* and one row of its table per 5 px */
#define HEAT_ROWS_MAX 40    /* size classes drawn per heat map; the table has all */
#define CLASS_BARS_MAX 16   /* size classes in the live-bytes chart */

/* ---- Inputs ---- */

/* One dump on the page, with what every section draws of it. */
struct input {
    const struct dump *d;
    const char *colour;
    char label[160];                /* plain text, escaped when written */
    struct fig_point *pts;          /* the whole history (malloc'ed), oldest first */
    size_t npts;
    size_t nfine;                   /* the last nfine points are the series itself */
    struct fig_step st[FS_COUNT];   /* the waterfall */
    struct fig_alloc a;             /* the allocator's figures of the latest sample */
};

/* "k:v" pairs of a config string that tell inputs apart in a label; the
 * shim's paths and switches that every input of a comparison shares are
 * left out. */
static int label_key(const char *pair, size_t n)
{
    static const char *const skip[] = { "backend:", "record:", "shm_dir:", "seed:", NULL };
    for (int i = 0; skip[i]; i++)
        if (n >= strlen(skip[i]) && !strncmp(pair, skip[i], strlen(skip[i])))
            return 0;
    return 1;
}

/* Whether the config string cfg holds the pair p[0..n). */
static int has_pair(const char *cfg, const char *p, size_t n)
{
    for (const char *s = cfg; *s;) {
        size_t len = strcspn(s, ",");
        if (len == n && !strncmp(s, p, n))
            return 1;
        s += len;
        if (*s == ',')
            s++;
    }
    return 0;
}

/* Labels: the backend, and the config pairs not shared by every input
 * ("glibc arenas:1"); the pid too where two labels would be the same. */
static void make_labels(struct input *in, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct dump *d = in[i].d;
        size_t len;
        snprintf(in[i].label, sizeof in[i].label, "%s", d->backend[0] ? d->backend : "?");
        for (const char *s = d->config; *s;) {
            size_t pl = strcspn(s, ",");
            int shared = 1;
            for (size_t k = 0; k < n && shared; k++)
                shared = has_pair(in[k].d->config, s, pl);
            len = strlen(in[i].label);
            if (n > 1 && !shared && label_key(s, pl) && len + pl + 2 < sizeof in[i].label)
                snprintf(in[i].label + len, sizeof in[i].label - len, " %.*s", (int)pl, s);
            s += pl;
            if (*s == ',')
                s++;
        }
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < n; k++)
            if (k != i && !strcmp(in[i].label, in[k].label) && in[i].d->pid != in[k].d->pid) {
                /* k is renamed below, in its own turn */
                size_t len = strlen(in[i].label);
                snprintf(in[i].label + len, sizeof in[i].label - len, " (pid %u)", in[i].d->pid);
                break;
            }
    /* the same process twice (two snapshots of it): by position */
    for (size_t i = 1; i < n; i++)
        for (size_t k = 0; k < i; k++)
            if (!strcmp(in[i].label, in[k].label)) {
                size_t len = strlen(in[i].label);
                snprintf(in[i].label + len, sizeof in[i].label - len, " #%zu", i + 1);
                break;
            }
}

/* Seconds since the process started, at t_ns: the charts' time axis. */
static double since_start(const struct dump *d, uint64_t t_ns)
{
    return t_ns > d->start_ns ? (double)(t_ns - d->start_ns) / 1e9 : 0;
}

/* ---- The page's frame ---- */

static const char css[] =
    ":root{--ink:#1c2230;--muted:#5d6677;--faint:#8a93a3;--rule:#dfe3e8;--wash:#f5f7f9}\n"
    "*{box-sizing:border-box}\n"
    "html{background:#fff}\n"
    "body{margin:0;color:var(--ink);font:15px/1.5 system-ui,-apple-system,\"Segoe UI\",Roboto,"
    "\"Helvetica Neue\",\"DejaVu Sans\",Arial,sans-serif;font-variant-numeric:tabular-nums;"
    "-webkit-print-color-adjust:exact;print-color-adjust:exact}\n"
    "main{max-width:1200px;margin:0 auto;padding:28px 20px 56px}\n"
    "h1{font-size:26px;line-height:1.2;margin:0 0 2px;font-weight:700;letter-spacing:-.01em}\n"
    "h2{font-size:20px;line-height:1.3;margin:44px 0 2px;padding-top:14px;"
    "border-top:1px solid var(--rule);font-weight:650}\n"
    "h3{font-size:15px;margin:22px 0 2px;font-weight:650}\n"
    "h4{font-size:14px;margin:0 0 4px;font-weight:600}\n"
    "p{margin:4px 0 8px;max-width:88ch}\n"
    ".sub,.lead,.note{color:var(--muted)}\n"
    ".sub{margin:0 0 18px;font-size:14px}\n"
    ".note{font-size:13px}\n"
    "nav{font-size:13px;margin:10px 0 0;color:var(--muted)}\n"
    "nav a{color:inherit;margin-right:14px;text-decoration:none;border-bottom:1px solid var(--rule)}\n"
    ".sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:7px;"
    "vertical-align:-1px}\n"
    ".legend{font-size:13px;color:var(--muted);margin:2px 0 6px;display:flex;flex-wrap:wrap;"
    "gap:4px 18px;align-items:center}\n"
    ".legend span{white-space:nowrap}\n"
    ".legend svg{display:inline-block;width:26px;height:10px;vertical-align:0;margin-right:5px}\n"
    "figure{margin:8px 0 0}\n"
    "svg{display:block;width:100%;height:auto;overflow:visible}\n"
    "svg text{font-family:inherit;font-size:12px;fill:var(--ink)}\n"
    ".ax line{stroke:#e6e9ed;stroke-width:1}\n"
    ".ax line.base,.ax line.v{stroke:#9aa3b0}\n"
    ".ax text{fill:var(--muted);font-size:11.5px}\n"
    ".ax text.at{fill:var(--muted);font-size:12px}\n"
    "text.lab{font-size:12.5px}\n"
    "text.val{font-size:12px;fill:var(--ink)}\n"
    "text.dim{fill:var(--muted);font-size:11.5px}\n"
    ".grid{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:18px 32px}\n"
    ".grid.one{grid-template-columns:minmax(0,1fr)}\n"
    "table{border-collapse:collapse;font-size:13px;margin:6px 0 4px}\n"
    "th,td{padding:3px 9px;text-align:right;border-bottom:1px solid #eceef2;white-space:nowrap;"
    "vertical-align:top}\n"
    "thead th{font-weight:600;color:var(--muted);border-bottom:1px solid var(--rule);"
    "vertical-align:bottom}\n"
    "tbody th{font-weight:500;text-align:left}\n"
    ".l{text-align:left}\n"
    "caption{caption-side:top;text-align:left;font-weight:600;padding:4px 0;color:var(--ink)}\n"
    "table.wf caption{white-space:nowrap}\n"
    "details{margin:6px 0 0}\n"
    "details>summary{cursor:pointer;color:var(--muted);font-size:13px}\n"
    "details .scroll{overflow-x:auto;max-height:460px;overflow-y:auto;border:1px solid #eceef2;"
    "padding:0 6px;margin-top:4px}\n"
    "table.inputs td,table.inputs th{vertical-align:top}\n"
    "table.inputs .cfg{display:block;font-size:12px;color:var(--faint);white-space:normal;"
    "max-width:46ch}\n"
    "table.inputs td.cfgc{font-size:12px;color:var(--muted);white-space:normal;max-width:34ch}\n"
    ".cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(200px,1fr));gap:14px;"
    "margin:6px 0 18px}\n"
    ".card{border:1px solid var(--rule);border-top:4px solid;border-radius:6px;padding:10px 14px 12px;"
    "background:#fff}\n"
    ".card .cl{font-weight:600;font-size:14px}\n"
    ".card .big{font-size:34px;font-weight:700;line-height:1.15;margin-top:4px;letter-spacing:-.02em}\n"
    ".card .note{margin:0}\n"
    ".card .cf{font-size:13px;margin-top:6px}\n"
    "ul.notes{margin:6px 0 0;padding-left:18px;font-size:13px;color:#8a4b00}\n"
    ".warn{color:#8a4b00}\n"
    ".sites{width:100%;margin-top:18px;table-layout:fixed}\n"
    ".sites caption{font-size:15px}\n"
    ".sites td{white-space:normal}\n"
    ".sites th:nth-child(1){width:3em}.sites th:nth-child(2){width:10em}"
    ".sites th:nth-child(3),.sites th:nth-child(4),.sites th:nth-child(5),"
    ".sites th:nth-child(6){width:7.5em}\n"
    ".sites td.n{white-space:nowrap}\n"
    ".bar{display:block;height:8px;border-radius:2px;margin-top:4px;min-width:1px}\n"
    ".frames{margin:0;padding:0;list-style:none;font:12px/1.5 \"DejaVu Sans Mono\",ui-monospace,"
    "SFMono-Regular,Menlo,Consolas,monospace;text-align:left}\n"
    ".frames li{overflow-wrap:anywhere}\n"
    ".frames .obj,.frames .src{color:var(--faint)}\n"
    ".frames details>summary{font:inherit}\n"
    ".memrow{display:flex;align-items:center;gap:10px;margin:4px 0;font-size:13px}\n"
    ".meml{width:190px;flex:none;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}\n"
    ".membar{display:flex;flex:1;height:18px;background:var(--wash);border-radius:2px;"
    "overflow:hidden}\n"
    ".membar span{display:block;height:100%}\n"
    ".memv{width:80px;flex:none;text-align:right}\n"
    "ul.diag{list-style:none;padding:0;margin:6px 0;font-size:14px}\n"
    "ul.diag li{border-left:4px solid #009e73;padding:4px 10px;margin:6px 0;background:var(--wash)}\n"
    "ul.diag li.warn{border-left-color:#e69f00}\n"
    "ul.diag li.bad{border-left-color:#d55e00}\n"
    ".dk{display:inline-block;width:3.6em;color:var(--muted);font-size:12px}\n"
    "footer{margin-top:48px;font-size:12px;color:var(--faint)}\n"
    "@media print{\n"
    "  @page{size:A4 landscape;margin:12mm}\n"
    "  body{font-size:10pt}\n"
    "  main{max-width:none;padding:0}\n"
    "  nav,details{display:none}\n"
    "  h2{break-after:avoid;margin-top:18px}\n"
    "  h3{break-after:avoid}\n"
    "  figure,table,.panel,tr{break-inside:avoid}\n"
    "}\n";

static void page_start(FILE *f, const struct input *in, size_t n, const struct html_opts *o)
{
    char when[48];
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n", f);
    fprintf(f, "<meta name=\"generator\" content=\"shimdump %s\">\n<title>Heap report: ",
            PACKAGE_VERSION);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || strcmp(in[i].d->comm, in[i - 1].d->comm)) {
            fputs(i ? ", " : "", f);
            htmlfmt_esc(f, in[i].d->comm);
        }
    }
    fputs(" (", f);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ", " : "", f);
        htmlfmt_esc(f, in[i].label);
    }
    fprintf(f, ")</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n", css);
    fputs("<header>\n<h1>Heap report: ", f);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(in[i].d->comm, in[i - 1].d->comm)) {
            fputs(i ? ", " : "", f);
            htmlfmt_esc(f, in[i].d->comm);
        }
    fputs("</h1>\n", f);
    fprintf(f, "<p class=\"sub\">mallocshim heap report, %zu input%s, made by shimdump %s on %s</p>\n",
            n, n == 1 ? "" : "s", PACKAGE_VERSION, figfmt_utc(when, sizeof when, o->now_ns));
}

static void swatch(FILE *f, const struct input *in)
{
    fprintf(f, "<span class=\"sw\" style=\"background:%s\"></span>", in->colour);
}

/* The legend of inputs that a chart draws: a swatch and its label each. */
static void input_legend(FILE *f, const struct input *in, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fputs("<span>", f);
        swatch(f, &in[i]);
        htmlfmt_esc(f, in[i].label);
        fputs("</span>", f);
    }
}

static const char *state_text(int s)
{
    switch (s) {
    case DS_ALIVE: return "alive";
    case DS_EXITED: return "exited";
    case DS_DEAD: return "dead";
    default: return "from a file";
    }
}

/* The headline: per input, RSS per live requested byte, and the bytes
 * behind it. */
static void cards(FILE *f, const struct input *in, size_t n)
{
    char a[48], b[48], c[48];
    fputs("<div class=\"cards\">\n", f);
    for (size_t i = 0; i < n; i++) {
        const struct fig_step *st = in[i].st;
        fprintf(f, "<div class=\"card\" style=\"border-top-color:%s\"><div class=\"cl\">", in[i].colour);
        swatch(f, &in[i]);
        htmlfmt_esc(f, in[i].label);
        fputs("</div>", f);
        if (st[FS_RSS].have && st[FS_REQ].v)
            fprintf(f, "<div class=\"big\">%.2f\u00d7</div>", st[FS_RSS].ratio);
        else
            fputs("<div class=\"big\">-</div>", f);
        fprintf(f, "<div class=\"note\">RSS per live requested byte</div><div class=\"cf\">RSS %s &middot; "
                   "live %s &middot; peak %s</div></div>\n",
                st[FS_RSS].have ? figfmt_bytes(a, sizeof a, st[FS_RSS].v) : "-",
                figfmt_bytes(b, sizeof b, st[FS_REQ].v),
                st[FS_PEAK].have ? figfmt_bytes(c, sizeof c, st[FS_PEAK].v) : "-");
    }
    fputs("</div>\n", f);
}

/* d's config as shown: without shm_dir (where its segment went, nothing
 * about its heap) and record (on, or there would be no segment). */
static void config_text(FILE *f, const char *cfg)
{
    int first = 1;
    for (const char *s = cfg; *s;) {
        size_t len = strcspn(s, ",");
        if (strncmp(s, "shm_dir:", 8) && strncmp(s, "record:", 7)) {
            char pair[SEG_CONFIG_MAX];
            snprintf(pair, sizeof pair, "%.*s", (int)len, s);
            fputs(first ? "" : ",<wbr>", f);
            htmlfmt_esc_wbr(f, pair);
            first = 0;
        }
        s += len;
        if (*s == ',')
            s++;
    }
    if (first)
        fputs("defaults", f);
}

/* The inputs, one row each: what was read, and how it was recorded. */
static void inputs_table(FILE *f, const struct input *in, size_t n)
{
    char a[48];
    fputs("<table class=\"inputs\">\n<caption>Inputs</caption>\n<thead><tr>"
          "<th class=\"l\" scope=\"col\">input</th><th class=\"l\" scope=\"col\">process</th>"
          "<th class=\"l\" scope=\"col\">state</th><th class=\"l\" scope=\"col\">backend</th>"
          "<th scope=\"col\">up</th><th class=\"l\" scope=\"col\">sampling</th>"
          "<th class=\"l\" scope=\"col\">config</th><th class=\"l\" scope=\"col\">read from</th>"
          "</tr></thead>\n<tbody>\n", f);
    for (size_t i = 0; i < n; i++) {
        const struct dump *d = in[i].d;
        char ver[SEG_BACKEND_VERSION_MAX];
        fig_backend_release(d, ver, sizeof ver);
        fprintf(f, "<tr data-input=\"%zu\"><th class=\"l\" scope=\"row\">", i);
        swatch(f, &in[i]);
        htmlfmt_esc(f, in[i].label);
        fprintf(f, "</th><td class=\"l\">%u (", d->pid);
        htmlfmt_esc(f, d->comm);
        fprintf(f, ")</td><td class=\"l%s\">%s", d->state == DS_DEAD || d->state == DS_EXITED ? " warn" : "",
                d->saved ? "snapshot" : state_text(d->state));
        if (d->saved)
            fprintf(f, "<span class=\"cfg\">taken %s</span>", figfmt_utc(a, sizeof a, d->snap_ns));
        fputs("</td><td class=\"l\">", f);
        htmlfmt_esc(f, d->backend);
        fputc(' ', f);
        htmlfmt_esc(f, ver);
        fprintf(f, "</td><td>%s</td><td class=\"l\">",
                figfmt_dur(a, sizeof a, (uint64_t)(fig_uptime_s(d) * 1e9), FF_WORDS));
        char smp[120];
        htmlfmt_esc(f, fig_sampling(d, smp, sizeof smp));
        fprintf(f, "<span class=\"cfg\">a sample every %u ms</span></td><td class=\"l cfgc\">",
                d->interval_ms);
        config_text(f, d->config);
        fputs("</td><td class=\"l cfgc\">", f);
        htmlfmt_esc_wbr(f, d->source);
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody>\n</table>\n", f);
}

/* What qualifies an input's figures (figures.h, fig_notes), as the
 * one-screen view says it. */
static void input_notes(FILE *f, const struct input *in, size_t n)
{
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        struct fig_note notes[FIG_NOTES_MAX];
        size_t k = fig_notes(in[i].d, notes, FIG_NOTES_MAX);
        for (size_t j = 0; j < k; j++) {
            if (!any++)
                fputs("<ul class=\"notes\">\n", f);
            fputs("<li>", f);
            swatch(f, &in[i]);
            htmlfmt_esc(f, in[i].label);
            fputs(": ", f);
            htmlfmt_esc(f, notes[j].text);
            fputs("</li>\n", f);
        }
    }
    if (any)
        fputs("</ul>\n", f);
}

/* An <svg> opening tag, with its title and description for screen readers. */
static void svg_open(FILE *f, const char *id, double w, double h, const char *title, const char *desc)
{
    fprintf(f, "<svg viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-labelledby=\"%s-t %s-d\">"
               "<title id=\"%s-t\">",
            w, h, id, id, id);
    htmlfmt_esc(f, title);
    fprintf(f, "</title><desc id=\"%s-d\">", id);
    htmlfmt_esc(f, desc);
    fputs("</desc>\n", f);
}

/* ---- Where the memory goes ---- */

/* Step k of input in's waterfall: 1 and *v, or 0 where it has none yet. */
static int wf_value(const struct input *in, int k, uint64_t *v)
{
    *v = in->st[k].v;
    return in->st[k].have;
}

static void waterfall(FILE *f, const struct input *in, size_t n)
{
    const double lab_w = 190, bar_x = 200, right = 150, bar_h = n > 4 ? 12 : n == 1 ? 18 : 15, gap = 3,
                 pad = 14;
    double row_h = (double)n * bar_h + (double)(n - 1) * gap + pad, top = 8;
    if (row_h < 38)
        row_h = 38;   /* room for the step's name and its line under it */
    double h = top + FS_COUNT * row_h + 40;
    uint64_t vmax = 0, v;
    struct htmlfmt_byte_ticks bt;
    struct htmlfmt_scale x, y;
    char a[48], b[48];

    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < FS_COUNT; k++)
            if (wf_value(&in[i], k, &v) && v > vmax)
                vmax = v;
    htmlfmt_byte_ticks(vmax, &bt);
    x.v0 = 0;
    x.v1 = bt.top;
    x.p0 = bar_x;
    x.p1 = PAGE_W - right;
    y.p0 = top + FS_COUNT * row_h;

    fputs("<section id=\"waterfall\">\n<h2>Where the memory goes</h2>\n<p class=\"lead\">From the "
          "bytes the program asked for to what the process holds in RAM, each step as bytes and as "
          "a multiple of live requested bytes. The gap between two steps is what that layer costs: "
          "size-class rounding, the allocator's free memory and metadata, and everything else in "
          "the process.</p>\n<figure>\n<div class=\"legend\">", f);
    input_legend(f, in, n);
    fputs("</div>\n", f);
    svg_open(f, "wf", PAGE_W, h, "Where the memory goes",
             "Horizontal bars per step, one per input, on one byte scale.");
    /* the grid and the axis, under the bars */
    fputs("<g class=\"ax\">", f);
    for (int i = 0; i <= bt.n; i++) {
        double px = htmlfmt_at(&x, i * bt.step * bt.unit);
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"%s/>", px, px, top - 4,
                y.p0, i == 0 ? " class=\"base\"" : "");
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", px, y.p0 + 16,
                htmlfmt_tick_bytes(a, sizeof a, &bt, i));
    }
    fprintf(f, "<text class=\"at\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">bytes (%s)</text></g>\n",
            (x.p0 + x.p1) / 2, y.p0 + 34, bt.uname);
    for (int k = 0; k < FS_COUNT; k++) {
        double ry = top + k * row_h;
        fprintf(f, "<text class=\"lab\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-weight=\"600\">%s</text>",
                lab_w - 6, ry + 12, in[0].st[k].name);
        fprintf(f, "<text class=\"dim\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                lab_w - 6, ry + 27, in[0].st[k].what);
        for (size_t i = 0; i < n; i++) {
            double by = ry + (double)i * (bar_h + gap);
            if (!wf_value(&in[i], k, &v)) {
                fprintf(f, "<text class=\"dim\" x=\"%.1f\" y=\"%.1f\">no sample yet</text>\n",
                        bar_x + 4, by + bar_h - 3);
                continue;
            }
            double w = htmlfmt_at(&x, (double)v) - x.p0;
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"2\" fill=\"%s\"%s>"
                       "<title>", x.p0, by, w < 1 ? 1 : w, bar_h, in[i].colour,
                    k == FS_PEAK ? " fill-opacity=\"0.45\"" : "");
            htmlfmt_esc(f, in[i].label);
            fputs(": ", f);
            if (k == FS_INUSE || k == FS_FOOT)
                htmlfmt_esc(f, k == FS_INUSE ? in[i].a.in_use_name : in[i].a.fp_name);
            else
                fputs(in[0].st[k].name, f);
            fprintf(f, " %s</title></rect>", figfmt_bytes(a, sizeof a, v));
            if (in[i].st[FS_REQ].v)
                snprintf(b, sizeof b, "  %.2f\u00d7", in[i].st[k].ratio);
            else
                b[0] = '\0';
            if (in[i].st[k].age.stale) {
                char ago[32];
                size_t l = strlen(b);
                snprintf(b + l, sizeof b - l, "  taken %s ago",
                         figfmt_dur(ago, sizeof ago, in[i].st[k].age.ns, FF_WORDS));
            }
            fprintf(f, "<text class=\"val\" x=\"%.1f\" y=\"%.1f\">%s<tspan class=\"dim\" "
                       "fill=\"#5d6677\">%s</tspan></text>\n",
                    x.p0 + (w < 1 ? 1 : w) + 6, by + bar_h - 3.5, figfmt_bytes(a, sizeof a, v), b);
        }
    }
    fputs("</svg>\n", f);

    /* The numbers, always shown: they are the report's headline. */
    fputs("<table class=\"wf\">\n<caption>Where the memory goes: bytes, and the multiple of live "
          "requested bytes</caption>\n<thead><tr><th class=\"l\" scope=\"col\">step</th>", f);
    for (size_t i = 0; i < n; i++) {
        fputs("<th scope=\"col\">", f);
        swatch(f, &in[i]);
        htmlfmt_esc(f, in[i].label);
        fputs("</th>", f);
    }
    fputs("</tr></thead>\n<tbody>\n", f);
    for (int k = 0; k < FS_COUNT; k++) {
        fprintf(f, "<tr data-fig=\"%s\"><th class=\"l\" scope=\"row\">%s</th>", in[0].st[k].key, in[0].st[k].name);
        for (size_t i = 0; i < n; i++) {
            const struct fig_step *st = &in[i].st[k];
            if (!wf_value(&in[i], k, &v)) {
                fprintf(f, "<td data-input=\"%zu\">-</td>", i);
                continue;
            }
            fprintf(f, "<td data-input=\"%zu\" data-bytes=\"%llu\"", i, (unsigned long long)v);
            if (st->age.known)
                fprintf(f, " data-age-ns=\"%llu\"", (unsigned long long)st->age.ns);
            fprintf(f, ">%s", figfmt_bytes(a, sizeof a, v));
            if (in[i].st[FS_REQ].v)
                fprintf(f, " <span class=\"note\">(%.2f\u00d7)</span>", st->ratio);
            if (k == FS_REQ && st->err)
                fprintf(f, " <span class=\"note\">%s</span>",
                        figfmt_err(b, sizeof b, (double)st->err, (double)st->v, FF_WORDS));
            if (st->age.stale)
                fprintf(f, " <span class=\"warn\">taken %s ago</span>",
                        figfmt_dur(b, sizeof b, st->age.ns, FF_WORDS));
            fputs("</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody>\n</table>\n<p class=\"note\">", f);
    for (size_t i = 0; i < n; i++) {
        int dup = 0;
        for (size_t k = 0; k < i; k++)
            dup |= in[k].d->backend_id == in[i].d->backend_id;
        if (!in[i].a.have || dup)
            continue;
        fputs("Allocator figures of ", f);
        htmlfmt_esc(f, in[i].d->backend);
        fputs(": in use is ", f);
        htmlfmt_esc(f, in[i].a.in_use_name);
        fputs(", holds is ", f);
        htmlfmt_esc(f, in[i].a.fp_name);
        fputs(". ", f);
    }
    fputs("Live requested bytes are exact with sample:1, else estimated from the tracked blocks; "
          "live usable bytes are always exact.</p>\n</figure>\n</section>\n", f);
}

/* ---- Over time ---- */

/* The points of input `in` from index `from` binned into columns of `px`
 * pixels on x (seconds since its start): fig_bin. Returns the bins
 * (malloc'ed) and their count in *nb, or NULL with *nb 0 (none, or no
 * memory: *oom set). */
static struct fig_point *bin_points(const struct input *in, size_t from,
                                    const struct htmlfmt_scale *x, double px, size_t *nb, int *oom)
{
    struct fig_history h = { in->pts, in->npts, in->nfine };
    struct fig_point *out;
    size_t ncols = (size_t)ceil((x->p1 - x->p0) / px);
    *nb = 0;
    if (from >= in->npts || ncols == 0)
        return NULL;
    if (!(out = malloc((ncols < in->npts - from ? ncols : in->npts - from) * sizeof *out))) {
        *oom = 1;
        return NULL;
    }
    uint64_t t0 = in->d->start_ns + (uint64_t)(x->v0 * 1e9), t1 = in->d->start_ns + (uint64_t)(x->v1 * 1e9);
    *nb = fig_bin(&h, from, t0, t1, ncols, out, NULL);
    return out;
}

static void polyline(FILE *f, const struct fig_point *b, size_t n, const struct input *in,
                     const struct htmlfmt_scale *x, const struct htmlfmt_scale *y, size_t field,
                     const char *attrs)
{
    fputs("<polyline fill=\"none\" points=\"", f);
    for (size_t i = 0; i < n; i++) {
        uint64_t v = field == 0 ? b[i].rss : field == 1 ? b[i].live : b[i].be.v[field - 2];
        /* the backend's figures where they were taken, not where a later
         * sample carried them */
        uint64_t t = field >= 2 && b[i].be.t_ns ? b[i].be.t_ns : b[i].t_ns;
        fprintf(f, "%s%.1f,%.1f", i ? " " : "", htmlfmt_at(x, since_start(in->d, t)),
                htmlfmt_at(y, (double)v));
    }
    fprintf(f, "\" %s/>\n", attrs);
}

/* A band between two figures of the bins (lo: rss_min or live; hi:
 * rss_max or live_max), when they differ anywhere. */
static void band(FILE *f, const struct fig_point *b, size_t n, const struct input *in,
                 const struct htmlfmt_scale *x, const struct htmlfmt_scale *y, int live,
                 double opacity)
{
    int differ = 0;
    for (size_t i = 0; i < n && !differ; i++)
        differ = live ? b[i].live_max != b[i].live : b[i].rss_max != b[i].rss_min;
    if (!differ)
        return;
    fputs("<polygon points=\"", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%.1f,%.1f", i ? " " : "", htmlfmt_at(x, since_start(in->d, b[i].t_ns)),
                htmlfmt_at(y, (double)(live ? b[i].live_max : b[i].rss_max)));
    for (size_t i = n; i-- > 0;)
        fprintf(f, " %.1f,%.1f", htmlfmt_at(x, since_start(in->d, b[i].t_ns)),
                htmlfmt_at(y, (double)(live ? b[i].live : b[i].rss_min)));
    fprintf(f, "\" fill=\"%s\" fill-opacity=\"%.2f\" stroke=\"none\"/>\n", in->colour, opacity);
}

/* The x scale shared by the inputs' histories (from index from_fine: only
 * their series), in seconds since each process started: from 0 when the
 * history reaches near the start, else from its oldest point. */
static void time_scale(const struct input *in, size_t n, int fine, double p0, double p1,
                       struct htmlfmt_scale *x)
{
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < n; i++) {
        size_t from = fine ? in[i].npts - in[i].nfine : 0;
        if (from >= in[i].npts)
            continue;
        double a = since_start(in[i].d, in[i].pts[from].t_ns);
        double b = since_start(in[i].d, in[i].pts[in[i].npts - 1].t_ns);
        if (a < lo)
            lo = a;
        if (b > hi)
            hi = b;
    }
    if (!(lo <= hi))
        lo = hi = 0;
    if (lo < 0.1 * hi)
        lo = 0;
    if (hi - lo < 1)
        hi = lo + 1;
    x->v0 = lo;
    x->v1 = hi;
    x->p0 = p0;
    x->p1 = p1;
}

/* Whether d's peak RSS is of its own life: a fork child's segment keeps
 * its parent's peak, from before the child's start, until it passes it. */
static int peak_in_life(const struct dump *d)
{
    return d->peak_rss && d->peak_rss_ns >= d->start_ns;
}

/* The highest RSS or live bytes of the history (and the peak RSS). */
static uint64_t history_max(const struct input *in, size_t n, int fine)
{
    uint64_t m = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = fine ? in[i].npts - in[i].nfine : 0; k < in[i].npts; k++) {
            const struct fig_point *p = &in[i].pts[k];
            if (p->rss_max > m)
                m = p->rss_max;
            if (p->live_max > m)
                m = p->live_max;
        }
        if (!fine && peak_in_life(in[i].d) && in[i].d->peak_rss > m)
            m = in[i].d->peak_rss;
    }
    return m;
}

static void legend_line(FILE *f, const char *dash, double width, const char *text)
{
    fprintf(f, "<span><svg viewBox=\"0 0 26 10\" aria-hidden=\"true\"><line x1=\"1\" x2=\"25\" "
               "y1=\"5\" y2=\"5\" stroke=\"#1c2230\" stroke-width=\"%.1f\"%s%s%s/></svg>%s</span>",
            width, *dash ? " stroke-dasharray=\"" : "", dash, *dash ? "\"" : "", text);
}

/* One chart of RSS and live requested bytes, all inputs on one scale; the
 * whole history, or (fine) the series alone. Its table follows. Returns 0
 * or ENOMEM. */
static int history_chart(FILE *f, const struct input *in, size_t n, int fine)
{
    const double h = 360, top = 12, left = 78, right = 24, bottom = 48;
    struct htmlfmt_scale x, y;
    struct htmlfmt_byte_ticks bt;
    char a[48], b[48], c[48], e[48], id[32];
    int oom = 0;
    struct fig_point *bins[HTML_INPUTS_MAX] = { NULL }, *rows[HTML_INPUTS_MAX] = { NULL };
    size_t nb[HTML_INPUTS_MAX] = { 0 }, nr[HTML_INPUTS_MAX] = { 0 };

    snprintf(id, sizeof id, "hist%d", fine);
    time_scale(in, n, fine, left, PAGE_W - right, &x);
    htmlfmt_byte_ticks(history_max(in, n, fine), &bt);
    y.v0 = 0;
    y.v1 = bt.top;
    y.p0 = h - bottom;
    y.p1 = top;
    for (size_t i = 0; i < n && !oom; i++) {
        size_t from = fine ? in[i].npts - in[i].nfine : 0;
        bins[i] = bin_points(&in[i], from, &x, BIN_PX, &nb[i], &oom);
        if (!oom)
            rows[i] = bin_points(&in[i], from, &x, TABLE_PX, &nr[i], &oom);
    }
    if (oom)
        goto out;

    if (fine) {
        /* "The most recent 60 min, a point per sample (every 1 s)" */
        uint32_t iv = in[0].d->interval_ms;
        int same = 1;
        for (size_t i = 1; i < n; i++)
            same &= in[i].d->interval_ms == iv;
        double span = x.v1 - x.v0;
        if (span < 120)
            snprintf(a, sizeof a, "%.0f s", span);
        else if (span < 7200)
            snprintf(a, sizeof a, "%.0f min", span / 60);
        else
            snprintf(a, sizeof a, "%.1f h", span / 3600);
        if (same && iv % 1000 == 0)
            snprintf(b, sizeof b, " (every %u s)", iv / 1000);
        else if (same)
            snprintf(b, sizeof b, " (every %u ms)", iv);
        else
            b[0] = '\0';
        fprintf(f, "<figure id=\"recent\">\n<h3>The most recent %s, a point per sample%s</h3>\n", a, b);
    } else {
        fputs("<figure id=\"history\">\n<h3>RSS and live requested bytes, the whole history</h3>\n", f);
    }
    if (!fine)
        fputs("<p class=\"note\">The coarser points of the history are spans of many samples: a band "
              "shows the lowest and highest RSS within each, and live bytes at their highest, so "
              "that no spike is lost. The dot marks the peak RSS.</p>\n", f);
    fputs("<div class=\"legend\">", f);
    input_legend(f, in, n);
    legend_line(f, "", 2, "RSS");
    legend_line(f, "5 3", 1.8, "live requested");
    for (size_t i = 0; i < n; i++)
        if (in[i].d->nchanges) {
            legend_line(f, "2 3", 1.5, "sampling changed (shimdump --set)");
            break;
        }
    fputs("</div>\n", f);
    svg_open(f, id, PAGE_W, h, fine ? "RSS and live requested bytes, the most recent samples"
                                    : "RSS and live requested bytes over the whole history",
             "Lines per input over time since each process started; bands show extremes within a point.");
    htmlfmt_axes(f, &x, &y, &bt, "time since the process started");
    for (size_t i = 0; i < n; i++) {
        char attr[160];
        if (!nb[i])
            continue;
        band(f, bins[i], nb[i], &in[i], &x, &y, 0, 0.20);
        band(f, bins[i], nb[i], &in[i], &x, &y, 1, 0.12);
        snprintf(attr, sizeof attr, "stroke=\"%s\" stroke-width=\"2\" stroke-linejoin=\"round\"", in[i].colour);
        polyline(f, bins[i], nb[i], &in[i], &x, &y, 0, attr);
        snprintf(attr, sizeof attr, "stroke=\"%s\" stroke-width=\"1.8\" stroke-dasharray=\"5 3\" "
                 "stroke-linejoin=\"round\"", in[i].colour);
        polyline(f, bins[i], nb[i], &in[i], &x, &y, 1, attr);
        if (nb[i] == 1) {
            /* one point makes no line: a dot */
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                    htmlfmt_at(&x, since_start(in[i].d, bins[i][0].t_ns)),
                    htmlfmt_at(&y, (double)bins[i][0].rss), in[i].colour);
        }
    }
    for (size_t i = 0; i < n && !fine; i++) {
        const struct dump *d = in[i].d;
        double px = htmlfmt_at(&x, since_start(d, d->peak_rss_ns));
        if (!peak_in_life(d) || px < x.p0 - 0.5 || px > x.p1 + 0.5)
            continue;
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#fff\" stroke=\"%s\" "
                   "stroke-width=\"2\"><title>",
                px, htmlfmt_at(&y, (double)d->peak_rss), in[i].colour);
        htmlfmt_esc(f, in[i].label);
        fprintf(f, ": peak RSS %s at %s</title></circle>\n",
                figfmt_bytes(a, sizeof a, d->peak_rss),
                figfmt_elapsed(b, sizeof b, since_start(d, d->peak_rss_ns)));
    }
    /* The sampling's changes (shimdump --set): a dashed mark each. */
    for (size_t i = 0; i < n; i++) {
        const struct dump *d = in[i].d;
        for (size_t k = 0; k < d->nchanges; k++) {
            const struct dump_change *ch = &d->changes[k];
            double px = htmlfmt_at(&x, since_start(d, ch->t_ns));
            if (px < x.p0 - 0.5 || px > x.p1 + 0.5)
                continue;
            fprintf(f, "<line class=\"setmark\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
                       "stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"2 3\"><title>",
                    px, px, top, h - bottom, in[i].colour);
            htmlfmt_esc(f, in[i].label);
            fprintf(f, ": sampling set at %s (shimdump --set): sample:%u, sample_bytes:%s, "
                       "track:%s, stacks:%s</title></line>\n",
                    figfmt_elapsed(b, sizeof b, since_start(d, ch->t_ns)), ch->sample,
                    figfmt_bytes(a, sizeof a, ch->sample_bytes), ch->track ? "on" : "off",
                    ch->stacks ? "on" : "off");
        }
    }
    fputs("</svg>\n", f);

    /* The table: per input, the points of every TABLE_PX pixels. */
    fputs("<details><summary>The numbers behind this chart</summary><div class=\"scroll\">\n", f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "<table data-input=\"%zu\" data-kind=\"%s\">\n<caption>", i, fine ? "series" : "history");
        htmlfmt_esc(f, in[i].label);
        fprintf(f, ": RSS and live requested bytes in %zu row%s (each the span of the points in "
                   "%.0f pixels of the chart)</caption>\n<thead><tr><th class=\"l\" scope=\"col\">time</th>"
                   "<th scope=\"col\">since start</th><th scope=\"col\">samples</th>"
                   "<th scope=\"col\">RSS</th><th scope=\"col\">RSS lowest</th>"
                   "<th scope=\"col\">RSS highest</th><th scope=\"col\">live requested</th>"
                   "<th scope=\"col\">live highest</th></tr></thead>\n<tbody>\n",
                nr[i], nr[i] == 1 ? "" : "s", TABLE_PX);
        for (size_t k = 0; k < nr[i]; k++) {
            const struct fig_point *p = &rows[i][k];
            fprintf(f, "<tr data-t=\"%llu\" data-rss=\"%llu\" data-rss-min=\"%llu\" "
                       "data-rss-max=\"%llu\" data-live=\"%llu\" data-live-max=\"%llu\">"
                       "<th scope=\"row\">%s</th><td>%s</td><td>%llu</td>",
                    (unsigned long long)p->t_ns, (unsigned long long)p->rss,
                    (unsigned long long)p->rss_min, (unsigned long long)p->rss_max,
                    (unsigned long long)p->live, (unsigned long long)p->live_max,
                    figfmt_hms(a, sizeof a, p->t_ns, 0),
                    figfmt_elapsed(b, sizeof b, since_start(in[i].d, p->t_ns)),
                    (unsigned long long)p->samples);
            fprintf(f, "<td>%s</td><td>%s</td><td>%s</td>", figfmt_bytes(a, sizeof a, p->rss),
                    figfmt_bytes(b, sizeof b, p->rss_min), figfmt_bytes(c, sizeof c, p->rss_max));
            fprintf(f, "<td>%s</td><td>%s</td></tr>\n", figfmt_bytes(a, sizeof a, p->live),
                    figfmt_bytes(e, sizeof e, p->live_max));
        }
        fputs("</tbody>\n</table>\n", f);
    }
    fputs("</div></details>\n</figure>\n", f);
out:
    for (size_t i = 0; i < n; i++) {
        free(bins[i]);
        free(rows[i]);
    }
    return oom ? ENOMEM : 0;
}

/* Line styles of the backend's fields in a panel: all in the input's
 * colour, told apart by dash, weight and shade (and named in the legend);
 * what the backend has handed out gets the boldest. */
struct line_style {
    const char *dash;
    double width;
    double shade;          /* < 0: toward black, > 0: toward white */
};

static const struct line_style styles[6] = {
    { "", 2.6, 0 }, { "", 1.5, -0.5 }, { "6 3", 1.8, 0 }, { "2 2.2", 2.0, -0.5 },
    { "9 3 2 3", 1.6, 0.45 }, { "14 4", 1.6, 0.45 },
};

static const struct line_style *be_style(int backend_id, unsigned k)
{
    static const unsigned char map[3][6] = { { 1, 2, 3, 4, 0, 5 }, { 0, 2, 1, 4, 3, 5 },
                                             { 0, 1, 2, 3, 4, 5 } };
    return &styles[backend_id >= 0 && backend_id <= 2 && k < 6 ? map[backend_id][k] : 5];
}

/* The attributes of field k's line: stroke, width, dashes. */
static void be_attrs(char *dst, size_t cap, const struct input *in, unsigned k)
{
    const struct line_style *st = be_style(in->d->backend_id, k);
    char col[16];
    htmlfmt_shade(col, sizeof col, in->colour, st->shade);
    snprintf(dst, cap, "stroke=\"%s\" stroke-width=\"%.1f\"%s%s%s", col, st->width,
             *st->dash ? " stroke-dasharray=\"" : "", st->dash, *st->dash ? "\"" : "");
}

/* The allocator's own figures over time: a panel per input, on one scale. */
static int allocator_charts(FILE *f, const struct input *in, size_t n)
{
    const double w = n == 1 ? PAGE_W : HALF_W, h = 270, top = 10, left = 70, right = 16, bottom = 46;
    struct htmlfmt_scale x, y;
    struct htmlfmt_byte_ticks bt;
    uint64_t vmax = 0;
    int oom = 0;
    char a[48], id[32];

    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < in[i].npts; k++) {
            for (unsigned j = 0; j < 6; j++)
                if (dump_be_bytes(in[i].d->backend_id, j) && in[i].pts[k].be.v[j] > vmax)
                    vmax = in[i].pts[k].be.v[j];
            if (in[i].pts[k].rss > vmax)
                vmax = in[i].pts[k].rss;
        }
    time_scale(in, n, 0, left, w - right, &x);
    htmlfmt_byte_ticks(vmax, &bt);
    y.v0 = 0;
    y.v1 = bt.top;
    y.p0 = h - bottom;
    y.p1 = top;

    fputs("<section id=\"allocator\">\n<h2>The allocator's own figures over time</h2>\n"
          "<p class=\"lead\">Each backend's statistics as it reports them at every sample "
          "(glibc: mallinfo2; jemalloc: stats.*; tcmalloc: its numeric properties), with the "
          "process's RSS in grey for reference. Every panel has the same scales.</p>\n", f);
    fprintf(f, "<div class=\"grid%s\">\n", n == 1 ? " one" : "");
    for (size_t i = 0; i < n; i++) {
        const struct dump *d = in[i].d;
        size_t nb = 0, nr = 0;
        struct fig_point *b = bin_points(&in[i], 0, &x, BIN_PX, &nb, &oom), *r = NULL;
        if (!oom)
            r = bin_points(&in[i], 0, &x, TABLE_PX, &nr, &oom);
        if (oom) {
            free(b);
            return ENOMEM;
        }
        snprintf(id, sizeof id, "be%zu", i);
        fputs("<figure class=\"panel\">\n<h4>", f);
        swatch(f, &in[i]);
        htmlfmt_esc(f, in[i].label);
        fputs("</h4>\n<div class=\"legend\">", f);
        for (unsigned j = 0; j < 6; j++) {
            char text[160];
            if (!dump_be_bytes(d->backend_id, j))
                continue;
            be_attrs(text, sizeof text, &in[i], j);
            fprintf(f, "<span><svg viewBox=\"0 0 26 10\" aria-hidden=\"true\"><line x1=\"1\" x2=\"25\" "
                       "y1=\"5\" y2=\"5\" %s/></svg>", text);
            htmlfmt_esc(f, dump_be_field(d->backend_id, j));
            fputs("</span>", f);
        }
        fputs("<span><svg viewBox=\"0 0 26 10\" aria-hidden=\"true\"><line x1=\"1\" x2=\"25\" y1=\"5\" "
              "y2=\"5\" stroke=\"#b4bac4\" stroke-width=\"3\"/></svg>RSS</span></div>\n", f);
        svg_open(f, id, w, h, "The allocator's own figures over time", in[i].label);
        htmlfmt_axes(f, &x, &y, &bt, "time since the process started");
        if (nb) {
            polyline(f, b, nb, &in[i], &x, &y, 0, "stroke=\"#b4bac4\" stroke-width=\"3\"");
            for (unsigned j = 0; j < 6; j++) {
                char attr[160];
                if (!dump_be_bytes(d->backend_id, j))
                    continue;
                be_attrs(attr, sizeof attr, &in[i], j);
                strcat(attr, " stroke-linejoin=\"round\"");
                polyline(f, b, nb, &in[i], &x, &y, 2 + j, attr);
            }
        } else {
            fprintf(f, "<text class=\"dim\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no sample yet</text>",
                    (x.p0 + x.p1) / 2, (y.p0 + y.p1) / 2);
        }
        fputs("</svg>\n", f);
        fputs("<details><summary>The numbers behind this chart</summary><div class=\"scroll\">\n", f);
        fprintf(f, "<table data-input=\"%zu\" data-kind=\"backend\">\n<caption>", i);
        htmlfmt_esc(f, in[i].label);
        fprintf(f, ": the backend's statistics over time in %zu row%s (each the last point in %.0f "
                   "pixels of the chart, and when its figures were taken)</caption>\n<thead><tr>"
                   "<th class=\"l\" scope=\"col\">since start</th><th scope=\"col\">taken</th>",
                nr, nr == 1 ? "" : "s", TABLE_PX);
        for (unsigned j = 0; j < 6; j++)
            if (*dump_be_field(d->backend_id, j)) {
                fprintf(f, "<th scope=\"col\" data-field=\"%s\">", dump_be_field(d->backend_id, j));
                htmlfmt_esc(f, dump_be_field(d->backend_id, j));
                fputs("</th>", f);
            }
        fputs("</tr></thead>\n<tbody>\n", f);
        for (size_t k = 0; k < nr; k++) {
            char tk[48];
            fprintf(f, "<tr data-t=\"%llu\" data-taken=\"%llu\"><th scope=\"row\">%s</th><td>%s</td>",
                    (unsigned long long)r[k].t_ns, (unsigned long long)r[k].be.t_ns,
                    figfmt_elapsed(a, sizeof a, since_start(d, r[k].t_ns)),
                    r[k].be.t_ns ? figfmt_elapsed(tk, sizeof tk, since_start(d, r[k].be.t_ns)) : "-");
            for (unsigned j = 0; j < 6; j++) {
                if (!*dump_be_field(d->backend_id, j))
                    continue;
                fprintf(f, "<td data-v=\"%llu\">", (unsigned long long)r[k].be.v[j]);
                if (dump_be_bytes(d->backend_id, j))
                    fputs(figfmt_bytes(a, sizeof a, r[k].be.v[j]), f);
                else
                    fprintf(f, "%llu", (unsigned long long)r[k].be.v[j]);
                fputs("</td>", f);
            }
            fputs("</tr>\n", f);
        }
        fputs("</tbody>\n</table>\n</div></details>\n</figure>\n", f);
        free(b);
        free(r);
    }
    fputs("</div>\n</section>\n", f);
    return 0;
}

/* ---- Size classes ---- */

/* The dumps of the inputs, for figures.h's pickers. */
static void dumps_of(const struct input *in, size_t n, const struct dump **out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = in[i].d;
}

static void class_chart(FILE *f, const struct input *in, size_t n)
{
    unsigned pick[SIZECLASS_COUNT];
    const struct dump *ds[HTML_INPUTS_MAX] = { NULL };
    int more;
    dumps_of(in, n, ds);
    int m = fig_pick_classes(ds, n, FK_USABLE, CLASS_BARS_MAX, pick, &more);
    const double lab_w = 110, right = 130, bar_h = n > 4 ? 6 : n > 2 ? 8 : 11, gap = 2, pad = 8;
    double row_h = (double)n * bar_h + (double)(n - 1) * gap + pad, top = 6, h;
    uint64_t vmax = 0;
    struct htmlfmt_byte_ticks bt;
    struct htmlfmt_scale x;
    char a[48], b[48];

    fputs("<section id=\"classes\">\n<h2>Live bytes by size class</h2>\n<p class=\"lead\">Usable "
          "bytes of the blocks live now, per class of usable size (exact), for the classes that "
          "hold the most in any input.</p>\n", f);
    if (m == 0) {
        fputs("<p class=\"note\">No live blocks.</p>\n</section>\n", f);
        return;
    }
    for (int k = 0; k < m; k++)
        for (size_t i = 0; i < n; i++)
            if (in[i].d->cls[pick[k]].live_usable > vmax)
                vmax = in[i].d->cls[pick[k]].live_usable;
    htmlfmt_byte_ticks(vmax, &bt);
    x.v0 = 0;
    x.v1 = bt.top;
    x.p0 = lab_w;
    x.p1 = PAGE_W - right;
    h = top + m * row_h + 40;
    fputs("<figure>\n<div class=\"legend\">", f);
    input_legend(f, in, n);
    fputs("</div>\n", f);
    svg_open(f, "cls", PAGE_W, h, "Live usable bytes by size class",
             "Horizontal bars per size class, one per input, on one byte scale.");
    fputs("<g class=\"ax\">", f);
    double yb = top + m * row_h;
    for (int i = 0; i <= bt.n; i++) {
        double px = htmlfmt_at(&x, i * bt.step * bt.unit);
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"%s/>", px, px, top - 2, yb,
                i == 0 ? " class=\"base\"" : "");
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", px, yb + 16,
                htmlfmt_tick_bytes(a, sizeof a, &bt, i));
    }
    fprintf(f, "<text class=\"at\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">live usable bytes (%s)"
               "</text></g>\n", (x.p0 + x.p1) / 2, yb + 34, bt.uname);
    for (int k = 0; k < m; k++) {
        double ry = top + k * row_h;
        fprintf(f, "<text class=\"lab\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", lab_w - 8,
                ry + (row_h - pad) / 2 + 4.5, figfmt_class(a, sizeof a, pick[k], FF_WORDS));
        for (size_t i = 0; i < n; i++) {
            uint64_t v = in[i].d->cls[pick[k]].live_usable;
            double by = ry + (double)i * (bar_h + gap), w = htmlfmt_at(&x, (double)v) - x.p0;
            if (!v)
                continue;
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
                    x.p0, by, w < 1 ? 1 : w, bar_h, in[i].colour);
            htmlfmt_esc(f, in[i].label);
            fprintf(f, ", %s: %s live usable</title></rect>", a, figfmt_bytes(b, sizeof b, v));
            /* every bar's value where bars are tall enough, else the row's largest */
            int biggest = 1;   /* the first input with the row's largest value */
            for (size_t k2 = 0; k2 < n; k2++)
                biggest &= k2 < i ? in[k2].d->cls[pick[k]].live_usable < v
                                  : in[k2].d->cls[pick[k]].live_usable <= v;
            if (bar_h >= 10 || biggest)
                fprintf(f, "<text class=\"dim\" x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\">%s</text>",
                        x.p0 + (w < 1 ? 1 : w) + 5, bar_h >= 10 ? by + bar_h - 0.5 : ry + (row_h - pad) / 2 + 4,
                        bar_h >= 10 ? 10.5 : 11.0, figfmt_bytes(b, sizeof b, v));
            fputc('\n', f);
        }
    }
    fputs("</svg>\n<details><summary>The numbers behind this chart, every class</summary>"
          "<div class=\"scroll\">\n<table data-kind=\"classes\">\n<caption>Per size class: "
          "allocations, live blocks, live requested and usable bytes</caption>\n<thead><tr>"
          "<th class=\"l\" scope=\"col\">usable size</th>", f);
    for (size_t i = 0; i < n; i++) {
        fputs("<th scope=\"col\">", f);
        swatch(f, &in[i]);
        htmlfmt_esc(f, in[i].label);
        fputs(": allocations</th><th scope=\"col\">live</th><th scope=\"col\">live requested</th>"
              "<th scope=\"col\">live usable</th>", f);
    }
    fputs("</tr></thead>\n<tbody>\n", f);
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        int any = 0;
        for (size_t i = 0; i < n; i++)
            any |= in[i].d->cls[c].allocs != 0 || in[i].d->cls[c].live_count != 0;
        if (!any)
            continue;
        fprintf(f, "<tr data-class=\"%u\"><th class=\"l\" scope=\"row\">%s</th>", c,
                figfmt_class(a, sizeof a, c, FF_WORDS));
        for (size_t i = 0; i < n; i++) {
            const struct dump_class *k = &in[i].d->cls[c];
            char e[48];
            fprintf(f, "<td data-input=\"%zu\" data-allocs=\"%llu\">%s</td><td data-live-count=\"%llu\">%s</td>",
                    i, (unsigned long long)k->allocs, figfmt_count(a, sizeof a, (double)k->allocs),
                    (unsigned long long)k->live_count, figfmt_count(b, sizeof b, (double)k->live_count));
            fprintf(f, "<td data-live-bytes=\"%llu\">%s</td><td data-live-usable=\"%llu\">%s</td>",
                    (unsigned long long)k->live_req, figfmt_bytes(a, sizeof a, k->live_req),
                    (unsigned long long)k->live_usable, figfmt_bytes(e, sizeof e, k->live_usable));
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody>\n</table>\n</div></details>\n</figure>\n</section>\n", f);
}

/* ---- Heat maps ---- */

static void heat_maps(FILE *f, const struct input *in, size_t n, int ages)
{
    unsigned pick[SIZECLASS_COUNT];
    const struct dump *ds[HTML_INPUTS_MAX] = { NULL };
    int more;
    dumps_of(in, n, ds);
    int m = fig_pick_classes(ds, n, ages ? FK_AGE : FK_LIFE, HEAT_ROWS_MAX, pick, &more);
    const double w = n == 1 ? 760 : HALF_W, left = 84, right = 62, top = 26, rh = 13;
    double cw = (w - left - right) / LIFEBUCKET_COUNT, h = top + (m ? m : 1) * rh + 58;
    double vmax = 0;
    char a[48], b[48], num[48], col[16], id[32];
    const char *what = ages ? "age" : "lifetime";
    int rough_rows = 0;   /* rows that rest on few tracked blocks */
    /* bucket 0 is <= 1 us: the labels sit on the bounds 1 us, 1 ms, 1 s... */
    static const unsigned ticks[] = { 0, 5, 10, 14, 17, 19 };

    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < m; k++)
            for (unsigned bk = 0; bk < LIFEBUCKET_COUNT; bk++) {
                struct fig_class fc;
                fig_class_of(in[i].d, pick[k], &fc);
                double v = ages ? fc.age[bk] : fc.life[bk];
                if (v > vmax)
                    vmax = v;
            }

    fprintf(f, "<section id=\"%s\">\n<h2>%s</h2>\n", ages ? "ages" : "lifetimes",
            ages ? "Ages of live blocks" : "Lifetimes of freed blocks");
    fprintf(f, "<p class=\"lead\">%s, by size class (rows) and %s (columns, a log scale: each column "
               "4 times the one before). Cells are estimated blocks (tracked blocks, each "
               "counted for 1/p of them, p its chance to be tracked), coloured on one log scale for every input.%s</p>\n",
            ages ? "Blocks still live, by how long ago they were allocated"
                 : "Blocks freed since the start, by how long they lived",
            what, ages ? " Long-lived blocks on the right are what a cache keeps; a class that "
                         "reaches far right and grows is where to look for a leak." : "");
    if (m == 0) {
        fprintf(f, "<p class=\"note\">No tracked %s yet.</p>\n</section>\n", ages ? "live blocks" : "frees");
        return;
    }
    if (more)
        fprintf(f, "<p class=\"note\">The %d classes with the most blocks; %d more are in the tables.</p>\n",
                m, more);
    fprintf(f, "<div class=\"grid%s\">\n", n == 1 ? " one" : "");
    for (size_t i = 0; i < n; i++) {
        const struct dump *d = in[i].d;
        snprintf(id, sizeof id, "%s%zu", ages ? "age" : "life", i);
        fputs("<figure class=\"panel\">\n<h4>", f);
        swatch(f, &in[i]);
        htmlfmt_esc(f, in[i].label);
        fprintf(f, "</h4>\n");
        svg_open(f, id, w, h, ages ? "Ages of live blocks by size class" : "Lifetimes of freed blocks by size class",
                 in[i].label);
        /* column labels at the bounds */
        fputs("<g class=\"ax\">", f);
        for (size_t t = 0; t < sizeof ticks / sizeof ticks[0]; t++) {
            double px = left + (ticks[t] + 1) * cw;
            fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"v\"/>", px, px,
                    top - 5, top);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", px, top - 9,
                    figfmt_bucket(a, sizeof a, (int)(ticks[t]), FF_WORDS));
        }
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">blocks</text>", w - 2, top - 9);
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f7f8fa\" "
                   "stroke=\"#e3e6ea\"/>", left, top, cw * LIFEBUCKET_COUNT, m * rh);
        fputs("</g>\n", f);
        for (int k = 0; k < m; k++) {
            struct fig_class fc;
            fig_class_of(d, pick[k], &fc);
            const double *row = ages ? fc.age : fc.life;
            double ry = top + k * rh;
            fprintf(f, "<text class=\"dim\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>", left - 6,
                    ry + rh - 3, figfmt_class(a, sizeof a, pick[k], FF_WORDS));
            for (unsigned bk = 0; bk < LIFEBUCKET_COUNT; bk++) {
                double v = row[bk];
                if (!(v > 0))
                    continue;
                htmlfmt_heat_colour(col, sizeof col, in[i].colour,
                                    vmax > 1 ? log(v) / log(vmax) : 1);
                fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
                           "<title>%s, %s %s %s: %s</title></rect>",
                        left + bk * cw + 0.5, ry + 0.5, cw - 1, rh - 1, col, a, what,
                        bk == LIFEBUCKET_LAST ? "" : "\u2264", figfmt_bucket(b, sizeof b, (int)(bk), FF_WORDS),
                        figfmt_count(num, sizeof num, v));
            }
            double sum = ages ? fc.age_all : fc.life_all;
            int rough = ages ? fc.age_few : fc.life_few;
            rough_rows += rough;
            fprintf(f, "<text class=\"dim\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s%s", w - 2,
                    ry + rh - 3, sum > 0 ? figfmt_count(a, sizeof a, sum) : "", rough ? "*" : "");
            if (rough)
                fprintf(f, "<title>rests on %llu tracked blocks, fewer than %d: a rough shape</title>",
                        (unsigned long long)(ages ? fc.age_n : fc.life_n), FIG_FEW_TRACKED);
            fputs("</text>\n", f);
        }
        /* the colour scale, under the map */
        double ly = top + m * rh + 14, lw = 150;
        fprintf(f, "<text class=\"at\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#5d6677\">%s "
                   "(log scale, \u00d74 per column)</text>",
                left + cw * LIFEBUCKET_COUNT / 2, ly + 10, what);
        for (int s = 0; s < 10; s++) {
            htmlfmt_heat_colour(col, sizeof col, in[i].colour, s / 9.0);
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"8\" fill=\"%s\"/>",
                    left + s * lw / 10, ly + 22, lw / 10 + 0.3, col);
        }
        fprintf(f, "<text class=\"dim\" x=\"%.1f\" y=\"%.1f\">1</text><text class=\"dim\" x=\"%.1f\" "
                   "y=\"%.1f\" text-anchor=\"end\">%s blocks</text>\n",
                left, ly + 42, left + lw, ly + 42, figfmt_count(a, sizeof a, vmax));
        fputs("</svg>\n</figure>\n", f);
    }
    fputs("</div>\n", f);
    if (rough_rows)
        fprintf(f, "<p class=\"note\">* The row rests on fewer than %d tracked blocks: its shape is "
                   "rough. <code>shimdump --set sample:64 PID</code> tracks 4 times more small "
                   "blocks.</p>\n", FIG_FEW_TRACKED);

    fputs("<details><summary>The numbers behind these charts, every class</summary>"
          "<div class=\"scroll\">\n", f);
    for (size_t i = 0; i < n; i++) {
        const struct dump *d = in[i].d;
        fprintf(f, "<table data-input=\"%zu\" data-kind=\"%s\" data-sample=\"%u\">\n<caption>", i,
                ages ? "age" : "life", d->sample ? d->sample : 1);
        htmlfmt_esc(f, in[i].label);
        fprintf(f, ": %s, estimated blocks per size class and %s (at most)</caption>\n<thead><tr>"
                   "<th class=\"l\" scope=\"col\">usable size</th>",
                ages ? "live blocks" : "freed blocks", what);
        for (unsigned bk = 0; bk < LIFEBUCKET_COUNT; bk++)
            fprintf(f, "<th scope=\"col\">%s%s</th>", bk == LIFEBUCKET_LAST ? "" : "\u2264",
                    figfmt_bucket(a, sizeof a, (int)(bk), FF_WORDS));
        fputs("<th scope=\"col\">all</th></tr></thead>\n<tbody>\n", f);
        for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
            const uint64_t *row = ages ? d->cls[c].age : d->cls[c].life;
            struct fig_class fc;
            fig_class_of(d, c, &fc);
            double sum = ages ? fc.age_all : fc.life_all;
            if (!sum)
                continue;
            fprintf(f, "<tr data-class=\"%u\"><th class=\"l\" scope=\"row\">%s</th>", c,
                    figfmt_class(a, sizeof a, c, FF_WORDS));
            for (unsigned bk = 0; bk < LIFEBUCKET_COUNT; bk++) {
                if (row[bk])
                    fprintf(f, "<td data-count=\"%llu\">%s</td>", (unsigned long long)row[bk],
                            figfmt_count(a, sizeof a, ages ? fc.age[bk] : fc.life[bk]));
                else
                    fputs("<td></td>", f);
            }
            fprintf(f, "<td>%s</td></tr>\n", figfmt_count(a, sizeof a, sum));
        }
        fputs("</tbody>\n</table>\n", f);
    }
    fputs("</div></details>\n</section>\n", f);
}

/* ---- Call sites ---- */

static const char *obj_base(const struct dump *d, int obj)
{
    if (obj < 0 || (size_t)obj >= d->nobjs)
        return NULL;
    const char *p = d->objs[obj].path, *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* One frame: "function+0x1a  object", or object+offset and why it has no
 * name, or the bare address. */
static void frame_item(FILE *f, const struct dump *d, const struct dump_frame *fr)
{
    char obj[sizeof d->objs[0].path];
    const char *ob = obj_base(d, fr->obj);
    if (ob)
        snprintf(obj, sizeof obj, "%s", ob);
    fputs("<li>", f);
    if (fr->func) {
        htmlfmt_esc(f, fr->func);
        fprintf(f, "+0x%llx", (unsigned long long)fr->func_off);
        if (fr->file) {   /* its base name, the whole path on hover */
            const char *base = strrchr(fr->file, '/');
            fputs(" at <span class=\"src\" title=\"", f);
            htmlfmt_esc(f, fr->file);
            fputs("\">", f);
            htmlfmt_esc(f, base && base[1] ? base + 1 : fr->file);
            fprintf(f, ":%u</span>", fr->line);
        }
        if (ob) {
            fputs(" <span class=\"obj\">", f);
            htmlfmt_esc(f, obj);
            fputs("</span>", f);
        }
    } else if (ob) {
        htmlfmt_esc(f, obj);
        fprintf(f, "+0x%llx", (unsigned long long)fr->obj_off);
        if (fr->note) {
            fputs(" <span class=\"obj\">(", f);
            htmlfmt_esc(f, fr->note);
            fputs(")</span>", f);
        }
    } else {
        fprintf(f, "0x%llx", (unsigned long long)fr->addr);
    }
    fputs("</li>\n", f);
}

/* How much of the live bytes the sites shown hold (figures.h,
 * fig_coverage), now or at the peak, as a note under their table. */
static void cover_html(FILE *f, const struct dump *d, const struct fig_site *site, size_t n,
                       int at_peak)
{
    struct fig_cover c;
    char text[600];
    fig_coverage(d, site, n, at_peak, &c);
    if (!c.have)
        return;
    fprintf(f, "<p class=\"note%s\" data-kind=\"coverage\" data-at-peak=\"%d\" "
               "data-share=\"%.4f\">", c.rest_big ? " warn" : "", at_peak, c.share);
    /* figfmt's amounts and fixed words only, "±" among them, which
     * htmlfmt_esc would make "?": nothing of the snapshot's text */
    fputs(fig_cover_text(&c, text, sizeof text, FF_WORDS), f);
    fputs(".</p>\n", f);
}

/* The call sites as they stood at the peak of live bytes (figures.h,
 * fig_peak), beside the live ones: what the peak RSS was made of. */
static void peak_sites_html(FILE *f, const struct input *in, size_t i, const struct html_opts *o,
                            size_t top, int nframes)
{
    static struct fig_site site[64];
    const struct dump *d = in->d;
    struct fig_peak p;
    char a[48], b[48], c[48], e[48], t[48], ago[48];
    fig_peak(d, &p);
    if (!p.have)
        return;
    size_t cnt = fig_sites(d, FR_PEAK, o->long_bucket, site, top);
    if (cnt == 0)
        return;
    fprintf(f, "<table class=\"sites\" data-input=\"%zu\" data-kind=\"peak-stacks\" "
               "data-peak-ns=\"%llu\">\n<caption>", i,
            (unsigned long long)p.t_ns);
    swatch(f, in);
    htmlfmt_esc(f, in->label);
    fprintf(f, "<span class=\"note\">: at the peak of live bytes, %s, %s before the snapshot "
               "(%s requested, %s usable live; RSS %s then)</span></caption>\n<thead><tr>"
               "<th scope=\"col\">#</th><th scope=\"col\">live bytes then</th>"
               "<th scope=\"col\">blocks then</th><th scope=\"col\">live bytes now</th>"
               "<th class=\"l\" scope=\"col\">frames</th></tr></thead>\n<tbody>\n",
            figfmt_utc(t, sizeof t, p.t_ns), figfmt_dur(ago, sizeof ago, p.ago_ns, FF_WORDS),
            figfmt_bytes(a, sizeof a, p.live_req), figfmt_bytes(b, sizeof b, p.live_usable),
            figfmt_bytes(c, sizeof c, p.rss));
    for (size_t k = 0; k < cnt; k++) {
        const struct fig_site *x = &site[k];
        const struct dump_stack *s = x->s;
        fprintf(f, "<tr data-stack=\"%u\" data-peak-bytes=\"%.0f\"><td class=\"n\">%zu</td>"
                   "<td class=\"n\">%s <span class=\"obj\">%s</span></td><td class=\"n\">%s</td>"
                   "<td class=\"n\">%s</td><td class=\"l\"><ol class=\"frames\">\n",
                s->id, x->peak_bytes, k + 1, figfmt_bytes(a, sizeof a, (uint64_t)(x->peak_bytes + 0.5)),
                figfmt_err(e, sizeof e, x->peak_bytes_err, x->peak_bytes, FF_WORDS),
                figfmt_count(b, sizeof b, x->peak_blocks),
                figfmt_bytes(c, sizeof c, (uint64_t)(x->live_bytes + 0.5)));
        for (uint32_t j = 0; j < s->depth && (int)j < nframes && s->frame0 + j < d->nframes; j++)
            frame_item(f, d, &d->frames[s->frame0 + j]);
        fputs("</ol></td></tr>\n", f);
    }
    fputs("</tbody>\n</table>\n", f);
    cover_html(f, d, site, cnt, 1);
}

static void call_sites(FILE *f, const struct input *in, size_t n, const struct html_opts *o)
{
    static struct fig_site site[HTML_INPUTS_MAX][64];
    size_t cnt[HTML_INPUTS_MAX];
    size_t top = o->top > 0 ? (size_t)o->top : 5;
    int nframes = o->frames > 0 ? o->frames : 6;
    double vmax = 0;
    char a[48], b[48], c[48], e[48];

    if (top > 64)
        top = 64;
    fputs("<section id=\"sites\">\n<h2>Top call sites</h2>\n", f);
    fprintf(f, "<p class=\"lead\">The stacks whose tracked blocks hold the most live bytes, innermost "
               "frame first. Figures are estimated from the tracked blocks, each counted for 1/p of them, p "
               "its chance to be tracked (exact with sample:1); "
               "long-lived: older than %s. The bars share one scale.</p>\n",
            figfmt_bucket(a, sizeof a, (int)(o->long_bucket), FF_WORDS));
    for (size_t i = 0; i < n; i++) {
        cnt[i] = fig_sites(in[i].d, FR_LIVE, o->long_bucket, site[i], top);
        for (size_t k = 0; k < cnt[i]; k++)
            if (site[i][k].live_bytes > vmax)
                vmax = site[i][k].live_bytes;
    }
    for (size_t i = 0; i < n; i++) {
        const struct dump *d = in[i].d;
        if (d->stack_depth == 0 || cnt[i] == 0) {
            fputs("<h3>", f);
            swatch(f, &in[i]);
            htmlfmt_esc(f, in[i].label);
            fputs("</h3>\n", f);
        }
        if (d->stack_depth == 0) {
            fprintf(f, "<p class=\"note\">No call stacks in this snapshot (stacks:0%s).</p>\n",
                    d->sample == 1 ? ", the default with sample:1" : "");
            continue;
        }
        if (d->no_unwinder)
            fputs("<p class=\"note warn\">The process could load no unwinder: no stacks were recorded.</p>\n", f);
        if (d->stacks_stopped)
            fputs("<p class=\"note warn\">Stacks stopped while the process ran; its stderr says why.</p>\n", f);
        if (d->stacks_dropped)
            fprintf(f, "<p class=\"note warn\">The stack table was full for %s tracked allocations "
                       "(not shown).</p>\n", figfmt_count(a, sizeof a, (double)d->stacks_dropped));
        if (cnt[i] == 0) {
            fputs("<p class=\"note\">No stack holds live blocks.</p>\n", f);
            peak_sites_html(f, &in[i], i, o, top, nframes);
            continue;
        }
        fprintf(f, "<table class=\"sites\" data-input=\"%zu\" data-kind=\"stacks\">\n<caption>", i);
        swatch(f, &in[i]);
        htmlfmt_esc(f, in[i].label);
        fprintf(f, "<span class=\"note\">: the top %zu of %zu stacks by live bytes</span></caption>\n<thead><tr>"
                   "<th scope=\"col\">#</th><th scope=\"col\">live bytes</th>"
                   "<th scope=\"col\">long-lived</th><th scope=\"col\">blocks</th>"
                   "<th scope=\"col\">age median</th><th scope=\"col\">allocations</th>"
                   "<th class=\"l\" scope=\"col\">frames</th></tr></thead>\n<tbody>\n",
                cnt[i], d->nstacks);
        for (size_t k = 0; k < cnt[i]; k++) {
            const struct fig_site *x = &site[i][k];
            const struct dump_stack *s = x->s;
            int med = x->age_median, clamped = 0;
            uint64_t le = med >= 0 ? fig_bucket_le_ns(d, med, &clamped) : 0;
            fprintf(f, "<tr data-stack=\"%u\" data-live-bytes=\"%.0f\" data-tracked-live-bytes=\"%llu\">"
                       "<td class=\"n\">%zu</td><td class=\"n\">%s<span class=\"bar\" style=\"width:%.1fpx;"
                       "background:%s\"></span></td>",
                    s->id, x->live_bytes, (unsigned long long)s->live_req, k + 1,
                    figfmt_bytes(a, sizeof a, (uint64_t)x->live_bytes),
                    vmax > 0 ? 150.0 * x->live_bytes / vmax : 0, in[i].colour);
            fprintf(f, "<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s%s</td>"
                       "<td class=\"n\">%s</td><td class=\"l\"><ol class=\"frames\">\n",
                    figfmt_bytes(b, sizeof b, (uint64_t)x->long_bytes),
                    figfmt_count(c, sizeof c, x->live_blocks),
                    med < 0 ? "-" : med == LIFEBUCKET_LAST && !clamped ? "" : "\u2264",
                    med < 0 ? "" : clamped ? figfmt_le(e, sizeof e, le, FF_WORDS)
                                           : figfmt_bucket(e, sizeof e, med, FF_WORDS),
                    figfmt_count(a, sizeof a, x->allocs));
            for (uint32_t j = 0; j < s->depth && s->frame0 + j < d->nframes; j++) {
                if ((int)j == nframes)
                    fprintf(f, "<li><details><summary>%u more frame%s</summary><ol class=\"frames\">\n",
                            s->depth - j, s->depth - j == 1 ? "" : "s");
                frame_item(f, d, &d->frames[s->frame0 + j]);
            }
            if ((int)s->depth > nframes)
                fputs("</ol></details></li>\n", f);
            fputs("</ol></td></tr>\n", f);
        }
        fputs("</tbody>\n</table>\n", f);
        if (d->nostack_live_count)
            fprintf(f, "<p class=\"note\">%s live tracked blocks (%s) have no stack.</p>\n",
                    figfmt_count(a, sizeof a, (double)d->nostack_live_count),
                    figfmt_bytes(b, sizeof b, d->nostack_live_req));
        cover_html(f, d, site[i], cnt[i], 0);
        peak_sites_html(f, &in[i], i, o, top, nframes);
    }
    fputs("</section>\n", f);
}

/* ---- The page ---- */

int html_report(FILE *f, const struct dump *const *d, size_t n, const struct html_opts *o)
{
    struct input in[HTML_INPUTS_MAX];
    struct fig_history hist;
    int rc = 0, any_coarse = 0;

    if (n < 1 || n > HTML_INPUTS_MAX)
        return EINVAL;
    memset(in, 0, sizeof in);
    for (size_t i = 0; i < n; i++) {
        in[i].d = d[i];
        in[i].colour = htmlfmt_palette[i];
        fig_waterfall(d[i], in[i].st);
        fig_alloc_of(d[i], dump_last(d[i]), &in[i].a);
        rc = fig_history(d[i], &hist);
        in[i].pts = hist.pts;
        in[i].npts = hist.npts;
        in[i].nfine = hist.nfine;
        if (rc != 0)
            goto out;
        any_coarse |= in[i].nfine < in[i].npts;
    }
    make_labels(in, n);

    page_start(f, in, n, o);
    cards(f, in, n);
    input_notes(f, in, n);
    inputs_table(f, in, n);
    fputs("<nav aria-label=\"sections\"><a href=\"#waterfall\">where the memory goes</a>"
          "<a href=\"#rss-classes\">RSS class by class</a><a href=\"#diagnosis\">diagnosis</a>"
          "<a href=\"#over-time\">over time</a><a href=\"#allocator\">allocator</a>"
          "<a href=\"#classes\">size classes</a><a href=\"#lifetimes\">lifetimes</a>"
          "<a href=\"#ages\">ages</a><a href=\"#sites\">call sites</a></nav>\n</header>\n", f);
    waterfall(f, in, n);
    {
        const char *label[HTML_INPUTS_MAX], *colour[HTML_INPUTS_MAX];
        for (size_t i = 0; i < n; i++) {
            label[i] = in[i].label;
            colour[i] = in[i].colour;
        }
        htmlmem_sections(f, d, label, colour, n);
    }
    fputs("<section id=\"over-time\">\n<h2>RSS and live bytes over time</h2>\n<p class=\"lead\">"
          "Resident memory against the bytes the program holds, over time since each process "
          "started, every input on one scale. The distance between the two lines is the "
          "allocator's and the process's overhead.</p>\n", f);
    if ((rc = history_chart(f, in, n, 0)) != 0)
        goto out;
    if (any_coarse && (rc = history_chart(f, in, n, 1)) != 0)
        goto out;
    fputs("</section>\n", f);
    if ((rc = allocator_charts(f, in, n)) != 0)
        goto out;
    class_chart(f, in, n);
    heat_maps(f, in, n, 0);
    heat_maps(f, in, n, 1);
    call_sites(f, in, n, o);
    fprintf(f, "<footer>Made by shimdump %s (mallocshim) from ", PACKAGE_VERSION);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ", " : "", f);
        htmlfmt_esc(f, d[i]->source);
    }
    fputs(". One file: no scripts, fonts or images are loaded from anywhere.</footer>\n"
          "</main>\n</body>\n</html>\n", f);
out:
    for (size_t i = 0; i < n; i++)
        free(in[i].pts);
    return rc;
}
