/* driver: runs the fuzz target without libFuzzer, for a bounded time, on
 * random and mutated inputs: hostile bodies behind a valid header, headers
 * with a few bytes changed, and JSON snapshots cut and garbled. Built with
 * AddressSanitizer and UBSan where the compiler has them.
 * Usage: driver [--seconds N] [--seed S]   fuzz for N seconds (10)
 *        driver --runs N [--seed S]        fuzz N inputs: the same ones for a seed
 *        ... --corpus DIR                  some inputs are DIR's files, mutated (a
 *                                          mode byte, then a real segment or JSON
 *                                          snapshot: scripts/fuzz-long.sh makes them):
 *                                          one in 8 a small file, one in 1024 a large
 *                                          one (a real segment: a quarter second each)
 *        driver --seeds DIR                write a seed corpus for libFuzzer
 *        driver FILE...                    run the target on each file */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dirent.h>
#include <sys/stat.h>

#include "dump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A seed's stream: splitmix64's finalizer, so that every seed gives its own
 * (never 0, xorshift's fixed point). */
static uint64_t seed_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x ? x : 1;
}

static uint64_t wild(void)
{
    switch (rnd() % 6) {
    case 0: return 0;
    case 1: return rnd() % 100;
    case 2: return UINT64_MAX - rnd() % 3;
    case 3: return 1ull << (rnd() % 64);
    default: return rnd();
    }
}

/* A JSON snapshot of a made-up dump, in buf (malloc'ed). */
static size_t make_json(char **buf)
{
    struct dump d;
    size_t len = 0;
    FILE *f;
    memset(&d, 0, sizeof d);
    d.backend_id = (int)(rnd() % 3);
    snprintf(d.backend, sizeof d.backend, "%s", d.backend_id == 0 ? "glibc" : d.backend_id == 1 ? "jemalloc" : "tcmalloc");
    snprintf(d.comm, sizeof d.comm, "fuzz\"\\x");
    d.sample = (uint32_t)(rnd() % 1000);
    d.state = (int)(rnd() % 4);
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++)
        if (rnd() % 4 == 0) {
            d.cls[c].allocs = wild();
            d.cls[c].live_usable = wild();
            d.cls[c].live_req = wild();
            d.cls[c].life[rnd() % LIFEBUCKET_COUNT] = wild();
            d.cls[c].age[rnd() % LIFEBUCKET_COUNT] = wild();
        }
    d.nseries = rnd() % 5;
    d.series = calloc(d.nseries + 1, sizeof *d.series);
    for (size_t i = 0; i < d.nseries; i++) {
        d.series[i].t_ns = wild();
        d.series[i].rss = wild();
        d.series[i].be.v[rnd() % 6] = wild();
    }
    d.peak_rss = wild();
    f = open_memstream(buf, &len);
    fputc(2, f);   /* the JSON mode */
    dump_write_json(f, &d);
    fclose(f);
    free(d.series);
    return len;
}

static void mutate(uint8_t *p, size_t *n, size_t cap)
{
    int k = 1 + (int)(rnd() % 8);
    while (k-- && *n > 1) {
        size_t at = 1 + rnd() % (*n - 1);
        switch (rnd() % 5) {
        case 0: p[at] ^= (uint8_t)(1u << (rnd() % 8)); break;
        case 1: p[at] = (uint8_t)rnd(); break;
        case 2: *n = at; break;                                    /* cut */
        case 3: p[at] = "{}[]\",:0-9en\\u"[rnd() % 15]; break;      /* JSON syntax */
        default:
            if (*n < cap) {                                         /* insert */
                memmove(p + at + 1, p + at, *n - at);
                p[at] = (uint8_t)rnd();
                (*n)++;
            }
        }
    }
}

static size_t make_input(uint8_t *p, size_t cap)
{
    size_t n;
    switch (rnd() % 3) {
    case 0: {   /* a hostile body behind a valid header */
        n = 7 + rnd() % 8192;
        p[0] = 1;
        for (size_t i = 1; i < n; i++)
            p[i] = (uint8_t)(rnd() % 3 ? 0 : rnd());
        for (int i = 0; i < 32; i++) {   /* some whole 64-bit values */
            uint64_t v = wild();
            size_t at = 7 + (rnd() % ((n - 7) / 8 + 1)) * 8;
            if (at + 8 <= n)
                memcpy(p + at, &v, 8);
        }
        return n;
    }
    case 1: {   /* a JSON snapshot, garbled */
        char *j;
        n = make_json(&j);
        if (n > cap)
            n = cap;
        memcpy(p, j, n);
        free(j);
        if (rnd() % 4)
            mutate(p, &n, cap);
        return n;
    }
    default:    /* raw bytes, sometimes starting like a segment */
        n = 1 + rnd() % 2048;
        p[0] = 0;
        for (size_t i = 1; i < n; i++)
            p[i] = (uint8_t)rnd();
        if (n > 9 && rnd() % 2)
            memcpy(p + 1, "MALLSHM1", 8);
        return n;
    }
}

/* Files of a corpus: each a mode byte and its input, read whole. */
static struct cfile {
    uint8_t *p;
    size_t n;
} *corpus;
static size_t ncorpus;

static int load_corpus(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d) {
        perror(dir);
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        char path[4096];
        struct stat st;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f || fstat(fileno(f), &st) != 0 || st.st_size < 2) {
            if (f)
                fclose(f);
            continue;
        }
        struct cfile *c = realloc(corpus, (ncorpus + 1) * sizeof *c);
        if (!c || !(c[ncorpus].p = malloc((size_t)st.st_size))) {
            fclose(f);
            closedir(d);
            return -1;
        }
        corpus = c;
        c[ncorpus].n = fread(c[ncorpus].p, 1, (size_t)st.st_size, f);
        fclose(f);
        if (c[ncorpus].n < 2)   /* shrank since fstat: no room to mutate */
            free(c[ncorpus].p);
        else
            ncorpus++;
    }
    closedir(d);
    return ncorpus ? 0 : -1;
}

/* A corpus file, mutated: a few bytes flipped or replaced, whole 64-bit
 * values made wild (counters, offsets, sizes), now and then cut short. */
static void corpus_input(const struct cfile *c)
{
    uint8_t *p = malloc(c->n);
    size_t n = c->n;
    if (!p)
        return;
    memcpy(p, c->p, n);
    for (int k = (int)(rnd() % 8); k-- > 0;) {
        size_t at = 1 + rnd() % (n - 1);
        switch (rnd() % 4) {
        case 0: p[at] ^= (uint8_t)(1u << (rnd() % 8)); break;
        case 1: p[at] = (uint8_t)rnd(); break;
        default:
            at = 1 + ((at - 1) & ~(size_t)7);
            if (at + 8 <= n) {
                uint64_t v = wild();
                memcpy(p + at, &v, 8);
            }
        }
    }
    if (rnd() % 16 == 0)
        n = 1 + rnd() % (n - 1);
    LLVMFuzzerTestOneInput(p, n);
    free(p);
}

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    static uint8_t buf[1 << 22];
    size_t n;
    if (!f) {
        perror(path);
        return 1;
    }
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    return 0;
}

int main(int argc, char **argv)
{
    static uint8_t buf[1 << 16];
    double seconds = 10;
    long runs = 0, max_runs = 0;

    if (argc == 3 && !strcmp(argv[1], "--seeds")) {
        for (int i = 0; i < 16; i++) {
            char path[512];
            size_t n = make_input(buf, sizeof buf);
            snprintf(path, sizeof path, "%s/seed%02d", argv[2], i);
            FILE *f = fopen(path, "wb");
            if (!f || fwrite(buf, 1, n, f) != n || fclose(f) != 0) {
                perror(path);
                return 1;
            }
        }
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            max_runs = atol(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            rng = seed_mix(strtoull(argv[++i], NULL, 10));
        else if (!strcmp(argv[i], "--corpus") && i + 1 < argc) {
            if (load_corpus(argv[++i]) != 0) {
                fprintf(stderr, "driver: %s: no corpus files\n", argv[i]);
                return 1;
            }
        }
        else
            return run_file(argv[i]);
    }
    time_t start = time(NULL), end = start + (time_t)seconds;
    while (max_runs ? runs < max_runs : time(NULL) < end) {
        uint64_t r = rnd();
        const struct cfile *c = ncorpus ? &corpus[(r >> 16) % ncorpus] : NULL;
        if (c && (c->n < (1u << 20) ? r % 8 == 0 : r % 1024 == 0)) {
            corpus_input(c);
        } else {
            size_t n = make_input(buf, sizeof buf);
            LLVMFuzzerTestOneInput(buf, n);
        }
        runs++;
    }
    printf("driver: %ld inputs in %.0f s, no crash\n", runs, difftime(time(NULL), start));
    return 0;
}
