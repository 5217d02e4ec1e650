/* xthreads: 16 threads, each allocating blocks that the next thread frees,
 * then exiting (their slots fold into the retired total). The per-class
 * counts must be exact, whether threads have slots of their own or share
 * the overflow slot. Usage: xthreads SHM_DIR */
#include "config.h"

#include <pthread.h>

#include "segutil.h"

#define T 16
#define K 20000
static const size_t sizes[] = { 3000, 50000 };   /* classes nothing else here uses */
static void *handoff[T][K];
static pthread_barrier_t made;

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg, next = (me + 1) % T;
    for (int i = 0; i < K; i++)
        handoff[me][i] = malloc(sizes[i & 1]);
    pthread_barrier_wait(&made);
    for (int i = 0; i < K; i++)
        free(handoff[next][i]);      /* another thread's blocks */
    return NULL;
}

int main(int argc, char **argv)
{
    static struct su_snap a, b;
    const struct seg_header *h;
    pthread_t t[T];

    if (argc != 2)
        return 2;
    for (int i = 0; i < 2000; i++)
        free(malloc(64));
    h = su_open(argv[1], (int)getpid());
    if (!h)
        return 1;
    su_snap(h, &a);
    pthread_barrier_init(&made, NULL, T);
    for (int i = 0; i < T; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < T; i++)
        pthread_join(t[i], NULL);
    su_snap(h, &b);
    for (int s = 0; s < 2; s++) {
        void *p = malloc(sizes[s]);
        unsigned c = sizeclass_of(malloc_usable_size(p));
        free(p);
        uint64_t allocs = b.c[c].allocs - a.c[c].allocs, frees = b.c[c].frees - a.c[c].frees;
        uint64_t lu = (b.c[c].usable_alloc - b.c[c].usable_free) - (a.c[c].usable_alloc - a.c[c].usable_free);
        printf("size %zu: allocs %llu frees %llu live usable %llu\n", sizes[s],
               (unsigned long long)allocs, (unsigned long long)frees, (unsigned long long)lu);
        CHECK(allocs == (uint64_t)T * K / 2);
        CHECK(frees == (uint64_t)T * K / 2);
        CHECK(lu == 0);
    }
    printf("threads seen %llu, slots %u\n", (unsigned long long)h->threads_seen, h->nslots);
    CHECK(h->threads_seen >= T + 1);
    return tu_finish("xthreads");
}
