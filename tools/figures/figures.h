/* figures: the one place where shimdump's figures are made from a struct
 * dump (a snapshot as read). Every output formats what these functions
 * return and derives nothing of its own: the text view and --watch
 * (cli/view.c), --prometheus (cli/prom.c), --diff, --stacks and its JSON,
 * the figures object of --json, --check, and the page (page/html.c).
 *
 * Time. A live process's figures are as of the moment it was read; a gone
 * one's as of its last sample. Each figure that the sampler takes less
 * often than it samples (the backend's statistics, the huge-page RSS), or
 * that a stalled sampler left behind, carries the time it was taken, and is
 * shown with its age once that is over FIG_STALE_INTERVALS intervals.
 *
 * Estimates. Figures of tracked blocks (lifetimes, ages, call sites) are
 * estimates of all blocks: each block is tracked with a probability p that
 * grows with its size (seg_track_p), independently, and counts for 1/p of
 * them (seg.h, "Weights"), so each total is unbiased; the dump carries
 * them, already weighted, with their standard errors. */
#ifndef MALLOCSHIM_FIGURES_H
#define MALLOCSHIM_FIGURES_H

#include <stddef.h>
#include <stdint.h>

#include "dump.h"
#include "figfmt.h"

/* ---- Time ---- */

/* A figure older than this many sample intervals says its age. */
#define FIG_STALE_INTERVALS 2

/* The CLOCK_REALTIME that d's figures are as of: when a live process was
 * read, else the last sample (the heartbeat), else when it was read. */
uint64_t fig_as_of(const struct dump *d);

/* Seconds from the process's start to fig_as_of (0 when unknown). */
double fig_uptime_s(const struct dump *d);

/* The age of a figure taken at t_ns, as of fig_as_of(d). */
struct fig_age {
    int known;                 /* t_ns was recorded (0: a format-2 JSON snapshot's) */
    int stale;                 /* older than FIG_STALE_INTERVALS intervals: say so */
    uint64_t ns;               /* the age; 0 when not known or not older */
};

struct fig_age fig_age_of(const struct dump *d, uint64_t t_ns);

/* ---- The backend's own statistics ---- */

/* The allocator's figures of a sample, named per backend (the meaning of
 * the positional fields a..f lives in dump_be_fields and here). */
struct fig_alloc {
    int have;                  /* 0: no sample yet, or a backend of none of the three */
    uint64_t in_use;           /* what it has handed out, as it counts */
    uint64_t footprint;        /* what it holds: arenas, heaps, extents */
    const char *in_use_name;   /* "glibc in use (uordblks+hblkhd)" */
    const char *fp_name;       /* "glibc arenas + mmap (arena+hblkhd)" */
    uint64_t t_ns;             /* when taken (0: unknown) */
    uint64_t live_lo, live_hi; /* live usable bytes while they were taken lay between
                                  the two (0: unknown) */
    size_t nmore;              /* the backend's other figures, for a detail line */
    struct fig_more {
        const char *label;     /* "free inside them", "arenas" */
        uint64_t v;
        int bytes;             /* 0: a count */
    } more[4];
};

/* Fills *a from sample s of d's backend (s may be NULL: a->have 0). */
void fig_alloc_of(const struct dump *d, const struct dump_sample *s, struct fig_alloc *a);

/* The backend's release, from its version ("5.3.0" of jemalloc's
 * "5.3.0-0-g54eaed1d8b..."): written to dst[cap], returned. */
char *fig_backend_release(const struct dump *d, char *dst, size_t cap);

/* ---- Sampling ---- */

/* How blocks are tracked, in words, into dst[cap]: "every block (sample:1)",
 * "1 in 256 blocks" (sizes not counted), or "about 1 in 256 small blocks,
 * every block of 3.45 MiB or more" (by bytes: seg_track_p). Returns dst. */
char *fig_sampling(const struct dump *d, char *dst, size_t cap);

/* Whether every block was tracked (sample:1 from the start and tracking
 * never off), so that the tracked figures are exact, not estimates. */
int fig_every_block(const struct dump *d);

/* When the sampling settings in force were set, CLOCK_REALTIME: the last
 * change by shimdump --set; 0 where they hold from the start. */
uint64_t fig_settings_since(const struct dump *d);

/* ---- The waterfall ---- */

enum fig_step_id { FS_REQ, FS_USABLE, FS_INUSE, FS_FOOT, FS_RSS, FS_PEAK, FS_COUNT };

/* One step from requested bytes to RSS. */
struct fig_step {
    const char *key;           /* "live_req", "alloc_in_use", ...: JSON, the page's data-fig */
    const char *name;          /* "live requested", "allocator: in use" */
    const char *what;          /* "what the program asked for" */
    char label[64];            /* the view's row name: "live usable (exact; +3.1 MiB rounding)" */
    int have;                  /* 0: no sample yet */
    uint64_t v;
    double ratio;              /* v / live requested (0 when that is 0) */
    uint64_t err;              /* live requested: its standard error; else 0 */
    uint64_t t_ns;             /* when v was taken */
    struct fig_age age;
};

/* Fills steps[FS_COUNT] of d, with a's names for the allocator's steps. */
void fig_waterfall(const struct dump *d, struct fig_step steps[FS_COUNT]);

/* ---- Size classes ---- */

enum fig_class_key {
    FK_LIVE,                   /* live usable bytes; then, for classes with none live, allocations */
    FK_USABLE,                 /* live usable bytes only */
    FK_LIFE,                   /* estimated blocks freed (lifetimes) */
    FK_AGE,                    /* estimated blocks live (ages) */
};

/* Picks size classes by `key`, taking each class's highest over the n
 * dumps: every class with any, or, when more than max > 0, the max with
 * the most; in size order in out[]. Returns how many; *more gets how many
 * were left out. */
int fig_pick_classes(const struct dump *const *d, size_t n, enum fig_class_key key, int max,
                     unsigned *out, int *more);

/* One class's figures. */
struct fig_class {
    double waste;              /* share of the live usable bytes not requested, 0..1 */
    double life[LIFEBUCKET_COUNT], life_all;   /* estimated blocks freed, by lifetime */
    double age[LIFEBUCKET_COUNT], age_all;     /* estimated blocks live, by age */
    /* The tracked blocks each rests on (0 also where unknown: an old JSON
     * snapshot's): under FIG_FEW_TRACKED, its shape is rough, and outputs
     * say so. */
    uint64_t life_n, age_n;
    int life_few, age_few;
};

#define FIG_FEW_TRACKED 30

void fig_class_of(const struct dump *d, unsigned c, struct fig_class *out);

/* The lifetime bucket below which half of v[LIFEBUCKET_COUNT] lies, or -1
 * when v is all 0. */
int fig_median_bucket(const uint64_t *v);

/* The upper bound to show of lifetime or age bucket b (>= 0) of d's
 * blocks, in ns: the bucket's, but no more than d's uptime, which no block
 * of the process outlives (a fork child's blocks from its parent can: not
 * clamped); UINT64_MAX for the last bucket where unbounded. *clamped (when
 * not NULL) says whether the uptime bounds it. */
uint64_t fig_bucket_le_ns(const struct dump *d, int b, int *clamped);

/* ---- Call sites ---- */

enum fig_rank { FR_LIVE, FR_LONG, FR_RATE, FR_PEAK, FR_COUNT };

/* The names of the rankings in JSON: "by_live_bytes", ... */
extern const char *const fig_rank_key[FR_COUNT];

/* One stack's estimates. */
struct fig_site {
    size_t index;              /* in d->stacks */
    const struct dump_stack *s;
    double live_bytes, live_bytes_err;      /* requested bytes of its live blocks */
    double long_bytes, long_bytes_err;      /* of those older than the long-lived bound */
    double live_blocks, allocs;
    double allocs_per_s, bytes_per_s;       /* since the start */
    uint64_t avg_live, avg_alloc;           /* mean requested size: of the live, of all */
    int age_median, life_median;            /* buckets; -1: none */
    double peak_bytes, peak_bytes_err;      /* requested bytes live at the peak (fig_peak) */
    double peak_blocks;
};

void fig_site_of(const struct dump *d, size_t index, unsigned long_bucket, struct fig_site *out);

/* Fills out[0..max) with the top stacks by `rank`, best first, leaving out
 * stacks with nothing to rank by (ties keep the table's order). FR_PEAK
 * ranks by the requested bytes live at the peak (fig_peak). Returns how
 * many. */
size_t fig_sites(const struct dump *d, enum fig_rank rank, unsigned long_bucket,
                 struct fig_site *out, size_t max);

/* The peak of live bytes whose call sites were kept (dump.h, struct
 * dump_peak): the sampler's pass that saw the highest live usable bytes. */
struct fig_peak {
    int have;                  /* 0: none known (no stacks, no pass yet, an older file) */
    uint64_t t_ns;             /* CLOCK_REALTIME */
    double since_start_s;      /* how long after the process's start */
    uint64_t ago_ns;           /* how long before fig_as_of */
    uint64_t live_usable, live_req, rss;
    double live_ratio;         /* live requested then / now (0 when none now) */
};

void fig_peak(const struct dump *d, struct fig_peak *out);

/* How much of the live requested bytes the call sites account for, now or
 * at the peak. Every figure is an estimate with its standard error (the
 * tracked blocks, weighted: seg.h, "Weights"), but `live` at the peak,
 * whose error the sampler does not keep (live_err 0):
 *   live = sites (the n shown) + others (the stacks not shown)
 *          + nostack (tracked blocks without a stack) + rest
 * `rest` is what no tracked block in the table stands for: tracked blocks
 * the table had no room for (tracked_dropped), and the difference between
 * the class estimate of live bytes (exact live usable bytes times the
 * tracked blocks' ratio of requested to usable) and the blocks' own sum;
 * within rest_err it is nothing. */
struct fig_cover {
    int have;                  /* stacks, and live bytes to account for */
    size_t shown, stacks;      /* sites shown; stacks with live bytes */
    double sites, sites_err;
    double all, all_err;       /* every stack */
    double nostack, nostack_err;
    double live, live_err;
    double rest, rest_err;
    double share, share_err;   /* sites / live, 0..1 */
    uint64_t tracked_dropped;  /* tracked allocations the table had no room for (then) */
    uint64_t stacks_dropped;   /* tracked allocations whose stack found no room (in all) */
    int rest_big;              /* |rest| beyond 3 rest_err and 1% of live: say so */
};

/* Fills *out for the n sites `shown` (from fig_sites): their live bytes
 * now, or (at_peak) at the peak. */
void fig_coverage(const struct dump *d, const struct fig_site *shown, size_t n, int at_peak,
                  struct fig_cover *out);

/* The coverage in one line, into dst[cap], returned: "the 5 sites shown
 * hold 54.5 MiB (+/-0.3) of 230 MiB live requested bytes (24%); all 312
 * stacks 60.1 MiB, blocks without a stack 1.2 MiB, the rest 168 MiB: ...";
 * the errors in style st (figfmt.h). */
char *fig_cover_text(const struct fig_cover *c, char *dst, size_t cap, enum figfmt_style st);

/* ---- Qualifiers ---- */

enum fig_sev { FN_INFO, FN_WARN, FN_BAD };

struct fig_note {
    enum fig_sev sev;
    char text[224];
};

#define FIG_NOTES_MAX 12

/* What qualifies d's figures (gone, a fork child's, read from a stale
 * copy, torn, stale statistics, a full table...), most serious first as
 * they come. Returns how many (<= max). */
size_t fig_notes(const struct dump *d, struct fig_note *out, size_t max);

/* ---- History ---- */

/* One point of the history as shown: the span of one or more points of a
 * tier (or samples of the series), oldest first. */
struct fig_point {
    uint64_t t_ns;             /* the span's last sample, CLOCK_REALTIME */
    uint64_t rss, rss_min, rss_max;
    uint64_t live, live_max;   /* live requested bytes: last, highest */
    uint64_t live_usable;
    struct dump_be be;         /* the backend's figures of the last sample */
    uint64_t samples;
    uint64_t step_ms;          /* the step of the tier it comes from (its span when whole) */
};

struct fig_history {
    struct fig_point *pts;     /* malloc'ed (NULL when npts is 0), oldest first */
    size_t npts;
    size_t nfine;              /* the last nfine points are the finest tier (the series) */
};

/* Fills *h with the whole history of d, oldest first: each coarser tier's
 * points from before the finer tiers begin, then the finer ones; d's
 * series when it has no tiers. Unless a finer tier holds the whole life
 * (its `dropped` 0), the coarse point whose span (its last.t_ns less
 * samples * d->interval_ms) reaches into the finer tiers is kept too,
 * placed just before them (t_ns one less than their first) with the values
 * of the first finer point and its own extremes: they cover samples that
 * no finer point holds. Points that end before d->start_ns (a fork
 * child's copy of its parent's history) are left out, and a tier that has
 * any holds the child's whole life. Returns 0, or ENOMEM with no points.
 * The caller frees h->pts. */
int fig_history(const struct dump *d, struct fig_history *h);

/* The points of h from index `from` binned into ncols columns of equal
 * time over [t0, t1] (CLOCK_REALTIME; points outside go to the first or
 * last): each column the span of its points (extremes over them, the rest
 * the last one's). Columns without a point are left out. Writes up to
 * ncols bins to out and returns how many; col[i] (when col is not NULL)
 * gets bin i's column. */
size_t fig_bin(const struct fig_history *h, size_t from, uint64_t t0, uint64_t t1, size_t ncols,
               struct fig_point *out, size_t *col);

/* The first index of h whose point is at or after since_ns (h->npts when
 * none). */
size_t fig_history_from(const struct fig_history *h, uint64_t since_ns);

/* ---- Two snapshots ---- */

/* What happened between snapshot a and a later one of the same process, b
 * (--watch): per second, from the counts that only grow. */
struct fig_rates {
    double dt_s;
    double allocs, frees, req_bytes;   /* per second */
};

/* Fills *r. Returns 1, or 0 when b is not later than a. */
int fig_rates(const struct dump *a, const struct dump *b, struct fig_rates *r);

enum fig_kind { FV_BYTES, FV_COUNT, FV_RATIO };

/* One row of a comparison: a figure of A and of B. */
struct fig_row {
    const char *key;           /* JSON */
    char name[48];
    enum fig_kind kind;
    int have_a, have_b;
    double a, b;
    double ratio;              /* b / a; 0 when a is 0 or either is missing */
};

#define FIG_DIFF_MAX (16 + SIZECLASS_COUNT)

/* The rows of a comparison of a and b: the waterfall, RSS per live byte,
 * the counts, then (from *nhead on) live usable bytes of the classes with
 * the most in either (all of them when all is set, else 16). Returns the
 * number of rows; *nhead gets the number before the classes, *more the
 * number of classes left out. */
size_t fig_diff(const struct dump *a, const struct dump *b, int all, struct fig_row *rows,
                size_t *nhead, int *more);

/* ---- Invariants (figcheck.c) ---- */

/* One invariant that a snapshot breaks, with the figures that show it. */
struct fig_fail {
    const char *name;          /* "allocator in use >= live usable floor" */
    char detail[224];          /* the numbers, and where (a class, a point, a stack) */
};

#define FIG_FAILS_MAX 32

/* Checks d against every invariant a snapshot must hold (doc/shimdump.1,
 * "INVARIANTS"; the list is figcheck.c's table). Writes up to max failures
 * to out and returns how many failed in all (which may exceed max). */
size_t fig_check(const struct dump *d, struct fig_fail *out, size_t max);

/* The invariants' names, one per line, for --check --list. */
void fig_check_list(void (*line)(const char *name, const char *why, void *ctx), void *ctx);

/* ---- The memory outside the heap (figmem.c) ---- */

/* RSS the way the kernel counts it: three classes whose sum is RSS. */
enum fig_mem_class { FMC_ANON, FMC_FILE, FMC_SHMEM, FMC_COUNT };

/* The parts of each class, in order: the last of each is what is left of
 * the class's kernel total, so that the parts sum to RSS exactly. */
enum fig_mem_part_id {
    FM_HEAP,          /* anonymous: the allocator's heap (attributed) */
    FM_STACKS,        /* anonymous: thread stacks, the main one's included */
    FM_ANON_FILES,    /* anonymous: written pages of private file mappings */
    FM_ANON_OTHER,    /* anonymous: the rest (a program's own mmap, a buffer pool) */
    FM_CODE,          /* file-backed: the program and its libraries */
    FM_FILE_OTHER,    /* file-backed: other files */
    FM_SHIM,          /* shared: the shim's own segment */
    FM_SHMEM_OTHER,   /* shared: other shared memory */
    FM_COUNT
};

struct fig_mem_part {
    const char *key;           /* JSON and the page's data-fig: "alloc_heap" */
    const char *name;          /* "the allocator's heap" */
    enum fig_mem_class cls;
    uint64_t v;                /* resident bytes */
    int exact;                 /* 1: measured by the kernel, mapping by mapping;
                                  0: attributed, as `how` says */
    char how[200];             /* where it comes from, in words */
};

/* The names of the classes ("anonymous", "file-backed", "shared") and
 * their JSON keys ("anon", "file", "shmem"). */
extern const char *const fig_mem_class_name[FMC_COUNT];
extern const char *const fig_mem_class_key[FMC_COUNT];

struct fig_mem {
    int have;                  /* 0: not known; why says why, plainly */
    char why[200];
    uint64_t t_ns;             /* when /proc was read */
    uint64_t rss;              /* the kernel's VmRSS then: the sum of cls[] and of part[] */
    uint64_t cls[FMC_COUNT];   /* the kernel's RssAnon, RssFile, RssShmem: exact */
    struct fig_mem_part part[FM_COUNT];
    uint64_t alloc_holds;      /* the allocator's own count the heap rests on (0: none) */
    uint64_t read_ns;          /* what reading /proc cost */
    uint64_t vsz;              /* virtual size, from /proc or the last sample (0: unknown) */
    char vsz_note[240];        /* a virtual size far above RSS, remarked; "" otherwise */
};

/* Fills *m from d's reading of /proc (dump.h, struct dump_mem) and the
 * allocator's figures of its last sample. The class totals are the
 * kernel's; within a class, every part but the last is measured from
 * smaps (the heap attributed: the allocator's count of what it holds,
 * capped at the anonymous mappings it can live in), and the last is the
 * rest of the class, never negative: what the reads disagree on comes off
 * the attributed parts first. With mem not known, m->have is 0 and
 * m->why says why; vsz_note is made from the last sample all the same. */
void fig_memory(const struct dump *d, struct fig_mem *m);

/* ---- The diagnosis (figdiag.c) ---- */

enum fig_conf { FC_LOW, FC_MEDIUM, FC_HIGH };

/* The words of a confidence: "low", "medium", "high". */
extern const char *const fig_conf_name[3];

/* One finding: what the figures show, and what to try. */
struct fig_finding {
    const char *id;            /* stable, for scripts: "alloc_free_held", "leak_suspect",
                                  "outside_heap", "class_rounding", "healthy" */
    enum fig_sev sev;          /* FN_INFO: no alarm (healthy, or for information) */
    enum fig_conf conf;
    char what[400];            /* what the figures show, with the numbers */
    char rests_on[240];        /* the figures it rests on, by name */
    char fix[300];             /* what to try ("" where nothing is to be done) */
    char check[300];           /* how to check it first, with real commands */
};

#define FIG_FINDINGS_MAX 8

/* The findings of d, most serious first: free space held inside the
 * allocator (per backend, in its own terms), live bytes that rise while
 * little is freed (with the call sites whose live bytes only grow), RSS far
 * above what the allocator holds (from fig_memory), size-class rounding
 * waste; or, when none of those is an alarm, one "healthy" finding with
 * the figures. The thresholds are figdiag.c's and doc/shimdump.1's
 * (DIAGNOSIS). Returns how many (>= 1, <= max; max >= 1). */
size_t fig_diagnose(const struct dump *d, struct fig_finding *out, size_t max);

#endif
