/* parked: the shim's own memory must not grow with the thread count. N
 * threads each allocate and free ALLOCS small blocks (so that, with
 * sample:1 and stacks, each takes that many stacks), then all wait while
 * the main thread reads the process's anonymous RSS (RssAnon: the segment
 * is shared memory, not counted there) and prints it in KiB.
 * Usage: parked N ALLOCS */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_barrier_t parked, go;
static long allocs;

__attribute__((noinline)) static void churn(void)
{
    for (long i = 0; i < allocs; i++) {
        void *p = malloc(64 + (size_t)(i % 4) * 16);
        __asm__ volatile("" : : "r"(p) : "memory");
        free(p);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    churn();
    pthread_barrier_wait(&parked);
    pthread_barrier_wait(&go);
    return NULL;
}

static long rss_anon_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "RssAnon:", 8) == 0)
            kib = strtol(line + 8, NULL, 10);
    fclose(f);
    return kib;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: parked N ALLOCS\n");
        return 2;
    }
    int n = atoi(argv[1]);
    allocs = atol(argv[2]);
    if (n < 1 || n > 4096 || allocs < 0) {
        fprintf(stderr, "parked: bad arguments\n");
        return 2;
    }
    pthread_t *t = calloc((size_t)n, sizeof *t);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256 * 1024);
    if (t == NULL || pthread_barrier_init(&parked, NULL, (unsigned)n + 1) ||
        pthread_barrier_init(&go, NULL, (unsigned)n + 1)) {
        fprintf(stderr, "parked: out of memory\n");
        return 1;
    }
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], &a, worker, NULL) != 0) {
            fprintf(stderr, "parked: cannot create thread %d\n", i);
            return 1;
        }
    pthread_barrier_wait(&parked);
    long kib = rss_anon_kib();
    pthread_barrier_wait(&go);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    printf("rss_anon_kib %ld\n", kib);
    free(t);
    return kib < 0;
}
