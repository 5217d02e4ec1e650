/* guard: the few libc calls, besides the malloc family, that the shim wraps,
 * because they could pull the ground from under the unwinder it runs inside
 * the program: closing libunwind's descriptors, and alternate signal stacks.
 * Each does what libc's does and only tells stack.c about it first. */
#include "config.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stack.h"

#define SHIM_EXPORT __attribute__((visibility("default")))

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* libc's own entry points under their internal names (exported by glibc
 * since 2.2.5), so that close stays a cancellation point as libc's is. */
int __close(int fd);
int __dup2(int oldfd, int newfd);

SHIM_EXPORT int close(int fd)
{
    if (fd >= 0)
        stack_fds_closing((unsigned)fd, (unsigned)fd);
    return __close(fd);
}

SHIM_EXPORT int dup2(int oldfd, int newfd)
{
    if (newfd >= 0 && newfd != oldfd)
        stack_fds_closing((unsigned)newfd, (unsigned)newfd);
    return __dup2(oldfd, newfd);
}

/* dup3, close_range and sigaltstack are plain system calls in glibc too. */
SHIM_EXPORT int dup3(int oldfd, int newfd, int flags)
{
    if (newfd >= 0 && newfd != oldfd)
        stack_fds_closing((unsigned)newfd, (unsigned)newfd);
    return (int)syscall(SYS_dup3, oldfd, newfd, flags);
}

SHIM_EXPORT int close_range(unsigned int lo, unsigned int hi, int flags)
{
    if (!(flags & CLOSE_RANGE_CLOEXEC) && lo <= hi)
        stack_fds_closing(lo, hi);
    return (int)syscall(SYS_close_range, lo, hi, flags);
}

/* As glibc's: close_range, else (a kernel before 5.9) one close each. */
SHIM_EXPORT void closefrom(int lowfd)
{
    unsigned lo = lowfd < 0 ? 0 : (unsigned)lowfd;
    stack_fds_closing(lo, ~0U);
    if (syscall(SYS_close_range, lo, ~0U, 0) == 0)
        return;
    long max = sysconf(_SC_OPEN_MAX);
    for (long fd = lo; fd < max; fd++)
        __close((int)fd);
}

SHIM_EXPORT int sigaltstack(const stack_t *ss, stack_t *old)
{
    stack_t cur;
    long r = syscall(SYS_sigaltstack, ss, old);
    /* what the kernel holds now (ss may be bad, or be where old points) */
    if (r == 0 && ss != NULL && syscall(SYS_sigaltstack, NULL, &cur) == 0)
        stack_altstack_set(cur.ss_sp, cur.ss_size, (cur.ss_flags & SS_DISABLE) != 0);
    return (int)r;
}
