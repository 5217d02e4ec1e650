/* pattern: a known allocation pattern, checked against this process's own
 * segment with sample:1: N blocks of each of several sizes, some freed at
 * once, some after a known delay, some kept live. Exact counts, live bytes
 * (usable and requested), lifetime buckets, then ages of the survivors.
 * Usage: pattern SHM_DIR (run with sample:1). */
#include "config.h"

#include <time.h>

#include "segutil.h"

#define N 200
static const size_t sizes[] = { 24, 200, 3000, 16040, 200000 };
#define NS (sizeof sizes / sizeof sizes[0])

static void *blocks[NS][N];

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int main(int argc, char **argv)
{
    static struct su_snap a, b;
    const struct seg_header *h;
    size_t usable[NS][N];
    unsigned cls[NS];

    if (argc != 2)
        return 2;
    free(malloc(1));                 /* the first tracked block names the segment */
    sleep_ms(300);                   /* the sampler's first pass is done */
    h = su_open(argv[1], (int)getpid());
    if (!h)
        return 1;
    CHECK(h->sample == 1 && (h->flags & SEG_F_EXACT_REQ));
    CHECK(h->pid == (uint32_t)getpid());
    CHECK(strcmp(h->backend_name, tu_backend()) == 0);

    su_snap(h, &a);
    for (size_t s = 0; s < NS; s++)
        for (int i = 0; i < N; i++) {
            blocks[s][i] = malloc(sizes[s]);
            usable[s][i] = malloc_usable_size(blocks[s][i]);
            memset(blocks[s][i], 1, 16);
            if (i < 50)
                free(blocks[s][i]);  /* freed at once */
        }
    sleep_ms(30);
    for (size_t s = 0; s < NS; s++)
        for (int i = 50; i < 100; i++)
            free(blocks[s][i]);      /* freed after 30 ms */
    su_snap(h, &b);

    for (size_t s = 0; s < NS; s++) {
        unsigned c = cls[s] = sizeclass_of(usable[s][0]);
        uint64_t live_usable = 0, allocs_usable = 0;
        for (int i = 0; i < N; i++) {
            CHECK(sizeclass_of(usable[s][i]) == c);
            allocs_usable += usable[s][i];
            if (i >= 100)
                live_usable += usable[s][i];
        }
        struct seg_counters *x = &a.c[c], *y = &b.c[c];
        struct seg_tracked *tx = &a.t[c], *ty = &b.t[c];
        uint64_t allocs = y->allocs - x->allocs, frees = y->frees - x->frees;
        CHECK(allocs == N);
        CHECK(frees == 100);
        CHECK(y->req_bytes - x->req_bytes == N * sizes[s]);
        CHECK(y->usable_alloc - x->usable_alloc == allocs_usable);
        CHECK((y->usable_alloc - y->usable_free) - (x->usable_alloc - x->usable_free) == live_usable);
        /* Exact requested bytes of the live blocks, with sample:1. */
        CHECK((ty->req_alloc - ty->req_free) - (tx->req_alloc - tx->req_free) == 100 * sizes[s]);
        CHECK(ty->allocs - tx->allocs == N && ty->frees - tx->frees == 100);
        /* Lifetimes: 50 freed at once, 50 after 30 ms: buckets 8 and up
         * (over 16.4 ms), and only those, however loaded the machine. */
        uint64_t fast = 0, slow = 0;
        for (unsigned k = 0; k < LIFEBUCKET_COUNT; k++) {
            if (k < 8)
                fast += ty->lifetime[k] - tx->lifetime[k];
            else
                slow += ty->lifetime[k] - tx->lifetime[k];
        }
        CHECK(fast == 50);
        CHECK(slow == 50);
        if (allocs != N || frees != 100 || fast != 50 || slow != 50)
            fprintf(stderr, "size %zu class %u: allocs %llu frees %llu fast %llu slow %llu\n",
                    sizes[s], c, (unsigned long long)allocs, (unsigned long long)frees,
                    (unsigned long long)fast, (unsigned long long)slow);
    }

    /* The event ring holds every tracked event (sample:1): 200 allocations
     * and 100 frees of each size, each free with its lifetime. */
    {
        const struct seg_events *ev = (const struct seg_events *)((const char *)h + su_hdr.off_events);
        const struct seg_event *ent = (const struct seg_event *)(ev + 1);
        uint64_t head = __atomic_load_n(&ev->head, __ATOMIC_ACQUIRE);
        uint64_t first = head > su_hdr.events_cap ? head - su_hdr.events_cap : 0;
        unsigned allocs[NS] = { 0 }, frees[NS] = { 0 }, slow[NS] = { 0 };
        for (uint64_t n = first; n < head; n++) {
            const struct seg_event *e = &ent[n % su_hdr.events_cap];
            struct seg_event copy;
            if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != n + 1)
                continue;   /* claimed, not written */
            memcpy(&copy, e, sizeof copy);
            if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != n + 1)
                continue;
            for (size_t k = 0; k < NS; k++) {
                if (copy.size != sizes[k])
                    continue;
                if (copy.kind == SEG_EV_ALLOC)
                    allocs[k]++;
                if (copy.kind == SEG_EV_FREE) {
                    frees[k]++;
                    slow[k] += copy.lifetime_ns >= 30000000;
                }
                CHECK(copy.tid != 0 && copy.t_ns >= h->start_ns);
            }
        }
        for (size_t k = 0; k < NS; k++) {
            CHECK(allocs[k] == N && frees[k] == 100 && slow[k] == 50);
            if (allocs[k] != N || frees[k] != 100 || slow[k] != 50)
                fprintf(stderr, "events for %zu: %u allocs, %u frees, %u slow\n", sizes[k],
                        allocs[k], frees[k], slow[k]);
        }
    }

    /* Ages: the 100 survivors of each size are over 1.05 s old (bucket 11
     * and up; a loaded machine may make them older) once the sampler has
     * looked after a second or more. */
    sleep_ms(1300);
    uint64_t at0 = h->heartbeat_ns;
    for (int w = 0; w < 50 && h->heartbeat_ns == at0; w++)
        sleep_ms(100);
    static struct seg_ages ag;
    const struct seg_ages *src = (const struct seg_ages *)((const char *)h + h->off_ages);
    CHECK(seg_read_locked(&src->seq, src, &ag, sizeof ag) == 0);
    for (size_t s = 0; s < NS; s++) {
        uint64_t old = 0;
        for (unsigned k = 11; k < LIFEBUCKET_COUNT; k++)
            old += ag.count[cls[s]][k];
        CHECK(old >= 100);
        if (old < 100)
            fprintf(stderr, "size %zu: %llu live blocks aged over 1 s\n", sizes[s], (unsigned long long)old);
    }
    /* The time series has samples, and RSS there agrees with /proc. */
    const struct seg_series *ser = (const struct seg_series *)((const char *)h + h->off_series);
    CHECK(ser->head >= 2);
    CHECK(ser->peak_rss > 0);
    for (size_t s = 0; s < NS; s++)
        for (int i = 100; i < N; i++)
            free(blocks[s][i]);
    return tu_finish("pattern");
}
