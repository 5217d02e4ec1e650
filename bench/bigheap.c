/* bigheap: what an allocator's statistics snapshot costs on a large,
 * fragmented heap, and what it costs the program's threads while it runs.
 *
 * THREADS worker threads (default 16: on 2 cores glibc allows 8 x cores =
 * 16 arenas, the main arena one of them, so each worker has an arena to
 * itself but one, which shares the main arena with the idle main thread)
 * each allocate their share of the heap in blocks of 64 B..16 KiB
 * (log-uniform by octave, a fixed seed), then free a fraction FREE of them
 * spread evenly, never two neighbours while FREE <= 0.5 (so the free
 * chunks cannot coalesce): BYTES of live blocks remain, in a heap of about
 * BYTES / (1 - FREE). A few mallocs of 96 KiB then sort glibc's unsorted
 * bin, so that the first pairs after the build do not (one pair would take
 * tens of ms), and the workers churn 0.3 s before anything is measured.
 * The churn: malloc+free pairs of 16 B..4 KiB (log-uniform: about a quarter
 * above glibc's 1032 B tcache limit, so they take the arena's lock, which
 * is what a walk of the arena holds), BURST pairs then a sleep of PACE_US
 * (0: no sleep: spinning, the machine oversubscribed), each pair timed with
 * CLOCK_MONOTONIC; the worst pair of each window is kept, and how many took
 * SLOW_US or more.
 *
 * Without --hold, a separate measuring thread then takes the allocator's
 * snapshot CALLS times, spread evenly over a window of at least WINDOW
 * seconds (back to back if the calls take longer), timing each call in
 * wall time (CLOCK_MONOTONIC) and in its own CPU time
 * (CLOCK_THREAD_CPUTIME_ID), and after each such window keeps the same
 * length of window with no call. glibc: mallinfo2(), then malloc_info(0,
 * an fopencookie sink). Under a preloaded jemalloc (mallctl found):
 * mallctl("epoch") and 6 stats reads; under a preloaded tcmalloc: 4
 * MallocExtension_GetNumericProperty reads (each the shim's snapshot for
 * that backend). Once, before, it parses one malloc_info output: the
 * arenas (<heap nr=) and the free chunks (the closing <total
 * type="fast"|"rest" count=>: fastbins, and every other bin with the
 * unsorted one; tcache entries and the top chunk are not counted).
 * Output, one record a line, key=value:
 *   heap ...     what was built
 *   chunks ...   the free chunks, from malloc_info and mallinfo2 (glibc)
 *   call ...     per snapshot kind: wall and CPU ms per call, min/med/max
 *   stall ...    per snapshot kind: the workers' worst pair (us), the pairs
 *                of at least SLOW_US ("slow") and pairs/s, in the window
 *                with the calls and in the equal one without
 *
 * With --hold=S it builds the heap and then only churns for S seconds,
 * calling no statistics itself, so that the allocator's own observer (the
 * shim's sampler thread) is the only one: it prints "hold-start" when the
 * heap is built, then the worst pair of each second ("sec"; one second
 * behind), "hold-end", and a summary ("hold ...": min/median/max over the
 * seconds of their worst pair, slow pairs and pairs per second). With
 * --linger=L it then waits up to L seconds for SIGUSR1 or SIGTERM before
 * it exits normally (through exit(), so a preloaded shim cleans up), which
 * gives an observer time to read /proc/PID/task/ before the threads are
 * gone.
 *
 * Usage: bigheap [--bytes=SIZE] [--threads=N] [--free=F] [--seed=S]
 *                [--calls=N] [--window=SECONDS] [--pace-us=U] [--burst=B]
 *                [--pair-max=SIZE] [--slow-us=U] [--hold=SECONDS]
 *                [--linger=SECONDS]
 * SIZE takes k, m and g suffixes (powers of 1024). Defaults: --bytes=1g
 * --threads=16 --free=0.5 --seed=1 --calls=20 --window=2 --pace-us=1000
 * --burst=64 --pair-max=4k --slow-us=500.
 * Build: cc -O2 -pthread -o bigheap bench/bigheap.c */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAXTHREADS 256
#define MAXWIN 4200
#define MAXCALLS 1000

static size_t opt_bytes = (size_t)1 << 30;
static int opt_threads = 16;
static double opt_free = 0.5;
static uint64_t opt_seed = 1;
static int opt_calls = 20;
static double opt_window = 2.0;
static long opt_pace_us = 1000;
static int opt_burst = 64;
static size_t opt_pair_max = 4096;
static double opt_hold = 0;
static double opt_linger = 0;
static long opt_slow_us = 500;

/* The worst pair (ns) and the pairs done, per worker and window. In .bss,
 * not in the heap being measured; pages untouched cost nothing. */
static uint64_t worst[MAXTHREADS][MAXWIN];
static uint64_t npairs[MAXTHREADS][MAXWIN];
static uint64_t nslow[MAXTHREADS][MAXWIN];   /* pairs of at least --slow-us */
static unsigned cur_window;   /* atomic: the window a pair starting now counts in */
static int stop;              /* atomic */

struct worker {
    int id;
    pthread_t th;
    size_t alloc_bytes;       /* what it allocates before the frees */
    size_t nblocks, nfreed;
    size_t live_bytes, freed_bytes;   /* usable sizes */
    size_t live_req;                  /* requested sizes */
};
static struct worker workers[MAXTHREADS];
static pthread_barrier_t built;

static void escape(void *p)
{
    __asm__ volatile("" : : "r"(p) : "memory");
}

static uint64_t ns_of(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t mono(void)
{
    return ns_of(CLOCK_MONOTONIC);
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static uint64_t xorshift(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* about log-uniform in [lo, hi]: an octave [lo*2^k, lo*2^(k+1)) drawn
 * uniformly, then a size uniformly within it (no libm) */
static size_t draw(uint64_t *x, size_t lo, size_t hi)
{
    unsigned oct = 0;
    while ((lo << (oct + 1)) < hi && oct < 40)
        oct++;
    uint64_t r = xorshift(x);
    size_t base = lo << (r % (oct + 1));
    size_t s = base + (size_t)((r >> 8) % base);
    return s < lo ? lo : s > hi ? hi : s;
}

static void die(const char *what)
{
    fprintf(stderr, "bigheap: %s\n", what);
    exit(1);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    uint64_t x = opt_seed * 0x9E3779B97F4A7C15ull + (uint64_t)w->id * 0xBF58476D1CE4E5B9ull + 1;
    for (int i = 0; i < 8; i++)
        xorshift(&x);

    /* The block list lives outside the heap (mmap), so that it adds no chunk. */
    size_t cap = w->alloc_bytes / 64 + 16;
    void **blocks = mmap(NULL, cap * sizeof *blocks, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    uint32_t *sizes_req = mmap(NULL, cap * sizeof *sizes_req, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (blocks == MAP_FAILED || sizes_req == MAP_FAILED)
        die("mmap of the block list failed");
    size_t got = 0, n = 0;
    while (got < w->alloc_bytes && n < cap) {
        size_t s = draw(&x, 64, 16384);
        char *p = malloc(s);
        sizes_req[n] = (uint32_t)s;
        if (!p)
            die("out of memory while building the heap");
        p[0] = 1;
        p[s - 1] = 1;
        escape(p);
        blocks[n++] = p;
        got += s;
    }
    /* Free a fraction spread evenly: block i when floor((i+1)f) > floor(if).
     * For f <= 0.5 no two neighbours (in allocation order, which is address
     * order in a fresh arena) are both freed. */
    size_t live = 0, freed = 0, nfreed = 0, live_req = 0;
    for (size_t i = 0; i < n; i++) {
        size_t s = malloc_usable_size(blocks[i]);
        if ((size_t)((double)(i + 1) * opt_free) > (size_t)((double)i * opt_free)) {
            free(blocks[i]);
            blocks[i] = NULL;
            freed += s;
            nfreed++;
        } else {
            live += s;
            live_req += sizes_req[i];
        }
    }
    /* glibc puts the freed chunks in the arena's unsorted bin, and the next
     * malloc that reaches it sorts up to 10,000 of them into the bins: the
     * first pairs would stall for tens of ms. Sort them now: a request
     * larger than any free chunk (and below the mmap threshold) goes
     * through the whole unsorted bin, 10,000 chunks a call. */
    for (size_t i = 0; i * 10000 <= nfreed + 10000; i++) {
        char *p = malloc(96 * 1024);
        if (p)
            p[0] = 1;
        escape(p);
        free(p);
    }
    w->nblocks = n;
    w->nfreed = nfreed;
    w->live_bytes = live;
    w->live_req = live_req;
    w->freed_bytes = freed;

    /* The churn's sizes, drawn once. */
    enum { NS = 4096 };
    static __thread size_t sizes[NS];
    for (int i = 0; i < NS; i++)
        sizes[i] = draw(&x, 16, opt_pair_max);

    pthread_barrier_wait(&built);

    uint64_t *wo = worst[w->id], *np = npairs[w->id], *sl = nslow[w->id];
    uint64_t slow_ns = (uint64_t)opt_slow_us * 1000u;
    unsigned k = 0;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        for (int b = 0; b < opt_burst; b++) {
            unsigned win = __atomic_load_n(&cur_window, __ATOMIC_RELAXED);
            size_t s = sizes[k++ % NS];
            uint64_t t0 = mono();
            char *p = malloc(s);
            p[0] = 1;
            escape(p);
            free(p);
            uint64_t d = mono() - t0;
            if (d > wo[win])
                __atomic_store_n(&wo[win], d, __ATOMIC_RELAXED);
            __atomic_store_n(&np[win], np[win] + 1, __ATOMIC_RELAXED);
            if (d >= slow_ns)
                __atomic_store_n(&sl[win], sl[win] + 1, __ATOMIC_RELAXED);
        }
        if (opt_pace_us > 0)
            sleep_ns((uint64_t)opt_pace_us * 1000u);
    }
    return NULL;
}

/* window results across workers */
static uint64_t win_worst(unsigned win)
{
    uint64_t m = 0;
    for (int i = 0; i < opt_threads; i++) {
        uint64_t v = __atomic_load_n(&worst[i][win], __ATOMIC_RELAXED);
        if (v > m)
            m = v;
    }
    return m;
}

static uint64_t win_sum(uint64_t (*a)[MAXWIN], unsigned win)
{
    uint64_t s = 0;
    for (int i = 0; i < opt_threads; i++)
        s += __atomic_load_n(&a[i][win], __ATOMIC_RELAXED);
    return s;
}

static uint64_t win_pairs(unsigned win)
{
    return win_sum(npairs, win);
}

static uint64_t win_slow(unsigned win)
{
    return win_sum(nslow, win);
}

/* ---- the snapshots ---- */

/* malloc_info's sink: bytes into a static buffer (not the heap), kept for
 * parsing when `keep` is set, else only counted. */
static char xml[16 << 20];
static size_t xml_len, xml_bytes;
static int xml_keep;

static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
    (void)cookie;
    if (xml_keep && xml_len + n < sizeof xml) {
        memcpy(xml + xml_len, buf, n);
        xml_len += n;
    }
    xml_bytes += n;
    return (ssize_t)n;
}

static FILE *sink;

static void snap_mallinfo2(void)
{
    struct mallinfo2 m = mallinfo2();
    escape(&m);
}

static void snap_malloc_info(void)
{
    malloc_info(0, sink);
    fflush(sink);
}

static int (*je_mallctl)(const char *, void *, size_t *, void *, size_t);
static int (*tc_prop)(const char *, size_t *);

static void snap_jemalloc(void)
{
    static const char *const names[] = { "stats.allocated", "stats.active", "stats.resident",
                                         "stats.mapped", "stats.retained", "stats.metadata" };
    uint64_t epoch = 1;
    size_t sz = sizeof epoch;
    je_mallctl("epoch", &epoch, &sz, &epoch, sz);
    for (int i = 0; i < 6; i++) {
        size_t v = 0;
        sz = sizeof v;
        je_mallctl(names[i], &v, &sz, NULL, 0);
        escape(&v);
    }
}

static void snap_tcmalloc(void)
{
    static const char *const names[] = { "generic.current_allocated_bytes", "generic.heap_size",
                                         "tcmalloc.pageheap_free_bytes",
                                         "tcmalloc.pageheap_unmapped_bytes" };
    for (int i = 0; i < 4; i++) {
        size_t v = 0;
        tc_prop(names[i], &v);
        escape(&v);
    }
}

struct snap {
    const char *name;
    void (*fn)(void);
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void mmm(double *v, int n, double out[3])
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    out[0] = v[0];
    out[1] = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    out[2] = v[n - 1];
}

/* the count="N" of the last <total type="TYPE" ...> in the document */
static unsigned long long xml_total(const char *type)
{
    char pat[64];
    snprintf(pat, sizeof pat, "<total type=\"%s\" count=\"", type);
    const char *p = xml, *last = NULL;
    while ((p = strstr(p, pat)) != NULL) {
        last = p;
        p += strlen(pat);
    }
    return last ? strtoull(last + strlen(pat), NULL, 10) : 0;
}

static unsigned long xml_count(const char *pat)
{
    unsigned long n = 0;
    for (const char *p = xml; (p = strstr(p, pat)) != NULL; p += strlen(pat))
        n++;
    return n;
}

struct measure_out {
    int nsnaps;
    struct snap snaps[2];
};

static void *measure_main(void *arg)
{
    struct measure_out *mo = arg;
    static double wall[MAXCALLS], cpu[MAXCALLS];
    unsigned win = __atomic_load_n(&cur_window, __ATOMIC_RELAXED);

    /* quiet window first */
    uint64_t wlen = (uint64_t)(opt_window * 1e9);
    __atomic_store_n(&cur_window, ++win, __ATOMIC_RELAXED);
    sleep_ns(wlen);
    unsigned quiet0 = win;
    uint64_t quiet0_len = wlen;

    for (int k = 0; k < mo->nsnaps; k++) {
        struct snap *s = &mo->snaps[k];
        unsigned snapwin = ++win;
        __atomic_store_n(&cur_window, snapwin, __ATOMIC_RELAXED);
        uint64_t start = mono();
        for (int i = 0; i < opt_calls; i++) {
            uint64_t due = start + wlen * (uint64_t)i / (uint64_t)opt_calls;
            uint64_t t = mono();
            if (t < due)
                sleep_ns(due - t);
            uint64_t w0 = mono(), c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
            s->fn();
            uint64_t c1 = ns_of(CLOCK_THREAD_CPUTIME_ID), w1 = mono();
            wall[i] = (double)(w1 - w0) / 1e6;
            cpu[i] = (double)(c1 - c0) / 1e6;
        }
        uint64_t t = mono();
        if (t < start + wlen)
            sleep_ns(start + wlen - t);
        uint64_t snaplen = mono() - start;
        unsigned quietwin = ++win;
        __atomic_store_n(&cur_window, quietwin, __ATOMIC_RELAXED);
        sleep_ns(snaplen);
        __atomic_store_n(&cur_window, ++win, __ATOMIC_RELAXED);
        sleep_ns(50000000);   /* let pairs in flight finish */

        double w[3], c[3];
        mmm(wall, opt_calls, w);
        mmm(cpu, opt_calls, c);
        printf("call name=%s n=%d wall_ms=%.3f/%.3f/%.3f cpu_ms=%.3f/%.3f/%.3f\n", s->name,
               opt_calls, w[0], w[1], w[2], c[0], c[1], c[2]);
        double sec = (double)snaplen / 1e9;
        printf("stall name=%s window_s=%.2f snap_worst_us=%.0f quiet_worst_us=%.0f "
               "snap_slow=%llu quiet_slow=%llu snap_pairs_per_s=%.0f quiet_pairs_per_s=%.0f\n",
               s->name, sec, (double)win_worst(snapwin) / 1e3, (double)win_worst(quietwin) / 1e3,
               (unsigned long long)win_slow(snapwin), (unsigned long long)win_slow(quietwin),
               (double)win_pairs(snapwin) / sec, (double)win_pairs(quietwin) / sec);
        fflush(stdout);
    }
    printf("stall name=first-quiet window_s=%.2f quiet_worst_us=%.0f quiet_slow=%llu "
           "quiet_pairs_per_s=%.0f\n",
           (double)quiet0_len / 1e9, (double)win_worst(quiet0) / 1e3,
           (unsigned long long)win_slow(quiet0),
           (double)win_pairs(quiet0) / ((double)quiet0_len / 1e9));
    return NULL;
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0)
        return -1;
    switch (*end) {
    case 'k': case 'K': v *= 1024; end++; break;
    case 'm': case 'M': v *= 1024 * 1024; end++; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
    }
    if (*end)
        return -1;
    *out = (size_t)v;
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bigheap [--bytes=SIZE] [--threads=N] [--free=F] [--seed=S] [--calls=N]\n"
            "               [--window=SECONDS] [--pace-us=U] [--burst=B] [--pair-max=SIZE]\n"
            "               [--slow-us=U] [--hold=SECONDS] [--linger=SECONDS]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = strchr(a, '=');
        if (!v)
            usage();
        v++;
        if (strncmp(a, "--bytes=", 8) == 0) {
            if (parse_size(v, &opt_bytes) || opt_bytes < (1 << 20))
                usage();
        } else if (strncmp(a, "--threads=", 10) == 0) {
            opt_threads = atoi(v);
        } else if (strncmp(a, "--free=", 7) == 0) {
            opt_free = atof(v);
        } else if (strncmp(a, "--seed=", 7) == 0) {
            opt_seed = strtoull(v, NULL, 10);
        } else if (strncmp(a, "--calls=", 8) == 0) {
            opt_calls = atoi(v);
        } else if (strncmp(a, "--window=", 9) == 0) {
            opt_window = atof(v);
        } else if (strncmp(a, "--pace-us=", 10) == 0) {
            opt_pace_us = atol(v);
        } else if (strncmp(a, "--burst=", 8) == 0) {
            opt_burst = atoi(v);
        } else if (strncmp(a, "--pair-max=", 11) == 0) {
            if (parse_size(v, &opt_pair_max) || opt_pair_max < 16)
                usage();
        } else if (strncmp(a, "--hold=", 7) == 0) {
            opt_hold = atof(v);
        } else if (strncmp(a, "--linger=", 9) == 0) {
            opt_linger = atof(v);
        } else if (strncmp(a, "--slow-us=", 10) == 0) {
            opt_slow_us = atol(v);
        } else {
            usage();
        }
    }
    if (opt_slow_us < 1 || opt_threads < 1 || opt_threads > MAXTHREADS || opt_free < 0 || opt_free >= 1 ||
        opt_calls < 1 || opt_calls > MAXCALLS || opt_window <= 0 || opt_burst < 1 ||
        opt_pace_us < 0 || opt_hold < 0 || opt_hold > MAXWIN - 20 || opt_linger < 0)
        usage();
    if (opt_free > 0.5)
        fprintf(stderr, "bigheap: --free above 0.5 frees neighbours, which coalesce\n");

    /* SIGUSR1/SIGTERM end the linger; blocked in every thread, taken by sigtimedwait. */
    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGUSR1);
    sigaddset(&ss, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &ss, NULL);

    /* which allocator answers: a preloaded jemalloc or tcmalloc exports these */
    je_mallctl = (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT,
                                                                                "mallctl");
    tc_prop = (int (*)(const char *, size_t *))dlsym(RTLD_DEFAULT,
                                                     "MallocExtension_GetNumericProperty");
    const char *alloc = je_mallctl ? "jemalloc" : tc_prop ? "tcmalloc" : "glibc";

    setvbuf(stdout, NULL, _IOLBF, 0);
    size_t alloc_total = (size_t)((double)opt_bytes / (1.0 - opt_free));
    pthread_barrier_init(&built, NULL, (unsigned)opt_threads + 1);
    uint64_t t0 = mono();
    for (int i = 0; i < opt_threads; i++) {
        workers[i].id = i;
        workers[i].alloc_bytes = alloc_total / (size_t)opt_threads;
        if (pthread_create(&workers[i].th, NULL, worker_main, &workers[i]) != 0)
            die("pthread_create failed");
    }
    pthread_barrier_wait(&built);
    double build_s = (double)(mono() - t0) / 1e9;
    size_t nb = 0, nf = 0, live = 0, freed = 0, live_req = 0;
    for (int i = 0; i < opt_threads; i++) {
        nb += workers[i].nblocks;
        nf += workers[i].nfreed;
        live += workers[i].live_bytes;
        live_req += workers[i].live_req;
        freed += workers[i].freed_bytes;
    }
    printf("heap allocator=%s threads=%d live_mib=%.1f live_usable_mib=%.1f freed_usable_mib=%.1f "
           "blocks=%zu freed=%zu "
           "free_fraction=%.3f build_s=%.2f pace_us=%ld burst=%d pair_max=%zu seed=%llu\n",
           alloc, opt_threads, (double)live_req / 1048576, (double)live / 1048576,
           (double)freed / 1048576, nb, nf, opt_free,
           build_s, opt_pace_us, opt_burst, opt_pair_max, (unsigned long long)opt_seed);

    /* let the workers settle: their first pairs make their chunk caches */
    sleep_ns(300000000);

    if (opt_hold > 0) {
        /* window k = second k of the hold (window 0: before it) */
        printf("hold-start seconds=%.0f\n", opt_hold);
        uint64_t start = mono();
        int secs = (int)(opt_hold + 0.5);
        for (int k = 1; k <= secs; k++) {
            __atomic_store_n(&cur_window, (unsigned)k, __ATOMIC_RELAXED);
            uint64_t due = start + (uint64_t)k * 1000000000u, t = mono();
            if (due > t)
                sleep_ns(due - t);
            if (k >= 2)
                printf("sec %d worst_us=%.0f slow=%llu pairs=%llu\n", k - 1,
                       (double)win_worst((unsigned)k - 1) / 1e3,
                       (unsigned long long)win_slow((unsigned)k - 1),
                       (unsigned long long)win_pairs((unsigned)k - 1));
        }
        __atomic_store_n(&cur_window, (unsigned)secs + 1, __ATOMIC_RELAXED);
        __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
        for (int i = 0; i < opt_threads; i++)
            pthread_join(workers[i].th, NULL);
        printf("sec %d worst_us=%.0f slow=%llu pairs=%llu\n", secs,
               (double)win_worst((unsigned)secs) / 1e3, (unsigned long long)win_slow((unsigned)secs),
               (unsigned long long)win_pairs((unsigned)secs));
        static double w[MAXWIN];
        double m[3];
        uint64_t tot = 0, slow = 0;
        for (int k = 1; k <= secs; k++) {
            w[k - 1] = (double)win_worst((unsigned)k) / 1e3;
            tot += win_pairs((unsigned)k);
            slow += win_slow((unsigned)k);
        }
        mmm(w, secs, m);
        printf("hold-end\n");
        printf("hold seconds=%d worst_us_per_s=%.0f/%.0f/%.0f slow_per_s=%.1f pairs_per_s=%.0f\n",
               secs, m[0], m[1], m[2], (double)slow / secs, (double)tot / secs);
        fflush(stdout);
        if (opt_linger > 0) {
            struct timespec ts = { (time_t)opt_linger,
                                   (long)((opt_linger - (double)(time_t)opt_linger) * 1e9) };
            sigtimedwait(&ss, NULL, &ts);
        }
        exit(0);
    }

    /* measuring mode: parse one malloc_info, then measure */
    struct measure_out mo = { 0, { { 0, 0 }, { 0, 0 } } };
    cookie_io_functions_t io = { .write = sink_write };
    sink = fopencookie(NULL, "w", io);
    if (!sink)
        die("fopencookie failed");
    if (strcmp(alloc, "glibc") == 0) {
        xml_keep = 1;
        struct mallinfo2 mi = mallinfo2();
        malloc_info(0, sink);
        fflush(sink);
        xml_keep = 0;
        xml[xml_len < sizeof xml ? xml_len : sizeof xml - 1] = 0;
        unsigned long long fast = xml_total("fast"), rest = xml_total("rest");
        printf("chunks arenas=%lu xml_fast=%llu xml_rest=%llu free_chunks=%llu xml_bytes=%zu "
               "mi_ordblks=%zu mi_smblks=%zu mi_fordblks_mib=%.1f mi_uordblks_mib=%.1f "
               "mi_arena_mib=%.1f\n",
               xml_count("<heap nr="), fast, rest, fast + rest, xml_len, mi.ordblks, mi.smblks,
               (double)mi.fordblks / 1048576, (double)mi.uordblks / 1048576,
               (double)mi.arena / 1048576);
        mo.snaps[mo.nsnaps++] = (struct snap){ "mallinfo2", snap_mallinfo2 };
        mo.snaps[mo.nsnaps++] = (struct snap){ "malloc_info", snap_malloc_info };
    } else if (je_mallctl) {
        mo.snaps[mo.nsnaps++] = (struct snap){ "jemalloc_epoch+6", snap_jemalloc };
    } else {
        mo.snaps[mo.nsnaps++] = (struct snap){ "tcmalloc_4props", snap_tcmalloc };
    }
    fflush(stdout);

    pthread_t mt;
    if (pthread_create(&mt, NULL, measure_main, &mo) != 0)
        die("pthread_create failed");
    pthread_join(mt, NULL);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < opt_threads; i++)
        pthread_join(workers[i].th, NULL);
    return 0;
}
