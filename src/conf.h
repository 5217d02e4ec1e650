/* conf: the configuration keys of libmallocshim.so, their defaults and their
 * parser. Shared by the preload and the tools; never allocates, never uses
 * stdio, so that the preload can run it before any allocator exists. */
#ifndef MALLOCSHIM_CONF_H
#define MALLOCSHIM_CONF_H

#include <stddef.h>
#include <stdint.h>

enum conf_backend {
    CONF_BACKEND_GLIBC = 0,
    CONF_BACKEND_JEMALLOC = 1,
    CONF_BACKEND_TCMALLOC = 2,
};

/* Keys that the table knows; a bit each in conf.set_mask. */
enum conf_key {
    CONF_K_BACKEND,
    CONF_K_ARENAS,
    CONF_K_TRIM_THRESHOLD,
    CONF_K_MMAP_THRESHOLD,
    CONF_K_TOP_PAD,
    CONF_K_ARENA_TEST,
    CONF_K_VERBOSE,
    CONF_K_TCMALLOC_LIB,
    CONF_K_RECORD,
    CONF_K_SAMPLE,
    CONF_K_SHM_DIR,
    CONF_K_SERIES,
    CONF_K_INTERVAL_MS,
    CONF_K_SLOTS,
    CONF_K_STACKS,
    CONF_K_COUNTER_SLOTS,
    CONF_K_SEED,
    CONF_K_HISTORY,
    CONF_K_CAPTURE,
    CONF_K_CAPTURE_MAX,
    CONF_K_UNWIND_THREADS,
    CONF_K_SAMPLE_BYTES,
    CONF_K_NAME,
    CONF_K_TRACK,
    CONF_K_CAPTURE_START,
    CONF_K_COUNT
};

#define CONF_UNSET          (-1L)
#define CONF_PATH_MAX       256
#define CONF_JEMALLOC_MAX   512
#define CONF_TC_PROPS_MAX   8
#define CONF_TC_NAME_MAX    80
#define CONF_FILE_MAX       (64 * 1024)
/* conf_load passes on this many diagnostics, then one line for the rest. */
#define CONF_WARN_MAX       10
#define CONF_HISTORY_MAX    3            /* coarse history tiers (SEG_TIERS_MAX) */
#define CONF_NAME_MAX       48           /* name: bytes, with the NUL */

struct conf_tc_prop {
    char name[CONF_TC_NAME_MAX];  /* full gperftools property name */
    long long value;
};

struct conf {
    int backend;                  /* enum conf_backend */
    long arenas;                  /* 0: the backend's default */
    long trim_threshold;          /* glibc M_TRIM_THRESHOLD, or CONF_UNSET */
    long mmap_threshold;          /* glibc M_MMAP_THRESHOLD, or CONF_UNSET */
    long top_pad;                 /* glibc M_TOP_PAD, or CONF_UNSET */
    long arena_test;              /* glibc M_ARENA_TEST, or CONF_UNSET */
    int verbose;                  /* 0 or 1 */
    char tcmalloc_lib[CONF_PATH_MAX];       /* "" means the built-in soname */
    int record;                   /* 1: record into the shared-memory segment */
    long sample;                  /* small blocks: track about 1 in `sample` */
    long sample_bytes;            /* sampling by bytes: the mean gap; 0 off */
    int track;                    /* 1: track blocks (sample, sample_bytes); 0: count only */
    char shm_dir[CONF_PATH_MAX];  /* where the segment file goes */
    long series;                  /* time-series ring entries */
    long interval_ms;             /* the sampler's period */
    long slots;                   /* per-thread counter blocks in the segment */
    long counter_slots;           /* counters alone, for threads beyond `slots` */
    long stacks;                  /* frames of call stack kept per tracked block; 0: none */
    long seed;                    /* the sampler's seed; 0: from the clock */
    int capture;                  /* 1: shimdump --capture may ask for a trace */
    long capture_max;             /* a capture's trace file stops at this size */
    char capture_start[CONF_PATH_MAX];  /* trace from the start into this new file
                                           (%p: the pid); "" for none */
    long unwind_threads;          /* threads whose stacks libunwind takes */
    char name[CONF_NAME_MAX];     /* the user's name for the process (a label that
                                     survives a restart); "" for none */
    /* History tiers beyond the series: tier t keeps history_points[t]
     * points of history_step[t] samples each; steps increase. */
    unsigned history_n;
    uint32_t history_step[CONF_HISTORY_MAX];
    uint32_t history_points[CONF_HISTORY_MAX];
    char jemalloc_conf[CONF_JEMALLOC_MAX];  /* malloc_conf text from jemalloc.* keys */
    unsigned n_tc_props;
    struct conf_tc_prop tc_props[CONF_TC_PROPS_MAX];
    uint32_t set_mask;            /* 1 << enum conf_key for each key given */
};

/* Receives one complete diagnostic line (without newline) per problem. */
typedef void (*conf_warn_fn)(void *ctx, const char *msg);

#define CONF_SAMPLE_DEFAULT      256
#define CONF_SAMPLE_BYTES_DEFAULT (512L << 10)
#define CONF_SERIES_DEFAULT      3600
#define CONF_INTERVAL_DEFAULT    1000
#define CONF_SHM_DIR_DEFAULT     "/dev/shm"
#define CONF_SLOTS_DEFAULT       128
#define CONF_COUNTER_SLOTS_DEFAULT 3968
#define CONF_STACKS_DEFAULT      16
#define CONF_UNWIND_THREADS_DEFAULT 16
#define CONF_CAPTURE_MAX_DEFAULT (1L << 30)   /* 1 GiB of trace file */

/* Fills *c with the defaults: glibc, every knob unset, verbose off,
 * recording on: sample:256 into /dev/shm, 3600 samples at 1000 ms, history
 * 10x8640/60x10080, 128 slots and 3968 counter slots, call stacks of 16
 * frames. */
void conf_defaults(struct conf *c);

/* Parses text[0..len) into *c, on top of what *c already holds. Pairs are
 * "key:value" or "key=value", separated by commas or newlines; blanks around
 * keys and values are ignored, and '#' starts a comment that runs to the end
 * of the line. `source` names the text in diagnostics ("MALLOCSHIM_CONF" or a
 * path); for multi-line text the line number is added. Each unknown key or
 * bad value produces one call of warn (which may be NULL) and leaves the
 * setting as it was. Returns the number of problems found. */
int conf_parse(struct conf *c, const char *text, size_t len, const char *source,
               conf_warn_fn warn, void *ctx);

/* Builds the effective configuration the preload uses: the defaults, then
 * the file, then env_conf (the value of MALLOCSHIM_CONF, or NULL). The file is
 * env_file (MALLOCSHIM_CONF_FILE) when that is non-NULL, else default_file; a
 * missing default file is not a problem, a missing or unreadable named file
 * is; a named path that is not a regular file (a FIFO, a device) is opened
 * without blocking and refused, but for /dev/null, which is no file. Of the diagnostics, the first CONF_WARN_MAX
 * reach warn, then one line says how many more there were. When `secure` is set (AT_SECURE: a setuid or setgid process), env_conf
 * and env_file are ignored and a note says so. Reads with open/read into a
 * static buffer: not thread-safe, meant to run once at init. Returns the
 * number of problems found. */
int conf_load(struct conf *c, const char *env_conf, const char *env_file,
              const char *default_file, int secure, conf_warn_fn warn, void *ctx);

/* Writes the configuration as "key:value" pairs, comma-separated, in the
 * syntax of MALLOCSHIM_CONF: the backend, the name (where set), then every
 * other key that was set.
 * Returns the length written (truncated to fit len, always NUL-terminated). */
size_t conf_format(const struct conf *c, char *buf, size_t len);

/* The name of a backend ("glibc", "jemalloc", "tcmalloc"), or "?" */
const char *conf_backend_name(int backend);

/* Parses a backend name. Returns 0 and sets *out, or EINVAL. */
int conf_backend_parse(const char *name, size_t len, int *out);

#endif
