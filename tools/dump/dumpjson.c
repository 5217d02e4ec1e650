/* dumpjson: a struct dump as JSON (the schema in doc/shimdump.1), and back:
 * a small strict parser, bounded in depth and size, for --diff of saved
 * snapshots and for reading a saved snapshot as if it were live.
 *
 * The schema has one source: the tables below. Every plain field of every
 * object (its key, its kind, where it lives in struct dump) is spelt once;
 * the writer and the reader walk the same table, dump_write_json_schema
 * prints it (t/cli/schema.sh holds doc/shimdump.1 to it), and the reader
 * rejects a document that lacks any of them. The few fields that are not
 * plain (an enum as a word, nullable pairs, histograms, the backend's own
 * figures) are written and read next to their tables, by name from
 * the same lists.
 *
 * The parser is our own, kept small and fuzzed (t/fuzz), rather than a
 * library's, for two reasons measured on 2026-12-01 (json-c 0.16, jansson
 * 2.14, Debian 12): jansson's integers are long long, so it refuses the
 * counters above 2^63 that a snapshot may hold ("too big integer": a
 * saturated standard error, a corrupt segment's counts); and neither
 * bounds the values it builds, so a hostile file costs about 37 bytes of
 * memory per input byte (32 MiB of "0," took 1.2 GB and 7.2 s in json-c,
 * 657 MB in jansson; 64 MiB is the largest file shimdump reads), where this
 * parser stops at J_NODES_MAX values (at 6M: 363 MB for those 32 MiB, 396
 * MB for 64 MiB, exit 5; 253 MB at the 4M it had first). A day of 1 s
 * samples (86,400, 42 MB) reads in 1.5 s and 212 MB here, 1.8 s and 374 MB
 * with json-c. */
#include "config.h"

#include "dump.h"

#include "figures.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- The schema ---- */

enum jkind {
    JK_U64,       /* uint64_t: a number */
    JK_U32,       /* uint32_t: a number below 2^32 */
    JK_BOOL,      /* int: true or false */
    JK_NOT,       /* int: true or false, stored negated */
    JK_TEXT,      /* char[]: a string, control and non-ASCII characters read as '?' */
    JK_PATH,      /* char[]: a string, every byte but NUL kept */
    JK_EST,       /* double: an estimate, written as a whole number (written only) */
    JK_RATE,      /* double: written to a tenth (written only) */
    JK_RATIO,     /* double: written to 4 decimals (written only) */
};

struct jfield {
    const char *key;
    enum jkind kind;
    size_t off, cap;   /* where it lives; cap: the array's size (JK_TEXT, JK_PATH) */
    int since;         /* the format version that added it: older documents lack it */
};

#define JF(type, key, kind, field) JFV(type, key, kind, field, 1)
#define JFV(type, key, kind, field, version) \
    { key, kind, offsetof(struct type, field), sizeof(((struct type *)0)->field), version }
#define NFIELDS(t) (sizeof t / sizeof t[0])

static const struct jfield root_fields[] = {
    JF(dump, "source", JK_PATH, source),
    JF(dump, "pid", JK_U32, pid),
    JF(dump, "uid", JK_U32, uid),
    JF(dump, "comm", JK_TEXT, comm),
    /* state: a word (state_name) */
    JF(dump, "backend", JK_TEXT, backend),
    JF(dump, "backend_version", JK_TEXT, backend_version),
    JF(dump, "config", JK_TEXT, config),
    JF(dump, "started_ns", JK_U64, start_ns),
    JF(dump, "heartbeat_ns", JK_U64, heartbeat_ns),
    JF(dump, "snapshot_ns", JK_U64, snap_ns),
    JF(dump, "interval_ms", JK_U32, interval_ms),
    JF(dump, "threads_seen", JK_U64, threads_seen),
    JFV(dump, "live_usable_bytes_high", JK_U64, live_usable_hi, 3),
};

static const struct jfield sampling_fields[] = {
    JF(dump, "sample", JK_U32, sample),
    JFV(dump, "sample_bytes", JK_U64, sample_bytes, 4),
    JFV(dump, "track", JK_NOT, track_off, 5),
    JFV(dump, "stacks", JK_NOT, stacks_off, 5),
    JFV(dump, "settings_changes", JK_U32, settings_n, 5),
    JFV(dump, "track_was_off", JK_BOOL, track_was_off, 5),
    /* live_bytes: "exact" or "estimate" (dump.exact) */
    JF(dump, "tracked_dropped", JK_U64, dropped),
    JF(dump, "inherited", JK_BOOL, inherited),
    JF(dump, "consistent", JK_BOOL, consistent),
    JF(dump, "counts_ok", JK_BOOL, counts_ok),
    JF(dump, "copy", JK_BOOL, copy),
    JF(dump, "copy_stale", JK_BOOL, copy_stale),
    JF(dump, "copy_ns", JK_U64, copy_ns),
};

/* sampling.changes[]: the last settings changes (shimdump --set) */
static const struct jfield change_fields[] = {
    JFV(dump_change, "t_ns", JK_U64, t_ns, 5),
    JFV(dump_change, "sample", JK_U32, sample, 5),
    JFV(dump_change, "sample_bytes", JK_U64, sample_bytes, 5),
    JFV(dump_change, "track", JK_BOOL, track, 5),
    JFV(dump_change, "stacks", JK_BOOL, stacks, 5),
};

/* totals, and each size class after its class, min_size and max_size */
static const struct jfield count_fields[] = {
    JF(dump_class, "allocs", JK_U64, allocs),
    JF(dump_class, "frees", JK_U64, frees),
    JF(dump_class, "reallocs", JK_U64, reallocs),
    JF(dump_class, "requested_bytes", JK_U64, req_bytes),
    JF(dump_class, "live_count", JK_U64, live_count),
    JF(dump_class, "live_bytes", JK_U64, live_req),
    JF(dump_class, "live_bytes_stderr", JK_U64, live_req_err),
    JF(dump_class, "live_usable_bytes", JK_U64, live_usable),
    JFV(dump_class, "tracked_freed", JK_U64, tracked_freed, 5),
    JFV(dump_class, "tracked_live", JK_U64, tracked_live, 5),
};

static const struct jfield series_fields[] = {
    JF(dump_sample, "t", JK_U64, t_ns),
    JF(dump_sample, "live_count", JK_U64, live_count),
    JF(dump_sample, "live_bytes", JK_U64, live_req),
    JF(dump_sample, "live_usable_bytes", JK_U64, live_usable),
    JF(dump_sample, "allocs", JK_U64, allocs),
    JF(dump_sample, "frees", JK_U64, frees),
    JF(dump_sample, "requested_bytes", JK_U64, req_bytes),
    JF(dump_sample, "rss_bytes", JK_U64, rss),
    JF(dump_sample, "rss_anon_bytes", JK_U64, rss_anon),
    JF(dump_sample, "rss_huge_bytes", JK_U64, rss_huge),
    JF(dump_sample, "vsz_bytes", JK_U64, vsz),
    JFV(dump_sample, "rss_huge_ns", JK_U64, rss_huge_ns, 3),
    /* backend_stats: the backend's own fields (dump_be_field), and be_fields */
};

static const struct jfield stacks_fields[] = {
    JF(dump, "depth", JK_U32, stack_depth),
    JF(dump, "unwinder", JK_NOT, no_unwinder),
    JF(dump, "stopped", JK_BOOL, stacks_stopped),
    JF(dump, "symbolized", JK_BOOL, symbolized),
    JF(dump, "stored", JK_U64, stacks_used),
    JF(dump, "dropped", JK_U64, stacks_dropped),
    JF(dump, "failed", JK_U64, stacks_failed),
    JF(dump, "objects_dropped", JK_U64, objs_dropped),
    JF(dump, "ages_at_ns", JK_U64, ages_at_ns),
    JF(dump, "no_stack_live_count", JK_U64, nostack_live_count),
    JF(dump, "no_stack_live_bytes", JK_U64, nostack_live_req),
    JF(dump, "libunwind_threads", JK_U64, fast_threads),
    JF(dump, "libunwind_moves", JK_U64, fast_moves),
    /* the peak of live bytes whose call sites were kept (dump.h, struct dump_peak) */
    JFV(dump, "peak_ns", JK_U64, at_peak.ns, 5),
    JFV(dump, "peak_live_usable_bytes", JK_U64, at_peak.live_usable, 5),
    JFV(dump, "peak_live_bytes", JK_U64, at_peak.live_req, 5),
    JFV(dump, "peak_rss_bytes", JK_U64, at_peak.rss, 5),
    JFV(dump, "peak_no_stack_live_count", JK_U64, at_peak.nostack_count, 5),
    JFV(dump, "peak_no_stack_live_bytes", JK_U64, at_peak.nostack_req, 5),
    JFV(dump, "peak_no_stack_live_bytes_stderr", JK_U64, at_peak.nostack_req_err, 5),
    JFV(dump, "peak_tracked_dropped", JK_U64, at_peak.tracked_dropped, 5),
    /* objects, stacks: arrays */
};

static const struct jfield object_fields[] = {
    JF(dump_obj, "path", JK_PATH, path),
    JF(dump_obj, "bias", JK_U64, bias),
    JF(dump_obj, "lo", JK_U64, lo),
    JF(dump_obj, "hi", JK_U64, hi),
    /* build_id: hex; main: true or false (SEG_OBJ_MAIN) */
};

static const struct jfield stack_fields[] = {
    JF(dump_stack, "id", JK_U32, id),
    JF(dump_stack, "allocs", JK_U64, allocs),
    JF(dump_stack, "requested_bytes", JK_U64, req_bytes),
    JF(dump_stack, "frees", JK_U64, frees),
    JF(dump_stack, "live_count", JK_U64, live_count),
    JF(dump_stack, "live_bytes", JK_U64, live_req),
    JF(dump_stack, "live_usable_bytes", JK_U64, live_usable),
    JFV(dump_stack, "live_bytes_stderr", JK_U64, live_req_err, 4),
    JFV(dump_stack, "tracked_allocs", JK_U64, tracked_allocs, 4),
    JFV(dump_stack, "tracked_live", JK_U64, tracked_live, 4),
    JFV(dump_stack, "peak_live_count", JK_U64, peak_count, 5),
    JFV(dump_stack, "peak_live_bytes", JK_U64, peak_req, 5),
    JFV(dump_stack, "peak_live_bytes_stderr", JK_U64, peak_req_err, 5),
    JFV(dump_stack, "peak_tracked_live", JK_U64, peak_tracked, 5),
    /* lifetime_hist, age_hist, age_bytes_hist, age_bytes_stderr_hist; frames */
};

static const struct jfield frame_fields[] = {
    JF(dump_frame, "addr", JK_U64, addr),
    /* object and offset, function and function_offset, file and line: each
     * pair both null or both set; note: a string or null */
};

/* history: its tiers, fine to coarse, and their points. A point's figures
 * are its span's last sample's (as in series), then the extremes. */
static const struct jfield tier_fields[] = {
    JF(dump_tier, "step_ms", JK_U64, step_ms),
    JF(dump_tier, "dropped", JK_U64, dropped),
};
static const struct jfield point_fields[] = {
    JF(dump_point, "t_ns", JK_U64, last.t_ns),
    JF(dump_point, "samples", JK_U32, samples),
    JF(dump_point, "rss_bytes_min", JK_U64, rss_min),
    JF(dump_point, "rss_bytes_max", JK_U64, rss_max),
    JF(dump_point, "live_usable_bytes_max", JK_U64, live_usable_max),
    JF(dump_point, "live_bytes_max", JK_U64, live_req_max),
    JF(dump_point, "live_count", JK_U64, last.live_count),
    JF(dump_point, "live_bytes", JK_U64, last.live_req),
    JF(dump_point, "live_usable_bytes", JK_U64, last.live_usable),
    JF(dump_point, "allocs", JK_U64, last.allocs),
    JF(dump_point, "frees", JK_U64, last.frees),
    JF(dump_point, "requested_bytes", JK_U64, last.req_bytes),
    JF(dump_point, "rss_bytes", JK_U64, last.rss),
    JF(dump_point, "rss_anon_bytes", JK_U64, last.rss_anon),
    JF(dump_point, "rss_huge_bytes", JK_U64, last.rss_huge),
    JF(dump_point, "vsz_bytes", JK_U64, last.vsz),
    JFV(dump_point, "rss_huge_ns", JK_U64, last.rss_huge_ns, 3),
};

/* backend_stats: besides the backend's own fields (dump_be_field), when
 * they were taken and the floor under live usable bytes then. */
static const struct jfield be_fields[] = {
    JFV(dump_be, "taken_ns", JK_U64, t_ns, 3),
    JFV(dump_be, "live_usable_floor_bytes", JK_U64, live_lo, 3),
    JFV(dump_be, "live_usable_ceiling_bytes", JK_U64, live_hi, 3),
};

/* process_memory: the process's memory as /proc told it when shimdump read
 * it (dump.h, struct dump_mem); null when not known. The one object a
 * reader may find absent (a snapshot written before shimdump read /proc):
 * then it is not known either. */
static const struct jfield mem_fields[] = {
    JF(dump_mem, "taken_ns", JK_U64, t_ns),
    JF(dump_mem, "read_ns", JK_U64, read_ns),
    JF(dump_mem, "rss_bytes", JK_U64, rss),
    JF(dump_mem, "rss_anon_bytes", JK_U64, rss_anon),
    JF(dump_mem, "rss_file_bytes", JK_U64, rss_file),
    JF(dump_mem, "rss_shmem_bytes", JK_U64, rss_shmem),
    JF(dump_mem, "vsz_bytes", JK_U64, vsz),
    JF(dump_mem, "swap_bytes", JK_U64, swap),
    JF(dump_mem, "threads", JK_U64, threads),
    JF(dump_mem, "cpus", JK_U64, cpus),
    JF(dump_mem, "mappings", JK_U64, mappings),
    JF(dump_mem, "brk_heap_bytes", JK_U64, brk),
    JF(dump_mem, "main_stack_bytes", JK_U64, main_stack),
    JF(dump_mem, "thread_stacks_bytes", JK_U64, thread_stacks),
    JF(dump_mem, "thread_stacks", JK_U64, nstacks),
    JF(dump_mem, "anon_mappings_bytes", JK_U64, anon_maps),
    JF(dump_mem, "anon_in_files_bytes", JK_U64, anon_in_files),
    JF(dump_mem, "file_code_bytes", JK_U64, file_code),
    JF(dump_mem, "file_other_bytes", JK_U64, file_other),
    JF(dump_mem, "shim_segment_bytes", JK_U64, shim_seg),
    JF(dump_mem, "shmem_other_bytes", JK_U64, shmem_other),
    JF(dump_mem, "largest_map_bytes", JK_U64, largest_vsz),
    JF(dump_mem, "largest_map_rss_bytes", JK_U64, largest_rss),
    JF(dump_mem, "largest_map_noaccess", JK_BOOL, largest_noaccess),
};

/* The latest sample's figures, at the top level (null before the first). */
static const char *const latest_keys[4] = { "rss_bytes", "rss_anon_bytes", "rss_huge_bytes",
                                            "vsz_bytes" };

/* A histogram's entries: {le_ns, count} ({le_ns, bytes} for age_bytes_hist). */
static const char hist_bound[] = "le_ns";

/* The keys that are not in a table, by object. */
static const char *const root_other[] = { "format_version", "tool", "state", "rss_bytes",
    "rss_anon_bytes", "rss_huge_bytes", "vsz_bytes", "peak_rss_bytes", "peak_rss_ns",
    "backend_stats", "call_stacks", "sampling", "totals", "size_classes", "series", "history",
    "figures", "process_memory", NULL };
static const char *const sampling_other[] = { "live_bytes", "changes", NULL };
static const char *const class_other[] = { "class", "min_size", "max_size", "lifetime_hist",
    "age_hist", NULL };
static const char *const series_other[] = { "backend_stats", NULL };
static const char *const tier_other[] = { "points", NULL };
static const char *const stacks_other[] = { "objects", "stacks", NULL };
static const char *const object_other[] = { "build_id", "main", NULL };

/* --stacks --json: the document, and each ranked site's estimates
 * (figures.h, struct fig_site) beside its stack. */
static const struct jfield site_fields[] = {
    JFV(fig_site, "est_live_bytes", JK_EST, live_bytes, 2),
    JFV(fig_site, "est_live_bytes_stderr", JK_EST, live_bytes_err, 3),
    JFV(fig_site, "est_long_lived_bytes", JK_EST, long_bytes, 2),
    JFV(fig_site, "est_long_lived_bytes_stderr", JK_EST, long_bytes_err, 3),
    JFV(fig_site, "est_live_blocks", JK_EST, live_blocks, 3),
    JFV(fig_site, "est_allocs_per_s", JK_RATE, allocs_per_s, 2),
    JFV(fig_site, "est_peak_live_bytes", JK_EST, peak_bytes, 5),
    JFV(fig_site, "est_peak_live_bytes_stderr", JK_EST, peak_bytes_err, 5),
    JFV(fig_site, "est_peak_live_blocks", JK_EST, peak_blocks, 5),
};
/* --stacks --json: how much of the live bytes the sites shown hold, now
 * and at the peak (figures.h, struct fig_cover), and the peak. */
static const struct jfield cover_fields[] = {
    JFV(fig_cover, "est_sites_bytes", JK_EST, sites, 5),
    JFV(fig_cover, "est_sites_bytes_stderr", JK_EST, sites_err, 5),
    JFV(fig_cover, "est_all_stacks_bytes", JK_EST, all, 5),
    JFV(fig_cover, "est_all_stacks_bytes_stderr", JK_EST, all_err, 5),
    JFV(fig_cover, "est_no_stack_bytes", JK_EST, nostack, 5),
    JFV(fig_cover, "est_no_stack_bytes_stderr", JK_EST, nostack_err, 5),
    JFV(fig_cover, "est_live_bytes", JK_EST, live, 5),
    JFV(fig_cover, "est_live_bytes_stderr", JK_EST, live_err, 5),
    JFV(fig_cover, "est_rest_bytes", JK_EST, rest, 5),
    JFV(fig_cover, "est_rest_bytes_stderr", JK_EST, rest_err, 5),
    JFV(fig_cover, "share", JK_RATIO, share, 5),
    JFV(fig_cover, "share_stderr", JK_RATIO, share_err, 5),
    JFV(fig_cover, "tracked_dropped", JK_U64, tracked_dropped, 5),
    JFV(fig_cover, "stacks_dropped", JK_U64, stacks_dropped, 5),
    JFV(fig_cover, "rest_beyond_errors", JK_BOOL, rest_big, 5),
};
static const char *const cover_other[] = { "sites_shown", "stacks_with_live_bytes", "text", NULL };
static const struct jfield peak_fields[] = {
    JFV(fig_peak, "t_ns", JK_U64, t_ns, 5),
    JFV(fig_peak, "ago_ns", JK_U64, ago_ns, 5),
    JFV(fig_peak, "since_start_s", JK_RATE, since_start_s, 5),
    JFV(fig_peak, "live_usable_bytes", JK_U64, live_usable, 5),
    JFV(fig_peak, "live_bytes", JK_U64, live_req, 5),
    JFV(fig_peak, "rss_bytes", JK_U64, rss, 5),
};
static const char *const peak_other[] = { "coverage", NULL };
static const char *const site_other[] = { "rank", "stack", NULL };
static const struct jfield sites_fields[] = {
    JF(dump, "pid", JK_U32, pid),
    JF(dump, "sample", JK_U32, sample),
    JF(dump, "stack_depth", JK_U32, stack_depth),
};
static const char *const sites_other[] = { "format_version", "tool", "stacks", "long_lived_ns",
    "uptime_s", "objects", "by_live_bytes", "by_long_lived_bytes", "by_alloc_rate",
    "by_peak_live_bytes", "coverage", "peak", NULL };

/* The figures object of --json: made by figures.h, written only (a reader
 * makes them again from the rest). Each waterfall step with its age. */
static const struct jfield step_fields[] = {
    JFV(fig_step, "ratio", JK_RATIO, ratio, 3),
    JFV(fig_step, "stderr_bytes", JK_U64, err, 3),
    JFV(fig_step, "stale", JK_BOOL, age.stale, 3),
};
static const char *const step_other[] = { "step", "name", "bytes", "taken_ns", "age_ns", NULL };
static const char *const figures_other[] = { "as_of_ns", "uptime_s", "waterfall", "notes",
    "invariants_failed", "memory", "diagnosis", NULL };
/* figures.memory (figures.h, fig_memory) and its parts; figures.diagnosis
 * (fig_diagnose). */
static const char *const memory_other[] = { "known", "why", "taken_ns", "rss_bytes", "classes",
    "parts", "vsz_note", NULL };
static const char *const memory_class_other[] = { "class", "name", "bytes", NULL };
static const char *const memory_part_other[] = { "part", "class", "name", "bytes", "exact", "how",
    NULL };
static const char *const diagnosis_other[] = { "id", "severity", "confidence", "what", "rests_on",
    "fix", "check", NULL };
static const char *const failed_other[] = { "invariant", "detail", NULL };
static const char *const stack_other[] = { "lifetime_hist", "age_hist", "age_bytes_hist",
    "age_bytes_stderr_hist", "frames", NULL };
static const char *const frame_other[] = { "object", "offset", "function", "function_offset",
    "file", "line", "note", NULL };

static void schema_line(FILE *f, const char *name, const struct jfield *t, size_t n,
                        const char *const *other)
{
    fprintf(f, "%s:", name);
    for (size_t i = 0; i < n; i++)
        fprintf(f, " %s", t[i].key);
    for (; other && *other; other++)
        fprintf(f, " %s", *other);
    fputc('\n', f);
}

void dump_write_json_schema(FILE *f)
{
    static const char *const be_name[] = { "backend_stats.glibc", "backend_stats.jemalloc",
                                           "backend_stats.tcmalloc" };
    schema_line(f, "root", root_fields, NFIELDS(root_fields), root_other);
    schema_line(f, "sampling", sampling_fields, NFIELDS(sampling_fields), sampling_other);
    schema_line(f, "changes", change_fields, NFIELDS(change_fields), NULL);
    schema_line(f, "totals", count_fields, NFIELDS(count_fields), NULL);
    schema_line(f, "size_classes", count_fields, NFIELDS(count_fields), class_other);
    schema_line(f, "series", series_fields, NFIELDS(series_fields), series_other);
    schema_line(f, "history", tier_fields, NFIELDS(tier_fields), tier_other);
    schema_line(f, "points", point_fields, NFIELDS(point_fields), series_other);
    for (int b = 0; b < 3; b++) {
        fprintf(f, "%s:", be_name[b]);
        for (unsigned i = 0; i < 6; i++)
            if (*dump_be_field(b, i))
                fprintf(f, " %s", dump_be_field(b, i));
        for (size_t i = 0; i < NFIELDS(be_fields); i++)
            fprintf(f, " %s", be_fields[i].key);
        fputc('\n', f);
    }
    schema_line(f, "call_stacks", stacks_fields, NFIELDS(stacks_fields), stacks_other);
    schema_line(f, "objects", object_fields, NFIELDS(object_fields), object_other);
    schema_line(f, "stacks", stack_fields, NFIELDS(stack_fields), stack_other);
    schema_line(f, "frames", frame_fields, NFIELDS(frame_fields), frame_other);
    schema_line(f, "figures", NULL, 0, figures_other);
    schema_line(f, "waterfall", step_fields, NFIELDS(step_fields), step_other);
    schema_line(f, "invariants_failed", NULL, 0, failed_other);
    schema_line(f, "memory", NULL, 0, memory_other);
    schema_line(f, "memory_classes", NULL, 0, memory_class_other);
    schema_line(f, "memory_parts", NULL, 0, memory_part_other);
    schema_line(f, "diagnosis", NULL, 0, diagnosis_other);
    schema_line(f, "process_memory", mem_fields, NFIELDS(mem_fields), NULL);
    schema_line(f, "stacks_json", sites_fields, NFIELDS(sites_fields), sites_other);
    schema_line(f, "sites", site_fields, NFIELDS(site_fields), site_other);
    schema_line(f, "coverage", cover_fields, NFIELDS(cover_fields), cover_other);
    schema_line(f, "peak", peak_fields, NFIELDS(peak_fields), peak_other);
    fprintf(f, "lifetime_hist: %s count\nage_hist: %s count\nage_bytes_hist: %s bytes\n"
            "age_bytes_stderr_hist: %s bytes\n", hist_bound, hist_bound, hist_bound, hist_bound);
}

/* ---- Writing ---- */

/* s as a JSON string, up to its NUL or n bytes. */
static void jstrn(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (const char *end = s + n; s < end && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void jstr(FILE *f, const char *s)
{
    jstrn(f, s, strlen(s));
}

/* The fields of table t from base, "key": value, separated by ", ";
 * `first` says whether none was written before them in this object. */
static void jfields(FILE *f, const struct jfield *t, size_t n, const void *base, int first)
{
    for (size_t i = 0; i < n; i++) {
        const char *p = (const char *)base + t[i].off;
        fprintf(f, "%s\"%s\": ", first && i == 0 ? "" : ", ", t[i].key);
        switch (t[i].kind) {
        case JK_U64:
            fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)p);
            break;
        case JK_U32:
            fprintf(f, "%u", *(const uint32_t *)p);
            break;
        case JK_BOOL:
            fputs(*(const int *)p ? "true" : "false", f);
            break;
        case JK_NOT:
            fputs(*(const int *)p ? "false" : "true", f);
            break;
        case JK_TEXT:
        case JK_PATH:
            jstrn(f, p, t[i].cap);
            break;
        case JK_EST:
            fprintf(f, "%.0f", *(const double *)p);
            break;
        case JK_RATE:
            fprintf(f, "%.1f", *(const double *)p);
            break;
        case JK_RATIO:
            fprintf(f, "%.4f", *(const double *)p);
            break;
        }
    }
}

static const char *state_name(int s)
{
    switch (s) {
    case DS_ALIVE: return "alive";
    case DS_EXITED: return "exited";
    case DS_DEAD: return "dead";
    default: return "unknown";
    }
}

static int state_parse(const char *s)
{
    if (!strcmp(s, "alive"))
        return DS_ALIVE;
    if (!strcmp(s, "exited"))
        return DS_EXITED;
    if (!strcmp(s, "dead"))
        return DS_DEAD;
    return DS_UNKNOWN;
}

static void be_stats(FILE *f, int id, const struct dump_be *be)
{
    fputc('{', f);
    jfields(f, be_fields, NFIELDS(be_fields), be, 1);
    for (unsigned i = 0; i < 6; i++) {
        const char *n = dump_be_field(id, i);
        if (*n)
            fprintf(f, ", \"%s\": %llu", n, (unsigned long long)be->v[i]);
    }
    fputc('}', f);
}

static void hist_as(FILE *f, const char *name, const char *what, const uint64_t *v)
{
    fprintf(f, "\"%s\": [", name);
    for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++) {
        uint64_t le = lifebucket_max_ns(b);
        if (le == UINT64_MAX)
            fprintf(f, "%s{\"%s\": null, \"%s\": %llu}", b ? ", " : "", hist_bound, what,
                    (unsigned long long)v[b]);
        else
            fprintf(f, "%s{\"%s\": %llu, \"%s\": %llu}", b ? ", " : "", hist_bound,
                    (unsigned long long)le, what, (unsigned long long)v[b]);
    }
    fputc(']', f);
}

static void hist(FILE *f, const char *name, const uint64_t *v)
{
    hist_as(f, name, "count", v);
}

/* Stack s of d as one JSON object (call_stacks.stacks entries),
 * continuation lines prefixed by indent. */
static void stack_json(FILE *f, const struct dump *d, const struct dump_stack *s, const char *indent)
{
    fputc('{', f);
    jfields(f, stack_fields, NFIELDS(stack_fields), s, 1);
    fprintf(f, ",\n%s ", indent);
    hist(f, "lifetime_hist", s->life);
    fprintf(f, ",\n%s ", indent);
    hist(f, "age_hist", s->age_count);
    fprintf(f, ",\n%s ", indent);
    hist_as(f, "age_bytes_hist", "bytes", s->age_req);
    fprintf(f, ",\n%s ", indent);
    hist_as(f, "age_bytes_stderr_hist", "bytes", s->age_req_err);
    fprintf(f, ",\n%s \"frames\": [", indent);
    for (uint32_t i = 0; i < s->depth && s->frame0 + i < d->nframes; i++) {
        const struct dump_frame *fr = &d->frames[s->frame0 + i];
        fprintf(f, "%s\n%s  {", i ? "," : "", indent);
        jfields(f, frame_fields, NFIELDS(frame_fields), fr, 1);
        if (fr->obj >= 0 && (size_t)fr->obj < d->nobjs)
            fprintf(f, ", \"object\": %d, \"offset\": %llu", fr->obj,
                    (unsigned long long)fr->obj_off);
        else
            fputs(", \"object\": null, \"offset\": null", f);
        fputs(", \"function\": ", f);
        if (fr->func) {
            jstr(f, fr->func);
            fprintf(f, ", \"function_offset\": %llu", (unsigned long long)fr->func_off);
        } else {
            fputs("null, \"function_offset\": null", f);
        }
        fputs(", \"file\": ", f);
        if (fr->file) {
            jstr(f, fr->file);
            fprintf(f, ", \"line\": %u", fr->line);
        } else {
            fputs("null, \"line\": null", f);
        }
        fputs(", \"note\": ", f);
        if (fr->note)
            jstr(f, fr->note);
        else
            fputs("null", f);
        fputc('}', f);
    }
    fputs("]}", f);
}

/* d's mapped objects as a JSON array. */
static void objects_json(FILE *f, const struct dump *d, const char *indent)
{
    fputc('[', f);
    for (size_t i = 0; i < d->nobjs; i++) {
        const struct dump_obj *o = &d->objs[i];
        fprintf(f, "%s\n%s  {", i ? "," : "", indent);
        jfields(f, object_fields, NFIELDS(object_fields), o, 1);
        fputs(", \"build_id\": \"", f);
        for (uint32_t k = 0; k < o->build_id_len && k < sizeof o->build_id; k++)
            fprintf(f, "%02x", o->build_id[k]);
        fprintf(f, "\", \"main\": %s}", (o->flags & SEG_OBJ_MAIN) ? "true" : "false");
    }
    fputc(']', f);
}

static void call_stacks(FILE *f, const struct dump *d)
{
    fputs("  \"call_stacks\": {", f);
    jfields(f, stacks_fields, NFIELDS(stacks_fields), d, 1);
    fputs(",\n    \"objects\": ", f);
    objects_json(f, d, "    ");
    fputs(",\n    \"stacks\": [", f);
    for (size_t i = 0; i < d->nstacks; i++) {
        fputs(i ? ",\n      " : "\n      ", f);
        stack_json(f, d, &d->stacks[i], "      ");
    }
    fputs(d->nstacks ? "\n    ]},\n" : "]},\n", f);
}

static void opt_u64(FILE *f, const char *key, int have, uint64_t v, const char *tail)
{
    if (have)
        fprintf(f, "  \"%s\": %llu%s", key, (unsigned long long)v, tail);
    else
        fprintf(f, "  \"%s\": null%s", key, tail);
}

static void figures_json(FILE *f, const struct dump *d);

void dump_write_json(FILE *f, const struct dump *d)
{
    const struct dump_sample *last = dump_last(d);
    int first = 1;

    fprintf(f, "{\n  \"format_version\": %d,\n", DUMP_JSON_VERSION);
    fprintf(f, "  \"tool\": \"shimdump %s\",\n  ", PACKAGE_VERSION);
    jfields(f, root_fields, NFIELDS(root_fields), d, 1);
    fprintf(f, ",\n  \"state\": \"%s\",\n", state_name(d->state));
    fprintf(f, "  \"sampling\": {\"live_bytes\": \"%s\", ", d->exact ? "exact" : "estimate");
    jfields(f, sampling_fields, NFIELDS(sampling_fields), d, 1);
    fputs(", \"changes\": [", f);
    for (size_t i = 0; i < d->nchanges; i++) {
        fputs(i ? ", {" : "{", f);
        jfields(f, change_fields, NFIELDS(change_fields), &d->changes[i], 1);
        fputc('}', f);
    }
    fputs("]},\n  \"totals\": {", f);
    jfields(f, count_fields, NFIELDS(count_fields), &d->total, 1);
    fputs("},\n", f);
    opt_u64(f, latest_keys[0], last != NULL, last ? last->rss : 0, ",\n");
    opt_u64(f, latest_keys[1], last != NULL, last ? last->rss_anon : 0, ",\n");
    opt_u64(f, latest_keys[2], last != NULL, last ? last->rss_huge : 0, ",\n");
    opt_u64(f, latest_keys[3], last != NULL, last ? last->vsz : 0, ",\n");
    opt_u64(f, "peak_rss_bytes", d->peak_rss != 0, d->peak_rss, ",\n");
    opt_u64(f, "peak_rss_ns", d->peak_rss != 0, d->peak_rss_ns, ",\n");
    fputs("  \"backend_stats\": ", f);
    if (last)
        be_stats(f, d->backend_id, &last->be);
    else
        fputs("null", f);
    fputs(",\n", f);
    if (d->stack_depth)
        call_stacks(f, d);
    fputs("  \"size_classes\": [", f);
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        const struct dump_class *k = &d->cls[c];
        uint64_t any = k->allocs | k->frees | k->reallocs | k->req_bytes | k->live_count |
                       k->live_req | k->live_req_err | k->live_usable;
        for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++)
            any |= k->life[b] | k->age[b];
        if (!any)
            continue;
        fprintf(f, "%s\n    {\"class\": %u, \"min_size\": %llu, ", first ? "" : ",", c,
                (unsigned long long)sizeclass_min(c));
        if (c == SIZECLASS_LAST)
            fputs("\"max_size\": null, ", f);
        else
            fprintf(f, "\"max_size\": %llu, ", (unsigned long long)sizeclass_max(c));
        jfields(f, count_fields, NFIELDS(count_fields), k, 1);
        fputs(",\n     ", f);
        hist(f, "lifetime_hist", k->life);
        fputs(",\n     ", f);
        hist(f, "age_hist", k->age);
        fputc('}', f);
        first = 0;
    }
    fputs(first ? "],\n" : "\n  ],\n", f);
    fputs("  \"series\": [", f);
    for (size_t i = 0; i < d->nseries; i++) {
        const struct dump_sample *s = &d->series[i];
        fprintf(f, "%s\n    {", i ? "," : "");
        jfields(f, series_fields, NFIELDS(series_fields), s, 1);
        fputs(", \"backend_stats\": ", f);
        be_stats(f, d->backend_id, &s->be);
        fputc('}', f);
    }
    fputs(d->nseries ? "\n  ],\n" : "],\n", f);
    fputs("  \"history\": [", f);
    for (size_t t = 0; t < d->ntiers && t < DUMP_TIERS_MAX; t++) {
        const struct dump_tier *k = &d->tiers[t];
        fprintf(f, "%s\n    {", t ? "," : "");
        jfields(f, tier_fields, NFIELDS(tier_fields), k, 1);
        fputs(", \"points\": [", f);
        for (size_t i = 0; i < k->npoints; i++) {
            fprintf(f, "%s\n      {", i ? "," : "");
            jfields(f, point_fields, NFIELDS(point_fields), &k->points[i], 1);
            fputs(", \"backend_stats\": ", f);
            be_stats(f, d->backend_id, &k->points[i].last.be);
            fputc('}', f);
        }
        fputs(k->npoints ? "\n    ]}" : "]}", f);
    }
    fputs(d->ntiers ? "\n  ],\n" : "],\n", f);
    fputs("  \"process_memory\": ", f);
    if (d->mem.have) {
        fputc('{', f);
        jfields(f, mem_fields, NFIELDS(mem_fields), &d->mem, 1);
        fputs("},\n", f);
    } else {
        fputs("null,\n", f);
    }
    figures_json(f, d);
    fputs("}\n", f);
}

/* An unsigned figure, or null where there is none. */
static void u64_or_null(FILE *f, const char *key, int have, uint64_t v)
{
    if (have)
        fprintf(f, "\"%s\": %llu", key, (unsigned long long)v);
    else
        fprintf(f, "\"%s\": null", key);
}

/* The coverage of the top `top` sites by live bytes now, or at the peak. */
static void cover_json(FILE *f, const struct dump *d, unsigned long_bucket, size_t top,
                       int at_peak, const char *indent)
{
    struct fig_site site[64];
    struct fig_cover c;
    char text[600];
    size_t n = fig_sites(d, at_peak ? FR_PEAK : FR_LIVE, long_bucket, site, top);
    fig_coverage(d, site, n, at_peak, &c);
    if (!c.have) {
        fputs("null", f);
        return;
    }
    fprintf(f, "{\"sites_shown\": %zu, \"stacks_with_live_bytes\": %zu,\n%s", c.shown, c.stacks,
            indent);
    jfields(f, cover_fields, NFIELDS(cover_fields), &c, 1);
    fprintf(f, ",\n%s\"text\": ", indent);
    jstr(f, fig_cover_text(&c, text, sizeof text, FF_TERSE));
    fputc('}', f);
}

void dump_write_sites_json(FILE *f, const struct dump *d, unsigned long_bucket, size_t top)
{
    struct fig_site site[64];
    struct fig_peak pk;
    if (top > 64)
        top = 64;
    fprintf(f, "{\n  \"format_version\": %d,\n  \"tool\": \"shimdump %s\",\n  ", DUMP_JSON_VERSION,
            PACKAGE_VERSION);
    jfields(f, sites_fields, NFIELDS(sites_fields), d, 1);
    fprintf(f, ",\n  \"stacks\": %zu,\n  \"long_lived_ns\": %llu,\n  \"uptime_s\": %.3f,\n"
               "  \"objects\": ", d->nstacks, (unsigned long long)lifebucket_max_ns(long_bucket),
            fig_uptime_s(d));
    objects_json(f, d, "  ");
    fputs(",\n  \"coverage\": ", f);
    cover_json(f, d, long_bucket, top, 0, "   ");
    fig_peak(d, &pk);
    fputs(",\n  \"peak\": ", f);
    if (pk.have) {
        fputc('{', f);
        jfields(f, peak_fields, NFIELDS(peak_fields), &pk, 1);
        fputs(",\n   \"coverage\": ", f);
        cover_json(f, d, long_bucket, top, 1, "    ");
        fputc('}', f);
    } else {
        fputs("null", f);
    }
    for (int r = 0; r < FR_COUNT; r++) {
        size_t n = fig_sites(d, (enum fig_rank)r, long_bucket, site, top);
        fprintf(f, ",\n  \"%s\": [", fig_rank_key[r]);
        for (size_t i = 0; i < n; i++) {
            fprintf(f, "%s\n    {\"rank\": %zu, ", i ? "," : "", i + 1);
            jfields(f, site_fields, NFIELDS(site_fields), &site[i], 1);
            fputs(",\n     \"stack\": ", f);
            stack_json(f, d, site[i].s, "      ");
            fputc('}', f);
        }
        fputs(n ? "\n  ]" : "]", f);
    }
    fputs("\n}\n", f);
}

static void str_or_null(FILE *f, const char *s)
{
    if (s && *s)
        jstr(f, s);
    else
        fputs("null", f);
}

/* figures.memory: RSS class by class (figures.h, fig_memory). */
static void memory_json(FILE *f, const struct dump *d)
{
    struct fig_mem m;
    fig_memory(d, &m);
    fprintf(f, ",\n    \"memory\": {\"known\": %s, \"why\": ", m.have ? "true" : "false");
    str_or_null(f, m.have ? NULL : m.why);
    fputs(", ", f);
    u64_or_null(f, "taken_ns", m.have, m.t_ns);
    fputs(", ", f);
    u64_or_null(f, "rss_bytes", m.have, m.rss);
    fputs(",\n      \"classes\": [", f);
    for (int k = 0; k < FMC_COUNT && m.have; k++)
        fprintf(f, "%s{\"class\": \"%s\", \"name\": \"%s\", \"bytes\": %llu}", k ? ", " : "",
                fig_mem_class_key[k], fig_mem_class_name[k], (unsigned long long)m.cls[k]);
    fputs("],\n      \"parts\": [", f);
    for (int k = 0; k < FM_COUNT && m.have; k++) {
        const struct fig_mem_part *p = &m.part[k];
        fprintf(f, "%s\n        {\"part\": \"%s\", \"class\": \"%s\", \"name\": \"%s\", "
                "\"bytes\": %llu, \"exact\": %s, \"how\": ", k ? "," : "", p->key,
                fig_mem_class_key[p->cls], p->name, (unsigned long long)p->v,
                p->exact ? "true" : "false");
        jstr(f, p->how);
        fputc('}', f);
    }
    fputs(m.have ? "\n      ],\n      \"vsz_note\": " : "],\n      \"vsz_note\": ", f);
    str_or_null(f, m.vsz_note);
    fputc('}', f);
}

/* figures.diagnosis (figures.h, fig_diagnose). */
static void diagnosis_json(FILE *f, const struct dump *d)
{
    static const char *const sev[] = { "info", "warn", "bad" };
    struct fig_finding fd[FIG_FINDINGS_MAX];
    size_t n = fig_diagnose(d, fd, FIG_FINDINGS_MAX);
    fputs(",\n    \"diagnosis\": [", f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s\n      {\"id\": \"%s\", \"severity\": \"%s\", \"confidence\": \"%s\", "
                "\"what\": ", i ? "," : "", fd[i].id, sev[fd[i].sev], fig_conf_name[fd[i].conf]);
        jstr(f, fd[i].what);
        fputs(",\n       \"rests_on\": ", f);
        jstr(f, fd[i].rests_on);
        fputs(", \"fix\": ", f);
        str_or_null(f, fd[i].fix);
        fputs(", \"check\": ", f);
        str_or_null(f, fd[i].check);
        fputc('}', f);
    }
    fputs(n ? "\n    ]" : "]", f);
}

/* The figures object (figures.h): as of when, each step of the waterfall
 * with when it was taken and its age, what qualifies them, and the
 * invariants the snapshot breaks (none, one hopes). */
static void figures_json(FILE *f, const struct dump *d)
{
    struct fig_step st[FS_COUNT];
    struct fig_note notes[FIG_NOTES_MAX];
    struct fig_fail fails[FIG_FAILS_MAX];
    size_t nn = fig_notes(d, notes, FIG_NOTES_MAX);
    size_t nf = fig_check(d, fails, FIG_FAILS_MAX);

    fig_waterfall(d, st);
    fprintf(f, "  \"figures\": {\"as_of_ns\": %llu, \"uptime_s\": %.3f,\n    \"waterfall\": [",
            (unsigned long long)fig_as_of(d), fig_uptime_s(d));
    for (int k = 0; k < FS_COUNT; k++) {
        fprintf(f, "%s\n      {\"step\": \"%s\", \"name\": ", k ? "," : "", st[k].key);
        jstr(f, st[k].label);
        fputs(", ", f);
        u64_or_null(f, "bytes", st[k].have, st[k].v);
        fputs(", ", f);
        u64_or_null(f, "taken_ns", st[k].have && st[k].t_ns, st[k].t_ns);
        fputs(", ", f);
        u64_or_null(f, "age_ns", st[k].age.known, st[k].age.ns);
        fputs(", ", f);
        jfields(f, step_fields, NFIELDS(step_fields), &st[k], 1);
        fputc('}', f);
    }
    fputs("],\n    \"notes\": [", f);
    for (size_t i = 0; i < nn; i++) {
        fputs(i ? ", " : "", f);
        jstr(f, notes[i].text);
    }
    fputs("],\n    \"invariants_failed\": [", f);
    for (size_t i = 0; i < nf && i < FIG_FAILS_MAX; i++) {
        fprintf(f, "%s\n      {\"invariant\": ", i ? "," : "");
        jstr(f, fails[i].name);
        fputs(", \"detail\": ", f);
        jstr(f, fails[i].detail);
        fputc('}', f);
    }
    fputs(nf ? "\n    ]" : "]", f);
    memory_json(f, d);
    diagnosis_json(f, d);
    fputs("}\n", f);
}

/* ---- Parsing ---- */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

/* A key is compared raw, escapes and all: the schema's keys are plain
 * ASCII, so a key written with escapes matches none of them, as it should.
 * Keeping keys as spans saves a malloc per key. */
struct jspan {
    const char *p;
    size_t n;
};

struct jv {
    enum jtype type;
    int neg, isint;       /* J_NUM: a negative number; an integer that fits 64 bits */
    uint64_t u;           /* J_NUM: the integer; J_BOOL: 0 or 1 */
    char *s;              /* J_STR */
    size_t n;             /* J_ARR, J_OBJ: children */
    struct jv *kid;
    struct jspan *key;    /* J_OBJ: the keys, as spans of the input text */
};

#define J_DEPTH_MAX 16
#define J_STR_MAX 4096

/* The most values a snapshot of ours can hold: 85 classes of 95 values, a
 * day of samples (86,400 of up to 18), and a full stack table (4096
 * stacks of 7 + 3 x 42 x 2 values and 64 frames of 8): about 5M. More is
 * not ours, and would only cost memory (72 bytes a value here). */
#define J_NODES_MAX 6000000

struct jp {
    const char *p, *end;
    const char *err;
    const char *at;
    size_t nodes;
};

static void jfree(struct jv *v)
{
    if (!v)
        return;
    free(v->s);
    for (size_t i = 0; i < v->n; i++)
        jfree(&v->kid[i]);
    free(v->kid);
    free(v->key);
    memset(v, 0, sizeof *v);
}

static int fail(struct jp *j, const char *msg)
{
    if (!j->err) {
        j->err = msg;
        j->at = j->p;
    }
    return -1;
}

static void ws(struct jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int lit(struct jp *j, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0)
        return 0;
    j->p += n;
    return 1;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Appends ch to a growing string buffer; strings longer than J_STR_MAX
 * are cut (no field of the schema is near that). */
static int sbuf_put(char **buf, size_t *n, size_t *cap, char ch)
{
    if (*n >= J_STR_MAX)
        return 0;
    if (*n + 1 >= *cap) {
        size_t nc = *cap ? *cap * 2 : 32;
        char *b = realloc(*buf, nc);
        if (!b)
            return -1;
        *buf = b;
        *cap = nc;
    }
    (*buf)[(*n)++] = ch;
    return 0;
}

/* A string; non-ASCII and control characters become '?'. With out NULL,
 * only checked, and *span set to its raw text between the quotes. */
static int jstring(struct jp *j, char **out, struct jspan *span)
{
    char *buf = NULL;
    size_t n = 0, cap = 0;
    if (j->p >= j->end || *j->p != '"')
        return fail(j, "expected a string");
    j->p++;
    if (span)
        span->p = j->p;
    while (j->p < j->end && *j->p != '"') {
        char ch = *j->p++;
        if ((unsigned char)ch < 0x20) {
            free(buf);
            return fail(j, "control character in a string");
        }
        if (ch == '\\') {
            if (j->p >= j->end)
                break;
            ch = *j->p++;
            switch (ch) {
            case '"': case '\\': case '/': break;
            case 'b': case 'f': case 'n': case 'r': case 't': ch = '?'; break;
            case 'u': {
                int v = 0;
                for (int k = 0; k < 4; k++) {
                    int h = j->p < j->end ? hexval(*j->p) : -1;
                    if (h < 0) {
                        free(buf);
                        return fail(j, "bad \\u escape");
                    }
                    v = v * 16 + h;
                    j->p++;
                }
                ch = v >= 0x01 && v <= 0xff ? (char)v : '?';   /* what jstr wrote */
                break;
            }
            default:
                free(buf);
                return fail(j, "bad escape in a string");
            }
        } else if ((unsigned char)ch >= 0x7f) {
            ch = '?';
        }
        if (out && sbuf_put(&buf, &n, &cap, ch) != 0) {
            free(buf);
            return fail(j, "out of memory");
        }
    }
    if (j->p >= j->end) {
        free(buf);
        return fail(j, "unterminated string");
    }
    if (span)
        span->n = (size_t)(j->p - span->p);
    j->p++;
    if (!out)
        return 0;
    if (sbuf_put(&buf, &n, &cap, '\0') != 0 || !buf) {
        free(buf);
        if (!(buf = calloc(1, 1)))
            return fail(j, "out of memory");
    }
    buf[n < J_STR_MAX ? n : J_STR_MAX - 1] = '\0';
    *out = buf;
    return 0;
}

static int jvalue(struct jp *j, struct jv *v, int depth);

static int jpush(struct jp *j, struct jv *v, size_t *cap)
{
    if (++j->nodes > J_NODES_MAX)
        return fail(j, "too many values for a snapshot");
    if (v->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        struct jv *k = realloc(v->kid, nc * sizeof *k);
        if (!k)
            return fail(j, "out of memory");
        v->kid = k;
        if (v->type == J_OBJ) {
            struct jspan *ks = realloc(v->key, nc * sizeof *ks);
            if (!ks)
                return fail(j, "out of memory");
            v->key = ks;
        }
        *cap = nc;
    }
    memset(&v->kid[v->n], 0, sizeof v->kid[0]);
    if (v->type == J_OBJ)
        v->key[v->n] = (struct jspan){ NULL, 0 };
    v->n++;
    return 0;
}

static int jnumber(struct jp *j, struct jv *v)
{
    const char *s = j->p;
    int digits = 0, frac = 0;
    v->type = J_NUM;
    v->isint = 1;
    if (j->p < j->end && *j->p == '-') {
        v->neg = 1;
        j->p++;
    }
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        unsigned d = (unsigned)(*j->p - '0');
        if (v->u > (UINT64_MAX - d) / 10)
            v->isint = 0;
        v->u = v->u * 10 + d;
        digits++;
        j->p++;
    }
    if (!digits)
        return fail(j, "bad number");
    if (j->p < j->end && *j->p == '.') {
        frac = 1;
        for (j->p++; j->p < j->end && *j->p >= '0' && *j->p <= '9'; j->p++)
            ;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        frac = 1;
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
            j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9')
            return fail(j, "bad number");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    }
    if (frac || v->neg)
        v->isint = 0;
    (void)s;
    return 0;
}

static int jvalue(struct jp *j, struct jv *v, int depth)
{
    size_t cap = 0;
    ws(j);
    if (depth > J_DEPTH_MAX)
        return fail(j, "nested too deeply");
    if (j->p >= j->end)
        return fail(j, "unexpected end of input");
    switch (*j->p) {
    case '{':
    case '[': {
        int obj = *j->p == '{';
        char close = obj ? '}' : ']';
        v->type = obj ? J_OBJ : J_ARR;
        j->p++;
        ws(j);
        if (j->p < j->end && *j->p == close) {
            j->p++;
            return 0;
        }
        for (;;) {
            struct jspan key = { NULL, 0 };
            ws(j);
            if (obj) {
                if (jstring(j, NULL, &key) != 0)
                    return -1;
                ws(j);
                if (j->p >= j->end || *j->p != ':')
                    return fail(j, "expected ':'");
                j->p++;
            }
            if (jpush(j, v, &cap) != 0)
                return -1;
            if (obj)
                v->key[v->n - 1] = key;
            if (jvalue(j, &v->kid[v->n - 1], depth + 1) != 0)
                return -1;
            ws(j);
            if (j->p < j->end && *j->p == ',') {
                j->p++;
                continue;
            }
            if (j->p < j->end && *j->p == close) {
                j->p++;
                return 0;
            }
            return fail(j, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    case '"':
        v->type = J_STR;
        return jstring(j, &v->s, NULL);
    case 't':
    case 'f':
        v->type = J_BOOL;
        if (lit(j, "true"))
            v->u = 1;
        else if (!lit(j, "false"))
            return fail(j, "bad literal");
        return 0;
    case 'n':
        v->type = J_NULL;
        return lit(j, "null") ? 0 : fail(j, "bad literal");
    default:
        return jnumber(j, v);
    }
}

static const struct jv *jget(const struct jv *o, const char *key)
{
    if (!o || o->type != J_OBJ)
        return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < o->n; i++)
        if (o->key[i].n == n && !memcmp(o->key[i].p, key, n))
            return &o->kid[i];
    return NULL;
}

/* Reading fields: every key of the schema must be there (null only where
 * the schema says a figure may be unknown); the first one missing or of
 * the wrong type makes the document corrupt. */
struct jread {
    const char *bad;      /* the first field of the wrong type */
    const char *missing;  /* the first key missing */
    int version;          /* the document's format_version */
};

static void jbad(struct jread *r, const char *key)
{
    if (!r->bad)
        r->bad = key;
}

/* The value of key in object o; NULL when o lacks it (noted as missing),
 * when o is not an object (noted as of the wrong type, under this key), or
 * when there is no o (already noted by whoever looked for it). */
static const struct jv *jneed(struct jread *r, const struct jv *o, const char *key)
{
    if (!o)
        return NULL;
    if (o->type != J_OBJ) {
        jbad(r, key);
        return NULL;
    }
    const struct jv *v = jget(o, key);
    if (!v && !r->missing)
        r->missing = key;
    return v;
}

/* A non-negative integer that fits 64 bits. */
static int jint(struct jread *r, const struct jv *v, const char *key, uint64_t *out)
{
    if (!v)
        return -1;
    if (v->type != J_NUM || !v->isint) {
        jbad(r, key);
        return -1;
    }
    *out = v->u;
    return 0;
}

static uint64_t ju(struct jread *r, const struct jv *o, const char *key)
{
    uint64_t u = 0;
    jint(r, jneed(r, o, key), key, &u);
    return u;
}

/* A number or null: *have says which. */
static uint64_t ju_null(struct jread *r, const struct jv *o, const char *key, int *have)
{
    const struct jv *v = jneed(r, o, key);
    uint64_t u = 0;
    *have = 0;
    if (v && v->type != J_NULL && jint(r, v, key, &u) == 0)
        *have = 1;
    return u;
}

/* A string, or (with `nullable`) null, which gives NULL. */
static const char *jstr_of(struct jread *r, const struct jv *o, const char *key, int nullable)
{
    const struct jv *v = jneed(r, o, key);
    if (!v || (nullable && v->type == J_NULL))
        return NULL;
    if (v->type != J_STR) {
        jbad(r, key);
        return NULL;
    }
    return v->s;
}

static void jfields_read(struct jread *r, const struct jv *o, const struct jfield *t, size_t n,
                         void *base)
{
    if (!o)
        return;
    if (o->type != J_OBJ) {
        jbad(r, t[0].key);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char *p = (char *)base + t[i].off;
        if (r->version < t[i].since)
            continue;   /* not in a document of that version: 0 */
        const struct jv *v = jneed(r, o, t[i].key);
        const char *s;
        uint64_t u;
        if (!v)
            continue;
        switch (t[i].kind) {
        case JK_U64:
            if (jint(r, v, t[i].key, &u) == 0)
                *(uint64_t *)p = u;
            break;
        case JK_U32:
            if (jint(r, v, t[i].key, &u) == 0) {
                if (u > UINT32_MAX)
                    jbad(r, t[i].key);
                else
                    *(uint32_t *)p = (uint32_t)u;
            }
            break;
        case JK_BOOL:
        case JK_NOT:
            if (v->type != J_BOOL)
                jbad(r, t[i].key);
            else
                *(int *)p = t[i].kind == JK_BOOL ? (int)v->u : !v->u;
            break;
        case JK_TEXT:
        case JK_PATH:
            if (v->type != J_STR) {
                jbad(r, t[i].key);
                break;
            }
            s = v->s;
            if (t[i].kind == JK_TEXT)
                dump_clean_text(p, t[i].cap, s, strlen(s));
            else
                snprintf(p, t[i].cap, "%s", s);
            break;
        case JK_EST:
        case JK_RATE:
        case JK_RATIO:
            break;   /* derived figures: written, never read back */
        }
    }
}

/* The backend's own figures, by the names of backend `id`. */
static void jbe(struct jread *r, const struct jv *o, int id, struct dump_be *be)
{
    if (o && o->type != J_OBJ) {
        jbad(r, "backend_stats");
        return;
    }
    for (unsigned i = 0; i < 6; i++) {
        const char *n = dump_be_field(id, i);
        be->v[i] = *n ? ju(r, o, n) : 0;
    }
    jfields_read(r, o, be_fields, NFIELDS(be_fields), be);
}

/* A histogram: an array of {le_ns, <what>}, each added to its bucket. */
static void jhist_as(struct jread *r, const struct jv *o, const char *name, const char *what,
                     uint64_t out[LIFEBUCKET_COUNT])
{
    const struct jv *a = jneed(r, o, name);
    if (!a)
        return;
    if (a->type != J_ARR) {
        jbad(r, name);
        return;
    }
    for (size_t i = 0; i < a->n; i++) {
        int have;
        uint64_t le = ju_null(r, &a->kid[i], hist_bound, &have);
        unsigned b = LIFEBUCKET_LAST;
        if (have) {   /* the bucket whose bound this is */
            for (b = 0; b < LIFEBUCKET_LAST && lifebucket_max_ns(b) < le; b++)
                ;
            if (b == LIFEBUCKET_LAST || lifebucket_max_ns(b) != le)
                jbad(r, hist_bound);
        }
        out[b] += ju(r, &a->kid[i], what);
    }
}

/* An array (required); NULL when missing or of the wrong type. */
static const struct jv *jarr(struct jread *r, const struct jv *o, const char *key)
{
    const struct jv *a = jneed(r, o, key);
    if (a && a->type != J_ARR) {
        jbad(r, key);
        return NULL;
    }
    return a;
}

/* An object (required); NULL when missing or of the wrong type. */
static const struct jv *jobj(struct jread *r, const struct jv *o, const char *key)
{
    const struct jv *v = jneed(r, o, key);
    if (v && v->type != J_OBJ) {
        jbad(r, key);
        return NULL;
    }
    return v;
}

/* A string field, malloc'ed (NULL when null). Returns -1 when out of memory. */
static int jdup(struct jread *r, const struct jv *o, const char *key, char **out)
{
    const char *s = jstr_of(r, o, key, 1);
    *out = NULL;
    if (s && !(*out = strdup(s)))
        return -1;
    return 0;
}

static int jframe(struct jread *r, const struct jv *e, const struct dump *d, struct dump_frame *f)
{
    int have_obj, have_off, have_fo, have_line;
    jfields_read(r, e, frame_fields, NFIELDS(frame_fields), f);
    uint64_t ob = ju_null(r, e, "object", &have_obj);
    f->obj_off = ju_null(r, e, "offset", &have_off);
    f->obj = have_obj && ob < d->nobjs ? (int)ob : -1;
    if (have_obj != have_off || (have_obj && ob >= d->nobjs))
        jbad(r, "object");
    if (jdup(r, e, "function", &f->func) != 0 || jdup(r, e, "note", &f->note) != 0)
        return -1;
    f->func_off = ju_null(r, e, "function_offset", &have_fo);
    if (have_fo != (f->func != NULL))
        jbad(r, "function_offset");
    if (d->json_version < 2)
        return 0;   /* format 1: no file and line */
    if (jdup(r, e, "file", &f->file) != 0)
        return -1;
    uint64_t line = ju_null(r, e, "line", &have_line);
    if (have_line != (f->file != NULL) || (have_line && (line == 0 || line > UINT32_MAX)))
        jbad(r, "line");
    f->line = f->file && line <= UINT32_MAX ? (uint32_t)line : 0;
    return 0;
}

/* A figure worked out in doubles, as a count: never beyond 2^64 - 1 (a
 * file may claim any figure, and such a double made uint64_t is undefined). */
static uint64_t as_count(double v)
{
    return v < 1.8e19 ? (v > 0 ? (uint64_t)(v + 0.5) : 0) : UINT64_MAX;
}

static uint64_t sat_mul(uint64_t v, uint32_t m)
{
    uint64_t r;
    return __builtin_mul_overflow(v, m ? m : 1, &r) ? UINT64_MAX : r;
}

/* A stack of a snapshot before format 4, whose figures were of the
 * tracked blocks, 1 in `sample` allocations alike: made estimates of all,
 * as format 4 has them, with the error of n alike blocks. */
static void weigh_old_stack(struct dump_stack *s, uint32_t sample)
{
    double m = sample > 1 ? sample : 1;
    s->tracked_allocs = s->allocs;
    s->tracked_live = s->live_count;
    double rel = s->live_count ? sqrt((1 - 1 / m) / (double)s->live_count) : 0;
    s->allocs = sat_mul(s->allocs, sample);
    s->req_bytes = sat_mul(s->req_bytes, sample);
    s->frees = sat_mul(s->frees, sample);
    s->live_count = sat_mul(s->live_count, sample);
    s->live_req = sat_mul(s->live_req, sample);
    s->live_usable = sat_mul(s->live_usable, sample);
    s->live_req_err = as_count((double)s->live_req * rel);
    for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++) {
        double rb = s->age_count[b] ? sqrt((1 - 1 / m) / (double)s->age_count[b]) : 0;
        s->life[b] = sat_mul(s->life[b], sample);
        s->age_count[b] = sat_mul(s->age_count[b], sample);
        s->age_req[b] = sat_mul(s->age_req[b], sample);
        s->age_req_err[b] = as_count((double)s->age_req[b] * rb);
    }
}

/* call_stacks: objects, stacks and their (named) frames. */
static int jstacks(struct jread *r, const struct jv *cs, struct dump *d)
{
    if (!cs)
        return 0;
    if (cs->type != J_OBJ) {
        jbad(r, "call_stacks");
        return 0;
    }
    const struct jv *objs = jarr(r, cs, "objects"), *st = jarr(r, cs, "stacks");
    jfields_read(r, cs, stacks_fields, NFIELDS(stacks_fields), d);
    if (d->stack_depth > SEG_STACK_DEPTH_MAX)
        jbad(r, "depth");
    if (objs && objs->n) {
        if (objs->n > 65536) {
            jbad(r, "objects");
            return 0;
        }
        if (!(d->objs = calloc(objs->n, sizeof *d->objs)))
            return ENOMEM;
        for (size_t i = 0; i < objs->n; i++) {
            const struct jv *o = &objs->kid[i];
            struct dump_obj *ob = &d->objs[d->nobjs++];
            jfields_read(r, o, object_fields, NFIELDS(object_fields), ob);
            const char *hex = jstr_of(r, o, "build_id", 0);
            size_t hn = hex ? strlen(hex) : 0;
            if (hn % 2 || hn > 2 * sizeof ob->build_id)
                jbad(r, "build_id");
            for (size_t k = 0; hex && 2 * k + 1 < hn && k < sizeof ob->build_id; k++) {
                int hi = hexval(hex[2 * k]), lo = hexval(hex[2 * k + 1]);
                if (hi < 0 || lo < 0) {
                    jbad(r, "build_id");
                    break;
                }
                ob->build_id[k] = (uint8_t)(hi << 4 | lo);
                ob->build_id_len = (uint32_t)k + 1;
            }
            const struct jv *m = jneed(r, o, "main");
            if (m && m->type != J_BOOL)
                jbad(r, "main");
            ob->flags = m && m->type == J_BOOL && m->u ? SEG_OBJ_MAIN : 0;
        }
    }
    if (!st || !st->n)
        return 0;
    if (st->n > 65536) {
        jbad(r, "stacks");
        return 0;
    }
    size_t nf = 0;
    for (size_t i = 0; i < st->n; i++) {
        const struct jv *fr = jget(&st->kid[i], "frames");
        if (fr && fr->type == J_ARR)
            nf += fr->n > SEG_STACK_DEPTH_MAX ? SEG_STACK_DEPTH_MAX : fr->n;
    }
    if (!(d->stacks = calloc(st->n, sizeof *d->stacks)) ||
        (nf && !(d->frames = calloc(nf, sizeof *d->frames))))
        return ENOMEM;
    for (size_t i = 0; i < st->n; i++) {
        const struct jv *o = &st->kid[i], *fr = jarr(r, o, "frames");
        struct dump_stack *s = &d->stacks[d->nstacks++];
        jfields_read(r, o, stack_fields, NFIELDS(stack_fields), s);
        jhist_as(r, o, "lifetime_hist", "count", s->life);
        jhist_as(r, o, "age_hist", "count", s->age_count);
        jhist_as(r, o, "age_bytes_hist", "bytes", s->age_req);
        if (r->version >= 4)
            jhist_as(r, o, "age_bytes_stderr_hist", "bytes", s->age_req_err);
        else
            weigh_old_stack(s, d->sample);
        s->frame0 = d->nframes;
        if (!fr)
            continue;
        if (fr->n > SEG_STACK_DEPTH_MAX)
            jbad(r, "frames");
        for (size_t k = 0; k < fr->n && k < SEG_STACK_DEPTH_MAX && d->nframes < nf; k++) {
            if (jframe(r, &fr->kid[k], d, &d->frames[d->nframes++]) != 0)
                return ENOMEM;
            s->depth++;
        }
    }
    return 0;
}

/* Everything but the header's format_version, which the caller checked. */
static int jroot(struct jread *r, const struct jv *root, struct dump *d)
{
    const struct jv *v, *a;
    const char *w;
    int have;

    jstr_of(r, root, "tool", 0);
    jfields_read(r, root, root_fields, NFIELDS(root_fields), d);
    /* figures: from format 3, made again from the rest, not read */
    if (r->version >= 3 && (v = jneed(r, root, "figures")) != NULL && v->type != J_OBJ)
        jbad(r, "figures");
    if ((w = jstr_of(r, root, "state", 0)) != NULL) {
        d->state = state_parse(w);
        if (d->state == DS_UNKNOWN && strcmp(w, state_name(DS_UNKNOWN)) != 0)
            jbad(r, "state");
    }
    for (d->backend_id = 2; d->backend_id >= 0; d->backend_id--)
        if (!strcmp(d->backend, dump_be_name(d->backend_id)))
            break;
    if (d->backend_id < 0) {   /* its figures are named by the backend */
        jbad(r, "backend");
        d->backend_id = SEG_BACKEND_GLIBC;
    }
    v = jobj(r, root, "sampling");
    jfields_read(r, v, sampling_fields, NFIELDS(sampling_fields), d);
    if ((w = jstr_of(r, v, "live_bytes", 0)) != NULL) {
        d->exact = !strcmp(w, "exact");
        if (!d->exact && strcmp(w, "estimate") != 0)
            jbad(r, "live_bytes");
    }
    if (r->version >= 5 && (a = jarr(r, v, "changes")) != NULL) {
        if (a->n > SEG_CHANGES_MAX)
            jbad(r, "changes");
        for (size_t i = 0; i < a->n && i < SEG_CHANGES_MAX; i++)
            jfields_read(r, &a->kid[i], change_fields, NFIELDS(change_fields), &d->changes[i]);
        d->nchanges = a->n < SEG_CHANGES_MAX ? a->n : SEG_CHANGES_MAX;
    }
    jfields_read(r, jobj(r, root, "totals"), count_fields, NFIELDS(count_fields), &d->total);
    /* The latest sample's figures: written from the series, read from it. */
    for (unsigned i = 0; i < 4; i++)
        ju_null(r, root, latest_keys[i], &have);
    d->peak_rss = ju_null(r, root, "peak_rss_bytes", &have);
    d->peak_rss_ns = ju_null(r, root, "peak_rss_ns", &have);
    if ((v = jneed(r, root, "backend_stats")) && v->type != J_NULL) {
        struct dump_be be;
        jbe(r, v, d->backend_id, &be);
    }

    if ((a = jarr(r, root, "size_classes")) != NULL) {
        for (size_t i = 0; i < a->n; i++) {
            const struct jv *o = &a->kid[i];
            uint64_t c = ju(r, o, "class");
            if (c >= SIZECLASS_COUNT) {
                jbad(r, "class");
                continue;
            }
            ju(r, o, "min_size");
            ju_null(r, o, "max_size", &have);
            struct dump_class *k = &d->cls[c];
            memset(k, 0, sizeof *k);
            jfields_read(r, o, count_fields, NFIELDS(count_fields), k);
            jhist_as(r, o, "lifetime_hist", "count", k->life);
            jhist_as(r, o, "age_hist", "count", k->age);
            /* before format 4: tracked blocks, 1 in `sample` */
            for (unsigned b = 0; b < LIFEBUCKET_COUNT && r->version < 4; b++) {
                k->life[b] = sat_mul(k->life[b], d->sample);
                k->age[b] = sat_mul(k->age[b], d->sample);
            }
        }
    }
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++)
        for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++) {
            d->total.life[b] += d->cls[c].life[b];
            d->total.age[b] += d->cls[c].age[b];
        }

    if (jstacks(r, jget(root, "call_stacks"), d) != 0)
        return ENOMEM;
    /* process_memory: absent from snapshots written before shimdump read
     * /proc, null where it was not known; either way not known */
    if ((v = jget(root, "process_memory")) != NULL && v->type != J_NULL) {
        jfields_read(r, v, mem_fields, NFIELDS(mem_fields), &d->mem);
        /* the kernel's VmRSS is its three counters' sum: a file where it
         * is not was not written by shimdump */
        if (d->mem.rss_anon > d->mem.rss || d->mem.rss_file > d->mem.rss - d->mem.rss_anon ||
            d->mem.rss_shmem != d->mem.rss - d->mem.rss_anon - d->mem.rss_file)
            jbad(r, "rss_bytes");
        d->mem.have = 1;
    }

    if ((a = jarr(r, root, "series")) != NULL && a->n) {
        if (!(d->series = calloc(a->n, sizeof *d->series)))
            return ENOMEM;
        for (size_t i = 0; i < a->n; i++) {
            const struct jv *o = &a->kid[i];
            struct dump_sample *s = &d->series[d->nseries++];
            jfields_read(r, o, series_fields, NFIELDS(series_fields), s);
            jbe(r, jneed(r, o, "backend_stats"), d->backend_id, &s->be);
        }
    }
    /* history: from format_version 2; a version 1 snapshot has the series
     * alone, which is its fine tier. */
    if (d->json_version < 2)
        return dump_fine_tier(d, 0);
    if ((a = jarr(r, root, "history")) != NULL) {
        if (a->n == 0 || a->n > DUMP_TIERS_MAX)
            jbad(r, "history");
        for (size_t t = 0; t < a->n && t < DUMP_TIERS_MAX; t++) {
            const struct jv *o = &a->kid[t], *p;
            struct dump_tier *k = &d->tiers[d->ntiers++];
            jfields_read(r, o, tier_fields, NFIELDS(tier_fields), k);
            if (!(p = jarr(r, o, "points")) || !p->n)
                continue;
            if (!(k->points = calloc(p->n, sizeof *k->points)))
                return ENOMEM;
            for (size_t i = 0; i < p->n; i++) {
                struct dump_point *pt = &k->points[k->npoints++];
                jfields_read(r, &p->kid[i], point_fields, NFIELDS(point_fields), pt);
                jbe(r, jneed(r, &p->kid[i], "backend_stats"), d->backend_id, &pt->last.be);
            }
        }
    }
    return 0;
}

int dump_from_json(struct dump *d, const char *text, size_t len, char *why, size_t whylen)
{
    struct jp j = { text, text + len, NULL, NULL, 0 };
    struct jv root;
    struct jread r = { NULL, NULL, 0 };
    const struct jv *v;
    int rc = DX_OK;

    memset(d, 0, sizeof *d);
    memset(&root, 0, sizeof root);
    if (jvalue(&j, &root, 0) == 0) {
        ws(&j);
        if (j.p != j.end)
            fail(&j, "trailing text after the JSON value");
    }
    if (j.err) {
        dump_why(why, whylen, "not a shimdump JSON snapshot: %s at byte %zu", j.err,
                 (size_t)(j.at - text));
        jfree(&root);
        return DX_CORRUPT;
    }
    v = jget(&root, "format_version");
    if (root.type != J_OBJ || !v || v->type != J_NUM) {
        dump_why(why, whylen, "not a shimdump JSON snapshot: no format_version");
        jfree(&root);
        return DX_CORRUPT;
    }
    if (!v->isint || v->u < 1 || v->u > DUMP_JSON_VERSION) {
        dump_why(why, whylen, "JSON format_version %llu; this shimdump reads versions 1 to %d",
                 v->isint ? (unsigned long long)v->u : 0ull, DUMP_JSON_VERSION);
        jfree(&root);
        return DX_VERSION;
    }
    d->json_version = r.version = (int)v->u;
    d->saved = 1;
    if (jroot(&r, &root, d) != 0) {
        dump_why(why, whylen, "out of memory");
        rc = DX_SYS;
    } else if (r.missing) {   /* first: a missing key can make others look wrong */
        dump_why(why, whylen, "corrupt JSON snapshot: no \"%s\" field", r.missing);
        rc = DX_CORRUPT;
    } else if (r.bad) {
        dump_why(why, whylen, "corrupt JSON snapshot: field \"%s\" has the wrong type or value",
                 r.bad);
        rc = DX_CORRUPT;
    }
    if (rc != DX_OK)
        dump_free(d);
    jfree(&root);
    return rc;
}
