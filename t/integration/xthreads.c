/* xthreads: 16 threads, each allocating blocks that the next thread frees,
 * then exiting (their slots fold into the retired total). The per-class
 * counts must be exact, whether threads have slots of their own or share
 * the overflow slot; half the blocks come from calloc. With `cxx`, the
 * blocks come from operator new and go to C++'s sized delete (the shim's
 * symbols, by dlsym), and each thread's first call is the sized delete of
 * a block the main thread allocated: a free by a thread that has no
 * counters yet.
 * Usage: xthreads SHM_DIR [cxx] */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "segutil.h"

#define T 16
#define K 20000
static const size_t sizes[] = { 3000, 50000 };   /* classes nothing else here uses */
static void *handoff[T][K];
static pthread_barrier_t made;
static void *(*new_fn)(size_t);
static void (*del_fn)(void *, size_t);
static void *first[T];   /* cxx: the main thread's block that thread i frees first */

/* Block i of n bytes: operator new with `cxx`, else malloc, or calloc for
 * half of them. */
static void *alloc(size_t n, int i)
{
    if (new_fn)
        return new_fn(n);
    return i & 2 ? calloc(1, n) : malloc(n);
}

static void release(void *p, size_t n)
{
    if (del_fn)
        del_fn(p, n);
    else
        free(p);
}

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg, next = (me + 1) % T;
    if (first[me])
        release(first[me], sizes[0]);
    for (int i = 0; i < K; i++)
        handoff[me][i] = alloc(sizes[i & 1], i);
    pthread_barrier_wait(&made);
    for (int i = 0; i < K; i++)
        release(handoff[next][i], sizes[i & 1]);      /* another thread's blocks */
    return NULL;
}

int main(int argc, char **argv)
{
    static struct su_snap a, b;
    const struct seg_header *h;
    pthread_t t[T];

    if (argc == 3 && strcmp(argv[2], "cxx") == 0) {
        *(void **)&new_fn = dlsym(RTLD_DEFAULT, "_Znwm");
        *(void **)&del_fn = dlsym(RTLD_DEFAULT, "_ZdlPvm");
        if (!new_fn || !del_fn)
            return 2;
    } else if (argc != 2) {
        return 2;
    }
    for (int i = 0; i < 2000; i++)
        free(malloc(64));
    h = su_open(argv[1], (int)getpid());
    if (!h)
        return 1;
    su_snap(h, &a);
    if (new_fn)
        for (int i = 0; i < T; i++)
            first[i] = alloc(sizes[0], 0);
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
        uint64_t want = (uint64_t)T * K / 2 + (new_fn && s == 0 ? T : 0);
        CHECK(allocs == want);
        CHECK(frees == want);
        CHECK(lu == 0);
    }
    printf("threads seen %llu, slots %u\n", (unsigned long long)h->threads_seen, h->nslots);
    CHECK(h->threads_seen >= T + 1);
    return tu_finish("xthreads");
}
