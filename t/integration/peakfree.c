/* peakfree: a peak of live bytes from one function, freed, then a steady
 * state from another (issue 36): peak_builder holds 160,000 blocks of
 * 1000 bytes (160 MB) until told, and frees them; steady_holder then holds
 * 25,000 blocks of 2400 bytes (60 MB). The live call sites must show
 * steady_holder alone, the peak's peak_builder alone. Writes DIR/built
 * (its pid) once the peak is held, waits for DIR/free, frees it, writes
 * DIR/ready once the steady state is held; once DIR/fork exists, forks a
 * child that writes DIR/child (its pid); both free everything once
 * DIR/stop exists.
 * Usage: peakfree DIR */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "handshake.h"

#define NPEAK   160000
#define PEAK    1000
#define NSTEADY 25000
#define STEADY  2400

static void *peak[NPEAK], *steady[NSTEADY];

__attribute__((noinline)) static void peak_builder(void)
{
    for (int i = 0; i < NPEAK; i++)
        if (!(peak[i] = malloc(PEAK)))
            _exit(4);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void steady_holder(void)
{
    for (int i = 0; i < NSTEADY; i++)
        if (!(steady[i] = malloc(STEADY)))
            _exit(4);
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    char pid[32];
    if (argc != 2)
        return 2;
    snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    peak_builder();
    put(argv[1], "built", pid);
    await_ms(argv[1], "free", 0);
    for (int i = 0; i < NPEAK; i++)
        free(peak[i]);
    steady_holder();
    put(argv[1], "ready", pid);
    /* A fork child, once DIR/fork exists: its peak must be its own (the
     * steady state it inherits), not its parent's. Its big block starts
     * its sampler (always tracked). */
    await_ms(argv[1], "fork", 0);
    pid_t child = fork();
    if (child == 0) {
        void *own = malloc(4u << 20);
        snprintf(pid, sizeof pid, "%d\n", (int)getpid());
        put(argv[1], "child", pid);
        await_ms(argv[1], "stop", 0);
        free(own);
        _exit(0);
    }
    if (child < 0)
        return 5;
    await_ms(argv[1], "stop", 0);
    waitpid(child, NULL, 0);
    for (int i = 0; i < NSTEADY; i++)
        free(steady[i]);
    return 0;
}
