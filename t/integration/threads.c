/* threads: producers allocate, consumers on other threads verify and free,
 * so that most frees cross threads; threads come and go throughout.
 * Usage: threads [PAIRS [ITEMS]] */
#include "config.h"

#include <pthread.h>
#include <stdint.h>

#include "testutil.h"

#define RING 1024

struct chan {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void *items[RING];
    size_t sizes[RING];
    unsigned head, tail, done;
};

static struct chan chans[64];
static long items_per_producer = 50000;

static size_t pick_size(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    unsigned r = (unsigned)(*s >> 33);
    switch (r % 8) {
    case 0: return 16000 + r % 64;          /* a RocksDB block */
    case 1: return 8192 + r % 1024;
    case 2: return 100000 + r % 50000;
    default: return 1 + r % 256;
    }
}

static void *producer(void *arg)
{
    struct chan *c = arg;
    uint64_t seed = (uintptr_t)arg;
    for (long i = 0; i < items_per_producer; i++) {
        size_t n = pick_size(&seed);
        void *p = (i & 3) == 0 ? calloc(1, n) : malloc(n);
        CHECK(p != NULL);
        tu_fill(p, n, (unsigned)n);
        pthread_mutex_lock(&c->mu);
        while (c->head - c->tail == RING)
            pthread_cond_wait(&c->cv, &c->mu);
        c->items[c->head % RING] = p;
        c->sizes[c->head % RING] = n;
        c->head++;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_lock(&c->mu);
    c->done = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static void *consumer(void *arg)
{
    struct chan *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        while (c->head == c->tail && !c->done)
            pthread_cond_wait(&c->cv, &c->mu);
        if (c->head == c->tail && c->done) {
            pthread_mutex_unlock(&c->mu);
            return NULL;
        }
        void *p = c->items[c->tail % RING];
        size_t n = c->sizes[c->tail % RING];
        c->tail++;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
        CHECK(tu_intact(p, n, (unsigned)n));
        CHECK(malloc_usable_size(p) >= n);
        if (n % 5 == 0) {
            p = realloc(p, n * 2);   /* grow on the other thread, then free */
            CHECK(p && tu_intact(p, n, (unsigned)n));
        }
        free(p);
    }
}

/* Short-lived threads that allocate and exit while keeping blocks alive:
 * their thread caches must be given back without losing those blocks. */
static void *ephemeral(void *arg)
{
    void **keep = arg;
    for (int i = 0; i < 64; i++) {
        keep[i] = malloc(32 + (size_t)i * 40);
        tu_fill(keep[i], 32 + (size_t)i * 40, (unsigned)i);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int pairs = argc > 1 ? atoi(argv[1]) : 4;
    pthread_t tp[64], tc[64];
    static void *kept[200][64];

    if (argc > 2)
        items_per_producer = atol(argv[2]);
    if (pairs < 1 || pairs > 64)
        pairs = 4;
    for (int i = 0; i < pairs; i++) {
        pthread_mutex_init(&chans[i].mu, NULL);
        pthread_cond_init(&chans[i].cv, NULL);
        pthread_create(&tc[i], NULL, consumer, &chans[i]);
        pthread_create(&tp[i], NULL, producer, &chans[i]);
    }
    for (int r = 0; r < 200; r++) {
        pthread_t t;
        pthread_create(&t, NULL, ephemeral, kept[r]);
        pthread_join(t, NULL);
    }
    for (int i = 0; i < pairs; i++) {
        pthread_join(tp[i], NULL);
        pthread_join(tc[i], NULL);
    }
    for (int r = 0; r < 200; r++)
        for (int i = 0; i < 64; i++) {
            CHECK(tu_intact(kept[r][i], 32 + (size_t)i * 40, (unsigned)i));
            free(kept[r][i]);
        }
    return tu_finish("threads");
}
