/* pairs: the cost of a malloc+free pair, in ns, per thread. Each thread
 * allocates and frees SIZE bytes ITERS times, touching each block once; with
 * "churn", it instead replaces a random block of a live set of 4096 with one
 * of a random size (mostly small, some 4-16 KiB), so blocks live a while and
 * sizes vary; with "cxx", each pair is C++'s operator new and sized delete
 * (the symbols looked up with dlsym, so that a C program calls them).
 * Usage: [PAIRS_CLOCK=thread] [PAIRS_DEPTH=N] pairs THREADS SIZE ITERS
 * [churn|cxx]; prints "ns_per_pair=X" (the mean of the threads' own
 * times). PAIRS_DEPTH calls down N more frames before the loop, so that a
 * call stack taken at malloc is that much deeper. */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static size_t size;
static long iters;
static int churn;
static void *(*cxx_new)(size_t);
static void (*cxx_delete)(void *, size_t);
static pthread_barrier_t go;

/* PAIRS_CLOCK=thread times each thread by its own CPU time, not the wall
 * clock: on a machine that other work keeps busy, time spent descheduled
 * would otherwise swamp what is measured. */
static clockid_t clock_id = CLOCK_MONOTONIC;

static double now(void)
{
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#define LIVE 4096

static int depth;

static void *run(void *out);

/* N frames down, then run: a stack as deep as a server's. */
__attribute__((noinline)) static void *descend(int n, void *out)
{
    void *r = n > 0 ? descend(n - 1, out) : run(out);
    __asm__ volatile("" : : "r"(r) : "memory");   /* not a tail call */
    return r;
}

static void *start(void *out)
{
    return descend(depth, out);
}

static void *run(void *out)
{
    static __thread char *live[LIVE];
    uint64_t x = (uintptr_t)out | 1;
    pthread_barrier_wait(&go);
    double t0 = now();
    if (cxx_new) {
        for (long i = 0; i < iters; i++) {
            char *volatile p = cxx_new(size);
            p[0] = (char)i;
            cxx_delete(p, size);
        }
    } else if (!churn) {
        for (long i = 0; i < iters; i++) {
            char *volatile p = malloc(size);
            p[0] = (char)i;
            free(p);
        }
    } else {
        for (long i = 0; i < iters; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            unsigned r = (unsigned)x;
            size_t n = (r >> 12) % 16 == 0 ? 4096 + r % 12288 : 16 + r % 240;
            char **slot = &live[r % LIVE];
            free(*slot);
            *slot = malloc(n);
            (*slot)[0] = (char)i;
        }
        for (int i = 0; i < LIVE; i++) {
            free(live[i]);
            live[i] = NULL;
        }
    }
    *(double *)out = (now() - t0) / (double)iters;
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    pthread_t t[64];
    double ns[64], sum = 0;

    const char *clk = getenv("PAIRS_CLOCK"), *dep = getenv("PAIRS_DEPTH");
    depth = dep ? atoi(dep) : 0;
    if (clk && strcmp(clk, "thread") == 0)
        clock_id = CLOCK_THREAD_CPUTIME_ID;
    size = argc > 2 ? (size_t)atol(argv[2]) : 16;
    iters = argc > 3 ? atol(argv[3]) : 10000000;
    churn = argc > 4 && strcmp(argv[4], "churn") == 0;
    if (argc > 4 && strcmp(argv[4], "cxx") == 0) {
        cxx_new = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "_Znwm");
        cxx_delete = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "_ZdlPvm");
        if (!cxx_new || !cxx_delete) {
            fprintf(stderr, "pairs: cxx: no operator new/delete here (run it under the shim, "
                            "or with libstdc++ preloaded)\n");
            return 2;
        }
    }
    if (threads < 1 || threads > 64 || iters < 1) {
        fprintf(stderr, "usage: pairs THREADS(1-64) SIZE ITERS\n");
        return 2;
    }
    pthread_barrier_init(&go, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, start, &ns[i]);
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        sum += ns[i];
    }
    printf("ns_per_pair=%.3f\n", sum / threads);
    return 0;
}
