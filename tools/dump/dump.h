/* dump: one snapshot of a process's heap as shimdump sees it, read from a
 * live segment, a saved segment file or a saved JSON file, and written as
 * JSON. Everything the views draw comes from a struct dump, never from the
 * segment itself, so that a hostile segment can only produce odd numbers. */
#ifndef MALLOCSHIM_DUMP_H
#define MALLOCSHIM_DUMP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "seg.h"
#include "sizeclass.h"

/* The JSON schema's version (doc/shimdump.1, "JSON"). Bump it on any change
 * but an added field that readers may do without; a field the reader
 * requires is such a change (2: history, frames' file and line; 3: when
 * the backend's figures and the huge-page RSS were taken, the floor under
 * live bytes; 5: the call sites at the peak of live bytes, the sampling's
 * changes, the tracked blocks per class), and the reader goes on reading the
 * versions before. */
#define DUMP_JSON_VERSION 5

/* Exit codes of shimdump, documented in its man page and README. */
enum dump_exit {
    DX_OK = 0,
    DX_NOTFOUND = 1,   /* no such process, or it has no segment */
    DX_USAGE = 2,
    DX_PERM = 3,       /* a segment or file we may not read */
    DX_VERSION = 4,    /* a segment or JSON file of another format version */
    DX_CORRUPT = 5,    /* a truncated or inconsistent segment or JSON file */
    DX_SYS = 6,        /* any other system error */
    DX_CHECK = 7,      /* a snapshot breaks an invariant (figures.h, fig_check) */
};

enum dump_state {
    DS_UNKNOWN = 0,    /* a copied file: the process cannot be checked */
    DS_ALIVE = 1,
    DS_EXITED = 2,     /* the process exited normally (its file was kept) */
    DS_DEAD = 3,       /* the process is gone without exiting normally */
};

struct dump_class {
    uint64_t allocs, frees, reallocs, req_bytes;
    uint64_t live_count, live_usable, live_req;
    uint64_t live_req_err;             /* live_req's standard error; 0 when exact */
    uint64_t tracked_freed, tracked_live;   /* tracked blocks, unweighted: freed, and
                                              still live (what life and age rest on;
                                              0 in a JSON snapshot before format 5) */
    uint64_t life[LIFEBUCKET_COUNT];   /* blocks freed, by lifetime: estimated from the
                                          tracked ones, each weighted (seg.h, "Weights") */
    uint64_t age[LIFEBUCKET_COUNT];    /* blocks live, by age: estimated likewise */
};

/* The backend's statistics of a sample (seg.h, struct seg_backend_stats):
 * its fields a..f, which figures.h names per backend, taken at t_ns. */
struct dump_be {
    uint64_t v[6];
    uint64_t t_ns;                     /* CLOCK_REALTIME; 0: unknown (JSON format 2) or none */
    uint64_t live_lo, live_hi;         /* live usable bytes while they were taken lay between
                                          the two (seg.h); 0: unknown */
};

struct dump_sample {
    uint64_t t_ns;                     /* CLOCK_REALTIME */
    uint64_t live_count, live_usable, live_req;
    uint64_t allocs, frees, req_bytes;
    uint64_t rss, rss_anon, rss_huge, vsz;
    uint64_t rss_huge_ns;              /* when rss_huge was read; 0: unknown */
    struct dump_be be;
};

/* History: the series and coarser tiers of points, each point the span of
 * `samples` consecutive samples (seg.h, struct seg_point). */
#define DUMP_TIERS_MAX 4   /* the series and up to SEG_TIERS_MAX coarser tiers */

struct dump_point {
    struct dump_sample last;           /* the span's last sample; last.t_ns is the point's time */
    uint64_t rss_min, rss_max;         /* RSS over the span */
    uint64_t live_usable_max;          /* live usable bytes at their highest in the span */
    uint64_t live_req_max;             /* live requested bytes at their highest */
    uint32_t samples;                  /* samples in the span: the tier's step in
                                          samples, fewer in a tier's newest point */
};

struct dump_tier {
    uint64_t step_ms;                  /* the span of a point: interval_ms times its samples */
    uint64_t dropped;                  /* points of the tier before its oldest here (the ring
                                          let them go, or the dump keeps no more): 0 when it
                                          holds the whole life */
    size_t npoints;                    /* oldest first */
    struct dump_point *points;         /* malloc'ed; NULL when npoints is 0 */
};

/* Call stacks (stacks:N > 0). Their figures are estimates of all blocks
 * from the tracked ones, each weighted (seg.h, "Weights"; exact with
 * sample:1), with the count of tracked blocks they rest on and their
 * standard errors. */
struct dump_obj {
    char path[sizeof ((struct seg_obj *)0)->path];   /* as recorded (may hold any byte) */
    uint64_t bias, lo, hi;
    uint32_t build_id_len, flags;                    /* enum seg_obj_flags */
    uint8_t build_id[32];
};

/* One frame: a return address, named by dump_symbolize (or read back from
 * JSON) when func is non-NULL, and placed in its source when file is. */
struct dump_frame {
    uint64_t addr;
    int obj;                   /* index in dump.objs, or -1 */
    uint64_t obj_off;          /* addr - the object's bias, when obj >= 0 */
    char *func;                /* malloc'ed, demangled; NULL when unknown */
    uint64_t func_off;
    char *note;                /* malloc'ed: why there is no name; or NULL */
    char *file;                /* malloc'ed: the source file of the call (the path the
                                  compiler recorded, from DWARF); NULL when unknown */
    uint32_t line;             /* its line, >= 1; 0 when file is NULL */
};

struct dump_stack {
    uint32_t id;               /* 1 + its entry in the segment's table */
    uint32_t depth;
    size_t frame0;             /* its frames: dump.frames[frame0 .. frame0+depth) */
    uint64_t allocs, req_bytes, frees;          /* since start */
    uint64_t live_count, live_req, live_usable; /* live now */
    uint64_t life[LIFEBUCKET_COUNT];            /* frees, by lifetime */
    uint64_t age_count[LIFEBUCKET_COUNT];       /* live blocks, by age */
    uint64_t age_req[LIFEBUCKET_COUNT];         /* their requested bytes */
    uint64_t tracked_allocs, tracked_live;      /* the tracked blocks the estimates rest on */
    uint64_t live_req_err;                      /* live_req's standard error, bytes */
    uint64_t age_req_err[LIFEBUCKET_COUNT];     /* age_req's, per bucket (independent) */
    /* Its live blocks at the peak of live bytes (struct dump_peak): blocks,
     * requested bytes and that estimate's standard error, and the tracked
     * blocks they rest on; all 0 when it had none then, or no peak is known. */
    uint64_t peak_count, peak_req, peak_req_err, peak_tracked;
};

/* The peak of live bytes whose call sites were kept (seg.h, struct
 * seg_stacks, "The peak"): the sampler's pass that saw the highest live
 * usable bytes, what was live and resident then, and the live tracked
 * blocks without a stack then. ns 0: none known (no pass yet, no stacks,
 * a format-4 JSON snapshot, or a fork child's copy of its parent's). */
struct dump_peak {
    uint64_t ns;                       /* CLOCK_REALTIME of that pass */
    uint64_t live_usable;              /* exact */
    uint64_t live_req;                 /* estimated as the series' are */
    uint64_t rss;
    uint64_t nostack_count, nostack_req, nostack_req_err;
    uint64_t tracked_dropped;          /* tracked allocations the table had had no room for */
};

/* The process's memory as the kernel tells it, read by shimdump from a
 * running process's /proc (dumpproc.c), or back from a JSON snapshot that
 * has it. The totals are the kernel's own counters (/proc/PID/status:
 * rss == rss_anon + rss_file + rss_shmem); the parts are sums over the
 * mappings of /proc/PID/smaps, read a moment later, by what each mapping
 * is (figures.h, fig_memory, attributes them and makes the sums meet). */
struct dump_mem {
    int have;                          /* 0: not known (gone, a file, no permission) */
    int err;                           /* errno of the failed read when not have; 0: not tried */
    uint64_t t_ns;                     /* CLOCK_REALTIME of the read */
    uint64_t read_ns;                  /* what reading them cost shimdump, wall time */
    uint64_t rss, rss_anon, rss_file, rss_shmem, vsz, swap;   /* status: exact */
    uint64_t threads, cpus;            /* status's Threads; CPUs the process may run on */
    uint64_t mappings;                 /* in smaps */
    /* smaps, by mapping (resident bytes) */
    uint64_t brk;                      /* [heap]: glibc's main arena */
    uint64_t main_stack;               /* [stack] */
    uint64_t thread_stacks, nstacks;   /* read-write anonymous mappings right above a
                                          no-access guard, as glibc lays out a thread's stack */
    uint64_t anon_maps;                /* other anonymous mappings (the allocator's, the
                                          program's own mmap) */
    uint64_t anon_in_files;            /* written (copy-on-write) pages of private file
                                          mappings: counted anonymous by the kernel */
    uint64_t file_code;                /* files with an executable mapping: the program
                                          and its libraries */
    uint64_t file_other;               /* other mapped files */
    uint64_t shim_seg;                 /* the shim's own segment (memfd "mallocshim") */
    uint64_t shmem_other;              /* other shared memory (tmpfs, SysV, shared anonymous) */
    uint64_t largest_vsz, largest_rss; /* the largest mapping: its size and resident bytes */
    int largest_noaccess;              /* it is a no-access (---p) reservation */
};

struct dump {
    int json_version;                  /* of the JSON file read, else DUMP_JSON_VERSION */
    int saved;                         /* read from a JSON snapshot: state and times are as of then */
    char source[512];                  /* where it was read from */
    uint32_t pid, uid;
    char comm[SEG_COMM_MAX];           /* NUL-terminated, control characters replaced */
    char backend[SEG_BACKEND_NAME_MAX];
    char backend_version[SEG_BACKEND_VERSION_MAX];
    char config[SEG_CONFIG_MAX];
    int backend_id;                    /* enum seg_backend_id */
    int state;                         /* enum dump_state */
    uint32_t sample, interval_ms;
    uint64_t sample_bytes;             /* seg_header.sample_bytes: 0 off */
    /* The sampling as it stands (shimdump --set may have changed it while
     * the process ran): tracking off (counts only), stacks switched off;
     * how many changes, and the last of them, oldest first. */
    int track_off, stacks_off;
    int track_was_off;                 /* tracking was off for a while (now or before) */
    uint32_t settings_n;
    size_t nchanges;
    struct dump_change {
        uint64_t t_ns;                 /* CLOCK_REALTIME of the change */
        uint64_t sample_bytes;
        uint32_t sample;
        int track, stacks;             /* on after it */
    } changes[SEG_CHANGES_MAX];
    int exact;                         /* live requested bytes exact (sample:1, nothing lost) */
    int inherited;                     /* a fork child's counts, approximate */
    int copy, copy_stale;              /* read from the copy (SEG_F_COPY), which could
                                          not be refreshed (SEG_F_COPY_STALE) */
    uint64_t copy_ns;                  /* CLOCK_REALTIME of the copy, 0 if not one */
    int consistent;                    /* every region read consistently */
    int counts_ok;                     /* no class had frees > allocs */
    uint64_t dropped;                  /* tracked allocations the table had no room for */
    uint64_t threads_seen;
    uint64_t start_ns, heartbeat_ns, snap_ns;   /* CLOCK_REALTIME */
    /* A ceiling over live usable bytes while the snapshot was read: usable
     * bytes allocated by its end less those freed by its start (the counters
     * summed again after the tracked table), so that what the tracked table
     * holds can be checked against it; 0: unknown (JSON format 2). */
    uint64_t live_usable_hi;
    struct dump_class cls[SIZECLASS_COUNT];
    struct dump_class total;           /* the sums (life/age included) */
    uint64_t peak_rss, peak_rss_ns;
    size_t nseries;                    /* oldest first */
    struct dump_sample *series;        /* malloc'ed; NULL when nseries is 0 */
    /* The history, fine to coarse: tiers[0] holds the series as points of
     * one sample each (step interval_ms), tiers[1..ntiers) the coarser
     * tiers. ntiers is at least 1 once read. */
    size_t ntiers;
    struct dump_tier tiers[DUMP_TIERS_MAX];
    /* Call stacks: stack_depth 0 when the segment has none. */
    uint32_t stack_depth;
    int no_unwinder;                   /* asked for, but libunwind could not be used */
    int stacks_stopped;                /* stacks stopped while the process ran */
    int symbolized;                    /* frames have been named (or came named from JSON) */
    uint64_t stacks_used, stacks_dropped, stacks_failed, objs_dropped;
    uint64_t fast_threads, fast_moves;   /* threads on libunwind: now, in all */
    uint64_t nostack_live_count, nostack_live_req;   /* live blocks without a stack (estimates) */
    uint64_t nostack_live_req_err;                   /* nostack_live_req's standard error
                                                        (0 when read from JSON) */
    uint64_t ages_at_ns;               /* CLOCK_MONOTONIC the stacks' ages are counted to */
    struct dump_peak at_peak;          /* the stacks' peak_* are as of it */
    size_t nobjs, nstacks, nframes;
    struct dump_obj *objs;             /* malloc'ed (all three) */
    struct dump_stack *stacks;
    struct dump_frame *frames;
    struct dump_mem mem;               /* the process's memory, class by class (live only) */
};

/* The latest time-series sample, or NULL when there is none. */
const struct dump_sample *dump_last(const struct dump *d);

/* The finest tier that holds the whole life, or whose first point's span
 * begins at or before `since_ns` (CLOCK_REALTIME; 0: the whole life); else
 * the coarsest tier that holds points; NULL when the dump has none. */
const struct dump_tier *dump_tier_for(const struct dump *d, uint64_t since_ns);

/* Fills the dump from a segment image of `size` bytes at base (a mapping of
 * a live file, or a buffer). Every count, index and offset is checked first;
 * the segment is never trusted. Returns DX_OK, DX_VERSION or DX_CORRUPT, with
 * a one-line reason in why[] on failure. `state` is stored as given.
 * The caller must guard against SIGBUS when base is a mapping of a file that
 * may shrink (dump_map_read does). */
int dump_from_image(struct dump *d, const void *base, uint64_t size, int state,
                    char *why, size_t whylen);

/* Frees the working memory of a dump_from_image that a SIGBUS cut short
 * (its caller jumped out of it); the dump itself is then freed with
 * dump_free. Harmless when no call was cut short. */
void dump_image_abandon(void);

/* Parses a JSON document written by dump_write_json. Every key of the
 * schema must be there: a document that lacks one, or holds one of the
 * wrong type, is DX_CORRUPT (why[] names the key). Returns DX_OK,
 * DX_VERSION, DX_CORRUPT or DX_SYS (out of memory). Never crashes on any
 * input. */
int dump_from_json(struct dump *d, const char *text, size_t len, char *why, size_t whylen);

/* Writes the dump as JSON (one object, pretty-printed, with a final
 * newline). */
void dump_write_json(FILE *f, const struct dump *d);

/* Writes the JSON schema's keys, one line per object: "name: key key ...",
 * from the tables that the writer and the reader follow. */
void dump_write_json_schema(FILE *f);

/* Fills d->tiers[0] from d->series (points of one sample each, step
 * interval_ms, `dropped` the samples before them) and sets ntiers to 1.
 * Returns 0, or ENOMEM. */
int dump_fine_tier(struct dump *d, uint64_t dropped);

/* Names the frames of d's stacks from the ELF symbols of the objects the
 * process had mapped (tools/dump/sym.c), and in a build with libdw gives them
 * their source file and line where an object has DWARF, reading files under
 * `root` first when it is non-NULL ("/proc/PID/root" for a live process).
 * Frames already named are kept. A build without libelf only places each
 * frame in its object, notes why it has no name and leaves d->symbolized 0.
 * Returns 0, or ENOMEM. */
int dump_symbolize(struct dump *d, const char *root);

/* Writes --stacks --json: the top `top` (at most 64) call sites of each
 * ranking (figures.h, fig_sites), long-lived meaning older than bucket
 * long_bucket, each with its estimates and its stack. */
void dump_write_sites_json(FILE *f, const struct dump *d, unsigned long_bucket, size_t top);

/* Reads d->mem from /proc/<d->pid>/status and smaps: call it only for a
 * running process that the caller has judged to be d's (its start time),
 * and judge again after. Memory is bounded whatever the process maps
 * (lines are cut at 8 KiB, files told apart at 65536). Sets mem.have, or
 * mem.err to why not (EACCES: another user's process, ESRCH: gone or a
 * zombie). Returns 0, or that errno. */
int dump_read_mem(struct dump *d);

/* Frees what the dump holds (not d itself) and zeroes it. */
void dump_free(struct dump *d);

/* Writes s into dst[cap] with control and non-ASCII bytes replaced by '?',
 * so that text from a segment cannot move the terminal's cursor. */
void dump_clean_text(char *dst, size_t cap, const char *s, size_t n);

/* Writes a one-line reason into why[len] (nothing when why is NULL or len
 * 0), for the readers' error returns. */
void dump_why(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The backend's name by its id (enum seg_backend_id); "" for another id. */
const char *dump_be_name(int backend_id);

/* The names of the backend statistics a..f for a backend id ("" when the
 * field is not used), for JSON and for the views. */
const char *dump_be_field(int backend_id, unsigned i);

/* Whether field i of a backend's statistics is bytes (0: unused, or a
 * count). */
int dump_be_bytes(int backend_id, unsigned i);

#endif
