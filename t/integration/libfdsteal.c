/* libfdsteal: preloaded before the shim, it plays a program that closes
 * the shim's descriptor of its segment copy behind the wrappers' back and
 * is given the number for a file of its own, at the worst moment: in the
 * middle of a rewrite of the copy. Its pwrite does what libc's does (the
 * system call); after the FDSTEAL_AT-th write at offset 0 (a copy's
 * header: each rewrite writes it first and last) into a file under
 * FDSTEAL_DIR, it opens FDSTEAL_VICTIM and puts it at that descriptor's
 * number with a raw dup2, once, and says so on stderr. The victim must
 * never receive a byte of the shim's. A fixture for fdsteal.sh only. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off);
ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off);

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
