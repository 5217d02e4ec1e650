/* manythreads: counts stay exact with many threads: N alive at once (most
 * beyond the segment's slots), then TOTAL created and joined one after
 * another. Each thread allocates blocks of two sizes nothing else in the
 * process asks for, keeps some, frees the rest; the test reads its own
 * live segment (segutil.h) and compares the classes of those two sizes
 * with what it knows: allocations, frees, live blocks and live usable
 * bytes, while the N are alive and after they are gone. Up to 4096 threads
 * at once (the default slots and counter slots) each count in counters of
 * their own: the shared overflow slot's counters do not move while the N
 * allocate.
 * Usage: manythreads N TOTAL */
#include "config.h"

#include <pthread.h>
#include <unistd.h>

#include "segutil.h"

#define PER_THREAD 6     /* blocks a thread allocates of each size */
#define KEPT 2           /* of which it keeps this many while it waits */

static const size_t size[2] = { 11000, 150000 };
static unsigned cls[2];
static pthread_barrier_t all_alive, read_done;
static int hold;         /* phase 1: threads wait between the barriers */
static uint64_t kept_usable[2];   /* the kept blocks' usable bytes (atomic adds) */

static void *worker(void *arg)
{
    void *b[2][PER_THREAD];
    (void)arg;
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < PER_THREAD; i++)
            b[s][i] = malloc(size[s]);
    for (int s = 0; s < 2; s++)
        for (int i = KEPT; i < PER_THREAD; i++)
            free(b[s][i]);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < KEPT; i++)
            __atomic_fetch_add(&kept_usable[s], malloc_usable_size(b[s][i]), __ATOMIC_RELAXED);
    if (hold) {
        pthread_barrier_wait(&all_alive);
        pthread_barrier_wait(&read_done);
    }
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < KEPT; i++)
            free(b[s][i]);
    return NULL;
}

struct fig {
    uint64_t allocs, frees, live, live_usable;
};

static void figures(const struct seg_header *h, struct fig f[2])
{
    static struct su_snap s;
    su_snap(h, &s);
    for (int k = 0; k < 2; k++) {
        const struct seg_counters *c = &s.c[cls[k]];
        f[k].allocs = c->allocs;
        f[k].frees = c->frees;
        f[k].live = c->allocs - c->frees;
        f[k].live_usable = c->usable_alloc - c->usable_free;
    }
}

/* The allocations and frees counted in the shared overflow slot, all
 * classes. */
static uint64_t overflow_calls(const struct seg_header *h)
{
    const struct seg_slot *o = (const void *)((const char *)h + su_hdr.off_overflow);
    uint64_t n = 0;
    for (int c = 0; c < SIZECLASS_COUNT; c++)
        n += __atomic_load_n(&o->cls[c].allocs, __ATOMIC_RELAXED) +
             __atomic_load_n(&o->cls[c].frees, __ATOMIC_RELAXED);
    return n;
}

/* Checks that the two classes moved by exactly: allocs, frees, live blocks
 * and live usable bytes (lu[k] for size k: glibc's usable size of a block
 * depends on where it came from, its dynamic mmap threshold). */
static void expect(const char *when, const struct fig a[2], const struct fig b[2], uint64_t allocs,
                   uint64_t frees, uint64_t live, const uint64_t lu[2])
{
    for (int k = 0; k < 2; k++) {
        int good = b[k].allocs - a[k].allocs == allocs && b[k].frees - a[k].frees == frees &&
                   b[k].live - a[k].live == live && b[k].live_usable - a[k].live_usable == lu[k];
        printf("%s, %zu B: +%llu allocs, +%llu frees, +%llu live, +%llu live usable; want "
               "+%llu, +%llu, +%llu, +%llu\n", when, size[k],
               (unsigned long long)(b[k].allocs - a[k].allocs),
               (unsigned long long)(b[k].frees - a[k].frees),
               (unsigned long long)(b[k].live - a[k].live),
               (unsigned long long)(b[k].live_usable - a[k].live_usable),
               (unsigned long long)allocs, (unsigned long long)frees, (unsigned long long)live,
               (unsigned long long)lu[k]);
        CHECK(good);
    }
}

int main(int argc, char **argv)
{
    struct fig f0[2], f1[2], f2[2], f3[2];
    pthread_attr_t attr;
    long n, total;

    if (argc != 3 || (n = atol(argv[1])) < 1 || (total = atol(argv[2])) < 0) {
        fprintf(stderr, "usage: manythreads N TOTAL\n");
        return 2;
    }
    const struct seg_header *h = su_open_live((int)getpid());
    if (!h)
        return 1;
    for (int k = 0; k < 2; k++) {
        void *p = malloc(size[k]);
        cls[k] = sizeclass_of(malloc_usable_size(p));
        free(p);
    }
    CHECK(cls[0] != cls[1]);
    pthread_t *t = calloc((size_t)n, sizeof *t);
    CHECK(t != NULL);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 128 * 1024);
    pthread_barrier_init(&all_alive, NULL, (unsigned)n + 1);
    pthread_barrier_init(&read_done, NULL, (unsigned)n + 1);

    /* N threads alive at once. */
    hold = 1;
    figures(h, f0);
    uint64_t o0 = overflow_calls(h);
    for (long i = 0; i < n; i++)
        if (pthread_create(&t[i], &attr, worker, NULL) != 0) {
            fprintf(stderr, "manythreads: thread %ld: cannot create\n", i);
            return 1;
        }
    pthread_barrier_wait(&all_alive);
    figures(h, f1);
    expect("all alive", f0, f1, (uint64_t)n * PER_THREAD, (uint64_t)n * (PER_THREAD - KEPT),
           (uint64_t)n * KEPT, kept_usable);
    uint64_t o1 = overflow_calls(h);
    uint32_t in_use = __atomic_load_n(&h->slots_in_use, __ATOMIC_RELAXED);
    uint64_t high = __atomic_load_n(&h->cslots_high, __ATOMIC_RELAXED);
    printf("all alive: %u slots and counter slots in use, counter slots high %llu, overflow "
           "slot +%llu calls\n", in_use, (unsigned long long)high, (unsigned long long)(o1 - o0));
    CHECK(su_hdr.nslots + su_hdr.ncslots >= 4096);   /* the defaults */
    if (n + 1 <= (long)(su_hdr.nslots + su_hdr.ncslots)) {
        CHECK(o1 == o0);
        CHECK(in_use >= n + 1);
        CHECK(high + su_hdr.nslots >= (uint64_t)n + 1);
    }
    pthread_barrier_wait(&read_done);
    for (long i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    figures(h, f2);
    static const uint64_t none[2];
    expect("all joined", f0, f2, (uint64_t)n * PER_THREAD, (uint64_t)n * PER_THREAD, 0, none);

    /* TOTAL threads, one after another. */
    hold = 0;
    for (long i = 0; i < total; i++) {
        pthread_t one;
        CHECK(pthread_create(&one, &attr, worker, NULL) == 0);
        pthread_join(one, NULL);
    }
    figures(h, f3);
    expect("one after another", f2, f3, (uint64_t)total * PER_THREAD, (uint64_t)total * PER_THREAD, 0,
           none);
    printf("threads seen: %llu\n", (unsigned long long)h->threads_seen);
    free(t);
    return tu_finish("manythreads");
}
