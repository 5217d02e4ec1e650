/* pairs: the cost of a malloc+free pair, in ns, per thread. Each thread
 * allocates and frees SIZE bytes ITERS times, touching each block once.
 * Usage: pairs THREADS SIZE ITERS; prints "ns_per_pair=X" (the mean of the
 * threads' own times). */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static size_t size;
static long iters;
static pthread_barrier_t go;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *run(void *out)
{
    pthread_barrier_wait(&go);
    double t0 = now();
    for (long i = 0; i < iters; i++) {
        char *volatile p = malloc(size);
        p[0] = (char)i;
        free(p);
    }
    *(double *)out = (now() - t0) / (double)iters;
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    pthread_t t[64];
    double ns[64], sum = 0;

    size = argc > 2 ? (size_t)atol(argv[2]) : 16;
    iters = argc > 3 ? atol(argv[3]) : 10000000;
    if (threads < 1 || threads > 64 || iters < 1) {
        fprintf(stderr, "usage: pairs THREADS(1-64) SIZE ITERS\n");
        return 2;
    }
    pthread_barrier_init(&go, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, run, &ns[i]);
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        sum += ns[i];
    }
    printf("ns_per_pair=%.3f\n", sum / threads);
    return 0;
}
