/* Unit tests of preload/debug.h: SHIM_ASSERT in a debug build (debug_on.c)
 * writes its one line and aborts; in any other build (this file) its
 * condition is not evaluated. */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#undef MALLOCSHIM_DEBUG
#include "debug.h"

/* debug_on.c */
int debug_count(int *evaluated);
void debug_on_assert(int value, int *evaluated);
extern const int debug_on_line;

static void debug_off_assert(int value, int *evaluated)
{
    SHIM_ASSERT(debug_count(evaluated) && value != 0);
}

START_TEST(assert_off_evaluates_nothing)
{
    int evaluated = 0;
    debug_off_assert(0, &evaluated);
    debug_off_assert(1, &evaluated);
    ck_assert_int_eq(evaluated, 0);
}
END_TEST

START_TEST(assert_on_holds_quietly)
{
    int evaluated = 0;
    debug_on_assert(1, &evaluated);
    ck_assert_int_eq(evaluated, 1);
}
END_TEST

START_TEST(assert_on_fails_with_one_line_and_abort)
{
    int fd[2], status;
    char out[1024], want[256];
    size_t got = 0;
    ssize_t r;

    ck_assert_int_eq(pipe(fd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct rlimit none = { 0, 0 };
        int evaluated = 0;
        setrlimit(RLIMIT_CORE, &none);   /* no core file in the build tree */
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        debug_on_assert(0, &evaluated);
        _exit(0);   /* not reached when it aborts */
    }
    close(fd[1]);
    while (got < sizeof out - 1 && (r = read(fd[0], out + got, sizeof out - 1 - got)) > 0)
        got += (size_t)r;
    out[got] = '\0';
    close(fd[0]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
                  "the child did not end by SIGABRT (status %#x)", status);

    /* "mallocshim: assertion failed: <expr> (<file>:<line>)\n", the file
     * as the compiler was given it (a path that ends in debug_on.c) */
    static const char head[] = "mallocshim: assertion failed: "
                               "debug_count(evaluated) && value != 0 (";
    ck_assert_msg(strncmp(out, head, sizeof head - 1) == 0, "stderr was: %s", out);
    snprintf(want, sizeof want, "debug_on.c:%d)\n", debug_on_line);
    ck_assert_uint_ge(got, strlen(want));
    ck_assert_msg(strcmp(out + got - strlen(want), want) == 0, "stderr was: %s", out);
    ck_assert_ptr_eq(strchr(out, '\n'), out + got - 1);   /* one line, nothing else */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("debug");
    TCase *tc = tcase_create("debug");
    SRunner *sr;
    int failed;
    tcase_add_test(tc, assert_off_evaluates_nothing);
    tcase_add_test(tc, assert_on_holds_quietly);
    tcase_add_test(tc, assert_on_fails_with_one_line_and_abort);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
