/* trace_driver: runs the trace fuzz target (fuzz_trace.c) without
 * libFuzzer, on a fixed number of inputs from a seed: recipes (made valid,
 * or not), and trace files written from recipes then mutated: bytes
 * flipped, replaced or inserted, whole 64-bit values made wild, the file
 * cut short; half of those mutations with their checksums made right
 * again, so that they reach the header's and the chunks' other checks.
 * Built with AddressSanitizer and UBSan where the compiler has them.
 * Usage: trace_driver --runs N [--seed S]   fuzz N inputs (the same ones for a seed)
 *        trace_driver --seeds DIR           write a seed corpus for libFuzzer
 *        trace_driver FILE...               run the target on each file */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int fuzz_trace_recipe(int fd, const uint8_t *p, size_t n, int valid);

#define INPUT_MAX (1 << 16)

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

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

/* A recipe (fuzz_trace.c's mode 1 and 2) of up to `events` events, after
 * the mode byte. */
static size_t make_recipe(uint8_t *p, size_t cap, uint8_t mode)
{
    size_t n = 1 + 17 + (rnd() % 300) * (1 + sizeof(struct trace_event));
    if (n > cap)
        n = cap;
    p[0] = mode;
    for (size_t i = 1; i < n; i++)
        p[i] = (uint8_t)rnd();
    /* times mostly rising, so that most chunks go forward */
    for (size_t at = 18, k = 0; at + 1 + sizeof(struct trace_event) <= n;
         at += 1 + sizeof(struct trace_event), k++) {
        uint64_t t = rnd() % 16 ? k * 7 + rnd() % 5 : rnd();   /* now and then, back in time */
        memcpy(p + at + 1 + offsetof(struct trace_event, t_ns), &t, sizeof t);
    }
    return n;
}

/* Puts the checksums of the header and of every chunk head right again. */
static void fix_checks(uint8_t *p, size_t n)
{
    size_t off;
    if (n >= sizeof(struct trace_header)) {
        uint64_t c = trace_sum64(p, offsetof(struct trace_header, check));
        memcpy(p + offsetof(struct trace_header, check), &c, sizeof c);
    }
    for (off = sizeof(struct trace_header); off + sizeof(struct trace_chunk) <= n;) {
        struct trace_chunk ch;
        memcpy(&ch, p + off, sizeof ch);
        if (ch.magic != TRACE_CHUNK_MAGIC)
            break;
        ch.check = trace_sum64(&ch, offsetof(struct trace_chunk, check));
        memcpy(p + off, &ch, sizeof ch);
        off += sizeof ch + ch.csize;
    }
}

/* A trace file written from a recipe, then mutated; after the mode byte 0. */
static size_t make_file(uint8_t *p, size_t cap)
{
    static uint8_t recipe[INPUT_MAX];
    size_t rn = make_recipe(recipe, sizeof recipe, 1), n;
    int fd = memfd_create("trace_driver", MFD_CLOEXEC);
    off_t len;
    if (fd < 0 || fuzz_trace_recipe(fd, recipe + 1, rn - 1, 1) != 0 || (len = lseek(fd, 0, SEEK_END)) < 0) {
        if (fd >= 0)
            close(fd);
        p[0] = 0;
        return 1;
    }
    n = (size_t)len + 1 < cap ? (size_t)len + 1 : cap;
    p[0] = 0;
    if (pread(fd, p + 1, n - 1, 0) != (ssize_t)(n - 1))
        n = 1;
    close(fd);
    for (int k = (int)(rnd() % 6); k-- > 0 && n > 2;) {
        size_t at = 1 + rnd() % (n - 1);
        switch (rnd() % 5) {
        case 0: p[at] ^= (uint8_t)(1u << (rnd() % 8)); break;
        case 1: p[at] = (uint8_t)rnd(); break;
        case 2:
            if (n < cap) {
                memmove(p + at + 1, p + at, n - at);
                p[at] = (uint8_t)rnd();
                n++;
            }
            break;
        default:
            if (at + 8 <= n) {
                uint64_t v = wild();
                memcpy(p + at, &v, 8);
            }
        }
    }
    if (rnd() % 2)
        fix_checks(p + 1, n - 1);
    if (rnd() % 16 == 0)
        n = 1 + rnd() % (n - 1 ? n - 1 : 1);
    return n;
}

static size_t make_input(uint8_t *p, size_t cap)
{
    switch (rnd() % 4) {
    case 0: return make_recipe(p, cap, 1);
    case 1: return make_recipe(p, cap, 2);
    default: return make_file(p, cap);
    }
}

static int run_file(const char *path)
{
    static uint8_t buf[1 << 22];
    FILE *f = fopen(path, "rb");
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
    static uint8_t buf[INPUT_MAX];
    long runs = 0, max_runs = 1000;
    time_t start = time(NULL);

    if (argc == 3 && !strcmp(argv[1], "--seeds")) {
        for (int i = 0; i < 16; i++) {
            char path[512];
            size_t n = make_input(buf, sizeof buf);
            FILE *f;
            snprintf(path, sizeof path, "%s/trace%02d", argv[2], i);
            if (!(f = fopen(path, "wb")) || fwrite(buf, 1, n, f) != n || fclose(f) != 0) {
                perror(path);
                return 1;
            }
        }
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            max_runs = atol(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            rng = seed_mix(strtoull(argv[++i], NULL, 10));
        else
            return run_file(argv[i]);
    }
    while (runs < max_runs) {
        size_t n = make_input(buf, sizeof buf);
        LLVMFuzzerTestOneInput(buf, n);
        runs++;
    }
    printf("trace_driver: %ld inputs in %.0f s, no crash\n", runs, difftime(time(NULL), start));
    return 0;
}
