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

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t born_lo[NS][N], born_hi[NS][N], life_lo[NS][N], life_hi[NS][N];

static void release(size_t s, int i)
{
    uint64_t t0 = now_ns();
    free(blocks[s][i]);
    uint64_t t1 = now_ns();
    life_lo[s][i] = t0 - born_hi[s][i];
    life_hi[s][i] = t1 - born_lo[s][i];
}

/* How many of size s's freed blocks surely lived under `ns` (*under) and
 * surely at least `ns` (*over), by the program's own bounds widened by
 * the 50 us that lifeclock allows between the shim's clock and this one. */
#define CLOCK_SLACK_NS 50000
static void surely(size_t s, uint64_t ns, unsigned *under, unsigned *over)
{
    *under = *over = 0;
    for (int i = 0; i < 100; i++) {
        *under += life_hi[s][i] + CLOCK_SLACK_NS < ns;
        *over += life_lo[s][i] >= ns + CLOCK_SLACK_NS;
    }
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

    /* Each freed block's lifetime by this program's clock lies within
     * lo..hi (after malloc returned to before free, before malloc to after
     * free): those surely under or over a bucket's bound must be counted
     * there, whatever the scheduler did (a preemption between a malloc and
     * its free can make a block "freed at once" live 16 ms). */
    su_snap(h, &a);
    for (size_t s = 0; s < NS; s++)
        for (int i = 0; i < N; i++) {
            uint64_t t0 = now_ns();
            blocks[s][i] = malloc(sizes[s]);
            uint64_t t1 = now_ns();
            usable[s][i] = malloc_usable_size(blocks[s][i]);
            memset(blocks[s][i], 1, 16);
            born_lo[s][i] = t0;
            born_hi[s][i] = t1;
            if (i < 50)
                release(s, i);       /* freed at once */
        }
    sleep_ms(30);
    for (size_t s = 0; s < NS; s++)
        for (int i = 50; i < 100; i++)
            release(s, i);           /* freed after 30 ms */
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
        /* Lifetimes: 50 freed at once, 50 after 30 ms (buckets 8 and up:
         * 16.4 ms and over). Each in the bucket its own bounds allow: at
         * least those surely under 16.4 ms below it, at least those surely
         * over above it. (Buckets are (4^(k-1), 4^k] us: bucket 8 starts
         * just above 16.384 ms.) */
        uint64_t fast = 0, slow = 0;
        unsigned su, so;
        surely(s, lifebucket_max_ns(7) + 1, &su, &so);
        for (unsigned k = 0; k < LIFEBUCKET_COUNT; k++) {
            /* weighted counts (seg.h, "Weights"), of weight 1 each */
            if (k < 8)
                fast += (ty->lifetime[k] - tx->lifetime[k]) / SEG_W_ONE;
            else
                slow += (ty->lifetime[k] - tx->lifetime[k]) / SEG_W_ONE;
        }
        CHECK(fast + slow == 100 && fast >= su && slow >= so && su >= 1 && so >= 1);
        if (allocs != N || frees != 100 || fast + slow != 100 || fast < su || slow < so)
            fprintf(stderr, "size %zu class %u: allocs %llu frees %llu fast %llu (surely %u) "
                    "slow %llu (surely %u)\n", sizes[s], c, (unsigned long long)allocs,
                    (unsigned long long)frees, (unsigned long long)fast, su,
                    (unsigned long long)slow, so);
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
            unsigned su, so;
            surely(k, 30000000, &su, &so);
            CHECK(allocs[k] == N && frees[k] == 100 && slow[k] >= so && slow[k] <= 100 - su &&
                  so >= 1);
            if (allocs[k] != N || frees[k] != 100 || slow[k] < so || slow[k] > 100 - su)
                fprintf(stderr, "events for %zu: %u allocs, %u frees, %u of 30 ms or more "
                        "(surely %u..%u)\n", sizes[k], allocs[k], frees[k], slow[k], so, 100 - su);
        }
    }

    /* Ages: the 100 survivors of each size are over 1.05 s old (bucket 11
     * and up) at the first pass of the sampler that starts after 1.3 s
     * (however late it comes). */
    sleep_ms(1300);
    uint64_t at0 = h->heartbeat_ns;
    for (int w = 0; w < 600 && h->heartbeat_ns == at0; w++)   /* a hang guard of 60 s */
        sleep_ms(100);
    static struct seg_ages ag;
    const struct seg_ages *src = (const struct seg_ages *)((const char *)h + h->off_ages);
    CHECK(seg_read_locked(&src->seq, src, &ag, sizeof ag) == 0);
    for (size_t s = 0; s < NS; s++) {
        uint64_t old = 0;
        for (unsigned k = 11; k < LIFEBUCKET_COUNT; k++)
            old += ag.count[cls[s]][k] / SEG_W_ONE;
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
