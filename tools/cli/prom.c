/* prom: the Prometheus text exposition of dumps (see prom.h). Every value
 * comes from figures.h or is a count the dump holds as read. */
#include "config.h"

#include "prom.h"

#include "figures.h"

#include <string.h>

/* The process's name (the config key name:, which the shim writes second
 * in its effective config), or NULL: its length in *n. */
static const char *config_name(const struct dump *d, size_t *n)
{
    const char *c = d->config, *p = strstr(c, ",name:");
    if (strncmp(c, "name:", 5) == 0)
        p = c;
    else if (p)
        p++;
    else
        return NULL;
    p += 5;
    *n = strcspn(p, ",");
    return *n ? p : NULL;
}

/* A label's value, n bytes of s: \ and " escaped (a file's text is
 * already free of control characters). */
static void label_value(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n && s[i]; i++) {
        if (s[i] == '\\' || s[i] == '"')
            fputc('\\', f);
        fputc(s[i], f);
    }
}

/* Each series is labelled with what survives a restart (comm, and the
 * name the config gave) besides the pid. */
static void labels(FILE *f, const struct dump *d)
{
    size_t nn;
    const char *name = config_name(d, &nn);
    fprintf(f, "{pid=\"%u\",comm=\"", d->pid);
    label_value(f, d->comm, sizeof d->comm);
    fprintf(f, "\",backend=\"%s\"", d->backend);
    if (name) {
        fputs(",name=\"", f);
        label_value(f, name, nn);
        fputc('"', f);
    }
}

/* A metric's value for one dump: 1 and *v, or 0 when it has none. */
struct metric {
    const char *name, *type, *help;
    int (*get)(const struct dump *d, const struct fig_step *st, double *v);
};

#define GETTER(fn, expr) \
    static int fn(const struct dump *d, const struct fig_step *st, double *v) \
    { \
        (void)d; \
        (void)st; \
        expr; \
    }
GETTER(g_up, *v = d->state == DS_ALIVE; return 1)
GETTER(g_allocs, *v = (double)d->total.allocs; return 1)
GETTER(g_frees, *v = (double)d->total.frees; return 1)
GETTER(g_reallocs, *v = (double)d->total.reallocs; return 1)
GETTER(g_req, *v = (double)d->total.req_bytes; return 1)
GETTER(g_live_count, *v = (double)d->total.live_count; return 1)
GETTER(g_live, *v = (double)st[FS_REQ].v; return 1)
GETTER(g_live_exact, *v = d->exact; return 1)
GETTER(g_live_err, *v = (double)st[FS_REQ].err; return 1)
GETTER(g_live_usable, *v = (double)st[FS_USABLE].v; return 1)
GETTER(g_in_use, *v = (double)st[FS_INUSE].v; return st[FS_INUSE].have)
GETTER(g_footprint, *v = (double)st[FS_FOOT].v; return st[FS_FOOT].have)
GETTER(g_be_age, *v = (double)st[FS_INUSE].age.ns / 1e9; return st[FS_INUSE].age.known)
GETTER(g_rss, *v = (double)st[FS_RSS].v; return st[FS_RSS].have)
GETTER(g_rss_anon, const struct dump_sample *s = dump_last(d); if (!s) return 0; *v = (double)s->rss_anon; return 1)
GETTER(g_rss_huge, const struct dump_sample *s = dump_last(d); if (!s) return 0; *v = (double)s->rss_huge; return 1)
GETTER(g_vsz, const struct dump_sample *s = dump_last(d); if (!s) return 0; *v = (double)s->vsz; return 1)
GETTER(g_sample_age, *v = (double)st[FS_RSS].age.ns / 1e9; return st[FS_RSS].age.known)
GETTER(g_peak, *v = (double)st[FS_PEAK].v; return st[FS_PEAK].have)
GETTER(g_sample, *v = d->sample; return 1)
GETTER(g_sample_bytes, *v = (double)d->sample_bytes; return 1)
GETTER(g_start, *v = (double)(d->start_ns / 1000000000ull); return 1)
GETTER(g_from_copy, *v = d->copy; return 1)
GETTER(g_copy_stale, *v = d->copy_stale; return 1)
GETTER(g_tracked_dropped, *v = (double)d->dropped; return 1)
GETTER(g_stacks_dropped, *v = (double)d->stacks_dropped; return d->stack_depth > 0)
#undef GETTER

static const struct metric metrics[] = {
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
    { "mallocshim_allocator_in_use_bytes", "gauge",
      "What the allocator has handed out, as it counts (glibc uordblks+hblkhd, jemalloc active, "
      "tcmalloc allocated)", g_in_use },
    { "mallocshim_allocator_footprint_bytes", "gauge",
      "What the allocator holds (glibc arena+hblkhd, jemalloc resident, tcmalloc heap less "
      "unmapped)", g_footprint },
    { "mallocshim_backend_stats_age_seconds", "gauge",
      "How long before the snapshot the allocator's figures were taken", g_be_age },
    { "mallocshim_rss_bytes", "gauge", "Process resident set size", g_rss },
    { "mallocshim_rss_anon_bytes", "gauge", "Anonymous part of the RSS", g_rss_anon },
    { "mallocshim_rss_huge_bytes", "gauge", "Anonymous huge pages in the RSS", g_rss_huge },
    { "mallocshim_vsz_bytes", "gauge", "Process virtual size", g_vsz },
    { "mallocshim_sample_age_seconds", "gauge",
      "How long before the snapshot the latest sample (RSS and the rest) was taken", g_sample_age },
    { "mallocshim_peak_rss_bytes", "gauge", "Highest RSS seen", g_peak },
    { "mallocshim_sample_rate", "gauge", "About 1 in this many small blocks is tracked (1: every block)",
      g_sample },
    { "mallocshim_sample_bytes", "gauge",
      "Sampling by bytes: the mean bytes between tracked blocks as sizes grow (0: sizes do not count)",
      g_sample_bytes },
    { "mallocshim_start_time_seconds", "gauge", "When recording started, Unix time", g_start },
    { "mallocshim_read_from_copy", "gauge",
      "1 when read from the copy in the segment directory, not the process's own segment", g_from_copy },
    { "mallocshim_copy_stale", "gauge",
      "1 when the copy in the segment directory could not be rewritten (its file system full?)",
      g_copy_stale },
    { "mallocshim_tracked_dropped_total", "counter",
      "Tracked allocations that found the table full: left out of lifetimes, ages and call sites",
      g_tracked_dropped },
    { "mallocshim_stacks_dropped_total", "counter",
      "Call stacks that found the stack table full (with stacks on)", g_stacks_dropped },
};

void prom_write(FILE *f, const struct dump *const *d, size_t n)
{
    for (size_t m = 0; m < sizeof metrics / sizeof metrics[0]; m++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", metrics[m].name, metrics[m].help,
                metrics[m].name, metrics[m].type);
        for (size_t i = 0; i < n; i++) {
            struct fig_step st[FS_COUNT];
            double v;
            fig_waterfall(d[i], st);
            if (!metrics[m].get(d[i], st, &v))
                continue;
            fputs(metrics[m].name, f);
            labels(f, d[i]);
            if (v >= 0 && v < 0x1p64 && v == (double)(uint64_t)v)
                fprintf(f, "} %llu\n", (unsigned long long)v);
            else
                fprintf(f, "} %.3f\n", v);
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
            labels(f, d[i]);
            fprintf(f, ",stat=\"%s\"} %llu\n", name, (unsigned long long)s->be.v[k]);
        }
    }
    /* RSS class by class (figures.h, fig_memory), where /proc was read */
    fputs("# HELP mallocshim_rss_part_bytes RSS class by class: the kernel's classes (anon, file, "
          "shmem) split by what their mappings are; summing to RSS\n"
          "# TYPE mallocshim_rss_part_bytes gauge\n", f);
    for (size_t i = 0; i < n; i++) {
        struct fig_mem mem;
        fig_memory(d[i], &mem);
        for (int k = 0; k < FM_COUNT && mem.have; k++) {
            fputs("mallocshim_rss_part_bytes", f);
            labels(f, d[i]);
            fprintf(f, ",class=\"%s\",part=\"%s\"} %llu\n", fig_mem_class_key[mem.part[k].cls],
                    mem.part[k].key, (unsigned long long)mem.part[k].v);
        }
    }
    /* the diagnosis (figures.h, fig_diagnose): 1 per finding */
    fputs("# HELP mallocshim_finding The diagnosis: 1 per finding, by its id (shimdump(1), "
          "DIAGNOSIS)\n# TYPE mallocshim_finding gauge\n", f);
    for (size_t i = 0; i < n; i++) {
        static const char *const sev[] = { "info", "warn", "bad" };
        struct fig_finding fd[FIG_FINDINGS_MAX];
        size_t k = fig_diagnose(d[i], fd, FIG_FINDINGS_MAX);
        for (size_t j = 0; j < k; j++) {
            fputs("mallocshim_finding", f);
            labels(f, d[i]);
            fprintf(f, ",id=\"%s\",severity=\"%s\",confidence=\"%s\"} 1\n", fd[j].id,
                    sev[fd[j].sev], fig_conf_name[fd[j].conf]);
        }
    }
    /* usable_max, not le: Prometheus keeps le for the cumulative buckets of
     * a histogram, and these are not cumulative */
    fputs("# HELP mallocshim_class_live_usable_bytes Live usable bytes per size class "
          "(usable_min and usable_max: the class's smallest and largest usable size)\n"
          "# TYPE mallocshim_class_live_usable_bytes gauge\n", f);
    for (size_t i = 0; i < n; i++)
        for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
            if (!d[i]->cls[c].live_usable)
                continue;
            fputs("mallocshim_class_live_usable_bytes", f);
            labels(f, d[i]);
            fprintf(f, ",usable_min=\"%zu\"", sizeclass_min(c));
            if (c == SIZECLASS_LAST)
                fputs(",usable_max=\"+Inf\"", f);
            else
                fprintf(f, ",usable_max=\"%zu\"", sizeclass_max(c));
            fprintf(f, "} %llu\n", (unsigned long long)d[i]->cls[c].live_usable);
        }
}
