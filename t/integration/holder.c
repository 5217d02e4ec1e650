/* holder: a live process with a known heap, for shimdump's tests. It waits
 * (without allocating) for files that the test creates in DIR:
 *   writes DIR/base when started, waits for DIR/go;
 *   allocates its pattern, writes DIR/ready, waits for DIR/stop, and exits
 *   normally.
 * The pattern: N blocks of each size; for 3000 B, 40 freed at once; for
 * 20000 B, 20 freed after 300 ms; 200000 B all kept.
 * DIR/ready has one line per size, "SIZE USABLE N FREED LO HI": the freed
 * blocks' lifetimes by this program's CLOCK_MONOTONIC lie within LO..HI ns
 * (from after malloc returned to before free was called, and from before
 * malloc was called to after free returned), whatever the scheduler did;
 * then "done T": CLOCK_REALTIME ns after the last free, so that a sampler
 * pass stamped later has aged the final set of live blocks.
 * Usage: holder DIR */
#include "config.h"

#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "handshake.h"

static void *blocks[3][100];
static uint64_t born_lo[3][100], born_hi[3][100];

static uint64_t now_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Frees block i of size s and widens that size's bounds. */
static void release(int s, int i, uint64_t *lo, uint64_t *hi)
{
    uint64_t t0 = now_ns(CLOCK_MONOTONIC);
    free(blocks[s][i]);
    uint64_t t1 = now_ns(CLOCK_MONOTONIC);
    blocks[s][i] = NULL;
    if (t0 - born_hi[s][i] < *lo)
        *lo = t0 - born_hi[s][i];
    if (t1 - born_lo[s][i] > *hi)
        *hi = t1 - born_lo[s][i];
}

int main(int argc, char **argv)
{
    static const size_t size[3] = { 3000, 20000, 200000 };
    static const int count[3] = { 100, 50, 10 }, freed[3] = { 40, 20, 0 };
    static char text[512];
    uint64_t lo[3] = { UINT64_MAX, UINT64_MAX, 0 }, hi[3] = { 0, 0, 0 };
    size_t usable[3];

    if (argc != 2)
        return 2;
    free(malloc(1));
    put(argv[1], "base", "\n");
    await(argv[1], "go");
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < count[s]; i++) {
            born_lo[s][i] = now_ns(CLOCK_MONOTONIC);
            blocks[s][i] = malloc(size[s]);
            born_hi[s][i] = now_ns(CLOCK_MONOTONIC);
            if (!blocks[s][i])
                return 1;
            memset(blocks[s][i], 0x5a, size[s]);
            if (s == 0 && i < freed[0])
                release(0, i, &lo[0], &hi[0]);
        }
    sleep_ms(300);
    for (int i = 0; i < freed[1]; i++)
        release(1, i, &lo[1], &hi[1]);
    uint64_t done = now_ns(CLOCK_REALTIME);
    for (int s = 0; s < 3; s++)
        usable[s] = malloc_usable_size(blocks[s][count[s] - 1]);
    size_t n = 0;
    for (int s = 0; s < 3; s++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%zu %zu %d %d %llu %llu\n", size[s],
                              usable[s], count[s], freed[s], (unsigned long long)lo[s],
                              (unsigned long long)hi[s]);
    snprintf(text + n, sizeof text - n, "done %llu\n", (unsigned long long)done);
    put(argv[1], "ready", text);
    await(argv[1], "stop");
    return 0;
}
