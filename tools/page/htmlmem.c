/* htmlmem: RSS class by class and the diagnosis, on the page (htmlmem.h). */
#include "config.h"

#include "htmlmem.h"

#include <stdio.h>
#include <string.h>

#include "figfmt.h"
#include "figures.h"
#include "htmlfmt.h"

/* Each part's fill: anonymous in blues, file-backed in greens, shared in
 * oranges; the attributed rest of a class lighter. */
static const char *const part_fill[FM_COUNT] = { "#0072b2", "#56b4e9", "#9ecae1", "#c6dbef",
                                                 "#009e73", "#a1d99b", "#e69f00", "#fdd0a2" };

static void swatch(FILE *f, const char *col)
{
    fprintf(f, "<span class=\"sw\" style=\"background:%s\"></span>", col);
}

static void pct(FILE *f, uint64_t v, uint64_t of)
{
    fprintf(f, " <span class=\"note\">%.1f%%</span>", of ? 100.0 * (double)v / (double)of : 0);
}

static void memory(FILE *f, const struct dump *const *d, const char *const *label,
                   const char *const *colour, size_t n)
{
    struct fig_mem m[HTML_INPUTS_MAX];
    char b[32];
    int any = 0;

    for (size_t i = 0; i < n; i++) {
        fig_memory(d[i], &m[i]);
        any |= m[i].have;
    }
    fputs("<section id=\"rss-classes\">\n<h2>RSS class by class</h2>\n<p class=\"lead\">Resident "
          "memory the way the kernel counts it: anonymous, file-backed and shared, whose sum is RSS "
          "(the kernel's own counters, read from /proc/PID/status when shimdump read the process), "
          "each split by what its mappings are (/proc/PID/smaps). Parts marked ~ are attributed: "
          "the allocator's heap is its own count of what it holds, thread stacks are told by their "
          "layout, and the last part of each class is the rest of the class.</p>\n", f);
    /* one stacked bar per input, its parts in their class's colours */
    for (size_t i = 0; i < n; i++) {
        fputs("<div class=\"memrow\"><span class=\"meml\">", f);
        swatch(f, colour[i]);
        htmlfmt_esc(f, label[i]);
        fputs("</span>", f);
        if (!m[i].have) {
            fputs("<span class=\"note\">", f);
            htmlfmt_esc(f, m[i].why);
            fputs("</span></div>\n", f);
            continue;
        }
        fputs("<span class=\"membar\">", f);
        for (int k = 0; k < FM_COUNT; k++) {
            double w = m[i].rss ? 100.0 * (double)m[i].part[k].v / (double)m[i].rss : 0;
            if (w <= 0)
                continue;
            fprintf(f, "<span style=\"width:%.2f%%;background:%s\" title=\"", w, part_fill[k]);
            htmlfmt_esc(f, m[i].part[k].name);
            fprintf(f, " %s\"></span>", figfmt_bytes(b, sizeof b, m[i].part[k].v));
        }
        fprintf(f, "</span><span class=\"memv\">%s</span></div>\n", figfmt_bytes(b, sizeof b, m[i].rss));
    }
    if (any) {
        fputs("<div class=\"legend\">", f);
        for (int k = 0; k < FM_COUNT; k++) {
            fputs("<span>", f);
            swatch(f, part_fill[k]);
            htmlfmt_esc(f, fig_mem_class_name[k < FM_CODE ? FMC_ANON : k < FM_SHIM ? FMC_FILE : FMC_SHMEM]);
            fputs(": ", f);
            htmlfmt_esc(f, m[0].have ? m[0].part[k].name : "");
            fputs("</span>", f);
        }
        fputs("</div>\n", f);
        /* the numbers */
        const struct fig_mem *any_m = NULL;
        for (size_t i = 0; i < n && !any_m; i++)
            if (m[i].have)
                any_m = &m[i];
        fputs("<table class=\"mem\">\n<caption>RSS class by class: bytes, and the share of "
              "RSS</caption>\n<thead><tr><th class=\"l\" scope=\"col\">class, part</th>", f);
        for (size_t i = 0; i < n; i++) {
            fputs("<th scope=\"col\">", f);
            swatch(f, colour[i]);
            htmlfmt_esc(f, label[i]);
            fputs("</th>", f);
        }
        fputs("</tr></thead>\n<tbody>\n", f);
        for (int c = 0; c < FMC_COUNT; c++) {
            fprintf(f, "<tr data-mem=\"%s\"><th class=\"l\" scope=\"row\"><b>%s</b></th>",
                    fig_mem_class_key[c], fig_mem_class_name[c]);
            for (size_t i = 0; i < n; i++) {
                if (!m[i].have) {
                    fputs("<td>-</td>", f);
                    continue;
                }
                fprintf(f, "<td data-input=\"%zu\" data-bytes=\"%llu\"><b>%s</b>", i,
                        (unsigned long long)m[i].cls[c],
                        figfmt_bytes(b, sizeof b, m[i].cls[c]));
                pct(f, m[i].cls[c], m[i].rss);
                fputs("</td>", f);
            }
            fputs("</tr>\n", f);
            for (int k = 0; k < FM_COUNT; k++) {
                if ((int)any_m->part[k].cls != c)
                    continue;
                fprintf(f, "<tr data-mem=\"%s\"><th class=\"l\" scope=\"row\" title=\"",
                        any_m->part[k].key);
                htmlfmt_esc(f, any_m->part[k].how);
                fprintf(f, "\">&emsp;%s%s</th>", any_m->part[k].exact ? "" : "~ ", any_m->part[k].name);
                for (size_t i = 0; i < n; i++) {
                    if (!m[i].have) {
                        fputs("<td>-</td>", f);
                        continue;
                    }
                    fprintf(f, "<td data-input=\"%zu\" data-bytes=\"%llu\">%s", i,
                            (unsigned long long)m[i].part[k].v,
                            figfmt_bytes(b, sizeof b, m[i].part[k].v));
                    pct(f, m[i].part[k].v, m[i].rss);
                    fputs("</td>", f);
                }
                fputs("</tr>\n", f);
            }
        }
        fputs("<tr data-mem=\"rss\"><th class=\"l\" scope=\"row\"><b>= RSS</b></th>", f);
        for (size_t i = 0; i < n; i++) {
            if (!m[i].have)
                fputs("<td>-</td>", f);
            else
                fprintf(f, "<td data-input=\"%zu\" data-bytes=\"%llu\"><b>%s</b></td>", i,
                        (unsigned long long)m[i].rss,
                        figfmt_bytes(b, sizeof b, m[i].rss));
        }
        fputs("</tr>\n</tbody>\n</table>\n<p class=\"note\">", f);
        for (int k = 0; k < FM_COUNT; k++) {
            htmlfmt_esc(f, any_m->part[k].name);
            fputs(": ", f);
            htmlfmt_esc(f, any_m->part[k].how);
            fputs(k + 1 < FM_COUNT ? ". " : ".", f);
        }
        fputs("</p>\n", f);
    }
    for (size_t i = 0; i < n; i++) {
        if (!m[i].vsz_note[0])
            continue;
        fputs("<p class=\"warn\">", f);
        swatch(f, colour[i]);
        htmlfmt_esc(f, label[i]);
        fputs(": ", f);
        htmlfmt_esc(f, m[i].vsz_note);
        fputs("</p>\n", f);
    }
    fputs("</section>\n", f);
}

static void diagnosis(FILE *f, const struct dump *const *d, const char *const *label,
                      const char *const *colour, size_t n)
{
    static const char *const sev[] = { "info", "warn", "bad" };
    fputs("<section id=\"diagnosis\">\n<h2>Diagnosis</h2>\n<p class=\"lead\">What the figures "
          "show and what to try, each with the figures it rests on and how sure it is; a check "
          "to run before changing anything.</p>\n", f);
    for (size_t i = 0; i < n; i++) {
        struct fig_finding fd[FIG_FINDINGS_MAX];
        size_t k = fig_diagnose(d[i], fd, FIG_FINDINGS_MAX);
        if (n > 1) {
            fputs("<h3>", f);
            swatch(f, colour[i]);
            htmlfmt_esc(f, label[i]);
            fputs("</h3>\n", f);
        }
        fputs("<ul class=\"diag\">\n", f);
        for (size_t j = 0; j < k; j++) {
            fprintf(f, "<li class=\"%s\" data-finding=\"%s\"><b>%s</b> <span class=\"note\">"
                    "(%s confidence)</span>: ", sev[fd[j].sev], fd[j].id, fd[j].id,
                    fig_conf_name[fd[j].conf]);
            htmlfmt_esc(f, fd[j].what);
            if (fd[j].fix[0]) {
                fputs("<br><span class=\"dk\">fix</span> ", f);
                htmlfmt_esc(f, fd[j].fix);
            }
            if (fd[j].check[0]) {
                fputs("<br><span class=\"dk\">check</span> ", f);
                htmlfmt_esc(f, fd[j].check);
            }
            fputs("<br><span class=\"dk\">from</span> <span class=\"note\">", f);
            htmlfmt_esc(f, fd[j].rests_on);
            fputs("</span></li>\n", f);
        }
        fputs("</ul>\n", f);
    }
    fputs("</section>\n", f);
}

void htmlmem_sections(FILE *f, const struct dump *const *d, const char *const *label,
                      const char *const *colour, size_t n)
{
    if (n > HTML_INPUTS_MAX)
        n = HTML_INPUTS_MAX;
    memory(f, d, label, colour, n);
    diagnosis(f, d, label, colour, n);
}
