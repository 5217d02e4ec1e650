/* diagprog: one program per rule of shimdump's diagnosis (figures.h,
 * fig_diagnose), each made to show it, and a healthy one that must get no
 * alarm. It runs its case, writes DIR/ready ("done T": CLOCK_REALTIME ns
 * after the last allocation of the case), and waits for DIR/stop.
 *   frag     8 threads, each in its own glibc arena, allocate 1024 blocks of
 *            4 KiB and free 3 of every 4: 24 MiB of holes the arenas keep
 *   leak     leak_one() keeps a 64 KiB block every 20 ms for 3.2 s and never
 *            frees one: live bytes only grow, 10 MiB
 *   outside  a 96 MiB anonymous mapping of its own, touched, beside a heap
 *            of 1 MiB
 *   round    16384 blocks of 4097 B, just above the 4 KiB class: 64 MiB
 *            asked for, rounded up to 5 KiB (jemalloc) or 4.5 KiB (tcmalloc)
 *   healthy  2 MiB kept live while 200,000 blocks come and go
 * Usage: diagprog CASE DIR */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "handshake.h"

#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- frag ---- */

#define FRAG_THREADS 8
#define FRAG_BLOCKS 1024

static pthread_barrier_t frag_bar;

static void *frag_thread(void *arg)
{
    static void *blocks[FRAG_THREADS][FRAG_BLOCKS];
    void **b = blocks[(intptr_t)arg];
    /* all at once, so that each thread gets an arena of its own */
    pthread_barrier_wait(&frag_bar);
    for (int i = 0; i < FRAG_BLOCKS; i++) {
        b[i] = malloc(4096);
        memset(b[i], 1, 4096);
    }
    /* every 4th kept, the last included: the arena's top cannot be trimmed */
    for (int i = 0; i < FRAG_BLOCKS; i++)
        if (i % 4 != 3)
            free(b[i]);
    pthread_barrier_wait(&frag_bar);
    return NULL;
}

static void frag(void)
{
    pthread_t t[FRAG_THREADS];
    pthread_barrier_init(&frag_bar, NULL, FRAG_THREADS);
    for (intptr_t i = 0; i < FRAG_THREADS; i++)
        if (pthread_create(&t[i], NULL, frag_thread, (void *)i) != 0)
            exit(3);
    for (int i = 0; i < FRAG_THREADS; i++)
        pthread_join(t[i], NULL);
}

/* ---- leak ---- */

static __attribute__((noinline)) void *leak_one(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 7, n);
    KEEP(p);
    return p;
}

static void leak(void)
{
    for (int i = 0; i < 160; i++) {
        leak_one(65536);
        sleep_ms(20);
    }
}

/* ---- outside ---- */

static void outside(void)
{
    size_t n = 96u << 20;
    char *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        exit(3);
    memset(m, 1, n);
    KEEP(m);
    for (int i = 0; i < 256; i++)
        KEEP(malloc(4096));
}

/* ---- round ---- */

static void round_up(void)
{
    for (int i = 0; i < 16384; i++) {
        char *p = malloc(4097);
        p[0] = p[4096] = 1;
        KEEP(p);
    }
}

/* ---- healthy ---- */

static void healthy(void)
{
    static void *ring[512];
    for (int i = 0; i < 512; i++)
        ring[i] = malloc(4096);
    for (int i = 0; i < 200000; i++) {
        int k = i % 512;
        free(ring[k]);
        ring[k] = malloc(16 + (size_t)(i % 4000));
        KEEP(ring[k]);
    }
}

int main(int argc, char **argv)
{
    char text[64];
    if (argc != 3)
        return 2;
    if (!strcmp(argv[1], "frag"))
        frag();
    else if (!strcmp(argv[1], "leak"))
        leak();
    else if (!strcmp(argv[1], "outside"))
        outside();
    else if (!strcmp(argv[1], "round"))
        round_up();
    else if (!strcmp(argv[1], "healthy"))
        healthy();
    else
        return 2;
    snprintf(text, sizeof text, "done %llu\n", (unsigned long long)now_ns());
    put(argv[2], "ready", text);
    await(argv[2], "stop");
    return 0;
}
