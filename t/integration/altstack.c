/* altstack: mallocs in a signal handler that runs on a small alternate
 * signal stack (7 KiB, a little less than the 8 KiB crash handlers often
 * use), with every allocation tracked and stacks on: the shim must not
 * unwind there, so the memory below the alternate stack stays untouched.
 * Exits 0 when it does. With "autodisarm", the stack is set with
 * SS_AUTODISARM, so that inside the handler the kernel reports no
 * alternate stack at all. */
#include "config.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31)   /* linux/signal.h, since Linux 4.7 */
#endif

#define GUARD (64 * 1024)
#define ALT 7168   /* a small alternate stack: room for the shim, not for unwinding */

static unsigned char *area;   /* [guard][alternate stack] */
static volatile int handled;

static void handler(int sig)
{
    void *p[64];
    (void)sig;
    for (int i = 0; i < 64; i++)
        p[i] = malloc(16 + (size_t)i * 8);
    for (int i = 0; i < 64; i++)
        free(p[i]);
    handled++;
}

int main(int argc, char **argv)
{
    stack_t ss;
    struct sigaction sa;

    area = malloc(GUARD + ALT);
    if (!area)
        return 2;
    memset(area, 0xa5, GUARD);
    ss.ss_sp = area + GUARD;
    ss.ss_size = ALT;
    ss.ss_flags = argc > 1 && strcmp(argv[1], "autodisarm") == 0 ? SS_AUTODISARM : 0;
    if (sigaltstack(&ss, NULL) != 0)
        return 2;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    for (int i = 0; i < 20; i++)
        raise(SIGUSR1);
    for (size_t i = 0; i < GUARD; i++)
        if (area[i] != 0xa5) {
            fprintf(stderr, "altstack: the handler wrote %zu bytes below its stack\n", GUARD - i);
            return 1;
        }
    printf("altstack: %d handlers ran, nothing written below the stack\n", handled);
    return handled == 20 ? 0 : 1;
}
