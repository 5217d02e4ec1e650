/* holder: a live process with a known heap, for shimdump's tests. It waits
 * (without allocating) for files that the test creates in DIR:
 *   writes DIR/base when started, waits for DIR/go;
 *   allocates its pattern, writes DIR/ready with "SIZE USABLE N FREED" per
 *   size, waits for DIR/stop, and exits normally.
 * The pattern: N blocks of each size; for 3000 B, 40 freed at once; for
 * 20000 B, 20 freed after 300 ms; 200000 B all kept.
 * Usage: holder DIR */
#include "config.h"

#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "handshake.h"

static void *blocks[3][100];

int main(int argc, char **argv)
{
    static const size_t size[3] = { 3000, 20000, 200000 };
    static const int count[3] = { 100, 50, 10 }, freed[3] = { 40, 20, 0 };
    static char text[256];
    size_t usable[3];

    if (argc != 2)
        return 2;
    free(malloc(1));
    put(argv[1], "base", "\n");
    await(argv[1], "go");
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < count[s]; i++) {
            if (!(blocks[s][i] = malloc(size[s])))
                return 1;
            memset(blocks[s][i], 0x5a, size[s]);
            if (s == 0 && i < freed[0]) {
                free(blocks[s][i]);
                blocks[s][i] = NULL;
            }
        }
    sleep_ms(300);
    for (int i = 0; i < freed[1]; i++) {
        free(blocks[1][i]);
        blocks[1][i] = NULL;
    }
    for (int s = 0; s < 3; s++)
        usable[s] = malloc_usable_size(blocks[s][count[s] - 1]);
    snprintf(text, sizeof text, "%zu %zu %d %d\n%zu %zu %d %d\n%zu %zu %d %d\n", size[0], usable[0],
             count[0], freed[0], size[1], usable[1], count[1], freed[1], size[2], usable[2],
             count[2], freed[2]);
    sleep_ms(1200);   /* the sampler has aged the survivors */
    put(argv[1], "ready", text);
    await(argv[1], "stop");
    return 0;
}
