/* conf: the configuration keys of libmallocshim.so, their defaults and their
 * parser. Never allocates and never uses stdio. */
#include "config.h"

#include "conf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fmt.h"
#include "seg.h"

enum kind { KIND_BACKEND, KIND_INT, KIND_SIZE, KIND_BOOL, KIND_PATH, KIND_HISTORY, KIND_NAME };

struct key {
    const char *name;
    enum conf_key id;
    enum kind kind;
    long min, max;
    size_t off;       /* offset of the field in struct conf */
    const char *what; /* what a valid value looks like, for diagnostics */
};

#define F(field) offsetof(struct conf, field)

static const struct key keys[] = {
    { "backend", CONF_K_BACKEND, KIND_BACKEND, 0, 0, F(backend),
      "glibc, jemalloc or tcmalloc" },
    { "arenas", CONF_K_ARENAS, KIND_INT, 0, 4096, F(arenas),
      "an integer 0..4096, 0 for the backend's default" },
    /* mallopt takes an int: glibc's knobs stop below 2 GiB. */
    { "trim_threshold", CONF_K_TRIM_THRESHOLD, KIND_SIZE, 0, INT_MAX, F(trim_threshold),
      "a size below 2g, with an optional k, m or g suffix" },
    { "mmap_threshold", CONF_K_MMAP_THRESHOLD, KIND_SIZE, 0, 32L * 1024 * 1024, F(mmap_threshold),
      "a size 0..32m, with an optional k, m or g suffix" },
    { "top_pad", CONF_K_TOP_PAD, KIND_SIZE, 0, INT_MAX, F(top_pad),
      "a size below 2g, with an optional k, m or g suffix" },
    { "arena_test", CONF_K_ARENA_TEST, KIND_INT, 1, 4096, F(arena_test),
      "an integer 1..4096" },
    { "verbose", CONF_K_VERBOSE, KIND_BOOL, 0, 1, F(verbose),
      "0, 1, on, off, yes, no, true or false" },
    { "tcmalloc_lib", CONF_K_TCMALLOC_LIB, KIND_PATH, 0, 0, F(tcmalloc_lib),
      "a library path or soname" },
    { "record", CONF_K_RECORD, KIND_BOOL, 0, 1, F(record),
      "on or off" },
    { "sample", CONF_K_SAMPLE, KIND_INT, 1, 1L << 30, F(sample),
      "an integer 1..1073741824: track 1 in N allocations" },
    { "shm_dir", CONF_K_SHM_DIR, KIND_PATH, 0, 0, F(shm_dir),
      "an absolute directory path" },
    { "series", CONF_K_SERIES, KIND_INT, 60, 1L << 20, F(series),
      "an integer 60..1048576 (time-series samples kept)" },
    { "interval_ms", CONF_K_INTERVAL_MS, KIND_INT, 10, 60000, F(interval_ms),
      "an integer 10..60000 (milliseconds between samples)" },
    { "slots", CONF_K_SLOTS, KIND_INT, 1, 65536, F(slots),
      "an integer 1..65536 (threads with counters of their own)" },
    { "stacks", CONF_K_STACKS, KIND_INT, 0, 64, F(stacks),
      "an integer 0..64 (call-stack frames per tracked allocation, 0 for none)" },
    { "counter_slots", CONF_K_COUNTER_SLOTS, KIND_INT, 0, 65536, F(counter_slots),
      "an integer 0..65536 (threads beyond slots with counters of their own)" },
    { "seed", CONF_K_SEED, KIND_INT, 0, LONG_MAX, F(seed),
      "an integer 0..9223372036854775807 (the sampling's seed, 0 for one from the clock)" },
    { "history", CONF_K_HISTORY, KIND_HISTORY, 0, 0, 0,
      "off, or up to 3 tiers STEPxPOINTS joined by '/', each STEP 2..1000000 samples a point "
      "and greater than the one before, POINTS 2..1048576 (e.g. 10x8640/60x10080)" },
    { "capture", CONF_K_CAPTURE, KIND_BOOL, 0, 1, F(capture),
      "on or off" },
    { "capture_max", CONF_K_CAPTURE_MAX, KIND_SIZE, 1L << 20, 1L << 40, F(capture_max),
      "a size 1m..1024g, with an optional k, m or g suffix" },
    { "sample_bytes", CONF_K_SAMPLE_BYTES, KIND_SIZE, 0, 1L << 40, F(sample_bytes),
      "a size 0..1t, with an optional k, m or g suffix (0: sizes do not count)" },
    { "unwind_threads", CONF_K_UNWIND_THREADS, KIND_INT, 0, 1024, F(unwind_threads),
      "an integer 0..1024 (threads whose call stacks libunwind takes, 0 for none)" },
    { "name", CONF_K_NAME, KIND_NAME, 0, 0, F(name),
      "letters, digits, '.', '_' and '-'" },
    { "track", CONF_K_TRACK, KIND_BOOL, 0, 1, F(track),
      "on or off (off: sizes are counted, no block is tracked)" },
    { "capture_start", CONF_K_CAPTURE_START, KIND_PATH, 0, 0, F(capture_start),
      "an absolute file path (%p: the pid, %e: the program's name, %%: a %)" },
};

static const char *const backend_names[] = { "glibc", "jemalloc", "tcmalloc" };

const char *conf_backend_name(int backend)
{
    if (backend >= 0 && backend < (int)(sizeof backend_names / sizeof backend_names[0]))
        return backend_names[backend];
    return "?";
}

static int span_eq(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    return n == l && memcmp(s, lit, l) == 0;
}

int conf_backend_parse(const char *name, size_t len, int *out)
{
    for (int i = 0; i < (int)(sizeof backend_names / sizeof backend_names[0]); i++) {
        if (span_eq(name, len, backend_names[i])) {
            *out = i;
            return 0;
        }
    }
    return EINVAL;
}

void conf_defaults(struct conf *c)
{
    memset(c, 0, sizeof *c);
    c->backend = CONF_BACKEND_GLIBC;
    c->arenas = 0;
    c->trim_threshold = CONF_UNSET;
    c->mmap_threshold = CONF_UNSET;
    c->top_pad = CONF_UNSET;
    c->arena_test = CONF_UNSET;
    c->record = 1;   /* shimdump <pid> works with nothing but LD_PRELOAD */
    c->sample = CONF_SAMPLE_DEFAULT;
    c->sample_bytes = CONF_SAMPLE_BYTES_DEFAULT;
    memcpy(c->shm_dir, CONF_SHM_DIR_DEFAULT, sizeof CONF_SHM_DIR_DEFAULT);
    c->series = CONF_SERIES_DEFAULT;
    c->interval_ms = CONF_INTERVAL_DEFAULT;
    c->slots = CONF_SLOTS_DEFAULT;
    c->counter_slots = CONF_COUNTER_SLOTS_DEFAULT;
    c->stacks = CONF_STACKS_DEFAULT;
    c->unwind_threads = CONF_UNWIND_THREADS_DEFAULT;
    c->capture = 1;
    c->track = 1;
    c->capture_max = CONF_CAPTURE_MAX_DEFAULT;
    c->history_n = 2;
    c->history_step[0] = SEG_TIER1_STEP_DEFAULT;
    c->history_points[0] = SEG_TIER1_POINTS_DEFAULT;
    c->history_step[1] = SEG_TIER2_STEP_DEFAULT;
    c->history_points[1] = SEG_TIER2_POINTS_DEFAULT;
}

/* Parses a decimal integer, with a binary k/m/g suffix when `suffix` is set.
 * Returns 0 or EINVAL/ERANGE. */
static int parse_num(const char *s, size_t n, int suffix, long long *out)
{
    unsigned long long v = 0;
    size_t i = 0;
    int neg = 0;

    if (n && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i++;
    }
    if (i == n || s[i] < '0' || s[i] > '9')
        return EINVAL;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        if (v > (ULLONG_MAX - 9) / 10)
            return ERANGE;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (i < n && suffix) {
        unsigned shift = 0;
        switch (s[i]) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        default: return EINVAL;
        }
        i++;
        if (i < n && (s[i] == 'b' || s[i] == 'B'))
            i++;
        if (v > (ULLONG_MAX >> shift))
            return ERANGE;
        v <<= shift;
    }
    if (i != n)
        return EINVAL;
    if (v > (unsigned long long)LLONG_MAX)
        return ERANGE;
    *out = neg ? -(long long)v : (long long)v;
    return 0;
}

/* Parses "off" or "STEPxPOINTS[/STEPxPOINTS]..." (struct conf's history
 * fields). Returns 0 and fills *out, or EINVAL. */
static int parse_history(const char *s, size_t n, struct conf *out)
{
    unsigned t = 0;
    size_t i = 0;

    if (span_eq(s, n, "off") || span_eq(s, n, "0")) {
        out->history_n = 0;
        return 0;
    }
    while (i < n) {
        size_t a = i, x, e;
        long long step, points;
        while (i < n && s[i] != '/')
            i++;
        e = i;
        for (x = a; x < e && s[x] != 'x'; x++)
            ;
        if (t == CONF_HISTORY_MAX || x == e ||
            parse_num(s + a, x - a, 0, &step) != 0 || parse_num(s + x + 1, e - x - 1, 0, &points) != 0 ||
            step < 2 || step > SEG_TIER_STEP_MAX || points < 2 || points > SEG_TIER_POINTS_MAX ||
            (t > 0 && step <= out->history_step[t - 1]))
            return EINVAL;
        out->history_step[t] = (uint32_t)step;
        out->history_points[t] = (uint32_t)points;
        t++;
        if (i < n && ++i == n)
            return EINVAL;   /* a trailing '/' */
    }
    if (t == 0)
        return EINVAL;
    out->history_n = t;
    return 0;
}

static int parse_bool(const char *s, size_t n, int *out)
{
    static const char *const yes[] = { "1", "on", "yes", "true" };
    static const char *const no[] = { "0", "off", "no", "false" };
    for (size_t i = 0; i < 4; i++) {
        if (span_eq(s, n, yes[i])) { *out = 1; return 0; }
        if (span_eq(s, n, no[i])) { *out = 0; return 0; }
    }
    return EINVAL;
}

/* Diagnostics carry where the pair came from: "SOURCE" or "SOURCE:LINE". */
struct where {
    const char *source;
    unsigned line;   /* 0 when the text is a single line (the environment) */
    conf_warn_fn warn;
    void *ctx;
    int problems;
};

__attribute__((format(printf, 2, 3)))
static void complain(struct where *w, const char *fmt, ...)
{
    char msg[400];
    size_t n;
    va_list ap;

    w->problems++;
    if (!w->warn)
        return;
    if (w->line)
        n = fmt_buf(msg, sizeof msg, "%s:%u: ", w->source, w->line);
    else
        n = fmt_buf(msg, sizeof msg, "%s: ", w->source);
    va_start(ap, fmt);
    fmt_vbuf(msg + n, sizeof msg - n, fmt, ap);
    va_end(ap);
    w->warn(w->ctx, msg);
}

/* Copies a span into a bounded, NUL-terminated buffer for diagnostics. */
static const char *show(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    for (size_t i = 0; i < n; i++)
        dst[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    dst[n] = '\0';
    return dst;
}

static int valid_name_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.';
}

static void set_jemalloc(struct conf *c, struct where *w, const char *opt, size_t on,
                         const char *val, size_t vn)
{
    char a[64], b[64];
    size_t have = strlen(c->jemalloc_conf);
    size_t need = on + 1 + vn + (have ? 1 : 0);

    for (size_t i = 0; i < on; i++) {
        if (!valid_name_char(opt[i]) || opt[i] == '.') {
            complain(w, "bad jemalloc option name 'jemalloc.%s' (ignored)", show(a, sizeof a, opt, on));
            return;
        }
    }
    for (size_t i = 0; i < vn; i++) {
        if (val[i] <= ' ' || val[i] >= 0x7f) {
            complain(w, "bad value '%s' for 'jemalloc.%s': no blanks or control characters (ignored)",
                     show(b, sizeof b, val, vn), show(a, sizeof a, opt, on));
            return;
        }
    }
    if (on == 0 || vn == 0) {
        complain(w, "empty jemalloc option or value 'jemalloc.%s' (ignored)", show(a, sizeof a, opt, on));
        return;
    }
    if (have + need >= sizeof c->jemalloc_conf) {
        complain(w, "too many jemalloc options: 'jemalloc.%s' does not fit in %zu bytes (ignored)",
                 show(a, sizeof a, opt, on), sizeof c->jemalloc_conf);
        return;
    }
    char *p = c->jemalloc_conf + have;
    if (have)
        *p++ = ',';
    memcpy(p, opt, on);
    p += on;
    *p++ = ':';
    memcpy(p, val, vn);
    p[vn] = '\0';
}

static void set_tcmalloc(struct conf *c, struct where *w, const char *name, size_t nn,
                         const char *val, size_t vn)
{
    char a[CONF_TC_NAME_MAX], b[64];
    long long v;
    unsigned i;

    for (size_t k = 0; k < nn; k++) {
        if (!valid_name_char(name[k])) {
            complain(w, "bad tcmalloc property name '%s' (ignored)", show(a, sizeof a, name, nn));
            return;
        }
    }
    if (nn >= CONF_TC_NAME_MAX || nn <= sizeof "tcmalloc." - 1) {
        complain(w, "bad tcmalloc property name '%s' (ignored)", show(a, sizeof a, name, nn));
        return;
    }
    if (parse_num(val, vn, 1, &v) != 0 || v < 0) {
        complain(w, "bad value '%s' for '%s' (expected a size in bytes; ignored)",
                 show(b, sizeof b, val, vn), show(a, sizeof a, name, nn));
        return;
    }
    for (i = 0; i < c->n_tc_props; i++)
        if (span_eq(name, nn, c->tc_props[i].name))
            break;
    if (i == CONF_TC_PROPS_MAX) {
        complain(w, "too many tcmalloc properties: '%s' (at most %d; ignored)",
                 show(a, sizeof a, name, nn), CONF_TC_PROPS_MAX);
        return;
    }
    memcpy(c->tc_props[i].name, name, nn);
    c->tc_props[i].name[nn] = '\0';
    c->tc_props[i].value = v;
    if (i == c->n_tc_props)
        c->n_tc_props++;
}

static void set_pair(struct conf *c, struct where *w, const char *k, size_t kn,
                     const char *v, size_t vn)
{
    char a[64], b[CONF_PATH_MAX];

    if (kn > 9 && memcmp(k, "jemalloc.", 9) == 0) {
        set_jemalloc(c, w, k + 9, kn - 9, v, vn);
        return;
    }
    if (kn > 9 && memcmp(k, "tcmalloc.", 9) == 0) {
        set_tcmalloc(c, w, k, kn, v, vn);
        return;
    }
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const struct key *key = &keys[i];
        char *field = (char *)c + key->off;
        long long num;
        int b01, be;

        if (!span_eq(k, kn, key->name))
            continue;
        switch (key->kind) {
        case KIND_BACKEND:
            if (conf_backend_parse(v, vn, &be) != 0) {
                complain(w, "unknown backend '%s' (expected %s; using %s)",
                         show(b, sizeof b, v, vn), key->what, conf_backend_name(c->backend));
                return;
            }
            *(int *)field = be;
            break;
        case KIND_INT:
        case KIND_SIZE:
            if (parse_num(v, vn, key->kind == KIND_SIZE, &num) != 0 || num < key->min || num > key->max) {
                complain(w, "bad value '%s' for '%s' (expected %s; using the default)",
                         show(b, sizeof b, v, vn), key->name, key->what);
                return;
            }
            *(long *)field = (long)num;
            break;
        case KIND_BOOL:
            if (parse_bool(v, vn, &b01) != 0) {
                complain(w, "bad value '%s' for '%s' (expected %s; using the default)",
                         show(b, sizeof b, v, vn), key->name, key->what);
                return;
            }
            *(int *)field = b01;
            break;
        case KIND_HISTORY: {
            struct conf h = *c;
            if (parse_history(v, vn, &h) != 0) {
                complain(w, "bad value '%s' for '%s' (expected %s; using the default)",
                         show(b, sizeof b, v, vn), key->name, key->what);
                return;
            }
            c->history_n = h.history_n;
            memcpy(c->history_step, h.history_step, sizeof c->history_step);
            memcpy(c->history_points, h.history_points, sizeof c->history_points);
            break;
        }
        case KIND_NAME: {
            /* a label value anywhere: no comma (the config's own
             * separator), quote, blank or control character */
            size_t ok = 0;
            while (ok < vn && ((v[ok] >= 'a' && v[ok] <= 'z') || (v[ok] >= 'A' && v[ok] <= 'Z') ||
                               (v[ok] >= '0' && v[ok] <= '9') || v[ok] == '.' || v[ok] == '_' ||
                               v[ok] == '-'))
                ok++;
            if (vn == 0 || vn >= CONF_NAME_MAX || ok < vn) {
                complain(w, "bad value for '%s' (expected %s, 1..%d of them; ignored)", key->name,
                         key->what, CONF_NAME_MAX - 1);
                return;
            }
            memcpy(field, v, vn);
            field[vn] = '\0';
            break;
        }
        case KIND_PATH:
            if (vn == 0 || vn >= CONF_PATH_MAX || ((key->id == CONF_K_SHM_DIR || key->id == CONF_K_CAPTURE_START) && v[0] != '/')) {
                complain(w, "bad value for '%s' (expected %s of 1..%d bytes; using the default)",
                         key->name, key->what, CONF_PATH_MAX - 1);
                return;
            }
            memcpy(field, v, vn);
            field[vn] = '\0';
            break;
        }
        c->set_mask |= 1u << key->id;
        return;
    }
    complain(w, "unknown key '%s' (ignored)", show(a, sizeof a, k, kn));
}

static int is_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r';
}

/* The parser proper; `numbered` adds line numbers to diagnostics. */
static int parse_text(struct conf *c, const char *text, size_t len, const char *source,
                      int numbered, conf_warn_fn warn, void *ctx)
{
    struct where w = { source, 0, warn, ctx, 0 };
    size_t i = 0;
    unsigned line = 1;

    while (i < len) {
        /* One item runs to the next ',' or newline; a '#' ends the useful
         * part of the line. */
        size_t start = i, end, stop;
        while (i < len && text[i] != ',' && text[i] != '\n' && text[i] != '#')
            i++;
        end = i;
        if (i < len && text[i] == '#')
            while (i < len && text[i] != '\n')
                i++;
        stop = i;
        w.line = numbered ? line : 0;
        if (stop < len && text[stop] == '\n')
            line++;
        i = stop + 1;

        while (start < end && is_blank(text[start]))
            start++;
        while (end > start && is_blank(text[end - 1]))
            end--;
        if (start == end)
            continue;

        const char *item = text + start;
        size_t n = end - start, sep = 0;
        while (sep < n && item[sep] != ':' && item[sep] != '=')
            sep++;
        if (sep == n) {
            char a[64];
            complain(&w, "'%s' is not a key:value pair (ignored)", show(a, sizeof a, item, n));
            continue;
        }
        size_t kn = sep, vs = sep + 1;
        while (kn > 0 && is_blank(item[kn - 1]))
            kn--;
        while (vs < n && is_blank(item[vs]))
            vs++;
        set_pair(c, &w, item, kn, item + vs, n - vs);
    }
    return w.problems;
}

int conf_parse(struct conf *c, const char *text, size_t len, const char *source,
               conf_warn_fn warn, void *ctx)
{
    return parse_text(c, text, len, source, memchr(text, '\n', len) != NULL, warn, ctx);
}

static char file_buf[CONF_FILE_MAX];

/* conf_load's diagnostics, the first CONF_WARN_MAX passed on and the rest
 * counted: a value repeated 20,000 times must not write 20,000 lines into a
 * server's log. */
struct capped {
    conf_warn_fn warn;
    void *ctx;
    unsigned said;
};

static void capped_warn(void *ctx, const char *msg)
{
    struct capped *k = ctx;
    if (k->said++ < CONF_WARN_MAX)
        k->warn(k->ctx, msg);
}

int conf_load(struct conf *c, const char *env_conf, const char *env_file,
              const char *default_file, int secure, conf_warn_fn warn, void *ctx)
{
    struct capped cap = { warn, ctx, 0 };
    struct where w = { "", 0, warn ? capped_warn : NULL, &cap, 0 };
    const char *path = default_file;
    int explicit_file = 0;

    conf_defaults(c);
    if (secure && (env_conf || env_file)) {
        w.source = "secure-execution process";
        complain(&w, "MALLOCSHIM_CONF and MALLOCSHIM_CONF_FILE are ignored");
        env_conf = env_file = NULL;
    }
    if (env_file && *env_file) {
        path = env_file;
        explicit_file = 1;
    }
    if (path && *path) {
        int fd;
        struct stat st;
        /* Without blocking, and a regular file only: a FIFO (or a device)
         * named here would otherwise hold the program in its constructor
         * until somebody writes to it. */
        do
            fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        while (fd < 0 && errno == EINTR);
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) {
            close(fd);   /* /dev/null: no file, said on purpose */
        } else if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
            close(fd);
            w.source = path;
            complain(&w, "config file is not a regular file (ignored)");
        } else if (fd < 0) {
            if (explicit_file || errno != ENOENT) {
                w.source = path;
                complain(&w, "cannot open config file: %s", strerrordesc_np(errno));
            }
        } else {
            size_t got = 0;
            int too_big = 0;
            for (;;) {
                ssize_t r = read(fd, file_buf + got, sizeof file_buf - got);
                if (r < 0 && errno == EINTR)
                    continue;
                if (r < 0) {
                    w.source = path;
                    complain(&w, "cannot read config file: %s", strerrordesc_np(errno));
                    got = 0;
                    break;
                }
                if (r == 0)
                    break;
                got += (size_t)r;
                if (got == sizeof file_buf) {
                    char probe;
                    if (read(fd, &probe, 1) > 0)
                        too_big = 1;
                    break;
                }
            }
            close(fd);
            if (too_big) {
                w.source = path;
                complain(&w, "config file larger than %d bytes (ignored)", CONF_FILE_MAX);
            } else if (got) {
                w.problems += parse_text(c, file_buf, got, path, 1, w.warn, &cap);
            }
        }
    }
    if (env_conf)
        w.problems += conf_parse(c, env_conf, strlen(env_conf), "MALLOCSHIM_CONF", w.warn, &cap);
    if (warn && cap.said > CONF_WARN_MAX) {
        char msg[96];
        fmt_buf(msg, sizeof msg, "and %u more problems in the configuration (ignored)",
                cap.said - CONF_WARN_MAX);
        warn(ctx, msg);
    }
    return w.problems;
}

static size_t append(char *buf, size_t len, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static size_t append(char *buf, size_t len, size_t pos, const char *fmt, ...)
{
    va_list ap;
    if (pos >= len)
        return pos;
    va_start(ap, fmt);
    pos += fmt_vbuf(buf + pos, len - pos, fmt, ap);
    va_end(ap);
    return pos;
}

size_t conf_format(const struct conf *c, char *buf, size_t len)
{
    size_t pos = 0;

    if (!len)
        return 0;
    buf[0] = '\0';
    pos = append(buf, len, pos, "backend:%s", conf_backend_name(c->backend));
    if (c->name[0])   /* second, where no truncation reaches: readers take it from here */
        pos = append(buf, len, pos, ",name:%s", c->name);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const struct key *key = &keys[i];
        const char *field = (const char *)c + key->off;
        if (key->id == CONF_K_BACKEND || key->id == CONF_K_NAME || !(c->set_mask & (1u << key->id)))
            continue;
        switch (key->kind) {
        case KIND_INT:
        case KIND_SIZE:
            pos = append(buf, len, pos, ",%s:%ld", key->name, *(const long *)field);
            break;
        case KIND_BOOL:
            pos = append(buf, len, pos, ",%s:%d", key->name, *(const int *)field);
            break;
        case KIND_PATH:
            pos = append(buf, len, pos, ",%s:%s", key->name, field);
            break;
        case KIND_HISTORY:
            pos = append(buf, len, pos, ",%s:%s", key->name, c->history_n ? "" : "off");
            for (unsigned t = 0; t < c->history_n; t++)
                pos = append(buf, len, pos, "%s%ux%u", t ? "/" : "", c->history_step[t],
                             c->history_points[t]);
            break;
        case KIND_BACKEND:
        case KIND_NAME:
            break;
        }
    }
    /* jemalloc_conf is "a:b,c:d": prefix each pair. */
    for (const char *p = c->jemalloc_conf; *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char one[CONF_JEMALLOC_MAX];
        memcpy(one, p, n);
        one[n] = '\0';
        pos = append(buf, len, pos, ",jemalloc.%s", one);
        p += n + (e ? 1 : 0);
    }
    for (unsigned i = 0; i < c->n_tc_props; i++)
        pos = append(buf, len, pos, ",%s:%lld", c->tc_props[i].name, c->tc_props[i].value);
    return pos < len ? pos : len - 1;
}
