/* bigsmall: the biggest holder in a few big blocks beside a site of many
 * small ones (issue 33): ten blocks of 8 MiB from big_holder (80 MiB) and
 * 100,000 blocks of 1000 bytes from small_holder (95.4 MiB). Sampling by
 * counts alone (1 in 256) misses the big site most of the time, or, where it
 * tracks one of its blocks, shows it 256 times too large; sampling by bytes
 * must show both within their errors. Writes DIR/ready (its pid) once both
 * are held, and frees everything once DIR/stop exists.
 * Usage: bigsmall DIR */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "handshake.h"

#define NBIG   10
#define BIG    (8u << 20)
#define NSMALL 100000
#define SMALL  1000

static void *big[NBIG], *small[NSMALL];

__attribute__((noinline)) static void big_holder(void)
{
    for (int i = 0; i < NBIG; i++)
        if (!(big[i] = malloc(BIG)))
            _exit(4);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void small_holder(void)
{
    for (int i = 0; i < NSMALL; i++)
        if (!(small[i] = malloc(SMALL)))
            _exit(4);
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    char pid[32];
    if (argc != 2)
        return 2;
    big_holder();
    small_holder();
    snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    put(argv[1], "ready", pid);
    await_ms(argv[1], "stop", 0);
    for (int i = 0; i < NBIG; i++)
        free(big[i]);
    for (int i = 0; i < NSMALL; i++)
        free(small[i]);
    return 0;
}
