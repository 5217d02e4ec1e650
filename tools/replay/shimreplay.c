/* shimreplay: replays an allocation trace under the allocators the shim
 * offers, each in a fresh process, and compares what each costs: RSS at
 * the peak and at the end against the trace's live bytes, and ops/s. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dump.h"
#include "replayplan.h"
#include "calib.h"
#include "replayrun.h"
#include "traceread.h"

extern char **environ;

#define CONFIGS_MAX 8
#define REPEAT_MAX 20
/* --all's default count of replays per config: the spread of three tells
 * a difference from the replay's own noise (thread interleaving, the
 * allocators' timed purges on a busy host) well enough to rank by. */
#define REPEAT_ALL TRACE_REPLAY_ALL_REPEAT
/* The longest trace replayed at its times by default (--pace's auto): a
 * paced replay lasts as long as the trace, each repeat of each config. */
#define PACE_AUTO_MAX_S TRACE_REPLAY_PACE_MAX_S

struct config {
    char name[48];             /* "glibc", "glibc arenas:2" */
    const char *backend;
    long arenas;               /* 0: the backend's default */
};

struct run {
    struct config cfg;
    int rc;                    /* enum dump_exit */
    uint64_t start_free;       /* the free space asked of it (start_free_for); what it
                                  left is r.spaced */
    int captured;              /* the captured config (is_captured) */
    int nrep;                  /* replays done (opt.repeat unless one failed) */
    uint64_t peaks[REPEAT_MAX], ends[REPEAT_MAX];   /* each replay's, in order */
    uint64_t peak_min, peak_max;
    int group;                 /* its place in the ranking (rank): 0 the least memory;
                                  configs of one group were not told apart */
    int pos;                   /* its place in the order of median peaks (rank) */
    struct replay_result r;    /* the replay whose peak is the median (the lower of
                                  the middle two for an even count) */
    struct calib_pred pred;    /* its prediction (calibrate) */
};

/* What the trace says the process really held (calib.h): set once the
 * trace is open. */
static struct calib_real real;

static struct {
    const char *backend;
    long arenas;
    const char *conf;
    int all, json, info, quiet;
    int touch;
    int pace;                  /* 1 paced, 0 not; -1 (the default): paced where the
                                  trace spans at most PACE_AUTO_MAX_S */
    int repeat;                /* --repeat; 0: 1, or REPEAT_ALL with --all */
    unsigned stall_s;
    int progress;              /* stderr is a terminal, and not --quiet */
    int compact;               /* --compact-start */
    uint64_t max_events;       /* --max-events; 0: TRACE_EVENTS_PER_BYTE_MAX a byte */
    uint64_t max_memory;       /* --max-memory; 0: what the host has (memory_available) */
    char lib[PATH_MAX];
} opt = { "glibc", 0, "", 0, 0, 0, 0, REPLAY_TOUCH_ALL, -1, 0, 60, 0, 0, 0, 0, "" };

static int err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int err(int code, const char *fmt, ...)
{
    va_list ap;
    if (opt.progress)
        fputs("\r\033[K", stderr);
    fputs("shimreplay: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}

static void progress(const char *what, uint64_t done, uint64_t total)
{
    if (!opt.progress)
        return;
    fprintf(stderr, "\r\033[Kshimreplay: %s: %3.0f%%", what,
            total ? 100.0 * (double)(done < total ? done : total) / (double)total : 100.0);
    fflush(stderr);
}

static void progress_end(void)
{
    if (opt.progress)
        fputs("\r\033[K", stderr);
}

static int backend_built(const char *b)
{
    if (!strcmp(b, "glibc"))
        return 1;
#ifdef HAVE_JEMALLOC
    if (!strcmp(b, "jemalloc"))
        return 1;
#endif
#ifdef HAVE_TCMALLOC
    if (!strcmp(b, "tcmalloc"))
        return 1;
#endif
    return 0;
}

static const char *size_str(char *buf, size_t len, uint64_t v)
{
    if (v >= (1ull << 50))
        snprintf(buf, len, "%.2f PiB", (double)v / (double)(1ull << 50));
    else if (v >= (1ull << 40))
        snprintf(buf, len, "%.2f TiB", (double)v / (double)(1ull << 40));
    else if (v >= (1ull << 30))
        snprintf(buf, len, "%.2f GiB", (double)v / (1 << 30));
    else if (v >= (1ull << 20))
        snprintf(buf, len, "%.1f MiB", (double)v / (1 << 20));
    else
        snprintf(buf, len, "%.1f KiB", (double)v / 1024);
    return buf;
}

/* ---- The trace and its plan ---- */

static int trace_error(const char *path, int rc, uint32_t version, const char *why)
{
    switch (rc) {
    case ENOTSUP:
        return err(DX_VERSION, "%s: %s", path, why);
    case EPROTO: case ENODATA: case EBADMSG: case E2BIG:
        return err(DX_CORRUPT, "%s: %s", path, why);
    case EACCES: case EPERM:
        return err(DX_PERM, "%s: %s", path, why);
    default:
        (void)version;
        return err(DX_SYS, "%s: %s", path, why);
    }
}

/* The most events shimreplay reads from a file of `size` bytes. */
static uint64_t events_allowed(uint64_t size)
{
    if (opt.max_events)
        return opt.max_events;
    return size > UINT64_MAX / TRACE_EVENTS_PER_BYTE_MAX ? UINT64_MAX : size * TRACE_EVENTS_PER_BYTE_MAX;
}

static int open_trace(const char *path, struct trace_file *f)
{
    char why[256];
    uint32_t version = 0;
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return err(DX_NOTFOUND, "%s: no such file", path);
        if (errno == EACCES || errno == EPERM)
            return err(DX_PERM, "%s: permission denied", path);
        return err(DX_SYS, "%s: %s", path, strerror(errno));
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return err(DX_CORRUPT, "%s: not a regular file", path);
    }
    if ((rc = trace_open(f, fd, &version, why, sizeof why)) != 0) {
        close(fd);
        return trace_error(path, rc, version, why);
    }
    /* Reading the chunk heads took time and memory in proportion to the
     * file's bytes; what follows takes them in proportion to its events,
     * which a crafted file claims freely. */
    if (f->nevents > events_allowed(f->size)) {
        rc = opt.max_events
                 ? err(DX_CORRUPT, "%s: %" PRIu64 " events, more than --max-events=%" PRIu64, path,
                       f->nevents, opt.max_events)
                 : err(DX_CORRUPT, "%s: %" PRIu64 " events in %" PRIu64 " bytes, more than the %u a "
                       "byte that any capture holds: crafted or damaged (--max-events=N reads it)",
                       path, f->nevents, f->size, TRACE_EVENTS_PER_BYTE_MAX);
        close(fd);
        trace_close(f);
        return rc;
    }
    if (f->cut)
        err(DX_OK, "%s: no trailer after %" PRIu64 " whole chunks (%" PRIu64 " calls; %" PRIu64
             " bytes after them): the capture did not finish, or the file was cut; read as far as "
             "it goes", path, f->nchunks, f->nevents, f->cut_bytes);
    return DX_OK;
}

static void plan_progress(void *ctx, uint64_t done, uint64_t total)
{
    (void)ctx;
    progress("reading the trace", done, total);
}

/* Where the plan goes: $TMPDIR, or /tmp. */
static const char *tmpdir(void)
{
    const char *dir = getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

/* An unnamed file for the plan, in tmpdir(). */
static int plan_file(int *fd)
{
    const char *dir = tmpdir();
    char path[PATH_MAX];
    *fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (*fd >= 0)
        return DX_OK;
    snprintf(path, sizeof path, "%s/shimreplay.XXXXXX", dir);
    *fd = mkostemp(path, O_CLOEXEC);
    if (*fd < 0)
        return err(DX_SYS, "%s: cannot make the plan file: %s", dir, strerror(errno));
    unlink(path);
    return DX_OK;
}

/* The bytes a plan may take in the file system of fd: 7/8 of what is free
 * there now (to us: f_bavail), so that a plan never fills it for the
 * host's other users. UINT64_MAX where it cannot be told. */
static uint64_t plan_room(int fd)
{
    struct statvfs v;
    if (fstatvfs(fd, &v) != 0 || !v.f_frsize)
        return UINT64_MAX;
    if ((uint64_t)v.f_bavail > UINT64_MAX / v.f_frsize)
        return UINT64_MAX;
    return (uint64_t)v.f_bavail * v.f_frsize / 8 * 7;
}

/* The trace's plan, into a file in $TMPDIR (*fd) for a replay; for
 * --info, its figures alone (*fd -1): nothing written. */
static int make_plan(const char *path, struct trace_file *f, int *fd, struct plan_stats *st)
{
    char why[256], a[32], b[32];
    uint64_t room = UINT64_MAX, need;
    int rc;
    *fd = -1;
    if (!opt.info) {
        if ((rc = plan_file(fd)) != DX_OK)
            return rc;
        room = plan_room(*fd);
        need = plan_size_estimate(f);
        if (need > room) {
            close(*fd);
            return err(DX_SYS, "%s: its plan needs about %s in %s, which has room for %s (7/8 "
                       "of what is free there): set TMPDIR to a place with more", path,
                       size_str(a, sizeof a, need), tmpdir(),
                       size_str(b, sizeof b, room));
        }
    }
    rc = plan_build_within(f, *fd, room, st, plan_progress, NULL, why, sizeof why);
    progress_end();
    if (rc == 0)
        return DX_OK;
    if (*fd >= 0)
        close(*fd);
    if (rc == ENOSPC)
        return err(DX_SYS, "%s: %s in %s (7/8 of what was free there): set TMPDIR to a place "
                   "with more room", path, why, tmpdir());
    if (rc == EBADMSG || rc == ENODATA || rc == E2BIG)
        return err(DX_CORRUPT, "%s: %s", path, why);
    return err(DX_SYS, "%s: %s", path, why);
}

/* ---- What the host has for a replay ---- */

/* "MemAvailable:" of /proc/meminfo, in bytes; UINT64_MAX when unknown. */
static uint64_t meminfo_available(void)
{
    char line[256];
    unsigned long long kb;
    uint64_t v = UINT64_MAX;
    FILE *fp = fopen("/proc/meminfo", "re");
    if (!fp)
        return v;
    while (fgets(line, sizeof line, fp))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
            v = kb > UINT64_MAX / 1024 ? UINT64_MAX : (uint64_t)kb * 1024;
            break;
        }
    fclose(fp);
    return v;
}

/* What our cgroup (v2) may still take: memory.max less memory.current;
 * UINT64_MAX without a limit, or when unknown. */
static uint64_t cgroup_available(void)
{
    char line[PATH_MAX], path[PATH_MAX + 64];
    unsigned long long max = 0, cur = 0;
    FILE *fp = fopen("/proc/self/cgroup", "re");
    int n = 0;
    if (!fp)
        return UINT64_MAX;
    while (fgets(line, sizeof line, fp))
        if (!strncmp(line, "0::", 3)) {
            line[strcspn(line, "\n")] = '\0';
            n = snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.max", line + 3);
            break;
        }
    fclose(fp);
    if (n <= 0 || (size_t)n >= sizeof path || !(fp = fopen(path, "re")))
        return UINT64_MAX;
    n = fscanf(fp, "%llu", &max);
    fclose(fp);
    if (n != 1)
        return UINT64_MAX;   /* "max": no limit */
    strcpy(path + strlen(path) - strlen("max"), "current");
    if ((fp = fopen(path, "re"))) {
        if (fscanf(fp, "%llu", &cur) != 1)
            cur = 0;
        fclose(fp);
    }
    return max > cur ? max - cur : 0;
}

/* The memory a replay may take, and what says so (for the message): the
 * least of MemAvailable, our RLIMIT_AS and RLIMIT_DATA (the replay
 * process inherits them) and what our cgroup has left. UINT64_MAX (and
 * "nothing") when none can be told. */
static uint64_t memory_available(const char **what)
{
    struct rlimit rl;
    uint64_t v = UINT64_MAX, x;
    *what = "nothing";
    if ((x = meminfo_available()) < v)
        v = x, *what = "MemAvailable";
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (uint64_t)rl.rlim_cur < v)
        v = rl.rlim_cur, *what = "RLIMIT_AS";
    if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (uint64_t)rl.rlim_cur < v)
        v = rl.rlim_cur, *what = "RLIMIT_DATA";
    if ((x = cgroup_available()) < v)
        v = x, *what = "the cgroup's memory.max";
    return v;
}

/* Refuses a replay that cannot fit: one that needs more memory than the
 * host has (or than --max-memory allows), before it starts. */
static int check_memory(const char *path, const struct plan_stats *st)
{
    char a[32], b[32], c[32];
    const char *what = "--max-memory";
    uint64_t need = replay_memory_need(st);
    uint64_t have = opt.max_memory ? opt.max_memory : memory_available(&what);
    if (need <= have)
        return DX_OK;
    return err(DX_SYS, "%s: a replay needs at least %s (%s live at the peak, %" PRIu64 " slots), "
               "more than the %s that %s allows (--max-memory=SIZE sets it)", path,
               size_str(a, sizeof a, need), size_str(b, sizeof b, st->peak_live), st->slots,
               size_str(c, sizeof c, have), what);
}

/* ---- One replay, in a fresh process ---- */

/* The environment of the replay process: ours, with the shim preloaded
 * on the config and no config file. */
static char **worker_env(const struct config *c, char *pairs, size_t len)
{
    size_t n = 0, k = 0;
    char **env;
    static char preload[PATH_MAX + 16], conf[1200];
    while (environ[n])
        n++;
    if (!(env = calloc(n + 4, sizeof *env)))
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) && strncmp(environ[i], "MALLOCSHIM_CONF=", 16) &&
            strncmp(environ[i], "MALLOCSHIM_CONF_FILE=", 21))
            env[k++] = environ[i];
    snprintf(pairs, len, "%s%sbackend:%s,arenas:%ld,record:off", opt.conf, *opt.conf ? "," : "",
             c->backend, c->arenas);
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", opt.lib);
    snprintf(conf, sizeof conf, "MALLOCSHIM_CONF=%s", pairs);
    env[k++] = preload;
    env[k++] = conf;
    env[k++] = "MALLOCSHIM_CONF_FILE=/dev/null";
    env[k] = NULL;
    return env;
}

/* Reads the worker's lines: progress to the terminal, the result into *r.
 * Returns 1 when a result came. */
static int read_reports(int fd, const char *label, struct replay_result *r)
{
    char buf[4096];
    size_t have = 0;
    int got = 0;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        char *line, *nl;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        have += (size_t)n;
        buf[have] = '\0';
        line = buf;
        while ((nl = strchr(line, '\n'))) {
            uint64_t done, total;
            char b[64];
            *nl = '\0';
            if (sscanf(line, "progress %" SCNu64 " %" SCNu64, &done, &total) == 2)
                progress(label, done, total);
            else if (replay_parse_result(line, r, b, sizeof b) == 0)
                got = 1;
            line = nl + 1;
        }
        have -= (size_t)(line - buf);
        memmove(buf, line, have);
        if (have == sizeof buf - 1)
            have = 0;   /* a line that long is none of ours */
    }
    progress_end();
    return got;
}

/* The arena count of a captured config, 0 where none is set. The trace
 * holds the config as conf_format writes it: key:value pairs joined by
 * commas, each key once. */
static long captured_arenas(const char *conf)
{
    for (const char *p = conf; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, "arenas:", 7))
            return strtol(p + 7, NULL, 10);
    return 0;
}

/* The free space config c starts with: the allocator's own free bytes at
 * the capture's start (trace.h) where c is the captured config (its
 * backend and arena count), for its holes among the live blocks; nothing
 * for another config, whose free space then is unknown, nor with
 * --compact-start. */
static uint64_t start_free_for(const struct trace_file *f, const struct config *c)
{
    if (opt.compact || !(f->hdr.flags & TRACE_F_START_FREE) ||
        strcmp(f->hdr.backend_name, c->backend) != 0 || captured_arenas(f->hdr.config) != c->arenas)
        return 0;
    return f->hdr.start_free;
}

/* Whether c is the config the trace was captured under: its backend and
 * arena count. */
static int is_captured(const struct trace_file *f, const struct config *c)
{
    return !strcmp(f->hdr.backend_name, c->backend) && captured_arenas(f->hdr.config) == c->arenas;
}

/* Each run's prediction, from the captured config's replay (calib.h). */
static void calibrate(struct run *runs, int nruns)
{
    const struct run *cap = NULL;
    for (int i = 0; i < nruns; i++)
        if (runs[i].captured && runs[i].rc == DX_OK)
            cap = &runs[i];
    for (int i = 0; i < nruns; i++)
        calib_predict(&real, cap != NULL, cap ? cap->r.peak_rss : 0, cap ? cap->r.end_rss : 0,
                      runs[i].cfg.backend, runs[i].captured, runs[i].r.peak_rss, runs[i].r.end_rss,
                      &runs[i].pred);
    if (real.known && !cap)
        snprintf(real.why, sizeof real.why, "the captured config was %s",
                 nruns > 1 || opt.all ? "not replayed, or failed" : "not the one replayed");
}

static int run_one(int plan_fd, const struct config *c, uint64_t start_free, const char *label,
                   struct replay_result *r)
{
    char pairs[1024], a_plan[16], a_report[16], a_touch[8], a_stall[16], a_pace[4], a_free[24];
    char **env = worker_env(c, pairs, sizeof pairs);
    int p[2], status, got;
    pid_t pid;

    if (!env)
        return err(DX_SYS, "out of memory");
    if (pipe2(p, O_CLOEXEC) != 0) {
        free(env);
        return err(DX_SYS, "pipe: %s", strerror(errno));
    }
    snprintf(a_plan, sizeof a_plan, "%d", plan_fd);
    snprintf(a_report, sizeof a_report, "%d", p[1]);
    snprintf(a_touch, sizeof a_touch, "%d", opt.touch);
    snprintf(a_stall, sizeof a_stall, "%u", opt.stall_s);
    snprintf(a_pace, sizeof a_pace, "%d", opt.pace);
    snprintf(a_free, sizeof a_free, "%" PRIu64, start_free);
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        free(env);
        close(p[0]);
        close(p[1]);
        return err(DX_SYS, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        char *argv[] = { "shimreplay", "--worker", a_plan, a_report, a_touch, a_stall,
                         (char *)c->backend, a_pace, a_free, NULL };
        fcntl(plan_fd, F_SETFD, 0);
        fcntl(p[1], F_SETFD, 0);
        execve("/proc/self/exe", argv, env);
        fprintf(stderr, "shimreplay: cannot run the replay process: %s\n", strerror(errno));
        _exit(DX_SYS);
    }
    free(env);
    close(p[1]);
    memset(r, 0, sizeof *r);
    got = read_reports(p[0], label, r);
    close(p[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status))
        return err(DX_SYS, "the replay under %s (%s) died of signal %d (%s)", label, pairs,
                   WTERMSIG(status), strsignal(WTERMSIG(status)));
    if (WEXITSTATUS(status) != 0)
        return WEXITSTATUS(status);   /* it said why, in one line */
    if (!got)
        return err(DX_SYS, "the replay under %s ended without a result", label);
    /* Its figures would be those of another trace, without those blocks. */
    if (r->failed)
        return err(DX_SYS, "the replay under %s: %" PRIu64 " allocations failed (its allocator "
                   "refused them): not the trace's calls, so no figures", label, r->failed);
    return DX_OK;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Replays config u->cfg opt.repeat times, each in a fresh process; stops
 * at the first that fails (it has said why), which fails the config. Its
 * figures are those of the replay with the median peak. */
static int replay_config(int plan_fd, struct run *u)
{
    struct replay_result rs[REPEAT_MAX];
    uint64_t sorted[REPEAT_MAX];
    char label[sizeof u->cfg.name + 32];
    int n = opt.repeat;
    u->nrep = 0;
    for (int k = 0; k < n; k++) {
        if (n > 1)
            snprintf(label, sizeof label, "%s (replay %d of %d)", u->cfg.name, k + 1, n);
        else
            snprintf(label, sizeof label, "%s", u->cfg.name);
        int rc = run_one(plan_fd, &u->cfg, u->start_free, label, &rs[k]);
        if (rc != DX_OK) {
            memset(&u->r, 0, sizeof u->r);
            return rc;
        }
        u->peaks[k] = rs[k].peak_rss;
        u->ends[k] = rs[k].end_rss;
        u->nrep = k + 1;
    }
    memcpy(sorted, u->peaks, (size_t)n * sizeof sorted[0]);
    qsort(sorted, (size_t)n, sizeof sorted[0], cmp_u64);
    u->peak_min = sorted[0];
    u->peak_max = sorted[n - 1];
    for (int k = 0; k < n; k++)
        if (rs[k].peak_rss == sorted[(n - 1) / 2]) {
            u->r = rs[k];
            break;
        }
    return DX_OK;
}

/* The ranking by peak RSS, least first, into each run's group and pos.
 * Each config's replays span [peak_min, peak_max]; configs whose spans
 * overlap, directly or through others, form one group (not told apart:
 * their order is the replay's noise, not the allocators'), so that every
 * replay of a group lies below every replay of the next. Within a group,
 * the order of the median peaks. (Predictions rank as the replays do:
 * each is the same real figure plus its replayed difference.) Returns the
 * number of groups. */
static int before(const struct run *x, const struct run *y, int by_group)
{
    if (by_group && x->group != y->group)
        return x->group < y->group;
    if (!by_group && x->peak_min != y->peak_min)
        return x->peak_min < y->peak_min;
    return x->r.peak_rss < y->r.peak_rss;
}

static void sort_runs(struct run *runs, int *order, int n, int by_group)
{
    for (int a = 1; a < n; a++)   /* insertion sort: at most CONFIGS_MAX */
        for (int b = a; b > 0 && before(&runs[order[b]], &runs[order[b - 1]], by_group); b--) {
            int t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
}

static int rank(struct run *runs, int nruns)
{
    int order[CONFIGS_MAX], n = 0, groups = 0;
    uint64_t top = 0;
    for (int i = 0; i < nruns; i++) {
        runs[i].group = runs[i].pos = -1;
        if (runs[i].rc == DX_OK)
            order[n++] = i;
    }
    sort_runs(runs, order, n, 0);
    for (int k = 0; k < n; k++) {
        struct run *u = &runs[order[k]];
        if (k == 0 || u->peak_min > top)
            groups++;
        u->group = groups - 1;
        if (k == 0 || u->peak_max > top)
            top = u->peak_max;
    }
    sort_runs(runs, order, n, 1);
    for (int k = 0; k < n; k++)
        runs[order[k]].pos = k;
    return groups;
}

/* ---- Output ---- */

static double per_s(const struct replay_result *r)
{
    return r->ns ? (double)r->ops * 1e9 / (double)r->ns : 0;
}

static double ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0;
}

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

/* The line on a capture's limits (shimreplay(1), Limits) into buf: 1, or
 * 0 for a capture from the start, which has none to say. */
static int limits_line(char *buf, size_t len)
{
    char a[32], b[32];
    if (!real.mid_life)
        return 0;
    if (real.history_higher)
        snprintf(buf, len, "captured mid-life: before the capture the process reached %s of RSS, "
                 "above the %s it held during it; glibc's arenas and tcmalloc's page heap keep "
                 "freed memory, so those configs (but the captured one, whose real figure holds "
                 "its past) may hold more than predicted; to capture the whole life, set "
                 "capture_start = PATH in its config (mallocshim.conf(5))",
                 size_str(a, sizeof a, real.hwm_before), size_str(b, sizeof b, real.peak));
    else
        snprintf(buf, len, "captured mid-life: what the process did before the capture (a bulk "
                 "load, say) is not in the trace%s; glibc's arenas and tcmalloc's page heap keep "
                 "freed memory, so those configs (but the captured one) may hold more of it than "
                 "predicted; to capture the whole life, set capture_start = PATH in its config "
                 "(mallocshim.conf(5))",
                 real.known ? " (its RSS was never higher before)" : "");
    return 1;
}

static void json_trace(const char *path, const struct trace_file *f, const struct plan_stats *s)
{
    char dropped[24] = "null";   /* a cut trace: unknown, its trailer lost */
    char free_bytes[24] = "null";   /* not counted at capture */
    if (f->hdr.flags & TRACE_F_START_FREE)
        snprintf(free_bytes, sizeof free_bytes, "%" PRIu64, f->hdr.start_free);
    if (!f->cut)
        snprintf(dropped, sizeof dropped, "%" PRIu64, s->dropped);
    printf("\"trace\": {\"file\": ");
    json_str(path);
    printf(", \"pid\": %u, \"comm\": ", f->hdr.pid);
    json_str(f->hdr.comm);
    printf(", \"backend\": ");
    json_str(f->hdr.backend_name);
    printf(", \"config\": ");
    json_str(f->hdr.config);
    printf(", \"start_ns\": %" PRIu64 ", \"duration_ns\": %" PRIu64 ", \"file_bytes\": %" PRIu64
           ", \"threads\": %u, \"chunks\": %" PRIu64 ", \"events\": %" PRIu64
           ", \"dropped\": %s, \"ops\": %" PRIu64 ", \"failed\": %" PRIu64
           ", \"cross_thread\": %" PRIu64 ", \"start_exact\": %s, \"start_blocks\": %" PRIu64
           ", \"start_bytes\": %" PRIu64 ", \"start_freed\": %" PRIu64 ", \"orphans\": %" PRIu64
           ", \"peak_live_bytes\": %" PRIu64 ", \"end_live_bytes\": %" PRIu64
           ", \"time_clamped\": %" PRIu64 ", \"complete\": %s, \"start_free_bytes\": %s",
           f->hdr.start_ns, s->duration_ns, f->size, f->nthreads, s->chunks, s->events, dropped,
           s->ops, s->failed, s->cross, (f->hdr.flags & TRACE_F_START_EXACT) ? "true" : "false",
           s->start_blocks, s->start_bytes, s->start_freed, s->orphans, s->peak_live, s->end_live,
           s->clamped, f->cut ? "false" : "true", free_bytes);
    printf(", \"from_start\": %s, \"real\": ", real.from_start ? "true" : "false");
    if (real.known)
        printf("{\"start_rss_bytes\": %" PRIu64 ", \"hwm_before_bytes\": %" PRIu64
               ", \"peak_rss_bytes\": %" PRIu64 ", \"peak_exact\": %s, \"end_rss_bytes\": %" PRIu64
               "}", real.start_rss, real.hwm_before, real.peak, real.peak_exact ? "true" : "false",
               real.end);
    else
        printf("null");
    printf(", \"real_unknown\": ");
    if (real.known)
        printf("null");
    else
        json_str(real.why);
    printf("}");
}

/* The limits object of the JSON (shimreplay(1), Limits). */
static void json_limits(const struct run *runs, int nruns)
{
    char line[512];
    printf(",\n \"limits\": {\"mid_life\": %s, \"history_higher\": %s, \"may_hold_more\": [",
           real.mid_life ? "true" : "false", real.history_higher ? "true" : "false");
    int n = 0;
    if (nruns < 0 && real.mid_life)
        printf("\"glibc\", \"tcmalloc\"");
    for (int i = 0; i < nruns; i++)
        if (runs[i].pred.may_hold_more) {
            printf("%s", n++ ? ", " : "");
            json_str(runs[i].cfg.name);
        }
    printf("], \"advice\": ");
    if (limits_line(line, sizeof line))
        json_str(line);
    else
        printf("null");
    printf("}");
}

static int runs_ok(const struct run *runs, int nruns)
{
    int n = 0;
    for (int i = 0; i < nruns; i++)
        n += runs[i].rc == DX_OK;
    return n;
}

static void print_json(const char *path, const struct trace_file *f, const struct plan_stats *s,
                       const struct run *runs, int nruns)
{
    printf("{");
    json_trace(path, f, s);
    if (nruns >= 0) {
        printf(",\n \"runs\": [");
        for (int i = 0; i < nruns; i++) {
            const struct run *u = &runs[i];
            const struct replay_result *r = &u->r;
            printf("%s\n  {\"config\": ", i ? "," : "");
            json_str(u->cfg.name);
            printf(", \"backend\": \"%s\", \"arenas\": %ld, \"paced\": %s, \"start_free_bytes\": %"
                   PRIu64 ", \"exit\": %d", u->cfg.backend, u->cfg.arenas,
                   opt.pace ? "true" : "false", u->rc == DX_OK ? u->r.spaced : 0, u->rc);
            if (u->rc == DX_OK)
                printf(", \"peak_rss_bytes\": %" PRIu64 ", \"end_rss_bytes\": %" PRIu64
                       ", \"base_rss_bytes\": %" PRIu64 ", \"peak_live_bytes\": %" PRIu64
                       ", \"end_live_bytes\": %" PRIu64 ", \"rss_per_live_peak\": %.4f"
                       ", \"rss_per_live_end\": %.4f, \"ops\": %" PRIu64 ", \"seconds\": %.6f"
                       ", \"ops_per_s\": %.0f, \"blocked\": %" PRIu64 ", \"failed\": %" PRIu64
                       ", \"lost\": %" PRIu64 ", \"clobbered\": %" PRIu64,
                       r->peak_rss, r->end_rss, r->base_rss, s->peak_live, s->end_live,
                       ratio(r->peak_rss, s->peak_live), ratio(r->end_rss, s->end_live), r->ops,
                       (double)r->ns / 1e9, per_s(r), r->blocked, r->failed, r->lost, r->clobbered);
            printf(", \"repeats\": %d, \"peak_rss_runs\": [", u->nrep);
            for (int k = 0; k < u->nrep; k++)
                printf("%s%" PRIu64, k ? ", " : "", u->peaks[k]);
            printf("], \"end_rss_runs\": [");
            for (int k = 0; k < u->nrep; k++)
                printf("%s%" PRIu64, k ? ", " : "", u->ends[k]);
            printf("]");
            if (u->rc == DX_OK)
                printf(", \"peak_rss_min_bytes\": %" PRIu64 ", \"peak_rss_max_bytes\": %" PRIu64
                       ", \"rank\": %d", u->peak_min, u->peak_max, u->group);
            else
                printf(", \"peak_rss_min_bytes\": null, \"peak_rss_max_bytes\": null, \"rank\": null");
            printf(", \"captured\": %s", u->captured ? "true" : "false");
            if (u->rc == DX_OK && u->pred.known)
                printf(", \"predicted_peak_rss_bytes\": %" PRIu64 ", \"predicted_end_rss_bytes\": %"
                       PRIu64 ", \"calibration_error\": %.4f, \"calibration_error_bytes\": %" PRId64,
                       u->pred.peak, u->pred.end, u->pred.error, u->pred.error_bytes);
            else
                printf(", \"predicted_peak_rss_bytes\": null, \"predicted_end_rss_bytes\": null"
                       ", \"calibration_error\": null, \"calibration_error_bytes\": null");
            printf(", \"may_hold_more\": %s}", u->pred.may_hold_more ? "true" : "false");
        }
        printf("\n ],\n \"ranking\": {\"repeats\": %d, \"groups\": [", opt.repeat);
        for (int k = 0, last = -1; k < nruns; k++)
            for (int i = 0; i < nruns; i++) {
                if (runs[i].pos != k)
                    continue;
                printf("%s", last < 0 ? "[" : last == runs[i].group ? ", " : "], [");
                json_str(runs[i].cfg.name);
                last = runs[i].group;
            }
        printf("%s]}", runs_ok(runs, nruns) ? "]" : "");
    }
    json_limits(runs, nruns);
    printf("}\n");
}

static void print_info(const char *path, const struct trace_file *f, const struct plan_stats *s)
{
    char a[32], b[32], c[32];
    time_t t = (time_t)(f->hdr.start_ns / 1000000000ull);
    struct tm tm;
    char when[64] = "?";
    if (localtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    printf("trace        %s: pid %u (%s) under %s, from %s for %.1f s\n", path, f->hdr.pid,
           f->hdr.comm, f->hdr.backend_name, when, (double)s->duration_ns / 1e9);
    if (f->cut)
        printf("events       %" PRIu64 " in %" PRIu64 " whole chunks, %.1f bytes each on disk; the "
               "file ends without its trailer, so calls after them and calls dropped at capture "
               "are unknown\n", s->events, s->chunks,
               s->events ? (double)(f->size - f->cut_bytes) / (double)s->events : 0.0);
    else
        printf("events       %" PRIu64 " in %" PRIu64 " chunks, %.1f bytes each on disk; %" PRIu64
               " dropped at capture\n", s->events, s->chunks,
               s->events ? (double)f->size / (double)s->events : 0.0, s->dropped);
    printf("threads      %u\n", f->nthreads);
    printf("ops          %" PRIu64 " to replay (%" PRIu64 " calls that failed at capture are not)\n",
           s->ops, s->failed);
    printf("cross-thread %" PRIu64 " frees and reallocs of a block another thread made\n", s->cross);
    printf("start heap   %" PRIu64 " blocks, %s (%s); %" PRIu64 " freed during the trace, %" PRIu64
           " frees of unknown blocks beyond it\n", s->start_blocks, size_str(a, sizeof a, s->start_bytes),
           (f->hdr.flags & TRACE_F_START_EXACT) ? "exact" : "estimated", s->start_freed, s->orphans);
    if (f->hdr.flags & TRACE_F_START_FREE)
        printf("start free   %s held free by %s besides the live blocks; a replay under the same "
               "config starts with it\n", size_str(a, sizeof a, f->hdr.start_free), f->hdr.backend_name);
    printf("live bytes   peak %" PRIu64 " (%s), end %" PRIu64 " (%s)\n", s->peak_live,
           size_str(b, sizeof b, s->peak_live), s->end_live, size_str(c, sizeof c, s->end_live));
    if (s->clamped)
        printf("clock        %" PRIu64 " events went back in time within their thread\n", s->clamped);
}

/* Prints text as lines of at most 78 columns, broken at blanks, the
 * second and later indented by 2; NBSP prints as a blank that does not
 * break (inside a config's name). */
#define NBSP '\x1f'

static void print_wrapped(const char *text)
{
    const size_t width = 78;
    size_t col = 0;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, " ");
        if (col && col + 1 + n > width) {
            printf("\n  ");
            col = 2;
        } else if (col) {
            putchar(' ');
            col++;
        }
        for (size_t k = 0; k < n; k++)
            putchar(p[k] == NBSP ? ' ' : p[k]);
        col += n;
        p += n;
        while (*p == ' ')
            p++;
    }
    putchar('\n');
}

/* The ranking (rank) as a line into buf: 1, or 0 where fewer than two
 * configs have figures. */
static int ranking_line(const struct run *runs, int nruns, char *buf, size_t len)
{
    int n = runs_ok(runs, nruns), last = -1, ties = 0;
    size_t at;
    if (n < 2)
        return 0;
    if (opt.repeat > 1)
        at = (size_t)snprintf(buf, len, "ranking, least peak RSS first, over %d replays each:",
                              opt.repeat);
    else
        at = (size_t)snprintf(buf, len, "ranking, least peak RSS first, one replay each:");
    for (int k = 0; k < n; k++)
        for (int i = 0; i < nruns; i++) {
            if (runs[i].pos != k || at >= len)
                continue;
            int g = runs[i].group;
            ties += last == g;
            at += (size_t)snprintf(buf + at, len - at, "%s", last < 0 ? " " : last == g ? " = " : " < ");
            for (const char *c = runs[i].cfg.name; *c && at + 1 < len; c++)
                buf[at++] = *c == ' ' ? NBSP : *c;
            buf[at] = '\0';
            at += (size_t)snprintf(buf + at, len - at, "%s", runs[i].pred.may_hold_more ? " !" : "");
            last = g;
        }
    if (at >= len)
        return 1;
    if (opt.repeat > 1)
        snprintf(buf + at, len - at, "%s", ties ? ". Configs joined by = are not told apart: "
                 "their replays' peaks overlap, so the order between them is the replay's own "
                 "noise, not the allocators'." : ".");
    else
        snprintf(buf + at, len - at, ". A replay's peak moves from one run to the next (the "
                 "threads' order, the allocators' timed purges; more on a busy host): "
                 "--repeat=3 shows which of these differences are beyond that.");
    return 1;
}

static void print_table(const char *path, const struct trace_file *f, const struct plan_stats *s,
                        const struct run *runs, int nruns)
{
    char a[32], b[32], c[32], d[32];
    const struct run *marked = NULL, *cap = NULL;
    int any_bang = 0;
    printf("%s: %u threads, %" PRIu64 " ops over %.1f s; live bytes: peak %s, end %s; "
           "starting heap %s%s%s\n\n", path, f->nthreads, s->ops, (double)s->duration_ns / 1e9,
           size_str(a, sizeof a, s->peak_live), size_str(b, sizeof b, s->end_live),
           size_str(c, sizeof c, s->start_bytes), real.from_start ? " (captured from the start)" : "",
           opt.pace ? "; paced at the trace's times" : "; not paced");
    int many = opt.repeat > 1;
    char nrep[16];
    snprintf(nrep, sizeof nrep, "of %d", opt.repeat);
    printf("%-17s %11s %*s%11s %7s %11s %9s %9s %11s\n", "config", "peak RSS", many ? 7 : 0,
           many ? "spread " : "", "predicted", "error", "end RSS", "RSS/live", "RSS/live", "ops/s");
    printf("%-17s %11s %*s%11s %7s %11s %9s %9s %11s\n", "", many ? "median" : "replayed",
           many ? 6 : 0, many ? nrep : "", many ? " peak RSS" : "peak RSS", "", "", "at peak",
           "at end", "");
    for (int i = 0; i < nruns; i++) {
        const struct run *u = &runs[i];
        if (u->rc != DX_OK) {
            printf("%-17s %11s %*s%11s %7s %11s %9s %9s %11s   (failed: exit %d)\n", u->cfg.name,
                   "-", many ? 7 : 0, many ? "     - " : "", "-", "-", "-", "-", "-", "-", u->rc);
            continue;
        }
        char name[sizeof u->cfg.name + 4], err[16] = "-";
        snprintf(name, sizeof name, "%s%s%s", u->cfg.name, u->captured ? " *" : "",
                 u->pred.may_hold_more ? " !" : "");
        if (u->pred.known) {
            snprintf(err, sizeof err, "%+.1f%%", u->pred.error * 100.0);
            size_str(d, sizeof d, u->pred.peak);
        } else {
            snprintf(d, sizeof d, "-");
        }
        char spread[16] = "";
        double sp = 100.0 * ratio(u->peak_max - u->peak_min, u->r.peak_rss);
        if (!many)
            ;
        else if (sp < 99.95)
            snprintf(spread, sizeof spread, "%5.1f%% ", sp);
        else if (sp < 9999.5)
            snprintf(spread, sizeof spread, "%5.0f%% ", sp);
        else
            snprintf(spread, sizeof spread, "%s", ">9999% ");
        printf("%-17s %11s %s%11s %7s %11s %9.2f %9.2f %11.0f\n", name,
               size_str(a, sizeof a, u->r.peak_rss), spread, d, err,
               size_str(b, sizeof b, u->r.end_rss), ratio(u->r.peak_rss, s->peak_live),
               ratio(u->r.end_rss, s->end_live), per_s(&u->r));
        if (u->start_free)
            marked = u;
        if (u->captured)
            cap = u;
        any_bang |= u->pred.may_hold_more;
    }
    if (many)
        printf("\npeak RSS: the median of %d replays per config, each in a fresh process; spread:\n"
               "  their highest less their lowest, of that median. The other columns are the\n"
               "  median replay's.\n", opt.repeat);
    if (cap)
        printf("\n* the captured config%s", marked ? "" : "\n");
    if (marked)
        printf(": started with %s free as holes among its live blocks,\n"
               "  as %s held %s free besides them when the capture began; the others start\n"
               "  from the live blocks alone (--compact-start: all do)\n",
               size_str(a, sizeof a, marked->r.spaced), f->hdr.backend_name,
               size_str(b, sizeof b, f->hdr.start_free));
    char line[640];
    if (real.known && cap && cap->pred.known)
        snprintf(line, sizeof line, "real: the process peaked at %s over the capture (%s), %s at "
                 "its end; its replay under the captured config peaked at %s: error %+.1f%%, "
                 "carried to each prediction (real peak + replayed - replayed of the captured "
                 "config)", size_str(a, sizeof a, real.peak),
                 real.peak_exact ? "the kernel's VmHWM" : "the highest RSS read every 100 ms",
                 size_str(b, sizeof b, real.end), size_str(c, sizeof c, cap->r.peak_rss),
                 cap->pred.error * 100.0);
    else
        snprintf(line, sizeof line, "no prediction: %s", real.why);
    putchar('\n');
    print_wrapped(line);
    if (ranking_line(runs, nruns, line, sizeof line)) {
        putchar('\n');
        print_wrapped(line);
    }
    if (any_bang)
        line[0] = '!', line[1] = ' ';
    if (limits_line(line + (any_bang ? 2 : 0), sizeof line - 2)) {
        putchar('\n');
        print_wrapped(line);
    }
}

/* ---- main ---- */

static void usage(FILE *f)
{
    fputs("usage: shimreplay [OPTIONS] FILE\n"
          "Replays an allocation trace (shimdump --capture) under an allocator the shim\n"
          "offers, in a fresh process with the same threads, and reports its peak and\n"
          "end RSS against the trace's live bytes, and ops/s.\n"
          "\n"
          "  -b, --backend=NAME    glibc (default), jemalloc or tcmalloc\n"
          "  -a, --arenas=N        arena count (glibc M_ARENA_MAX, jemalloc narenas);\n"
          "                        0: the backend's default\n"
          "  -A, --all             replays of each config: glibc, glibc arenas:1, 2 and 4,\n"
          "                        jemalloc, tcmalloc (those this build has); one table\n"
          "  -c, --conf=PAIRS      more shim config pairs for the replays (MALLOCSHIM_CONF\n"
          "                        syntax), such as jemalloc.dirty_decay_ms:1000\n"
          "  -t, --touch=WHAT      all: write every page of each block (default);\n"
          "                        first: its first 64 bytes only; none\n"
          "  -r, --repeat=N        replay each config N times (1-20; default 3 with --all,\n"
          "                        else 1): the median peak, the spread, and a ranking\n"
          "                        that joins with = configs whose replays overlap\n"
          "      --pace            each thread's calls at their times in the trace (the\n"
          "                        replay lasts as long as the trace); the default for a\n"
          "                        trace of up to 300 s\n"
          "      --no-pace         as fast as it goes, each thread waiting only for the\n"
          "                        blocks it frees; the default for a longer trace\n"
          "      --compact-start   the starting heap without the free space the allocator\n"
          "                        held among it (a replay under the captured config\n"
          "                        leaves it as holes by default)\n"
          "      --stall=SEC       give up when no op is done for SEC seconds (60)\n"
          "      --max-events=N    read a trace of up to N events (default: 8 a byte of\n"
          "                        the file, more than any capture holds)\n"
          "      --max-memory=SIZE replay a trace that needs up to SIZE (K, M, G, T, P;\n"
          "                        default: what the host has, MemAvailable or less)\n"
          "  -i, --info            what the trace holds; replay nothing\n"
          "  -j, --json            the report as JSON\n"
          "  -q, --quiet           no progress on the terminal\n"
          "  -h, --help, -V, --version\n"
          "\n"
          "The shim is $MALLOCSHIM_LIB, else " LIBDIR "/libmallocshim.so.\n"
          "Exit status: 0 ok; 1 no such file, or no shim; 2 usage; 3 permission denied;\n"
          "4 trace format version mismatch; 5 cut in its header, corrupt or foreign, or\n"
          "more events than --max-events; 6 other system error, no room for the plan in\n"
          "$TMPDIR or for the replay in memory, or a replay that failed, stopped making\n"
          "progress or had an allocation refused.\n",
          f);
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* A size: digits and a binary suffix (K, M, G, T, P), at least 1. */
static int parse_size(const char *s, uint64_t *out)
{
    static const char units[] = "KMGTP";
    char *end;
    const char *u;
    unsigned long long v;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || !v)
        return -1;
    if (*end) {
        if (end[1] || !(u = strchr(units, end[0] & ~0x20)) || !*u)
            return -1;
        for (const char *k = units; k <= u; k++) {
            if (v > UINT64_MAX / 1024)
                return -1;
            v *= 1024;
        }
    }
    *out = v;
    return 0;
}

static int worker_main(char **argv)
{
    struct replay_opts o;
    long plan, rep, touch, stall, pace, start_free;
    if (parse_long(argv[2], 0, INT_MAX, &plan) || parse_long(argv[3], 0, INT_MAX, &rep) ||
        parse_long(argv[4], 0, 2, &touch) || parse_long(argv[5], 1, 86400, &stall) ||
        parse_long(argv[7], 0, 1, &pace) || parse_long(argv[8], 0, LONG_MAX, &start_free))
        return err(DX_USAGE, "--worker: bad arguments (it is shimreplay's own)");
    o.start_free = (uint64_t)start_free;
    o.touch = (int)touch;
    o.pace = (int)pace;
    o.stall_s = (unsigned)stall;
    o.report_fd = (int)rep;
    o.backend = argv[6];
    return replay_run((int)plan, &o);
}

int main(int argc, char **argv)
{
    enum { O_STALL = 256, O_PACE, O_NO_PACE, O_COMPACT, O_MAX_EVENTS, O_MAX_MEMORY };
    static const struct option longopts[] = {
        { "backend", required_argument, NULL, 'b' },
        { "arenas", required_argument, NULL, 'a' },
        { "all", no_argument, NULL, 'A' },
        { "conf", required_argument, NULL, 'c' },
        { "touch", required_argument, NULL, 't' },
        { "stall", required_argument, NULL, O_STALL },
        { "pace", no_argument, NULL, O_PACE },
        { "no-pace", no_argument, NULL, O_NO_PACE },
        { "repeat", required_argument, NULL, 'r' },
        { "compact-start", no_argument, NULL, O_COMPACT },
        { "max-events", required_argument, NULL, O_MAX_EVENTS },
        { "max-memory", required_argument, NULL, O_MAX_MEMORY },
        { "info", no_argument, NULL, 'i' },
        { "json", no_argument, NULL, 'j' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    struct config cfgs[CONFIGS_MAX];
    struct run runs[CONFIGS_MAX];
    struct trace_file f;
    struct plan_stats st;
    const char *path, *lib;
    int c, ncfg = 0, rc, plan_fd, worst = DX_OK, set_backend = 0, set_arenas = 0;
    long v;

    if (argc == 9 && !strcmp(argv[1], "--worker"))
        return worker_main(argv);
    opterr = 0;
    while ((c = getopt_long(argc, argv, "b:a:Ac:t:r:ijqhV", longopts, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (strcmp(optarg, "glibc") && strcmp(optarg, "jemalloc") && strcmp(optarg, "tcmalloc"))
                return err(DX_USAGE, "--backend=%s: unknown backend (glibc, jemalloc or tcmalloc)",
                           optarg);
            if (!backend_built(optarg))
                return err(DX_USAGE, "--backend=%s: this build of mallocshim has no %s", optarg,
                           optarg);
            opt.backend = optarg;
            set_backend = 1;
            break;
        case 'a':
            if (parse_long(optarg, 0, 4096, &v))
                return err(DX_USAGE, "--arenas=%s: give a count from 0 to 4096", optarg);
            opt.arenas = v;
            set_arenas = 1;
            break;
        case 'A': opt.all = 1; break;
        case 'c':
            if (strlen(optarg) > 512)
                return err(DX_USAGE, "--conf: more than 512 bytes");
            opt.conf = optarg;
            break;
        case 't':
            if (!strcmp(optarg, "first"))
                opt.touch = REPLAY_TOUCH_FIRST;
            else if (!strcmp(optarg, "all"))
                opt.touch = REPLAY_TOUCH_ALL;
            else if (!strcmp(optarg, "none"))
                opt.touch = REPLAY_TOUCH_NONE;
            else
                return err(DX_USAGE, "--touch=%s: use first, all or none", optarg);
            break;
        case O_STALL:
            if (parse_long(optarg, 1, 86400, &v))
                return err(DX_USAGE, "--stall=%s: give seconds from 1 to 86400", optarg);
            opt.stall_s = (unsigned)v;
            break;
        case 'r':
            if (parse_long(optarg, 1, REPEAT_MAX, &v))
                return err(DX_USAGE, "--repeat=%s: give a count from 1 to %d", optarg, REPEAT_MAX);
            opt.repeat = (int)v;
            break;
        case O_MAX_EVENTS: {
            char *end;
            errno = 0;
            opt.max_events = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || *optarg < '0' || *optarg > '9' || !opt.max_events)
                return err(DX_USAGE, "--max-events=%s: give a count of 1 or more", optarg);
            break;
        }
        case O_MAX_MEMORY:
            if (parse_size(optarg, &opt.max_memory))
                return err(DX_USAGE, "--max-memory=%s: give bytes, 1 or more, with K, M, G, T or P "
                           "after them if you like", optarg);
            break;
        case 'i': opt.info = 1; break;
        case 'j': opt.json = 1; break;
        case 'q': opt.quiet = 1; break;
        case O_PACE: opt.pace = 1; break;
        case O_NO_PACE: opt.pace = 0; break;
        case O_COMPACT: opt.compact = 1; break;
        case 'h': usage(stdout); return DX_OK;
        case 'V':
            printf("shimreplay %s (trace format %u)\n", PACKAGE_VERSION, TRACE_VERSION);
            return DX_OK;
        default:
            return err(DX_USAGE, "%s: unknown option, or a missing value; see shimreplay --help",
                       argv[optind - 1]);
        }
    }
    if (opt.all && (set_backend || set_arenas))
        return err(DX_USAGE, "--all replays every config: no --backend or --arenas with it");
    if (opt.info && (opt.all || set_backend || set_arenas || opt.repeat))
        return err(DX_USAGE, "--info replays nothing: no --all, --backend, --arenas or --repeat "
                   "with it");
    if (!opt.repeat)
        opt.repeat = opt.all ? REPEAT_ALL : 1;
    if (argc - optind != 1)
        return err(DX_USAGE, argc == optind ? "which trace FILE?" : "one trace FILE at a time");
    path = argv[optind];
    opt.progress = !opt.quiet && isatty(2);

    if (opt.all) {
        static const struct { const char *b; long arenas; } all[] = {
            { "glibc", 0 }, { "glibc", 1 }, { "glibc", 2 }, { "glibc", 4 },
            { "jemalloc", 0 }, { "tcmalloc", 0 },
        };
        _Static_assert(sizeof all / sizeof all[0] == TRACE_REPLAY_ALL_CONFIGS,
                       "shimdump's capture says how long --all takes by this count");
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            if (backend_built(all[i].b))
                cfgs[ncfg++] = (struct config){ "", all[i].b, all[i].arenas };
    } else {
        cfgs[ncfg++] = (struct config){ "", opt.backend, opt.arenas };
    }
    for (int i = 0; i < ncfg; i++)
        snprintf(cfgs[i].name, sizeof cfgs[i].name, cfgs[i].arenas ? "%s arenas:%ld" : "%s",
                 cfgs[i].backend, cfgs[i].arenas);
    if (!opt.info) {
        lib = getenv("MALLOCSHIM_LIB");
        if (!lib || !*lib)
            lib = LIBDIR "/libmallocshim.so";
        if (access(lib, R_OK) != 0 || !realpath(lib, opt.lib))
            return err(DX_NOTFOUND, "%s: cannot read the shim library (set MALLOCSHIM_LIB)", lib);
    }

    if ((rc = open_trace(path, &f)) != DX_OK)
        return rc;
    calib_real_of(&f, &real);
    rc = make_plan(path, &f, &plan_fd, &st);
    if (rc == DX_OK && !opt.info && (rc = check_memory(path, &st)) != DX_OK)
        close(plan_fd);
    if (rc != DX_OK) {
        close(f.fd);
        trace_close(&f);
        return rc;
    }
    if (!opt.info && opt.pace < 0) {
        /* by the calls' times, which pacing waits for, not the trailer's
         * claim, which anyone who writes a trace can make */
        uint64_t span = st.last_ns > st.duration_ns ? st.last_ns : st.duration_ns;
        opt.pace = span <= (uint64_t)PACE_AUTO_MAX_S * 1000000000ull;
        if (!opt.pace)
            err(DX_OK, "%s spans %.0f s: replayed as fast as it goes, not at its times (--pace "
                "waits its length for each replay)", path, (double)span / 1e9);
    }
    if (opt.info) {
        if (opt.json)
            print_json(path, &f, &st, NULL, -1);
        else
            print_info(path, &f, &st);
    } else {
        signal(SIGPIPE, SIG_IGN);
        for (int i = 0; i < ncfg; i++) {
            runs[i].cfg = cfgs[i];
            runs[i].start_free = start_free_for(&f, &cfgs[i]);
            runs[i].captured = is_captured(&f, &cfgs[i]);
            runs[i].rc = replay_config(plan_fd, &runs[i]);
            if (runs[i].rc != DX_OK && worst == DX_OK)
                worst = runs[i].rc;
        }
        calibrate(runs, ncfg);
        rank(runs, ncfg);
        /* A single replay that failed has said why; --all shows the others. */
        if (opt.all || worst == DX_OK) {
            if (opt.json)
                print_json(path, &f, &st, runs, ncfg);
            else
                print_table(path, &f, &st, runs, ncfg);
        }
    }
    if (plan_fd >= 0)
        close(plan_fd);
    close(f.fd);
    trace_close(&f);
    if (fflush(stdout) != 0 && worst == DX_OK)
        worst = err(DX_SYS, "writing the report: %s", strerror(errno));
    return worst;
}
