/* dumpproc: the memory of a running process, class by class, from its
 * /proc/PID/status (the kernel's counters) and /proc/PID/smaps (mapping by
 * mapping), into struct dump_mem (dump.h). */
#include "config.h"

#include "dump.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A line of smaps longer than this (a header with a path near PATH_MAX
 * fits) is cut: its tail is skipped. */
#define LINE_MAX_B 8192
/* Files told apart when finding which are code: more is not a process of
 * max_map_count's default 65530 mappings; the rest count as other files.
 * Each is looked for among the last FILES_NEAR only. */
#define FILES_MAX 65536
#define FILES_NEAR 8
/* glibc's arena heaps are HEAP_MAX_SIZE-aligned (64 MiB on 64-bit): such a
 * read-write mapping above another heap's no-access tail is not a stack. */
#define ARENA_HEAP_ALIGN (64ull << 20)

static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- Reading lines, bounded ---- */

struct lines {
    int fd;
    char buf[65536];
    size_t at, len;
    int eof, err;
};

/* The next line into out[LINE_MAX_B] (NUL-terminated, without its '\n',
 * cut at LINE_MAX_B - 1). Returns 1, or 0 at the end or on an error
 * (l->err set). */
static int next_line(struct lines *l, char *out)
{
    size_t n = 0;
    for (;;) {
        if (l->at == l->len) {
            if (l->eof)
                break;
            ssize_t r = read(l->fd, l->buf, sizeof l->buf);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                l->eof = 1;
                if (r < 0)
                    l->err = errno;
                break;
            }
            l->at = 0;
            l->len = (size_t)r;
        }
        char c = l->buf[l->at++];
        if (c == '\n') {
            out[n] = '\0';
            return 1;
        }
        if (n < LINE_MAX_B - 1)
            out[n++] = c;
    }
    out[n] = '\0';
    return n > 0 && !l->err;
}

/* "Name:   1234 kB" -> bytes; 0 when not a number. */
static uint64_t kb_of(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return strtoull(p, NULL, 10) * 1024;
}

/* ---- status ---- */

static int read_status(int dir, struct dump_mem *m)
{
    struct lines *l = malloc(sizeof *l);
    char line[LINE_MAX_B];
    int seen = 0;
    if (!l)
        return ENOMEM;
    memset(l, 0, sizeof *l);
    if ((l->fd = openat(dir, "status", O_RDONLY | O_CLOEXEC)) < 0) {
        int e = errno;
        free(l);
        return e;
    }
    while (next_line(l, line)) {
        static const struct { const char *key; size_t off; } f[] = {
            { "VmRSS:", offsetof(struct dump_mem, rss) },
            { "RssAnon:", offsetof(struct dump_mem, rss_anon) },
            { "RssFile:", offsetof(struct dump_mem, rss_file) },
            { "RssShmem:", offsetof(struct dump_mem, rss_shmem) },
            { "VmSize:", offsetof(struct dump_mem, vsz) },
            { "VmSwap:", offsetof(struct dump_mem, swap) },
        };
        for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
            if (!strncmp(line, f[i].key, strlen(f[i].key))) {
                *(uint64_t *)((char *)m + f[i].off) = kb_of(line + strlen(f[i].key));
                seen++;
            }
        if (!strncmp(line, "Threads:", 8))
            m->threads = strtoull(line + 8, NULL, 10);
    }
    int e = l->err;
    close(l->fd);
    free(l);
    /* a kernel thread, or a zombie, has no memory lines */
    return e ? e : seen >= 5 ? 0 : ESRCH;
}

/* ---- smaps ---- */

enum kind { K_ANON, K_BRK, K_STACK, K_THREAD_STACK, K_FILE, K_SHIM, K_SHMEM, K_SPECIAL };

struct map {
    uint64_t lo, hi;
    char perms[8];
    uint64_t dev, ino;
    enum kind kind;
    uint64_t rss, anon;
};

struct file_rss {
    uint64_t dev, ino, rss;    /* resident bytes not anonymous */
    int exec;                  /* has an executable mapping */
};

struct mem_read {
    struct dump_mem *m;
    struct map prev, cur;
    int have_cur;
    struct file_rss *files;    /* malloc'ed */
    size_t nfiles;
    uint64_t unlisted;         /* file bytes of files past FILES_MAX */
};

static int starts(const char *s, const char *p)
{
    return !strncmp(s, p, strlen(p));
}

/* Parses a header line into *mp. Returns 0, or -1 when it is not one. */
static int header(const char *line, struct map *mp)
{
    unsigned long long lo, hi, off, ino;
    unsigned maj, mnr;
    int n = 0;
    char perms[8];
    memset(mp, 0, sizeof *mp);
    if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &lo, &hi, perms, &off, &maj, &mnr, &ino, &n) < 7)
        return -1;
    const char *path = n > 0 ? line + n : "";
    mp->lo = lo;
    mp->hi = hi;
    snprintf(mp->perms, sizeof mp->perms, "%s", perms);
    mp->dev = (uint64_t)maj << 32 | mnr;
    mp->ino = ino;
    if (starts(path, "/memfd:mallocshim"))
        mp->kind = K_SHIM;
    else if (starts(path, "/memfd:") || starts(path, "/dev/shm/") || starts(path, "/SYSV") ||
             starts(path, "/dev/zero") || starts(path, "[anon_shmem:") ||
             (ino == 0 && perms[3] == 's'))
        mp->kind = K_SHMEM;
    else if (!strcmp(path, "[heap]"))
        mp->kind = K_BRK;
    else if (!strcmp(path, "[stack]"))
        mp->kind = K_STACK;
    else if (ino != 0)
        mp->kind = K_FILE;
    else if (path[0] == '[' && !starts(path, "[anon:"))
        mp->kind = K_SPECIAL;   /* [vdso], [vvar], [vsyscall], [uprobes] */
    else
        mp->kind = K_ANON;
    return 0;
}

/* The entry of mp's file. A loaded object's mappings lie together, so
 * only the last few entries are searched: a file mapped again elsewhere
 * gets another entry, and the read stays linear in the mappings. */
static struct file_rss *file_of(struct mem_read *r, const struct map *mp)
{
    for (size_t i = r->nfiles, k = 0; i-- > 0 && k < FILES_NEAR; k++)
        if (r->files[i].dev == mp->dev && r->files[i].ino == mp->ino)
            return &r->files[i];
    if (r->nfiles >= FILES_MAX)
        return NULL;
    struct file_rss *f = &r->files[r->nfiles++];
    memset(f, 0, sizeof *f);
    f->dev = mp->dev;
    f->ino = mp->ino;
    return f;
}

/* Adds the finished mapping r->cur into the sums. */
static void finish(struct mem_read *r)
{
    struct map *c = &r->cur;
    struct dump_mem *m = r->m;
    uint64_t size = c->hi - c->lo, nonanon = c->rss > c->anon ? c->rss - c->anon : 0;
    if (!r->have_cur)
        return;
    m->mappings++;
    if (size > m->largest_vsz) {
        m->largest_vsz = size;
        m->largest_rss = c->rss;
        m->largest_noaccess = !strncmp(c->perms, "---", 3);
    }
    /* glibc's thread stack: its guard (no access) right below it, and not
     * an arena heap's start above another heap's no-access tail */
    if (c->kind == K_ANON && !strncmp(c->perms, "rw-p", 4) && r->prev.hi == c->lo &&
        r->prev.kind == K_ANON && !strncmp(r->prev.perms, "---p", 4) && c->lo % ARENA_HEAP_ALIGN != 0)
        c->kind = K_THREAD_STACK;
    switch (c->kind) {
    case K_ANON: m->anon_maps += c->anon; break;
    case K_BRK: m->brk += c->anon; break;
    case K_STACK: m->main_stack += c->anon; break;
    case K_THREAD_STACK: m->thread_stacks += c->anon; m->nstacks++; break;
    case K_SHIM: m->shim_seg += nonanon; m->anon_in_files += c->anon; break;
    case K_SHMEM: m->shmem_other += nonanon; m->anon_in_files += c->anon; break;
    case K_SPECIAL: m->file_code += nonanon; m->anon_maps += c->anon; break;
    case K_FILE: {
        struct file_rss *f = file_of(r, c);
        m->anon_in_files += c->anon;
        if (!f)
            r->unlisted += nonanon;
        else {
            f->rss += nonanon;
            f->exec |= c->perms[2] == 'x';
        }
        break;
    }
    }
    r->prev = *c;
    r->have_cur = 0;
}

static int read_smaps(int dir, struct dump_mem *m)
{
    struct mem_read r;
    struct lines *l = malloc(sizeof *l);
    char *line = malloc(LINE_MAX_B);
    memset(&r, 0, sizeof r);
    r.m = m;
    r.files = malloc(FILES_MAX * sizeof *r.files);
    if (!l || !line || !r.files) {
        free(l);
        free(line);
        free(r.files);
        return ENOMEM;
    }
    memset(l, 0, sizeof *l);
    if ((l->fd = openat(dir, "smaps", O_RDONLY | O_CLOEXEC)) < 0) {
        int e = errno;
        free(l);
        free(line);
        free(r.files);
        return e;
    }
    while (next_line(l, line)) {
        char c = line[0];
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) {
            finish(&r);
            if (header(line, &r.cur) == 0)
                r.have_cur = 1;
        } else if (r.have_cur && starts(line, "Rss:")) {
            r.cur.rss = kb_of(line + 4);
        } else if (r.have_cur && starts(line, "Anonymous:")) {
            r.cur.anon = kb_of(line + 10);
        }
    }
    finish(&r);
    for (size_t i = 0; i < r.nfiles; i++) {
        if (r.files[i].exec)
            m->file_code += r.files[i].rss;
        else
            m->file_other += r.files[i].rss;
    }
    m->file_other += r.unlisted;
    int e = l->err;
    close(l->fd);
    free(l);
    free(line);
    free(r.files);
    /* an empty smaps: a zombie, or a kernel thread */
    return e ? e : m->mappings ? 0 : ESRCH;
}

int dump_read_mem(struct dump *d)
{
    struct dump_mem *m = &d->mem;
    char path[32];
    uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
    int dir, e;
    cpu_set_t cpus;

    memset(m, 0, sizeof *m);
    snprintf(path, sizeof path, "/proc/%u", d->pid);
    /* one directory for every file: a pid reused meanwhile fails the reads */
    if ((dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        m->err = errno;
        return m->err;
    }
    m->t_ns = clock_ns(CLOCK_REALTIME);
    e = read_status(dir, m);
    if (!e)
        e = read_smaps(dir, m);
    close(dir);
    if (e) {
        memset(m, 0, sizeof *m);
        m->err = e;
        return e;
    }
    CPU_ZERO(&cpus);
    if (sched_getaffinity((pid_t)d->pid, sizeof cpus, &cpus) == 0)
        m->cpus = (uint64_t)CPU_COUNT(&cpus);
    m->read_ns = clock_ns(CLOCK_MONOTONIC) - t0;
    m->have = 1;
    return 0;
}
