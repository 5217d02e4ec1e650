/* churn: one thread that holds, frees and holds again 100,000 blocks of
 * 1000 bytes, so that the allocator moves blocks between its caches all
 * the time: its statistics read meanwhile are read across such moves
 * (tornfig.sh). Writes DIR/started (its pid), churns until DIR/stop exists,
 * then frees everything.
 * Usage: churn DIR */
#include "config.h"

#include <stdlib.h>
#include <sys/stat.h>

#include "handshake.h"

#define NBLOCKS 100000

static void *b[NBLOCKS];

int main(int argc, char **argv)
{
    char pid[32], stop[512];
    struct stat st;
    if (argc != 2)
        return 2;
    snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    snprintf(stop, sizeof stop, "%s/stop", argv[1]);
    put(argv[1], "started", pid);
    for (unsigned round = 0; round % 8 != 0 || stat(stop, &st) != 0; round++) {
        for (int i = 0; i < NBLOCKS; i++)
            if (!(b[i] = malloc(1000)))
                return 4;
        __asm__ volatile("" ::: "memory");
        for (int i = 0; i < NBLOCKS; i++)
            free(b[i]);
    }
    return 0;
}
