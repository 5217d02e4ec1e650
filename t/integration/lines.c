/* lines: a live process with one call site at a known source line, for
 * t/cli/lines.sh. lines_site() allocates 200 blocks of 5000 B at the line
 * marked "the call site", called from main() at the line marked "the
 * caller" (the test finds both with grep); they are kept 1.2 s before it
 * writes DIR/ready (its pid), so that they are long-lived for the view, and
 * until DIR/stop. Built with -g; the test makes copies without debug
 * information and with it in a separate debug file.
 * Usage: lines DIR */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "handshake.h"

static void *blocks[200];

__attribute__((noinline)) void lines_site(int n);

__attribute__((noinline)) void lines_site(int n)
{
    for (int i = 0; i < n; i++) {
        blocks[i] = malloc(5000); /* lines.sh: the call site */
        __asm__ volatile("" : : "r"(blocks[i]) : "memory");
    }
}

int main(int argc, char **argv)
{
    char pid[32];

    if (argc != 2) {
        fprintf(stderr, "usage: lines DIR\n");
        return 2;
    }
    lines_site(200); /* lines.sh: the caller */
    __asm__ volatile("" ::: "memory");   /* no tail call: main stays a frame */
    sleep_ms(1200);
    snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    put(argv[1], "ready", pid);
    await_ms(argv[1], "stop", 600000);   /* 10 min at most */
    for (int i = 0; i < 200; i++)
        free(blocks[i]);
    return 0;
}
