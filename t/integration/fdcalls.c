/* fdcalls: the libc calls that the shim wraps besides the malloc family
 * (close, dup2, dup3, close_range, closefrom, sigaltstack) answer as libc's
 * do: results, errno, and what they do. Run bare and under the shim; exits
 * 0 when every check holds. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static int fails;

#define CHECK(cond, what)                                                        \
    do {                                                                         \
        errno = 0;                                                               \
        if (!(cond)) {                                                           \
            fprintf(stderr, "fdcalls: not so: %s (errno %d)\n", what, errno);   \
            fails++;                                                             \
        }                                                                        \
    } while (0)

static int is_open(int fd)
{
    return fcntl(fd, F_GETFD) >= 0;
}

int main(void)
{
    int p[2], a, b;
    stack_t ss, old, cur, bad, both;

    errno = 0;
    CHECK(close(-1) == -1 && errno == EBADF, "close(-1) fails with EBADF");
    CHECK(pipe(p) == 0, "pipe");
    CHECK(dup2(p[0], p[0]) == p[0], "dup2 onto itself returns the descriptor");
    CHECK(dup2(-5, p[1]) == -1 && errno == EBADF, "dup2 of a bad descriptor fails with EBADF");
    CHECK(is_open(p[1]), "a failed dup2 leaves newfd open");
    CHECK(dup3(p[0], p[0], 0) == -1 && errno == EINVAL, "dup3 onto itself fails with EINVAL");
    CHECK(dup3(p[0], 100, O_CLOEXEC) == 100 && (fcntl(100, F_GETFD) & FD_CLOEXEC),
          "dup3 with O_CLOEXEC");
    CHECK(close_range(10, 5, 0) == -1 && errno == EINVAL, "close_range with lo > hi fails");
    CHECK(dup2(p[0], 101) == 101 && !(fcntl(101, F_GETFD) & FD_CLOEXEC), "dup2 to 101");
    CHECK(close_range(101, 101, CLOSE_RANGE_CLOEXEC) == 0 && is_open(101) &&
              (fcntl(101, F_GETFD) & FD_CLOEXEC),
          "close_range with CLOSE_RANGE_CLOEXEC marks and keeps open");
    CHECK(close_range(100, 101, 0) == 0 && !is_open(100) && !is_open(101), "close_range closes");
    a = dup2(p[0], 200);
    b = dup2(p[0], 230);
    CHECK(a == 200 && b == 230, "dup2 to 200 and 230");
    closefrom(200);
    CHECK(!is_open(200) && !is_open(230) && is_open(p[0]) && is_open(p[1]),
          "closefrom closes from its argument up, and nothing below");
    CHECK(close(p[0]) == 0 && close(p[1]) == 0 && close(p[0]) == -1 && errno == EBADF,
          "close, and a second close fails with EBADF");

    ss.ss_sp = malloc(65536);
    ss.ss_size = 65536;
    ss.ss_flags = 0;
    CHECK(ss.ss_sp != NULL, "malloc");
    CHECK(sigaltstack(&ss, &old) == 0 && (old.ss_flags & SS_DISABLE),
          "sigaltstack sets a stack and reports the old one disabled");
    CHECK(sigaltstack(NULL, &cur) == 0 && cur.ss_sp == ss.ss_sp && cur.ss_size == 65536 &&
              !(cur.ss_flags & (SS_DISABLE | SS_ONSTACK)),
          "sigaltstack(NULL) reads it back");
    bad = ss;
    bad.ss_size = 16;
    CHECK(sigaltstack(&bad, NULL) == -1 && errno == ENOMEM, "a stack too small fails with ENOMEM");
    bad.ss_size = 65536;
    bad.ss_flags = 0x1234;
    CHECK(sigaltstack(&bad, NULL) == -1 && errno == EINVAL, "bad flags fail with EINVAL");
    CHECK(sigaltstack(NULL, &cur) == 0 && cur.ss_sp == ss.ss_sp, "a failed call changes nothing");
    both.ss_sp = NULL;
    both.ss_size = 0;
    both.ss_flags = SS_DISABLE;
    CHECK(sigaltstack(&both, &old) == 0 && old.ss_sp == ss.ss_sp && old.ss_size == 65536,
          "SS_DISABLE: the old stack comes back");
    CHECK(sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_DISABLE), "and it is disabled");
    free(ss.ss_sp);
    if (fails)
        return 1;
    printf("fdcalls: all as libc's\n");
    return 0;
}
