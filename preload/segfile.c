/* segfile: the segment's two files (seg.h, "Two files"): the live
 * segment's sealed memory file, and the copy that shimdump finds by name,
 * rewritten with pwrite only, and named (published) once complete. */
#include "config.h"

#include "rec.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "fmt.h"
#include "log.h"
#include "seg.h"

/* Declared, with their rules, in rec.h. */
int seg_fd = -1;
dev_t seg_dev;
ino_t seg_ino;
int published;
int live_fd = -1;
/* live_fd's identity. */
static dev_t live_dev;
static ino_t live_ino;
pthread_mutex_t copy_mu = PTHREAD_MUTEX_INITIALIZER;
uint64_t copy_seq, copy_ns;
int copy_err;
int copy_cut;
int copy_done;
uint64_t copy_start;

/* A descriptor of ours, moved above the standard three: a daemon started
 * with stdin or stdout closed must not find the segment, or a file the
 * shim reads for a moment (its copy, /proc), there. */
int above_std(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int err = errno;
    close(fd);
    errno = err;
    return moved;
}

/* fd moved high (512 and up where the limit allows, else above 2): the
 * kernel hands out the lowest free number, so a number of ours that a
 * program closes behind the wrappers' back (a raw close loop, a fork child
 * before exec) is not soon given to the program's next file, where a
 * pwrite or a read of ours meant for our own file would land. */
int high_fd(int fd)
{
    if (fd < 0)
        return fd;
    int h = fcntl(fd, F_DUPFD_CLOEXEC, 512);
    if (h < 0)
        return above_std(fd);
    close(fd);
    return h;
}

void shm_dir_check(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return;   /* create_segment says what is wrong with it */
    int others_write = (st.st_mode & S_IWOTH) ||
                       ((st.st_mode & S_IWGRP) && st.st_gid != 0 && st.st_gid != getegid());
    if (others_write && !(st.st_mode & S_ISVTX))
        log_msg("%s is writable by other users and has no sticky bit: any of them can rename the "
                "segment's copy there and put another file in its place; shimdump reads the "
                "process itself, but set shm_dir to a directory only this user can write, or chmod "
                "+t it", dir);
    else if (st.st_uid != 0 && st.st_uid != geteuid())
        log_msg("%s belongs to uid %u, who can rename the segment's copy there and put another "
                "file in its place; shimdump reads the process itself, but set shm_dir to a "
                "directory of root's or this user's", dir, (unsigned)st.st_uid);
}

/* Removes `path` if it is a regular file of ours that no live process
 * holds: left by an earlier image of this pid (an exec) or by a dead process
 * whose pid came round again. Every live writer holds a shared flock on its
 * segment, so an exclusive one that succeeds proves the file is stale, even
 * across pid namespaces that share the directory. */
int remove_stale(const char *path)
{
    struct stat st, fst;
    int fd = high_fd(open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)), gone = 0;
    if (fd < 0)
        return 0;
    if (fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode) && fst.st_uid == geteuid() &&
        flock(fd, LOCK_EX | LOCK_NB) == 0 && lstat(path, &st) == 0 &&
        st.st_ino == fst.st_ino && st.st_dev == fst.st_dev)
        gone = unlink(path) == 0;
    close(fd);
    return gone;
}

/* An unnamed file in dir, or, where O_TMPFILE is not supported, the named
 * file itself (then *named is set); never descriptor 0, 1 or 2. */
int create_segment(const char *dir, const char *path, int *named)
{
    int fd = high_fd(open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
    *named = 0;
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
    *named = 1;
    for (int attempt = 0; attempt < 2; attempt++) {
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            if ((fd = high_fd(fd)) < 0)
                unlink(path);
            break;
        }
        if (errno != EEXIST || !remove_stale(path))
            break;
    }
    return fd;
}

int file_id_ok(int fd, dev_t dev, ino_t ino)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

int same_file(int fd)
{
    return file_id_ok(fd, seg_dev, seg_ino);
}

/* Makes fd (from live_create, mapped at seg) the live segment's memory
 * file, and seals it: it can no longer shrink, grow, or be written by
 * anyone but the mapping that exists, so that no other process (the
 * owner, root, a cleanup script) can make a page of it vanish under the
 * program's threads. Without F_SEAL_FUTURE_WRITE (before Linux 5.1) the
 * size seals alone. */
void live_set(int fd)
{
    struct stat st;
    live_fd = fd;
    if (fd < 0 || fstat(fd, &st) != 0) {
        live_fd = -1;
        return;
    }
    live_dev = st.st_dev;
    live_ino = st.st_ino;
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0 &&
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
        log_msg("cannot seal the segment's memory file: %s; whoever may open it could shrink "
                "it under the program", strerrordesc_np(errno));
}

int same_live(int fd)
{
    return file_id_ok(fd, live_dev, live_ino);
}

/* Calls fn(off, len, ctx) on each range of [from, size) of the live
 * segment that may hold data, in order: the memory file `fd`'s data ranges
 * (SEEK_DATA), or where there is none, the resident pages of the mapping
 * (mincore), so that a copy never writes the megabytes that nothing has
 * touched. Returns 0 or the first error (an errno value). */
static int seg_ranges(int fd, size_t from, size_t size, int (*fn)(size_t, size_t, void *), void *ctx)
{
    if (fd >= 0) {
        off_t off = (off_t)from;
        while ((size_t)off < size) {
            off_t d = lseek(fd, off, SEEK_DATA), h;
            if (d < 0)
                return errno == ENXIO ? 0 : errno;
            if ((size_t)d >= size)
                break;
            h = lseek(fd, d, SEEK_HOLE);
            if (h < 0 || (size_t)h > size)
                h = (off_t)size;
            int err = fn((size_t)d, (size_t)(h - d), ctx);
            if (err)
                return err;
            off = h;
        }
        return 0;
    }
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char vec[4096];
    for (size_t base = from & ~(pg - 1); base < size; base += sizeof vec * pg) {
        size_t len = size - base < sizeof vec * pg ? size - base : sizeof vec * pg;
        if (mincore((char *)seg + base, len, vec) != 0)
            return errno;
        for (size_t i = 0; i * pg < len; i++) {
            if (!(vec[i] & 1))
                continue;
            size_t lo = base + i * pg, hi = lo + pg < size ? lo + pg : size;
            if (lo < from)
                lo = from;
            int err = fn(lo, hi - lo, ctx);
            if (err)
                return err;
        }
    }
    return 0;
}

/* Writes len bytes of buf at off into fd, whole. With `copy`, fd is the
 * copy's descriptor, checked to be the copy still before each pwrite (a
 * retry after EINTR or a short write too): a program may close our
 * descriptor behind the wrappers' back (a raw close loop, a dup2 over it)
 * and be given the number for a file of its own, a database's data file
 * say, while a rewrite is under way, and that file must never receive our
 * bytes. What is left is the window of one system call between a check
 * and its write. Returns 0, EBADF when fd is not the copy any more, or
 * pwrite's errno value. */
static int pwrite_all(int fd, const void *buf, size_t len, size_t off, int copy)
{
    while (len) {
        if (copy && !same_file(fd))
            return EBADF;
        ssize_t w = pwrite(fd, buf, len, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : EIO;
        buf = (const char *)buf + w;
        off += (size_t)w;
        len -= (size_t)w;
    }
    return 0;
}

/* For live_create, in a fork child before the program runs again: the
 * descriptor cannot change under it. */
static int pwrite_range(size_t off, size_t len, void *ctx)
{
    return pwrite_all(*(int *)ctx, (const char *)seg + off, len, off, 0);
}

/* A write into the copy (pwrite_all's check). */
static int copy_pwrite(int fd, const void *buf, size_t len, size_t off)
{
    return pwrite_all(fd, buf, len, off, 1);
}

/* The ranges of a rewrite, joined where they touch (mincore gives them a
 * page at a time) and written a run of at most COPY_RUN_MAX bytes at a
 * time, so that a rewrite checks its descriptor (copy_pwrite) once per run,
 * not once per page. */
#define COPY_RUN_MAX (1u << 20)
struct copy_run {
    int fd;
    size_t lo, hi;   /* the run not written yet */
};

static int copy_run_flush(struct copy_run *r)
{
    int err = r->hi > r->lo ? copy_pwrite(r->fd, (const char *)seg + r->lo, r->hi - r->lo, r->lo) : 0;
    r->lo = r->hi = 0;
    return err;
}

static int copy_range(size_t off, size_t len, void *ctx)
{
    struct copy_run *r = ctx;
    if (r->hi > r->lo && (off != r->hi || r->hi - r->lo + len > COPY_RUN_MAX)) {
        int err = copy_run_flush(r);
        if (err)
            return err;
    }
    if (r->hi == r->lo)
        r->lo = off;
    r->hi = off + len;
    return 0;
}

static int memcpy_range(size_t off, size_t len, void *ctx)
{
    memcpy((char *)ctx + off, (const char *)seg + off, len);
    return 0;
}

/* A shared mapping of `size` bytes of a new memory file for the live
 * segment (*fd), not sealed yet (live_set does that, once every writable
 * mapping of it is made); or, where memfd_create is missing, private
 * memory (*fd = -1). Where a segment is mapped already (seg, in a fork
 * child), it starts as a copy of it (from_fd: see seg_ranges). Returns
 * MAP_FAILED when there is neither. */
void *live_create(size_t size, int *fd, int from_fd)
{
    void *m;
    /* MFD_NOEXEC_SEAL (Linux 6.3) where vm.memfd_noexec asks for it */
    *fd = (int)syscall(SYS_memfd_create, "mallocshim", MFD_CLOEXEC | MFD_ALLOW_SEALING | 0x0008U);
    if (*fd < 0 && errno == EINVAL)
        *fd = (int)syscall(SYS_memfd_create, "mallocshim", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    *fd = high_fd(*fd);
    if (*fd >= 0) {
        /* From a fork's parent: its data written in (pwrite allocates the
         * pages as it goes; copying through a new mapping would fault each
         * one in first). */
        if (ftruncate(*fd, (off_t)size) == 0 &&
            (!seg || seg_ranges(from_fd, 0, size, pwrite_range, fd) == 0) &&
            (m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0)) != MAP_FAILED)
            return m;
        close(*fd);
        *fd = -1;
    }
    m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED && seg && seg_ranges(from_fd, 0, size, memcpy_range, m) != 0) {
        munmap(m, size);
        m = MAP_FAILED;
    }
    return m;
}

/* Writes the copy's header to fd: the live one's, marked as the copy,
 * with copy_seq and copy_ns. Precondition: copy_mu held. */
static int copy_header(int fd, uint32_t extra_flags)
{
    struct seg_header h;
    memcpy(&h, seg, sizeof h);
    h.flags |= SEG_F_COPY | extra_flags;
    h.copy_seq = copy_seq;
    h.copy_ns = copy_ns;
    return copy_pwrite(fd, &h, sizeof h, 0);
}

/* Opens the copy again by its name, after the program closed our
 * descriptor of it (a daemon closing every descriptor at start): only the
 * same file, and only once it has its name. Returns 1 when seg_fd is good
 * again. Precondition: copy_mu held. */
static int copy_reopen(void)
{
    if (published != 1)
        return 0;
    int fd = high_fd(open(seg_path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (fd < 0)
        return 0;
    if (!same_file(fd)) {
        close(fd);
        return 0;
    }
    seg_fd = fd;
    flock(fd, LOCK_SH);   /* "alive" again: the closed descriptor's lock went with it */
    return 1;
}

/* A descriptor of the copy for one rewrite, or -1: once named, opened by
 * name (and checked to be the same file) for this rewrite alone, so that a
 * descriptor number the program closes and reuses meanwhile never takes
 * our bytes; before that, seg_fd. *own says whether to close it after.
 * Precondition: copy_mu held. */
static int copy_open(int *own)
{
    *own = 0;
    if (!same_file(seg_fd))
        copy_reopen();   /* for the lock that says "alive" */
    if (published != 1) {
        if (same_file(seg_fd))
            return seg_fd;
        errno = EBADF;   /* the program closed it */
        return -1;
    }
    int fd = high_fd(open(seg_path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (fd < 0 && (errno == EACCES || errno == EPERM) && same_file(seg_fd))
        return seg_fd;   /* a process that became another user: the one it opened */
    if (fd >= 0 && !same_file(fd)) {
        close(fd);
        fd = -1;
        errno = ESTALE;
    }
    *own = fd >= 0;
    return fd;
}

/* Rewrites the copy from the live segment (seg.h, "Two files"): only with
 * pwrite, so that a full file system, a truncation or a removal of the
 * copy is an error here, never a fault in the program. The live segment's
 * resident pages are written (mincore: no descriptor of the program's is
 * touched; a page swapped out keeps its last copy, which nothing has
 * changed since). A failure leaves the copy as of its last rewrite, marked
 * SEG_F_COPY_STALE until one succeeds; recording goes on, and the next pass
 * tries again. Says one line when the copy goes stale, when it is current
 * again, and when someone truncated it.
 *   COPY_PASS   the sampler's: at most one rewrite started per
 *               COPY_EVERY_NS (a short interval_ms would otherwise spend a
 *               core on it), until one fails
 *   COPY_NOW    before the copy is named, and in a fork child
 *   COPY_FINAL  at exit: the last one (copy_lock: waits for one under
 *               way at most 2 s) */
#define COPY_EVERY_NS 900000000ull

/* Takes copy_mu; at exit (COPY_FINAL) waiting 2 s at most (a rewrite
 * under way on a loaded machine, not a thread that never lets go).
 * Returns 0 when it is held. */
int copy_lock(int mode)
{
    if (mode != COPY_FINAL)
        return pthread_mutex_lock(&copy_mu);
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += 2;
    return pthread_mutex_clocklock(&copy_mu, CLOCK_MONOTONIC, &dl);
}

/* copy_refresh's work. Precondition: copy_mu held. */
void copy_write(int mode)
{
    struct stat st;
    int err = 0, saved = errno, own, fd;

    uint64_t now = clock_ns(CLOCK_MONOTONIC);
    if (copy_done || (mode == COPY_PASS && !copy_err && copy_start && now - copy_start < COPY_EVERY_NS))
        goto out;
    copy_start = now;
    if (live_fd >= 0 && !same_live(live_fd)) {
        /* The program closed it: readers find the copy instead. */
        live_fd = -1;
        __atomic_store_n(&seg->live_fd, -1, __ATOMIC_RELAXED);
    }
    if ((fd = copy_open(&own)) < 0) {
        err = errno ? errno : EBADF;
    } else if (fstat(fd, &st) != 0 || st.st_dev != seg_dev || st.st_ino != seg_ino) {
        err = EBADF;   /* no ftruncate of a file that is not the copy */
    } else if ((uint64_t)st.st_size != geo.total_size) {
        if (!copy_cut)
            log_msg("%s was cut to %lld bytes while the process ran; it is written again whole",
                    seg_path, (long long)st.st_size);
        copy_cut = 1;
        if (ftruncate(fd, (off_t)geo.total_size) != 0)
            err = errno;
    }
    copy_seq |= 1;   /* odd: readers of the copy wait */
    if (!err)
        err = copy_header(fd, copy_err ? SEG_F_COPY_STALE : 0);
    if (!err) {
        struct copy_run run = { fd, 0, 0 };
        err = seg_ranges(-1, sizeof(struct seg_header), geo.total_size, copy_range, &run);
        if (!err)
            err = copy_run_flush(&run);
    }
    copy_seq++;
    if (!err) {
        copy_ns = clock_ns(CLOCK_REALTIME);
        err = copy_header(fd, 0);
    }
    if (err) {
        if (fd >= 0)
            copy_header(fd, SEG_F_COPY_STALE);   /* at least say so, if the header page is there */
        if (!copy_err && published != 1 && err == EBADF) {
            log_msg("the program closed the shim's descriptor of its segment's copy before the copy "
                    "was named; %s is not created, and `shimdump %d` reads the process itself",
                    seg_path, (int)getpid());
        } else if (!copy_err) {
            log_msg("cannot write %s: %s; it stays as it was (marked stale), recording goes on, "
                    "and `shimdump %d` reads the process itself", seg_path,
                    err == EBADF ? "the program closed the shim's descriptor of it" : strerrordesc_np(err),
                    (int)getpid());
        }
    } else if (copy_err) {
        log_msg("%s is written again", seg_path);
    }
    copy_err = err;
    /* Only if the number is still the copy's: a program that closes every
     * descriptor (with raw system calls, which no wrapper sees) may have
     * closed ours meanwhile and been given the number again (stacks.sh's
     * "raw" case, on a loaded machine: a pipe of the program's, closed
     * here). Not ours any more means ours is closed already. */
    if (own && same_file(fd))
        close(fd);
out:
    errno = saved;
}

void copy_refresh(int mode)
{
    if (copy_lock(mode) != 0)
        return;
    copy_write(mode);
    pthread_mutex_unlock(&copy_mu);
}

/* Gives the copy its name, once it is complete. Runs once: from the
 * sampler's first pass (never in a program thread: the first rewrite of
 * the copy is megabytes of pwrite in a process that ran a while; a process
 * that ends before its first pass leaves no name),
 * or at start in a process running as root, which may switch to another
 * user before that (mariadbd with user=mysql) and could then no longer link
 * a root-owned file (fs.protected_hardlinks). Not at fork: a child that
 * _exit()s would leave its name behind. */
void publish(void)
{
    char proc[64];
    int first = 0;

    /* Under copy_mu: the process's exit (record_exit) either sees the name
     * and removes it, or stops it from being given. */
    pthread_mutex_lock(&copy_mu);
    if (published || copy_done)
        goto done;
    if (!same_file(seg_fd)) {
        published = -1;
        log_msg("the segment's descriptor %d was closed by the program; %s is not created, "
                "so shimdump cannot find pid %d", seg_fd, seg_path, (int)getpid());
        goto done;
    }
    /* A name is only ever given to a complete copy. */
    copy_write(COPY_NOW);
    if (!same_file(seg_fd)) {
        /* Closed while it was written (a fork child closing every
         * descriptor before exec): copy_write said so, in one line. */
        published = -1;
        goto done;
    }
    fmt_buf(proc, sizeof proc, "/proc/self/fd/%d", seg_fd);
    for (int attempt = 0; attempt < 2; attempt++) {
        /* The /proc link is the way that needs no privilege; the fallback
         * needs CAP_DAC_READ_SEARCH. Report the first one's error. */
        if (linkat(AT_FDCWD, proc, AT_FDCWD, seg_path, AT_SYMLINK_FOLLOW) == 0) {
            published = 1;
            goto done;
        }
        first = errno;
        if (linkat(seg_fd, "", AT_FDCWD, seg_path, AT_EMPTY_PATH) == 0) {
            published = 1;
            goto done;
        }
        if (first != EEXIST || !remove_stale(seg_path))
            break;
    }
    published = -1;
    struct stat st;
    if (first == EEXIST && lstat(seg_path, &st) == 0 && (st.st_uid != geteuid() || !S_ISREG(st.st_mode))) {
        /* Not ours: another user's, made before this pid was ours. */
        log_msg("cannot create %s: the name is taken by %s of uid %u; `shimdump %d` reads the "
                "process itself and ignores it", seg_path, S_ISREG(st.st_mode) ? "a file" :
                S_ISLNK(st.st_mode) ? "a symbolic link" : "something", (unsigned)st.st_uid,
                (int)getpid());
        goto done;
    }
    log_msg("cannot create %s: %s%s; `shimdump %d` reads the process itself", seg_path,
            strerrordesc_np(first), first == EPERM && geteuid() != 0 && seg->uid == 0
                ? " (the file is root's and this process no longer is)" : "",
            (int)getpid());
done:
    pthread_mutex_unlock(&copy_mu);
}
