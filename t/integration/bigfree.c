/* bigfree: frees of the blocks whose usable size the fast lookups could get
 * wrong (aligned ones, large ones, one of 5 GiB, virtual only) keep every
 * class's counts and usable bytes exact: all freed, each class's usable
 * bytes allocated and freed equal, against malloc_usable_size's own sum.
 * Usage: bigfree SHM_DIR (sample:1) */
#include "config.h"

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "segutil.h"

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    static struct su_snap a, b;
    static const size_t aligns[] = { 64, 4096, 65536, 2u << 20 };
    static const size_t sizes[] = { 24, 5000, 70000, 3u << 20, 20u << 20 };
    enum { NB = 4 * 5 + 5 + 1 };
    void *blocks[NB];
    size_t usable[NB], n = 0;

    if (argc != 2)
        return 2;
    free(malloc(1));                 /* the first tracked block names the segment */
    sleep_ms(300);
    const struct seg_header *h = su_open(argv[1], (int)getpid());
    if (!h)
        return 1;
    su_snap(h, &a);
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j < 5; j++) {
            void *p = NULL;
            if (posix_memalign(&p, aligns[i], sizes[j]) == 0)
                blocks[n] = p, usable[n++] = malloc_usable_size(p);
        }
    for (size_t j = 0; j < 5; j++)
        if ((blocks[n] = malloc(sizes[j])) != NULL)
            usable[n] = malloc_usable_size(blocks[n]), n++;
    if ((blocks[n] = malloc((size_t)5 << 30)) != NULL)   /* past 4 GiB: never touched */
        usable[n] = malloc_usable_size(blocks[n]), n++;
    for (size_t i = 0; i < n; i++)
        free(blocks[i]);
    su_snap(h, &b);

    uint64_t sum = 0, alloc = 0, freed = 0, allocs = 0, frees = 0;
    for (size_t i = 0; i < n; i++)
        sum += usable[i];
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        alloc += b.c[c].usable_alloc - a.c[c].usable_alloc;
        freed += b.c[c].usable_free - a.c[c].usable_free;
        allocs += b.c[c].allocs - a.c[c].allocs;
        frees += b.c[c].frees - a.c[c].frees;
        CHECK(b.c[c].usable_alloc - a.c[c].usable_alloc == b.c[c].usable_free - a.c[c].usable_free);
    }
    CHECK(allocs == n && frees == n && alloc == sum && freed == sum);
    printf("%zu blocks, %llu usable bytes allocated and freed (malloc_usable_size: %llu)\n", n,
           (unsigned long long)freed, (unsigned long long)sum);
    return tu_finish("bigfree");
}
