/* bigsmall: the biggest holder in a few big blocks beside a site of many
 * small ones (issue 33): ten blocks of 8 MiB from big_holder (80 MiB) and
 * 100,000 blocks of 1000 bytes from small_holder (95.4 MiB). Sampling by
 * counts alone (1 in 256) misses the big site most of the time, or, where it
 * tracks one of its blocks, shows it 256 times too large; sampling by bytes
 * must show both within their errors. Writes DIR/ready (its pid) once both
 * are held, and frees everything once DIR/stop exists. With `half`, it
 * holds half of each first, writes DIR/half and waits for DIR/go (a test
 * changes the sampling meanwhile: shimdump --set), then the other half.
 * Usage: bigsmall DIR [half] */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "handshake.h"

#define NBIG   10
#define BIG    (8u << 20)
#define NSMALL 100000
#define SMALL  1000

static void *big[NBIG], *small[NSMALL];

__attribute__((noinline)) static void big_holder(int from, int to)
{
    for (int i = from; i < to; i++)
        if (!(big[i] = malloc(BIG)))
            _exit(4);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void small_holder(int from, int to)
{
    for (int i = from; i < to; i++)
        if (!(small[i] = malloc(SMALL)))
            _exit(4);
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    char pid[32];
    int half = argc == 3 && !strcmp(argv[2], "half");
    if (argc != 2 && !half)
        return 2;
    snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (half) {
        big_holder(0, NBIG / 2);
        small_holder(0, NSMALL / 2);
        put(argv[1], "half", pid);
        await_ms(argv[1], "go", 0);
        big_holder(NBIG / 2, NBIG);
        small_holder(NSMALL / 2, NSMALL);
    } else {
        big_holder(0, NBIG);
        small_holder(0, NSMALL);
    }
    put(argv[1], "ready", pid);
    await_ms(argv[1], "stop", 0);
    for (int i = 0; i < NBIG; i++)
        free(big[i]);
    for (int i = 0; i < NSMALL; i++)
        free(small[i]);
    return 0;
}
