/* shimdump: reads the segments that libmallocshim.so writes, from a second
 * terminal, without stopping, signalling or tracing the process. */
#include "config.h"

#include "capctl.h"
#include "capreq.h"
#include "conf.h"
#include "dump.h"
#include "dumpmap.h"
#include "figfmt.h"
#include "figures.h"
#include "find.h"
#include "html.h"
#include "pprof.h"
#include "prom.h"
#include "serve.h"
#include "view.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

enum mode { M_VIEW, M_LIST, M_WATCH, M_EVENTS, M_JSON, M_PROM, M_DIFF, M_CLEAN, M_HTML, M_CAPTURE,
             M_CHECK, M_PPROF, M_SET, M_SERVE };

static struct {
    enum mode mode;
    char dir[CONF_PATH_MAX];
    double watch_s;
    long events_n;
    int follow;
    int all;
    int color;        /* -1 auto */
    int ascii;
    int stacks;       /* --stacks */
    int top, frames;
    uint64_t min_age_ns;
    uint64_t since_ns;
    unsigned capture_s;   /* --capture */
    const char *output;   /* --output */
    int gone;             /* --gone: the list and --prometheus show gone processes too */
    int all_users;        /* --all-users: root's --clean removes other users' segments too */
    char set[256];        /* --set: the settings asked for, "key:value,..." */
    const char *serve;    /* --serve=ADDR */
    int remote;           /* --allow-remote: --serve on an address other than loopback */
} opt = { M_VIEW, "", 2.0, 20, 1, 0, -1, 0, 0, 5, 6, 1000000000ull, 0, 0, NULL, 0, 0, "", NULL, 0 };

static volatile sig_atomic_t stop;

/* SHIMDUMP_CHECK=1 in the environment: every snapshot read is held to the
 * invariants (figures.h, fig_check), each failure a line on stderr, and
 * shimdump exits DX_CHECK once done. The test suite runs so. */
static int check_all;
static int check_failed;

static void on_stop(int sig)
{
    (void)sig;
    stop = 1;
}

/* Where shimdump_err writes, when not stderr (serve.h). */
static FILE *err_to;

void shimdump_err_to(FILE *f)
{
    err_to = f;
}

/* One line on stderr, "shimdump: <what>"; returns code (capreq.h). */
int shimdump_err(int code, const char *fmt, ...)
{
    va_list ap;
    FILE *f = err_to ? err_to : stderr;
    fputs("shimdump: ", f);
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    return code;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- Where segments live ---- */

static void conf_quiet(void *ctx, const char *msg)
{
    (void)ctx;
    (void)msg;   /* the shim reports bad config; shimdump only wants shm_dir */
}

/* The segment directory: --dir, else shm_dir of the shim's own config (the
 * same MALLOCSHIM_CONF and config file the shim reads), else /dev/shm. */
static void find_dir(void)
{
    struct conf c;
    if (opt.dir[0])
        return;
    conf_defaults(&c);
    conf_load(&c, getenv("MALLOCSHIM_CONF"), getenv("MALLOCSHIM_CONF_FILE"),
              SYSCONFDIR "/mallocshim.conf", 0, conf_quiet, NULL);
    snprintf(opt.dir, sizeof opt.dir, "%s", c.shm_dir);
}

static int is_pid(const char *s)
{
    if (!*s || strlen(s) > 9)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

static const char *user_name(uid_t uid, char *buf, size_t cap)
{
    struct passwd *pw = getpwuid(uid);
    if (pw)
        snprintf(buf, cap, "%s (uid %u)", pw->pw_name, (unsigned)uid);
    else
        snprintf(buf, cap, "uid %u", (unsigned)uid);
    return buf;
}

/* ---- Opening a target ---- */

struct target {
    struct dump_map map;
    int canonical;            /* the file is <dir>/mallocshim.<its pid> */
};

/* The error for a segment we could not open. */
static int open_error(const char *path, int e, long pid)
{
    char who[96], comm[64];
    struct stat st;
    if (e == EACCES || e == EPERM) {
        if (stat(path, &st) == 0)
            return shimdump_err(DX_PERM, "%s: permission denied: the segment belongs to %s; run shimdump "
                       "as that user or as root", path, user_name(st.st_uid, who, sizeof who));
        return shimdump_err(DX_PERM, "%s: permission denied", path);
    }
    if (e == ELOOP)
        return shimdump_err(DX_CORRUPT, "%s: a symbolic link, not a segment; not followed", path);
    if (e == ENOENT && pid > 0) {
        char p[64];
        if (!find_proc_exists(pid))
            return shimdump_err(DX_NOTFOUND, "no such process: %ld (and no segment %s)", pid, path);
        snprintf(p, sizeof p, "/proc/%ld/comm", pid);
        if (find_slurp(p, comm, sizeof comm) > 0)
            comm[strcspn(comm, "\n")] = '\0';
        else
            snprintf(comm, sizeof comm, "?");
        char maps[64], *buf = malloc(1 << 20);
        int shim = -1;
        snprintf(maps, sizeof maps, "/proc/%ld/maps", pid);
        if (buf && find_slurp(maps, buf, 1 << 20) >= 0)
            shim = strstr(buf, "libmallocshim") != NULL;
        free(buf);
        if (shim == 1)
            return shimdump_err(DX_NOTFOUND, "pid %ld (%s) runs under libmallocshim.so but has no segment "
                       "%s: recording is off (record:off), or it writes to another shm_dir "
                       "(--dir)", pid, comm, path);
        return shimdump_err(DX_NOTFOUND, "pid %ld (%s) has no segment %s: %s", pid, comm, path,
                   shim == 0 ? "it does not run under libmallocshim.so"
                             : "is it running under libmallocshim.so with recording on?");
    }
    if (e == ENOENT)
        return shimdump_err(DX_NOTFOUND, "%s: no such file", path);
    return shimdump_err(DX_SYS, "%s: %s", path, strerror(e));
}

/* dump_map_read, for a copy (SEG_F_COPY) only between two rewrites: a copy
 * being rewritten (odd copy_seq, or changed under the read) is read again,
 * up to 100 times 10 ms apart, then taken as it is. */
static int read_settled(const struct dump_map *m, struct dump *d, int state, char *why,
                        size_t whylen)
{
    struct seg_header a, b;
    int rc = DX_OK;
    /* A dead process's copy changes no more: no use waiting. */
    memset(&a, 0, sizeof a);
    for (int tries = 0; tries < (state == DS_DEAD ? 1 : 100); tries++) {
        if (dump_map_header(m, &a, NULL) == 0 && (a.flags & SEG_F_COPY) && (a.copy_seq & 1)) {
            if (state != DS_DEAD)
                usleep(10000);
            continue;
        }
        rc = dump_map_read(m, d, state, why, whylen);
        if (rc != DX_OK || !(a.flags & SEG_F_COPY) || dump_map_header(m, &b, NULL) != 0 ||
            b.copy_seq == a.copy_seq)
            return rc;
        dump_free(d);
        usleep(10000);
    }
    /* A copy left half rewritten (its process died during a rewrite), or
     * rewritten all along: as it is, saying so. */
    rc = dump_map_read(m, d, state, why, whylen);
    if (rc == DX_OK)
        d->consistent = 0;
    return rc;
}

/* Holds d to the invariants: each failure a line on f, prefixed by
 * `label`. Returns how many failed. */
static size_t check_dump(FILE *f, const char *label, const struct dump *d)
{
    struct fig_fail fails[FIG_FAILS_MAX];
    size_t n = fig_check(d, fails, FIG_FAILS_MAX);
    for (size_t i = 0; i < n && i < FIG_FAILS_MAX; i++)
        fprintf(f, "%s: %s: %s\n", label, fails[i].name, fails[i].detail);
    if (n > FIG_FAILS_MAX)
        fprintf(f, "%s: and %zu failures more\n", label, n - FIG_FAILS_MAX);
    return n;
}

/* read_settled, and with SHIMDUMP_CHECK the invariants of what it read. */
static int read_checked(const struct dump_map *m, struct dump *d, int state, char *why,
                        size_t whylen)
{
    int rc = read_settled(m, d, state, why, whylen);
    if (rc == DX_OK && check_all) {
        char label[600];
        snprintf(label, sizeof label, "shimdump: check: %s", m->label);
        fflush(stdout);
        if (check_dump(stderr, label, d))
            check_failed = 1;
    }
    return rc;
}

/* The name of pid's copy in the segment directory. */
static void copy_name(char *path, size_t cap, long pid)
{
    snprintf(path, cap, "%s/mallocshim.%ld", opt.dir, pid);
}

static const char *proc_comm(long pid, char *comm, size_t cap)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%ld/comm", pid);
    if (find_slurp(p, comm, cap) > 0)
        comm[strcspn(comm, "\n")] = '\0';
    else
        snprintf(comm, cap, "?");
    return comm;
}

/* Maps the copy f found at path into t (f is closed). */
static int target_copy(struct target *t, struct find_file *f, const char *path)
{
    char why[256];
    int rc = dump_map_fd(&t->map, f->fd, path, why, sizeof why);
    if (rc == DX_OK)
        find_settle_dead_copy(&t->map, f->fd);
    find_file_close(f);
    if (rc != DX_OK)
        return shimdump_err(rc, "%s: %s", path, why);
    t->canonical = 1;
    return DX_OK;
}

/* Opens process pid's segment. A running process is read itself, through
 * /proc (find.h): what is at its name in the directory can be anybody's,
 * and serves only as a hint, or as the segment where the process itself
 * cannot be read and the file is root's or the process's user's. A process
 * that is gone has only its copy, believed where its owner made it. */
static int target_open_pid(struct target *t, long pid)
{
    char path[CONF_PATH_MAX + 32], comm[64], who[96];
    struct find_file f;
    int kind, rc;

    copy_name(path, sizeof path, pid);
    kind = find_named(path, pid, &f);
    if (!find_proc_exists(pid)) {
        if (kind == FIND_OK)
            return target_copy(t, &f, path);
        if (kind == FIND_FOREIGN)
            return shimdump_err(DX_CORRUPT, "%s: %s; not read", path, f.why);
        return open_error(path, f.err, pid);
    }
    rc = find_live_map((uint32_t)pid, kind == FIND_OK ? f.h.live_fd : -1, 0, &t->map, path);
    if (rc == DX_OK) {
        if (kind == FIND_OK && !find_owner_fits(f.st.st_uid, pid))
            kind = FIND_FOREIGN, snprintf(f.why, sizeof f.why, "owned by %s",
                                          user_name(f.st.st_uid, who, sizeof who));
        if (kind == FIND_FOREIGN)
            fprintf(stderr, "shimdump: note: %s is not pid %ld's segment (%s): ignored; the "
                    "process itself was read\n", path, pid, f.why);
        find_file_close(&f);
        t->canonical = 1;
        return DX_OK;
    }
    if (kind == FIND_OK) {
        if (find_owner_fits(f.st.st_uid, pid))
            return target_copy(t, &f, path);
        snprintf(f.why, sizeof f.why, "owned by %s, while the process runs as another user",
                 user_name(f.st.st_uid, who, sizeof who));
        find_file_close(&f);
        kind = FIND_FOREIGN;
    }
    if (rc == DX_PERM && kind == FIND_NONE && f.err != EACCES && f.err != EPERM) {
        uid_t u[4];
        if (find_proc_uids(pid, u) == 0)
            return shimdump_err(DX_PERM, "pid %ld (%s): permission denied: the process belongs to "
                                "%s; run shimdump as that user or as root", pid,
                                proc_comm(pid, comm, sizeof comm), user_name(u[1], who, sizeof who));
    }
    if (rc == DX_PERM && kind != FIND_FOREIGN)
        return open_error(path, EACCES, pid);
    if (kind == FIND_FOREIGN)
        return shimdump_err(DX_NOTFOUND, "pid %ld (%s) has no segment shimdump can read: %s is "
                            "not its segment (%s; put there by another user?), and was not read",
                            pid, proc_comm(pid, comm, sizeof comm), path, f.why);
    return open_error(path, f.err ? f.err : ENOENT, pid);
}

static long *scan_dir(size_t *n);

/* A command name for a file that is not there: the pid of the one running
 * process of that comm (/proc/PID/comm, which the kernel cuts to 15 bytes)
 * whose segment in the directory this user can read, in *pid; else a DX
 * code, said: none, or several (named, by pid). */
static int pid_of_comm(const char *name, long *pid)
{
    size_t n, found = 0, len = strlen(name) > 15 ? 15 : strlen(name);
    long *pids = scan_dir(&n);
    char list[200] = "", comm[64], path[64];
    size_t used = 0;

    if (!pids)
        return shimdump_err(DX_SYS, "%s: %s", opt.dir, strerror(errno));
    for (size_t i = 0; i < n; i++) {
        char seg[CONF_PATH_MAX + 32];
        struct find_file f;
        snprintf(path, sizeof path, "/proc/%ld/comm", pids[i]);
        ssize_t l = find_slurp(path, comm, sizeof comm);
        if (l > 0 && comm[l - 1] == '\n')
            comm[--l] = '\0';
        if (l != (ssize_t)len || strncmp(comm, name, len) != 0)
            continue;
        copy_name(seg, sizeof seg, pids[i]);
        if (find_named(seg, pids[i], &f) != FIND_OK)
            continue;
        int alive = find_proc_state((uint32_t)pids[i], f.h.start_ns) == DS_ALIVE;
        find_file_close(&f);
        if (!alive)
            continue;
        if (found++ == 0)
            *pid = pids[i];
        if (used < sizeof list)
            used += (size_t)snprintf(list + used, sizeof list - used, " %ld", pids[i]);
    }
    free(pids);
    if (found == 1)
        return DX_OK;
    if (found == 0)
        return shimdump_err(DX_NOTFOUND, "%s: no such file, nor a running process of that name "
                            "whose segment in %s you can read", name, opt.dir);
    return shimdump_err(DX_USAGE, "%s: %zu running processes of that name under the shim, pids%s%s; "
                        "give one", name, found, list, used >= sizeof list ? " ..." : "");
}

/* Opens a pid's segment, a segment file or a JSON file; or, where no file
 * has the name and it has no '/', the one running process of that command
 * (pid_of_comm). */
static int target_open(struct target *t, const char *arg)
{
    char why[256];
    int fd, rc;
    long pid = 0;

    memset(t, 0, sizeof *t);
    if (is_pid(arg))
        return target_open_pid(t, strtol(arg, NULL, 10));
    fd = open(arg, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0 && errno == ENOENT && *arg && !strchr(arg, '/'))
        return (rc = pid_of_comm(arg, &pid)) != DX_OK ? rc : target_open_pid(t, pid);
    if (fd < 0)
        return open_error(arg, errno, 0);
    rc = dump_map_fd(&t->map, fd, arg, why, sizeof why);
    close(fd);
    if (rc != DX_OK)
        return shimdump_err(rc, "%s: %s", arg, why);
    /* A file named by path is the process's own (its liveness judged, its
     * live segment read in its place) only where it is the file at the
     * process's name and find_named believes it there. */
    struct seg_header h;
    struct find_file f;
    struct stat st;
    char cpath[CONF_PATH_MAX + 32];
    if (t->map.base && dump_map_header(&t->map, &h, NULL) == 0 && stat(arg, &st) == 0) {
        copy_name(cpath, sizeof cpath, h.pid);
        if (find_named(cpath, h.pid, &f) == FIND_OK) {
            t->canonical = f.st.st_ino == st.st_ino && f.st.st_dev == st.st_dev &&
                           (!find_proc_exists(h.pid) || find_owner_fits(f.st.st_uid, h.pid));
            if (t->canonical)
                find_settle_dead_copy(&t->map, f.fd);
            find_file_close(&f);
        }
        if (t->canonical)
            find_prefer_live(&t->map);
    }
    return DX_OK;
}

/* Reads the target into d, judging whether its process still runs.
 * Returns a DX code, with the reason in why[] (not printed). */
/* Whether reads name the frames of call stacks (the views and JSON that
 * show them; not --list, --diff, --prometheus or --events). */
static int name_frames;

static int target_read_why(struct target *t, struct dump *d, char *why, size_t whylen)
{
    int state = DS_UNKNOWN;
    struct seg_header h;
    int rc;
    if (t->canonical && dump_map_header(&t->map, &h, NULL) == 0)
        state = find_proc_state(h.pid, h.start_ns);
    rc = read_checked(&t->map, d, state, why, whylen);
    /* The process's memory class by class, from its /proc: kept only
     * when it is still the same process after the read. */
    if (rc == DX_OK && state == DS_ALIVE && dump_read_mem(d) == 0 &&
        find_proc_state(h.pid, h.start_ns) != DS_ALIVE) {
        memset(&d->mem, 0, sizeof d->mem);
        d->mem.err = ESRCH;
    }
    if (rc == DX_OK && name_frames && d->nstacks && !d->symbolized) {
        /* A live process's files, as it sees them (another mount namespace). */
        char root[64];
        snprintf(root, sizeof root, "/proc/%u/root", d->pid);
        if (dump_symbolize(d, state == DS_ALIVE ? root : NULL) != 0) {
            dump_free(d);
            snprintf(why, whylen, "out of memory naming the call stacks");
            return DX_SYS;
        }
    }
    return rc;
}

/* As target_read_why, printing the error. */
static int target_read(struct target *t, struct dump *d)
{
    char why[256];
    int rc = target_read_why(t, d, why, sizeof why);
    if (rc != DX_OK)
        return shimdump_err(rc, "%s: %s", t->map.label, why);
    return DX_OK;
}

/* Opens arg and reads it into d, printing any error. Returns a DX code. */
static int target_load(const char *arg, struct dump *d)
{
    struct target t;
    int rc = target_open(&t, arg);
    if (rc != DX_OK)
        return rc;
    rc = target_read(&t, d);
    dump_map_close(&t.map);
    return rc;
}

/* ---- Output settings ---- */

static void count_line(const char *name, const char *why, void *ctx)
{
    (void)name;
    (void)why;
    ++*(size_t *)ctx;
}

static void print_invariant(const char *name, const char *why, void *ctx)
{
    (void)ctx;
    printf("%s: %s\n", name, why);
}

/* The age bucket whose bound is the first at or above --min-age: blocks
 * in later buckets are "long-lived". */
static unsigned long_bucket(void)
{
    unsigned b = 0;
    while (b < LIFEBUCKET_LAST - 1 && lifebucket_max_ns(b) < opt.min_age_ns)
        b++;
    return b;
}

static void view_setup(struct view_opts *vo)
{
    struct winsize ws;
    const char *cs;
    memset(vo, 0, sizeof *vo);
    setlocale(LC_CTYPE, "");
    cs = nl_langinfo(CODESET);
    vo->utf8 = !opt.ascii && cs && !strcmp(cs, "UTF-8");
    if (opt.color >= 0)
        vo->color = opt.color;
    else
        vo->color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
    if (getenv("NO_COLOR") && opt.color < 0)
        vo->color = 0;
    vo->width = 100;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col)
        vo->width = ws.ws_col;
    vo->all = opt.all;
    vo->top = opt.top;
    vo->frames = opt.frames;
    vo->long_bucket = long_bucket();
    vo->since_ns = opt.since_ns;
}

/* ---- Modes ---- */

static int do_view(const char *arg)
{
    struct dump d;
    struct view_opts vo;
    int rc;
    name_frames = 1;
    if ((rc = target_load(arg, &d)) != DX_OK)
        return rc;
    view_setup(&vo);
    if (opt.mode == M_JSON && opt.stacks)
        dump_write_sites_json(stdout, &d, vo.long_bucket, vo.top > 64 ? 64 : (size_t)vo.top);
    else if (opt.mode == M_JSON)
        dump_write_json(stdout, &d);
    else if (opt.stacks)
        view_stacks(stdout, &d, &vo);
    else
        view_main(stdout, &d, &vo);
    dump_free(&d);
    if (fflush(stdout) != 0 || ferror(stdout))
        return shimdump_err(DX_SYS, "standard output: %s", strerror(errno ? errno : EIO));
    return DX_OK;
}

/* Segment names in the directory: mallocshim.<digits>. */
static int seg_name_pid(const char *name, long *pid)
{
    if (strncmp(name, "mallocshim.", 11) || !is_pid(name + 11))
        return 0;
    *pid = strtol(name + 11, NULL, 10);
    return 1;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

/* The pids with a segment in the directory, sorted; NULL on error. */
static long *scan_dir(size_t *n)
{
    DIR *dir = opendir(opt.dir);
    struct dirent *de;
    long *v = NULL, pid;
    size_t cap = 0;
    *n = 0;
    if (!dir)
        return NULL;
    while ((de = readdir(dir))) {
        if (!seg_name_pid(de->d_name, &pid))
            continue;
        if (*n == cap) {
            long *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof *v);
            if (!nv)
                break;
            v = nv;
        }
        v[(*n)++] = pid;
    }
    closedir(dir);
    if (!v)
        v = malloc(sizeof *v);
    if (v && *n)
        qsort(v, *n, sizeof *v, cmp_long);
    return v;
}

/* What a scan of the directory skipped, said in one line each. */
struct tally {
    size_t denied;       /* segments this user may not read */
    uid_t owner;         /* the owner of one of them */
    size_t bad;          /* segments that cannot be read (corrupt, another version) */
    size_t foreign;      /* files at a segment's name that are not its process's */
    size_t others_gone;  /* segments of gone processes, of other users */
};

/* Opens and reads the segment of a listed pid quietly, by the rules of
 * target_open_pid: returns 1 with *d filled, else 0 with what was skipped
 * counted in *k. A running process is read itself; a file is believed only
 * where find_named does and its owner fits the process; of processes that
 * are gone, root's segments and the reader's own are listed, and others'
 * are counted (whoever may write the directory may write those). */
static int quiet_read(long pid, struct dump *d, struct tally *k)
{
    char path[CONF_PATH_MAX + 32], why[256];
    struct dump_map m;
    struct find_file f;
    int kind, state, rc;

    copy_name(path, sizeof path, pid);
    kind = find_named(path, pid, &f);
    if (kind == FIND_NONE) {
        if (f.err == EACCES || f.err == EPERM) {
            k->denied++;
            k->owner = f.st.st_uid;
        }
        return 0;
    }
    state = kind == FIND_OK ? find_proc_state((uint32_t)pid, f.h.start_ns) : DS_DEAD;
    int foreign = kind == FIND_FOREIGN || (state == DS_ALIVE && !find_owner_fits(f.st.st_uid, pid));
    int others = !foreign && state != DS_ALIVE && f.st.st_uid != 0 && f.st.st_uid != geteuid();
    if (foreign || others) {
        /* Not a file to believe; the process of that pid, where one runs
         * under the shim that this user may read, is listed all the same. */
        k->foreign += foreign;
        k->others_gone += others;
        find_file_close(&f);
        if (!find_proc_exists(pid) || find_live_map((uint32_t)pid, -1, 0, &m, path) != DX_OK)
            return 0;
        rc = read_checked(&m, d, DS_ALIVE, why, sizeof why);
        dump_map_close(&m);
        k->bad += rc != DX_OK;
        return rc == DX_OK;
    }
    rc = DX_NOTFOUND;
    if (state == DS_ALIVE)
        rc = find_live_map((uint32_t)pid, f.h.live_fd, f.h.start_ns, &m, path);
    if (rc != DX_OK && (rc = dump_map_fd(&m, f.fd, path, why, sizeof why)) == DX_OK)
        find_settle_dead_copy(&m, f.fd);
    find_file_close(&f);
    if (rc == DX_OK && !m.base) {
        dump_map_close(&m);
        rc = DX_CORRUPT;
    }
    if (rc == DX_OK) {
        rc = read_checked(&m, d, state, why, sizeof why);
        dump_map_close(&m);
    }
    if (rc != DX_OK)
        k->bad++;
    return rc == DX_OK;
}

/* The lines for what a scan skipped, on f. */
static void tally_say(FILE *f, const char *pre, const struct tally *k)
{
    char who[96];
    if (k->denied)
        fprintf(f, "%s%zu more segment%s you may not read (owned by %s%s)\n", pre, k->denied,
                k->denied > 1 ? "s" : "", user_name(k->owner, who, sizeof who),
                k->denied > 1 ? " and maybe others" : "");
    if (k->bad)
        fprintf(f, "%s%zu unreadable (corrupt or of another format version): shimdump %s/mallocshim.PID "
                "says why\n", pre, k->bad, opt.dir);
    if (k->foreign)
        fprintf(f, "%s%zu file%s at a segment's name in %s %s not the segment of that process (a link, "
                "not a regular file, not a segment, or owned by another user than the process's): "
                "not shown\n", pre, k->foreign, k->foreign > 1 ? "s" : "", opt.dir,
                k->foreign > 1 ? "are" : "is");
    if (k->others_gone)
        fprintf(f, "%s%zu segment%s of processes that are gone, owned by other users: not shown "
                "(shimdump PID reads one)\n", pre, k->others_gone, k->others_gone > 1 ? "s" : "");
}

/* The segments of gone processes that a list or export left out (without
 * --gone), by state; said in one line, with what the states mean. */
struct gone_tally {
    size_t dead, exited;
};

/* Whether d is left out for being gone: counted in *g. */
static int gone_skip(const struct dump *d, struct gone_tally *g)
{
    if (opt.gone || d->state == DS_ALIVE)
        return 0;
    g->dead += d->state != DS_EXITED;
    g->exited += d->state == DS_EXITED;
    return 1;
}

static void gone_say(FILE *f, const char *pre, const struct gone_tally *g, const char *what)
{
    size_t n = g->dead + g->exited;
    if (n)
        fprintf(f, "%s%zu more segment%s of processes that are gone (%zu dead, %zu exited): %s with "
                "--gone; --clean removes them\n", pre, n, n == 1 ? "" : "s", g->dead, g->exited, what);
}

static int do_list(void)
{
    struct view_opts vo;
    struct tally k;
    struct gone_tally g = { 0, 0 };
    size_t n, shown = 0, dead = 0, exited = 0;
    long *pids = scan_dir(&n);

    if (!pids)
        return shimdump_err(DX_SYS, "%s: %s", opt.dir, strerror(errno));
    memset(&k, 0, sizeof k);
    view_setup(&vo);
    for (size_t i = 0; i < n; i++) {
        struct dump d;
        if (!quiet_read(pids[i], &d, &k))
            continue;
        if (!gone_skip(&d, &g)) {
            if (!shown++)
                view_list_header(stdout, &vo);
            view_list_row(stdout, &d, &vo);
            dead += d.state == DS_DEAD;
            exited += d.state == DS_EXITED;
        }
        dump_free(&d);
    }
    free(pids);
    if (!shown)
        printf("no %ssegments you can read in %s\n", opt.gone ? "" : "running processes' ", opt.dir);
    gone_say(stdout, "", &g, "listed");
    if (dead)
        puts("dead: the process ended without exiting normally (killed, crashed): its segment is "
             "as of the sampler's last pass, kept for post-mortem");
    if (exited)
        puts("exited: the process exited normally, but as a user who may not remove its segment "
             "(mariadbd started as root, then mysql): as of its exit");
    tally_say(stdout, "", &k);
    return DX_OK;
}

/* Every running process's segment that this user can read, into *d (*n
 * of them, malloc'ed), what was skipped said on `notes` after `pre`
 * (serve.h, load_all). */
static int collect_running(FILE *notes, const char *pre, struct dump **d, size_t *n)
{
    size_t np;
    long *pids = scan_dir(&np);
    struct tally k;
    struct gone_tally g = { 0, 0 };
    memset(&k, 0, sizeof k);
    *d = NULL;
    *n = 0;
    if (!pids)
        return shimdump_err(DX_SYS, "%s: %s", opt.dir, strerror(errno));
    if ((*d = calloc(np ? np : 1, sizeof **d)) == NULL) {
        free(pids);
        return shimdump_err(DX_SYS, "out of memory");
    }
    for (size_t i = 0; i < np; i++)
        if (quiet_read(pids[i], &(*d)[*n], &k)) {
            struct dump *x = &(*d)[*n];
            if (gone_skip(x, &g)) {   /* running processes only, by default */
                dump_free(x);
                continue;
            }
            /* RSS class by class, kept where the process is still the one read */
            if (x->state == DS_ALIVE && dump_read_mem(x) == 0 &&
                find_proc_state(x->pid, x->start_ns) != DS_ALIVE) {
                memset(&x->mem, 0, sizeof x->mem);
                x->mem.err = ESRCH;
            }
            ++*n;
        }
    free(pids);
    /* Only what is not there for a reason the reader may not know. */
    k.denied = k.bad = 0;
    tally_say(notes, pre, &k);
    gone_say(notes, pre, &g, "exported");
    return DX_OK;
}

static int do_prometheus(char **args, int nargs)
{
    struct dump *d = NULL;
    const struct dump **p = NULL;
    size_t n = 0;
    int rc = DX_OK;

    if (nargs > 0) {
        d = calloc((size_t)nargs, sizeof *d);
        p = calloc((size_t)nargs, sizeof *p);
        if (!d || !p)
            return shimdump_err(DX_SYS, "out of memory");
        for (int i = 0; i < nargs; i++) {
            if ((rc = target_load(args[i], &d[n])) != DX_OK)
                break;
            p[n] = &d[n];
            n++;
        }
    } else {
        fflush(stdout);
        if ((rc = collect_running(stderr, "shimdump: ", &d, &n)) != DX_OK)
            return rc;
        if ((p = calloc(n ? n : 1, sizeof *p)) == NULL)
            rc = shimdump_err(DX_SYS, "out of memory");
        for (size_t i = 0; p && i < n; i++)
            p[i] = &d[i];
    }
    if (rc == DX_OK)
        prom_write(stdout, p, n);
    for (size_t i = 0; i < n; i++)
        dump_free(&d[i]);
    free(d);
    free(p);
    return rc;
}

static int do_diff(const char *a, const char *b)
{
    struct dump da, db;
    struct view_opts vo;
    int rc;
    if ((rc = target_load(a, &da)) != DX_OK)
        return rc;
    if ((rc = target_load(b, &db)) != DX_OK) {
        dump_free(&da);
        return rc;
    }
    view_setup(&vo);
    view_diff(stdout, &da, &db, &vo);
    dump_free(&da);
    dump_free(&db);
    return DX_OK;
}

/* --check: the invariants of each input; exit DX_CHECK when any fails. */
static int do_check(char **args, int nargs)
{
    size_t nchecks = 0;
    int rc = DX_OK;
    fig_check_list(count_line, &nchecks);
    for (int i = 0; i < nargs; i++) {
        struct dump d;
        char label[600];
        int r = target_load(args[i], &d);
        if (r != DX_OK) {
            rc = rc == DX_OK ? r : rc;
            continue;
        }
        snprintf(label, sizeof label, "pid %u (%s)", d.pid, d.comm);
        size_t n = check_dump(stdout, label, &d);
        if (n)
            printf("%s: %zu failure%s of the %zu invariants\n", label, n, n == 1 ? "" : "s", nchecks);
        else
            printf("%s: all %zu invariants hold\n", label, nchecks);
        if (n && rc == DX_OK)
            rc = DX_CHECK;
        dump_free(&d);
    }
    return rc;
}

/* --html: reads every input before writing anything, and builds the page
 * in memory, so that a broken input leaves one line on stderr and nothing
 * on stdout. */
static int do_html(char **args, int nargs)
{
    struct dump *d = calloc(HTML_INPUTS_MAX, sizeof *d);
    const struct dump *p[HTML_INPUTS_MAX];
    struct html_opts ho;
    struct view_opts vo;
    char *buf = NULL;
    size_t len = 0, n = 0;
    FILE *mem;
    int rc = DX_OK;

    if (!d)
        return shimdump_err(DX_SYS, "out of memory");
    name_frames = 1;
    for (int i = 0; i < nargs && rc == DX_OK; i++) {
        if ((rc = target_load(args[i], &d[n])) == DX_OK) {
            p[n] = &d[n];
            n++;
        }
    }
    if (rc == DX_OK) {
        view_setup(&vo);
        ho.top = opt.top;
        ho.frames = opt.frames;
        ho.long_bucket = vo.long_bucket;
        ho.now_ns = now_ns();
        if ((mem = open_memstream(&buf, &len)) == NULL) {
            rc = shimdump_err(DX_SYS, "out of memory");
        } else {
            int hr = html_report(mem, p, n, &ho);
            if (fclose(mem) != 0 || hr != 0)
                rc = shimdump_err(DX_SYS, "out of memory writing the page");
        }
    }
    for (size_t i = 0; i < n; i++)
        dump_free(&d[i]);
    free(d);
    if (rc == DX_OK && (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0))
        rc = shimdump_err(DX_SYS, "standard output: %s", strerror(errno ? errno : EIO));
    free(buf);
    return rc;
}

/* --pprof: the call stacks as a gzip'd pprof profile (pprof.h) on standard
 * output, written once it is whole, and never to a terminal. */
static int do_pprof(const char *arg)
{
    struct dump d;
    unsigned char *buf = NULL;
    size_t len = 0;
    int rc;

    if (pprof_missing())
        return shimdump_err(DX_USAGE, "--pprof: %s", pprof_missing());
    if (isatty(STDOUT_FILENO))
        return shimdump_err(DX_USAGE, "--pprof: standard output is a terminal; redirect it to a file "
                            "(shimdump --pprof %s > heap.pb.gz)", arg);
    name_frames = 1;
    if ((rc = target_load(arg, &d)) != DX_OK)
        return rc;
    rc = pprof_build(&d, &buf, &len);
    if (rc == EINVAL)
        rc = shimdump_err(DX_USAGE, "%s: no call stacks to profile: the process runs with stacks:0", arg);
    else if (rc)
        rc = shimdump_err(DX_SYS, "%s: out of memory making the profile", arg);
    dump_free(&d);
    if (rc == DX_OK && (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0))
        rc = shimdump_err(DX_SYS, "standard output: %s", strerror(errno ? errno : EIO));
    free(buf);
    return rc;
}

/* --serve's reader of one process: shimdump PID's (serve.h). */
static int serve_load(const char *pid, int frames, struct dump *d)
{
    name_frames = frames;
    return target_load(pid, d);
}

/* --serve: until a signal; its page laid out as --html's. */
static int do_serve(void)
{
    struct serve_ops ops;
    memset(&ops, 0, sizeof ops);
    ops.load = serve_load;
    ops.load_all = collect_running;
    ops.html.top = opt.top;
    ops.html.frames = opt.frames;
    ops.html.long_bucket = long_bucket();
    return serve_run(opt.serve, opt.remote, &ops, &stop);
}

/* What --clean did with one segment. */
enum clean_result { CL_REMOVED, CL_RUNS, CL_FOREIGN, CL_NONE, CL_OTHERS, CL_FAILED };

/* --clean of pid's segment: removes it where it is a regular file (never
 * followed) with a segment's header of that pid, of no running process (by
 * pid and start time), on which no live writer holds its lock, and the
 * caller's own, or, as root, root's or (others set) anyone's. comm gets its
 * command; *err the errno of a failure. */
static enum clean_result clean_one(long pid, int others, char *path, size_t pathcap, char *comm,
                                   size_t commcap, int *err)
{
    struct find_file f;
    struct stat lst;
    uid_t me = geteuid();
    enum clean_result r;

    snprintf(comm, commcap, "?");
    copy_name(path, pathcap, pid);
    int kind = find_named(path, pid, &f);
    *err = f.err;
    if (kind != FIND_OK)
        return kind == FIND_FOREIGN ? CL_FOREIGN : CL_NONE;
    dump_clean_text(comm, commcap, f.h.comm, sizeof f.h.comm);
    /* Every live writer holds a shared flock on its segment: an exclusive
     * one that succeeds proves nobody writes it any more. */
    if (find_proc_state(f.h.pid, f.h.start_ns) == DS_ALIVE || flock(f.fd, LOCK_EX | LOCK_NB) != 0)
        r = CL_RUNS;
    else if (f.st.st_uid != me && !(me == 0 && others))
        r = CL_OTHERS;
    else if (lstat(path, &lst) == 0 && lst.st_ino == f.st.st_ino && lst.st_dev == f.st.st_dev &&
             unlink(path) == 0)
        r = CL_REMOVED;
    else {
        *err = errno;
        r = CL_FAILED;
    }
    find_file_close(&f);
    return r;
}

/* --clean [PID...]: the segments of processes that are gone, and nothing
 * else (clean_one): every one in the directory, the caller's own (root:
 * root's, and with --all-users everyone's, so that root does not sweep
 * away other users' post-mortems unasked); or those of the pids named,
 * whoever's root names. */
static int do_clean(char **args, int nargs)
{
    size_t n = (size_t)nargs, removed = 0, kept = 0, other = 0, others = 0;
    long *pids = NULL;
    int rc = DX_OK, named = nargs > 0;

    for (int i = 0; i < nargs; i++)
        if (!is_pid(args[i]))
            return shimdump_err(DX_USAGE, "--clean %s: give pids", args[i]);
    if (opt.all_users && geteuid() != 0)
        return shimdump_err(DX_USAGE, "--all-users: only root may remove other users' segments");
    if (nargs == 0 && !(pids = scan_dir(&n)))
        return shimdump_err(DX_SYS, "%s: %s", opt.dir, strerror(errno));
    for (size_t i = 0; i < n; i++) {
        char path[CONF_PATH_MAX + 32], comm[SEG_COMM_MAX], who[96];
        long pid = pids ? pids[i] : strtol(args[i], NULL, 10);
        int err, r;
        switch (clean_one(pid, named || opt.all_users, path, sizeof path, comm, sizeof comm, &err)) {
        case CL_REMOVED:
            printf("removed %s (pid %ld, %s)\n", path, pid, comm);
            removed++;
            break;
        case CL_RUNS:
            kept++;
            if (pids)
                break;
            r = shimdump_err(DX_NOTFOUND, "%s: pid %ld (%s) still runs: kept", path, pid, comm);
            rc = rc == DX_OK ? r : rc;
            break;
        case CL_FOREIGN:
            other++;
            if (pids)
                break;
            r = shimdump_err(DX_CORRUPT, "%s: not a segment of pid %ld: left alone", path, pid);
            rc = rc == DX_OK ? r : rc;
            break;
        case CL_OTHERS: {
            struct stat st;
            others++;
            if (pids)
                break;
            r = shimdump_err(DX_PERM, "%s: permission denied: the segment belongs to %s", path,
                             user_name(lstat(path, &st) == 0 ? st.st_uid : 0, who, sizeof who));
            rc = rc == DX_OK ? r : rc;
            break;
        }
        case CL_NONE:
            if (pids)
                break;
            r = err == EACCES || err == EPERM
                    ? shimdump_err(DX_PERM, "%s: permission denied", path)
                    : shimdump_err(DX_NOTFOUND, "%s: no segment of pid %ld", path, pid);
            rc = rc == DX_OK ? r : rc;
            break;
        case CL_FAILED:
            r = shimdump_err(DX_SYS, "%s: cannot remove it: %s", path, strerror(err));
            rc = rc == DX_OK ? r : rc;
            break;
        }
    }
    free(pids);
    if (named)
        return rc;
    printf("%zu segment%s of dead processes removed; %zu of running processes kept\n", removed,
           removed == 1 ? "" : "s", kept);
    if (others && geteuid() == 0)
        printf("%zu segment%s of other users' gone processes left (shimdump --clean --all-users "
               "removes them, --clean PID one)\n", others, others == 1 ? "" : "s");
    if (other)
        printf("%zu file%s at a segment's name that %s not segments: left alone\n", other,
               other == 1 ? "" : "s", other == 1 ? "is" : "are");
    return rc;
}

/* ---- --watch ---- */

static struct termios tty_saved;
static int tty_raw;

static void tty_restore(void)
{
    if (tty_raw) {
        tcsetattr(STDIN_FILENO, TCSANOW, &tty_saved);
        tty_raw = 0;
    }
}

static int term_rows(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row)
        return ws.ws_row;
    return 0;
}

/* Writes a frame at the top of the screen: each line cleared to its end,
 * cut at the terminal's height, and the rest of the screen cleared. */
static void draw(const char *buf, size_t len, int tty)
{
    int rows = tty ? term_rows() : 0, line = 0;
    if (!tty) {
        fwrite(buf, 1, len, stdout);
        fputs("\n", stdout);
        fflush(stdout);
        return;
    }
    fputs("\033[H", stdout);
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '\n') {
            if (rows && ++line >= rows - 1)
                break;
            fputs("\033[K\n", stdout);
            continue;
        }
        fputc(buf[i], stdout);
    }
    fputs("\033[K\n\033[J", stdout);
    fflush(stdout);
}

static int do_watch(const char *arg)
{
    struct target t;
    struct dump d, prev;
    struct view_opts vo;
    int tty = isatty(STDOUT_FILENO), rc, have_prev = 0;
    int in_tty = isatty(STDIN_FILENO);
    char why[256] = "";

    if ((rc = target_open(&t, arg)) != DX_OK)
        return rc;
    name_frames = 1;
    view_setup(&vo);
    memset(&prev, 0, sizeof prev);
    if (in_tty && tcgetattr(STDIN_FILENO, &tty_saved) == 0) {
        struct termios raw = tty_saved;
        raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0) {
            tty_raw = 1;
            atexit(tty_restore);
        }
    }
    if (tty)
        fputs("\033[?1049h\033[?25l", stdout);   /* alternate screen, no cursor */
    while (!stop) {
        char *buf = NULL;
        size_t len = 0;
        FILE *mem;
        if ((rc = target_read_why(&t, &d, why, sizeof why)) != DX_OK)
            break;   /* said after the screen is restored */
        vo.prev = have_prev ? &prev : NULL;
        if ((mem = open_memstream(&buf, &len)) == NULL) {
            dump_free(&d);
            rc = DX_SYS;
            snprintf(why, sizeof why, "out of memory");
            break;
        }
        view_main(mem, &d, &vo);
        fprintf(mem, "\n  %srefresh every %.1f s; q or Ctrl-C quits%s", vo.color ? "\033[2m" : "",
                opt.watch_s, vo.color ? "\033[0m" : "");
        fclose(mem);
        draw(buf, len, tty);
        free(buf);
        if (have_prev)
            dump_free(&prev);
        prev = d;
        have_prev = 1;

        /* Wait for the next refresh, a key, or a signal. */
        struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };
        int ms = (int)(opt.watch_s * 1000);
        uint64_t until = now_ns() + (uint64_t)ms * 1000000ull;
        while (!stop) {
            uint64_t now = now_ns();
            if (now >= until)
                break;
            int left = (int)((until - now) / 1000000ull) + 1;
            int r = poll(&pfd, in_tty ? 1 : 0, left);
            if (r > 0 && (pfd.revents & POLLIN)) {
                char c;
                if (read(STDIN_FILENO, &c, 1) == 1 && (c == 'q' || c == 'Q'))
                    stop = 1;
            } else if (r > 0) {
                in_tty = 0;   /* stdin hung up: no more keys */
            }
        }
    }
    if (tty)
        fputs("\033[?25h\033[?1049l", stdout);
    fflush(stdout);
    tty_restore();
    if (rc != DX_OK)
        shimdump_err(rc, "%s: %s", t.map.label, why);
    if (have_prev)
        dump_free(&prev);
    dump_map_close(&t.map);
    return rc;
}

/* ---- --events ---- */

#define EV_BATCH 4096

static void print_event(const struct dump_event *e)
{
    time_t s = (time_t)(e->ev.t_ns / 1000000000ull);
    struct tm tm;
    char when[16], size[24], life[32] = "";
    if (!localtime_r(&s, &tm) || !strftime(when, sizeof when, "%H:%M:%S", &tm))
        snprintf(when, sizeof when, "?");
    figfmt_bytes(size, sizeof size, e->ev.size);
    if (e->ev.kind == SEG_EV_FREE) {
        double l = (double)e->ev.lifetime_ns;
        if (l < 1e3)
            snprintf(life, sizeof life, "  lived %.0f ns", l);
        else if (l < 1e6)
            snprintf(life, sizeof life, "  lived %.1f us", l / 1e3);
        else if (l < 1e9)
            snprintf(life, sizeof life, "  lived %.1f ms", l / 1e6);
        else
            snprintf(life, sizeof life, "  lived %.1f s", l / 1e9);
    }
    printf("%s.%06llu  tid %-7u %-5s %10s  0x%llx%s\n", when,
           (unsigned long long)(e->ev.t_ns % 1000000000ull / 1000), e->ev.tid,
           e->ev.kind == SEG_EV_ALLOC ? "alloc" : e->ev.kind == SEG_EV_FREE ? "free" : "?", size,
           (unsigned long long)e->ev.addr, life);
}

/* Threads claim event numbers 16 at a time and fill them as they go, so a
 * number below the head may still be written later: each pass looks again
 * at the last EV_WINDOW numbers, and `seen` keeps each printed once. */
#define EV_WINDOW 1024
#define EV_SEEN (4 * EV_WINDOW)

static void print_new(const struct dump_event *ev, int n, uint64_t *seen)
{
    for (int i = 0; i < n; i++) {
        if (seen[ev[i].num % EV_SEEN] == ev[i].num + 1)
            continue;
        seen[ev[i].num % EV_SEEN] = ev[i].num + 1;
        print_event(&ev[i]);
    }
}

static int do_events(const char *arg)
{
    struct target t;
    struct dump_event *ev = malloc(EV_BATCH * sizeof *ev);
    uint64_t *seen = calloc(EV_SEEN, sizeof *seen);
    uint64_t from, next, head;
    int rc = DX_OK, n;

    if (!ev || !seen) {
        free(ev);
        free(seen);
        return shimdump_err(DX_SYS, "out of memory");
    }
    if ((rc = target_open(&t, arg)) != DX_OK)
        goto out;
    if (!t.map.base) {
        rc = shimdump_err(DX_USAGE, "%s: a JSON snapshot has no event ring", arg);
        goto out;
    }
    {
        /* Validates the segment (and says what is wrong with it). */
        struct dump d;
        if ((rc = target_read(&t, &d)) != DX_OK)
            goto out;
        dump_free(&d);
    }
    /* Start N events before the ring's head. */
    {
        struct seg_header h;
        if (dump_map_header(&t.map, &h, &head) != 0) {
            rc = shimdump_err(DX_CORRUPT, "%s: the segment shrank or changed", arg);
            goto out;
        }
    }
    from = head > (uint64_t)opt.events_n ? head - (uint64_t)opt.events_n : 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    while (!stop) {
        if ((n = dump_map_events(&t.map, from, &next, ev, EV_BATCH)) < 0) {
            rc = shimdump_err(DX_CORRUPT, "%s: the segment shrank or changed", arg);
            break;
        }
        print_new(ev, n, seen);
        if (n == EV_BATCH) {
            from = next;
            continue;   /* more to read right away */
        }
        if (next > EV_WINDOW && next - EV_WINDOW > from)
            from = next - EV_WINDOW;
        if (!opt.follow)
            break;
        struct seg_header hc, *h = &hc;
        if (dump_map_header(&t.map, &hc, NULL) != 0 || find_proc_state(h->pid, h->start_ns) != DS_ALIVE ||
            (h->flags & SEG_F_FINISHED)) {
            /* One last pass for what it wrote before it went. */
            while ((n = dump_map_events(&t.map, from, &next, ev, EV_BATCH)) > 0) {
                print_new(ev, n, seen);
                if (n < EV_BATCH)
                    break;
                from = next;
            }
            printf("(pid %u is gone)\n", h->pid);
            break;
        }
        struct timespec ts = { 0, 200 * 1000000L };
        nanosleep(&ts, NULL);
    }
out:
    free(ev);
    free(seen);
    dump_map_close(&t.map);
    return rc;
}

/* ---- main ---- */

/* "1.5s", "500ms", "250us", "5m", "2h", or plain seconds. */
static int parse_age(const char *s, uint64_t *ns)
{
    char *end;
    double v = strtod(s, &end), mult = 1e9;
    if (end == s || !(v >= 0))
        return EINVAL;
    if (!strcmp(end, "us"))
        mult = 1e3;
    else if (!strcmp(end, "ms"))
        mult = 1e6;
    else if (!strcmp(end, "s") || !*end)
        mult = 1e9;
    else if (!strcmp(end, "m"))
        mult = 60e9;
    else if (!strcmp(end, "h"))
        mult = 3600e9;
    else if (!strcmp(end, "d"))
        mult = 86400e9;
    else
        return EINVAL;
    if (v * mult > 1e18)
        return ERANGE;
    *ns = (uint64_t)(v * mult);
    return 0;
}

static void usage(FILE *f)
{
    fputs("usage: shimdump [OPTIONS] [PID | FILE]...\n"
          "Shows the heap of a process that runs under libmallocshim.so, from its segment\n"
          "<dir>/mallocshim.<pid>, or a saved segment or JSON file.\n"
          "\n"
          "  (no argument), -l, --list   the running processes whose segment you can read:\n"
          "                              pid, command, backend, uptime, live bytes, RSS\n"
          "  PID | FILE                  one screen: where the memory goes, over time, size\n"
          "                              classes, lifetimes and ages\n"
          "  -w, --watch[=SEC]           redraw every SEC seconds (2), with rates; q quits\n"
          "  -e, --events[=N]            the last N tracked events (20), then follow them\n"
          "      --no-follow             with --events: print and stop\n"
          "  -j, --json                  the snapshot as JSON (schema in shimdump(1))\n"
          "      --json-schema           the JSON schema's keys, one object per line\n"
          "  -p, --prometheus [PID...]   the Prometheus text format; every segment if none\n"
          "  -d, --diff A B              two pids or files side by side\n"
          "      --html INPUT...         one self-contained HTML page (to stdout) of up to 8\n"
          "                              pids or files side by side: charts and their tables\n"
          "      --pprof PID|FILE        the call sites as a gzip'd pprof heap profile (to\n"
          "                              stdout), for go tool pprof: in-use and allocated\n"
          "                              objects and bytes, by stack and age\n"
          "      --serve[=ADDR]          an HTTP server of /metrics (every running process),\n"
          "                              /json, /report and /pprof/heap (?pid=N), until\n"
          "                              SIGTERM; ADDR HOST:PORT, 127.0.0.1:6255 by default\n"
          "      --allow-remote          let --serve listen on an address other than loopback\n"
          "      --check PID|FILE...     hold each snapshot to the invariants every one must\n"
          "                              hold; print those it breaks, with their figures\n"
          "      --invariants            the invariants, one per line\n"
          "      --clean [PID...]        remove your segments of processes that are gone (root:\n"
          "                              root's; any named); --all-users: every user's (root)\n"
          "      --gone                  the list and --prometheus: gone processes too (dead:\n"
          "                              ended abnormally; exited: its segment left at exit)\n"
          "      --capture=SECONDS PID   record every malloc-family and new/delete call of\n"
          "                              PID for SECONDS (1..86400) into a trace file, for\n"
          "                              shimreplay; the owner of PID or root only\n"
          "      --set=KEY:VALUE[,...] PID  change how PID samples, while it runs: sample,\n"
          "                              sample_bytes, track (on, off) and stacks (on, off);\n"
          "                              the owner of PID or root only\n"
          "  -o, --output=FILE           the trace's file (created, mode 0600; default\n"
          "                              mallocshim-PID-DATE-TIME.trace here)\n"
          "  -s, --stacks                the call sites: top stacks by live bytes, by\n"
          "                              long-lived bytes and by allocation rate (with -j:\n"
          "                              as JSON)\n"
          "      --top=N                 stacks per ranking (5)\n"
          "      --frames=N              frames shown per stack (6)\n"
          "      --min-age=AGE           long-lived: older than AGE (1s; us, ms, s, m, h, d)\n"
          "      --since=AGE             OVER TIME: the last AGE (90m, 3d) from the finest\n"
          "                              history tier that holds it; default: the whole life\n"
          "  -a, --all                   every size class, not the busiest\n"
          "      --dir DIR               where segments are (shm_dir of the shim's config,\n"
          "                              else /dev/shm)\n"
          "      --ascii                 ASCII only, no block characters\n"
          "      --color=WHEN            auto (a tty without NO_COLOR), always, never\n"
          "  -h, --help, -V, --version\n"
          "\n"
          "Exit status: 0 ok; 1 no such process or no segment; 2 usage; 3 permission denied;\n"
          "4 format version mismatch; 5 truncated or corrupt segment; 6 other system error;\n"
          "7 a snapshot breaks an invariant (--check, or SHIMDUMP_CHECK=1 in the environment).\n",
          f);
}

/* A mode's exit status, or DX_CHECK where it succeeded but a snapshot it
 * read failed an invariant (SHIMDUMP_CHECK). */
static int finish(int rc)
{
    return rc == DX_OK && check_failed ? DX_CHECK : rc;
}

int main(int argc, char **argv)
{
    enum { O_NOFOLLOW_EV = 256, O_CLEAN, O_DIR, O_ASCII, O_COLOR, O_NOCOLOR, O_TOP, O_FRAMES,
           O_MINAGE, O_SCHEMA, O_SINCE, O_HTML, O_CAPTURE, O_CHECK, O_INVARIANTS, O_GONE,
           O_ALL_USERS, O_PPROF, O_SET, O_SERVE, O_REMOTE };
    static const struct option longopts[] = {
        { "list", no_argument, NULL, 'l' },
        { "watch", optional_argument, NULL, 'w' },
        { "events", optional_argument, NULL, 'e' },
        { "no-follow", no_argument, NULL, O_NOFOLLOW_EV },
        { "json", no_argument, NULL, 'j' },
        { "json-schema", no_argument, NULL, O_SCHEMA },
        { "prometheus", no_argument, NULL, 'p' },
        { "diff", no_argument, NULL, 'd' },
        { "html", no_argument, NULL, O_HTML },
        { "pprof", no_argument, NULL, O_PPROF },
        { "serve", optional_argument, NULL, O_SERVE },
        { "allow-remote", no_argument, NULL, O_REMOTE },
        { "clean", no_argument, NULL, O_CLEAN },
        { "gone", no_argument, NULL, O_GONE },
        { "all-users", no_argument, NULL, O_ALL_USERS },
        { "capture", required_argument, NULL, O_CAPTURE },
        { "set", required_argument, NULL, O_SET },
        { "check", no_argument, NULL, O_CHECK },
        { "invariants", no_argument, NULL, O_INVARIANTS },
        { "output", required_argument, NULL, 'o' },
        { "all", no_argument, NULL, 'a' },
        { "stacks", no_argument, NULL, 's' },
        { "top", required_argument, NULL, O_TOP },
        { "frames", required_argument, NULL, O_FRAMES },
        { "min-age", required_argument, NULL, O_MINAGE },
        { "since", required_argument, NULL, O_SINCE },
        { "dir", required_argument, NULL, O_DIR },
        { "ascii", no_argument, NULL, O_ASCII },
        { "color", optional_argument, NULL, O_COLOR },
        { "no-color", no_argument, NULL, O_NOCOLOR },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    int c, modes = 0;
    char *end;

    opterr = 0;   /* our own one-line message */
    while ((c = getopt_long(argc, argv, "lw::e::jpdasho:V", longopts, NULL)) != -1) {
        switch (c) {
        case 'l': opt.mode = M_LIST; modes++; break;
        case 'w':
            opt.mode = M_WATCH;
            modes++;
            if (optarg) {
                opt.watch_s = strtod(optarg, &end);
                if (*end || !(opt.watch_s >= 0.1 && opt.watch_s <= 3600))
                    return shimdump_err(DX_USAGE, "--watch=%s: give seconds between 0.1 and 3600", optarg);
            }
            break;
        case 'e':
            opt.mode = M_EVENTS;
            modes++;
            if (optarg) {
                opt.events_n = strtol(optarg, &end, 10);
                if (*end || opt.events_n < 0 || opt.events_n > 100000000)
                    return shimdump_err(DX_USAGE, "--events=%s: give a count of events", optarg);
            }
            break;
        case O_NOFOLLOW_EV: opt.follow = 0; break;
        case 'j': opt.mode = M_JSON; modes++; break;
        case 'p': opt.mode = M_PROM; modes++; break;
        case 'd': opt.mode = M_DIFF; modes++; break;
        case O_HTML: opt.mode = M_HTML; modes++; break;
        case O_PPROF: opt.mode = M_PPROF; modes++; break;
        case O_SERVE: opt.mode = M_SERVE; opt.serve = optarg; modes++; break;
        case O_REMOTE: opt.remote = 1; break;
        case O_CLEAN: opt.mode = M_CLEAN; modes++; break;
        case O_GONE: opt.gone = 1; break;
        case O_ALL_USERS: opt.all_users = 1; break;
        case O_CHECK: opt.mode = M_CHECK; modes++; break;
        case O_INVARIANTS: fig_check_list(print_invariant, NULL); return DX_OK;
        case O_CAPTURE: {
            long v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 1 || v > CAPCTL_SECONDS_MAX)
                return shimdump_err(DX_USAGE, "--capture=%s: give seconds from 1 to %u", optarg,
                           CAPCTL_SECONDS_MAX);
            opt.mode = M_CAPTURE;
            opt.capture_s = (unsigned)v;
            modes++;
            break;
        }
        case O_SET: {
            size_t have = strlen(opt.set);
            if (have + 1 + strlen(optarg) >= sizeof opt.set)
                return shimdump_err(DX_USAGE, "--set: the settings are too long");
            if (have)
                opt.set[have++] = ',';
            memcpy(opt.set + have, optarg, strlen(optarg) + 1);
            if (!have)
                modes++;
            opt.mode = M_SET;
            break;
        }
        case 'o': opt.output = optarg; break;
        case 'a': opt.all = 1; break;
        case 's': opt.stacks = 1; break;
        case O_TOP:
        case O_FRAMES: {
            long v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 1 || v > 64)
                return shimdump_err(DX_USAGE, "--%s=%s: give a count from 1 to 64",
                           c == O_TOP ? "top" : "frames", optarg);
            *(c == O_TOP ? &opt.top : &opt.frames) = (int)v;
            break;
        }
        case O_MINAGE:
            if (parse_age(optarg, &opt.min_age_ns) != 0)
                return shimdump_err(DX_USAGE, "--min-age=%s: give a duration such as 500ms, 10s or 5m",
                           optarg);
            break;
        case O_SINCE:
            if (parse_age(optarg, &opt.since_ns) != 0 || opt.since_ns == 0)
                return shimdump_err(DX_USAGE, "--since=%s: give a duration such as 90m, 12h or 3d", optarg);
            break;
        case O_DIR:
            if (strlen(optarg) >= sizeof opt.dir)
                return shimdump_err(DX_USAGE, "--dir: the path is too long");
            snprintf(opt.dir, sizeof opt.dir, "%s", optarg);
            break;
        case O_ASCII: opt.ascii = 1; break;
        case O_COLOR:
            if (!optarg || !strcmp(optarg, "always"))
                opt.color = 1;
            else if (!strcmp(optarg, "never"))
                opt.color = 0;
            else if (!strcmp(optarg, "auto"))
                opt.color = -1;
            else
                return shimdump_err(DX_USAGE, "--color=%s: use auto, always or never", optarg);
            break;
        case O_NOCOLOR: opt.color = 0; break;
        case 'h': usage(stdout); return DX_OK;
        case O_SCHEMA: dump_write_json_schema(stdout); return DX_OK;
        case 'V': printf("shimdump %s (segment format %u, JSON format %d)\n", PACKAGE_VERSION,
                         SEG_VERSION, DUMP_JSON_VERSION); return DX_OK;
        default:
            return shimdump_err(DX_USAGE, "%s: unknown option, or a missing value; see shimdump --help",
                       argv[optind - 1]);
        }
    }
    if (modes > 1)
        return shimdump_err(DX_USAGE, "choose one of --list, --watch, --events, --json, --prometheus, "
                             "--diff, --html, --pprof, --serve, --check, --clean, --capture "
                             "and --set");
    if (opt.output && opt.mode != M_CAPTURE)
        return shimdump_err(DX_USAGE, "--output goes with --capture");
    if (opt.gone && opt.mode != M_LIST && opt.mode != M_PROM && opt.mode != M_VIEW)
        return shimdump_err(DX_USAGE, "--gone goes with --list or --prometheus");
    if (opt.all_users && opt.mode != M_CLEAN)
        return shimdump_err(DX_USAGE, "--all-users goes with --clean");
    if (opt.remote && opt.mode != M_SERVE)
        return shimdump_err(DX_USAGE, "--allow-remote goes with --serve");
    find_dir();
    /* (--check itself prints what fails, on stdout) */
    check_all = opt.mode != M_CHECK && getenv("SHIMDUMP_CHECK") &&
                strcmp(getenv("SHIMDUMP_CHECK"), "0") != 0;
    signal(SIGINT, on_stop);
    signal(SIGTERM, on_stop);
    signal(SIGQUIT, on_stop);   /* --watch must get to restore the terminal */
    signal(SIGHUP, on_stop);
    signal(SIGPIPE, SIG_IGN);

    int nargs = argc - optind;
    char **args = argv + optind;
    switch (opt.mode) {
    case M_LIST:
        if (nargs)
            return shimdump_err(DX_USAGE, "--list takes no PID or FILE");
        return finish(do_list());
    case M_CLEAN:
        return finish(do_clean(args, nargs));
    case M_PROM:
        return finish(do_prometheus(args, nargs));
    case M_SERVE:
        if (nargs)
            return shimdump_err(DX_USAGE, "--serve takes no PID or FILE: it serves every one");
        return finish(do_serve());
    case M_CHECK:
        if (nargs < 1)
            return shimdump_err(DX_USAGE, "--check takes one or more pids or files");
        return do_check(args, nargs);
    case M_DIFF:
        if (nargs != 2)
            return shimdump_err(DX_USAGE, "--diff takes two pids or files");
        return finish(do_diff(args[0], args[1]));
    case M_HTML:
        if (nargs < 1 || nargs > HTML_INPUTS_MAX)
            return shimdump_err(DX_USAGE, "--html takes 1 to %d pids or files", HTML_INPUTS_MAX);
        return finish(do_html(args, nargs));
    case M_CAPTURE:
        if (nargs != 1 || !is_pid(args[0]))
            return shimdump_err(DX_USAGE, "--capture takes one PID");
        return capreq_run(strtol(args[0], NULL, 10), opt.capture_s, opt.output, &stop);
    case M_SET: {
        long pid;
        if (nargs != 1)
            return shimdump_err(DX_USAGE, "--set takes one PID (or the command of one process)");
        if (is_pid(args[0]))
            pid = strtol(args[0], NULL, 10);
        else if (strchr(args[0], '/'))
            return shimdump_err(DX_USAGE, "--set takes a PID, not a file: %s", args[0]);
        else if ((c = pid_of_comm(args[0], &pid)) != DX_OK)
            return c;
        return capreq_set(pid, opt.set, &stop);
    }
    case M_VIEW:
        if (nargs == 0)
            return finish(do_list());
        /* fall through */
    default:
        if (nargs != 1)
            return shimdump_err(DX_USAGE, nargs ? "one PID or FILE at a time" : "which PID or FILE?");
        if (opt.mode == M_WATCH)
            return finish(do_watch(args[0]));
        if (opt.mode == M_EVENTS)
            return finish(do_events(args[0]));
        if (opt.mode == M_PPROF)
            return finish(do_pprof(args[0]));
        return finish(do_view(args[0]));
    }
}
