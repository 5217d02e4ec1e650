/* tornstats: does the allocator's in-use figure ever read below the bytes
 * that are live throughout the read? No shim: the allocator alone. One
 * thread allocates 160,000 blocks of 1000 bytes (usable 1024 under both)
 * and frees them, over and over; the main thread reads the figure READS
 * times and compares it with a floor that holds: the blocks allocated
 * before the read began less those whose free had begun by its end, each
 * live the whole time (preload/sampler.c's rule, BE_TAKES). Build one per
 * allocator:
 *   cc -O2 -DTC -o tornstats-tc bench/tornstats.c -ltcmalloc_minimal -lpthread
 *   cc -O2 -DJE -o tornstats-je bench/tornstats.c -ljemalloc -lpthread
 * Usage: tornstats READS; prints how many reads fell below the floor and
 * by how much at most. Never asserts. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#if defined(TC)
#include <gperftools/malloc_extension_c.h>
#elif defined(JE)
#include <jemalloc/jemalloc.h>
#else
#error "build with -DTC (tcmalloc) or -DJE (jemalloc)"
#endif

#define N 160000
#define USABLE 1024
static void *blocks[N];
static long nalloc, nfree;   /* monotonic: mallocs done, frees begun */
static volatile int stop;

static void *churn(void *arg)
{
    (void)arg;
    while (!stop) {
        for (int i = 0; i < N; i++) {
            blocks[i] = malloc(1000);
            __atomic_add_fetch(&nalloc, 1, __ATOMIC_SEQ_CST);
        }
        for (int i = 0; i < N; i++) {
            __atomic_add_fetch(&nfree, 1, __ATOMIC_SEQ_CST);
            free(blocks[i]);
        }
    }
    return NULL;
}

static size_t in_use(void)
{
    size_t v = 0;
#if defined(TC)
    MallocExtension_GetNumericProperty("generic.current_allocated_bytes", &v);
#else
    uint64_t e = 1;
    size_t sz = sizeof e;
    mallctl("epoch", &e, &sz, &e, sz);
    sz = sizeof v;
    mallctl("stats.active", &v, &sz, NULL, 0);
#endif
    return v;
}

int main(int argc, char **argv)
{
    pthread_t t;
    long reads = argc > 1 ? atol(argv[1]) : 100000, below = 0, worst = 0;
    if (pthread_create(&t, NULL, churn, NULL) != 0)
        return 1;
    for (long r = 0; r < reads; r++) {
        long a0 = __atomic_load_n(&nalloc, __ATOMIC_SEQ_CST);
        long v = (long)in_use();
        long f1 = __atomic_load_n(&nfree, __ATOMIC_SEQ_CST);
        long floor = (a0 - f1) * USABLE;
        if (v < floor) {
            below++;
            if (floor - v > worst)
                worst = floor - v;
        }
    }
    stop = 1;
    pthread_join(t, NULL);
    printf("%ld reads, %ld below the floor, worst by %ld bytes\n", reads, below, worst);
    return 0;
}
