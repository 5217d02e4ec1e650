/* libwritehook: preloaded before the shim, it stands between the shim and
 * the files it writes, to make two moments happen on cue. Its pwrite and
 * pwritev do what libc's do (the system calls), and besides:
 *
 * - a program that closes the shim's descriptor of its segment copy behind
 *   the wrappers' back and is given the number for a file of its own, at
 *   the worst moment, in the middle of a rewrite of the copy: after the
 *   FDSTEAL_AT-th pwrite at offset 0 (a copy's header: each rewrite writes
 *   it first and last) into a file under FDSTEAL_DIR, it opens
 *   FDSTEAL_VICTIM and puts it at that descriptor's number with a raw
 *   dup2, once, and says so on stderr (t/integration/fdsteal.sh);
 * - a capture's writer that cannot keep up (slow storage): a pwritev past
 *   offset 0 (a chunk, not the header) into the file WRITEHOLD_TRACE waits
 *   while the file WRITEHOLD exists, and says once on stderr that it held
 *   one (t/cli/capdrop.sh).
 *
 * A fixture for those tests only. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <sys/types.h>
#include <unistd.h>

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off);
ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off);
ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off);
ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off);

static int header_writes, done;

static void maybe_steal(int fd, off_t off)
{
    const char *dir = getenv("FDSTEAL_DIR"), *victim = getenv("FDSTEAL_VICTIM");
    const char *at = getenv("FDSTEAL_AT");
    char proc[64], link[4096];
    ssize_t n;

    if (done || off != 0 || !dir || !victim || !at)
        return;
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    n = readlink(proc, link, sizeof link - 1);
    if (n <= 0)
        return;
    link[n] = '\0';
    if (strncmp(link, dir, strlen(dir)) != 0)
        return;
    if (++header_writes != atoi(at))
        return;
    done = 1;
    int v = open(victim, O_RDWR | O_CLOEXEC);
    if (v < 0 || syscall(SYS_dup2, v, fd) != fd) {
        fprintf(stderr, "fdsteal: cannot put %s at descriptor %d\n", victim, fd);
        return;
    }
    syscall(SYS_close, v);
    fprintf(stderr, "fdsteal: descriptor %d (%s) is %s now\n", fd, link, victim);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
    ssize_t r = syscall(SYS_pwrite64, fd, buf, len, off);
    if (r >= 0)
        maybe_steal(fd, off);
    return r;
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
    return pwrite(fd, buf, len, off);
}

/* Whether fd is the file at path. */
static int is_path(int fd, const char *path)
{
    char proc[64], link[4096];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(proc, link, sizeof link - 1);
    if (n <= 0)
        return 0;
    link[n] = '\0';
    return strcmp(link, path) == 0;
}

static int held;

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    const char *hold = getenv("WRITEHOLD"), *trace = getenv("WRITEHOLD_TRACE");
    if (hold && trace && off > 0 && is_path(fd, trace)) {
        struct timespec ts = { 0, 10000000L };
        while (access(hold, F_OK) == 0) {
            if (!held++)
                fprintf(stderr, "writehook: holding a write of %s\n", trace);
            nanosleep(&ts, NULL);
        }
    }
    return syscall(SYS_pwritev, fd, iov, cnt, (unsigned long)off, 0UL);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
{
    return pwritev(fd, iov, cnt, off);
}
