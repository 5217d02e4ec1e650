/* spike: a live process whose live bytes (and, under glibc, RSS) rise by
 * 48 MiB for as long as the test wants, for the history test. Signals
 * through files in DIR (handshake.h):
 *   writes DIR/base, waits for DIR/up; allocates and touches the 48 MiB
 *   block, writes DIR/high, waits for DIR/down; frees it, writes DIR/low,
 *   waits for DIR/stop, and exits normally.
 * Before the spike it keeps 256 blocks of 4 KiB, and every 20 ms it frees
 * and allocates one of them again, so that the sampler runs and the series
 * moves.
 * Usage: spike DIR */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "handshake.h"

#define SPIKE (48u << 20)

static void *keep[256];

/* Waits for DIR/name while churning one small block every 20 ms. */
static void churn_until(const char *dir, const char *name)
{
    for (unsigned i = 0; await_ms(dir, name, 5) != 0; i++) {
        free(keep[i % 256]);
        keep[i % 256] = malloc(4096);
        if (!keep[i % 256])
            _exit(4);
        memset(keep[i % 256], 1, 64);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    const char *dir = argv[1];
    for (unsigned i = 0; i < 256; i++)
        if (!(keep[i] = malloc(4096)))
            return 4;
    put(dir, "base", "base\n");
    churn_until(dir, "up");
    char *big = malloc(SPIKE);
    if (!big)
        return 4;
    memset(big, 1, SPIKE);
    put(dir, "high", "high\n");
    churn_until(dir, "down");
    free(big);
    put(dir, "low", "low\n");
    churn_until(dir, "stop");
    for (unsigned i = 0; i < 256; i++)
        free(keep[i]);
    return 0;
}
