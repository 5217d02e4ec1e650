/* api: every interposed C function, checked for what the C library and POSIX
 * promise, and a proof that the expected backend served the allocations.
 * Usage: api EXPECTED_BACKEND, or api none to run the same checks on plain
 * glibc without the shim. */
#include "config.h"

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <unistd.h>

#include "testutil.h"

/* These checks pass absurd sizes and use blocks after failed reallocs on
 * purpose. */
#pragma GCC diagnostic ignored "-Walloc-size-larger-than="
#pragma GCC diagnostic ignored "-Wuse-after-free"
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static void check_malloc_free(void)
{
    static const size_t sizes[] = { 0, 1, 7, 8, 15, 16, 24, 100, 1000, 4096, 16032, 65536,
                                    200000, 4u << 20 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        unsigned char *p = malloc(n);
        CHECK(p != NULL);
        CHECK((uintptr_t)p % (n >= 16 ? 16 : 8) == 0);
        CHECK(malloc_usable_size(p) >= n);
        tu_fill(p, n, (unsigned)i);
        CHECK(tu_intact(p, n, (unsigned)i));
        free(p);
    }
    free(NULL);
    CHECK(malloc_usable_size(NULL) == 0);
    /* Distinct live blocks, even of size 0. */
    void *a = malloc(0), *b = malloc(0);
    CHECK(a && b && a != b);
    free(a);
    free(b);
    errno = 0;
    CHECK(malloc(SIZE_MAX) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(malloc(SIZE_MAX / 2 + 1) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(malloc((size_t)1 << 60) == NULL && errno == ENOMEM);
}

static void check_calloc(void)
{
    for (size_t n = 1; n <= (1u << 22); n *= 4) {
        /* Dirty some memory first, so zeroing is tested, not luck. */
        unsigned char *d = malloc(n);
        memset(d, 0xa5, n);
        free(d);
        unsigned char *p = calloc(n, 1);
        CHECK(p != NULL);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += p[i] != 0;
        CHECK(bad == 0);
        free(p);
    }
    void *z = calloc(0, 0);
    CHECK(z != NULL);
    free(z);
    errno = 0;
    CHECK(calloc(SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(calloc((size_t)1 << 33, (size_t)1 << 33) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(calloc(1, SIZE_MAX) == NULL && errno == ENOMEM);
}

static void check_realloc(void)
{
    unsigned char *p = realloc(NULL, 10);
    CHECK(p != NULL);
    tu_fill(p, 10, 1);
    static const size_t steps[] = { 20, 5000, 100000, 3u << 20, 64, 1 };
    size_t keep = 10;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        unsigned char *q = realloc(p, steps[i]);
        CHECK(q != NULL);
        if (!q)
            return;
        CHECK(malloc_usable_size(q) >= steps[i]);
        size_t n = keep < steps[i] ? keep : steps[i];
        CHECK(tu_intact(q, n, 1));
        tu_fill(q, steps[i], 1);
        keep = steps[i];
        p = q;
    }
    /* A failed realloc leaves the block alone. */
    errno = 0;
    CHECK(realloc(p, SIZE_MAX - 4096) == NULL && errno == ENOMEM);
    CHECK(tu_intact(p, 1, 1));
    free(p);
    /* realloc(p, 0) follows the backend: NULL (block freed) or a live block. */
    p = malloc(32);
    void *z = realloc(p, 0);
    free(z);
}

static void check_reallocarray(void)
{
    unsigned *p = reallocarray(NULL, 100, sizeof(unsigned));
    CHECK(p != NULL);
    for (unsigned i = 0; i < 100; i++)
        p[i] = i;
    unsigned *q = reallocarray(p, 10000, sizeof(unsigned));
    CHECK(q != NULL);
    for (unsigned i = 0; i < 100; i++)
        CHECK(q[i] == i);
    errno = 0;
    CHECK(reallocarray(q, SIZE_MAX / 2, 4) == NULL && errno == ENOMEM);
    CHECK(q[99] == 99);
    errno = 0;
    CHECK(reallocarray(NULL, (size_t)1 << 40, (size_t)1 << 40) == NULL && errno == ENOMEM);
    free(q);
}

static void check_aligned(void)
{
    long ps = sysconf(_SC_PAGESIZE);
    for (size_t al = sizeof(void *); al <= (1u << 21); al *= 2) {
        static const size_t sizes[] = { 0, 1, 8, 100, 4096, 70000 };
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            void *p = (void *)1;
            CHECK(posix_memalign(&p, al, sizes[i]) == 0);
            CHECK(p != NULL && (uintptr_t)p % al == 0);
            CHECK(malloc_usable_size(p) >= sizes[i]);
            memset(p, 1, sizes[i]);
            free(p);
            p = aligned_alloc(al, sizes[i]);
            CHECK(p != NULL && (uintptr_t)p % al == 0);
            free(p);
            p = memalign(al, sizes[i]);
            CHECK(p != NULL && (uintptr_t)p % al == 0);
            free(p);
        }
    }
    /* Small alignments are honoured too: 16-byte alignment for 8 bytes. */
    for (int i = 0; i < 100; i++) {
        void *p = memalign(16, 8);
        CHECK((uintptr_t)p % 16 == 0);
        void *q = aligned_alloc(1, 3);
        CHECK(q != NULL);
        free(p);
        free(q);
    }
    /* EINVAL: bad alignments; the output is untouched and errno kept. */
    void *p = (void *)0x1234;
    errno = 1234;
    CHECK(posix_memalign(&p, 3, 8) == EINVAL);
    CHECK(posix_memalign(&p, 4, 8) == EINVAL);
    CHECK(posix_memalign(&p, 0, 8) == EINVAL);
    CHECK(posix_memalign(&p, 24, 8) == EINVAL);
    CHECK(p == (void *)0x1234 && errno == 1234);
    CHECK(posix_memalign(&p, 64, SIZE_MAX - 100) == ENOMEM);
    CHECK(p == (void *)0x1234);
    /* glibc 2.36's aligned_alloc is memalign: a bad alignment is rounded up
     * to a power of two; the shim keeps that for every backend. */
    p = aligned_alloc(3, 8);
    CHECK(p != NULL && (uintptr_t)p % 4 == 0);
    free(p);
    p = aligned_alloc(0, 8);
    CHECK(p != NULL);
    free(p);
    p = aligned_alloc(96, 8);
    CHECK(p != NULL && (uintptr_t)p % 128 == 0);
    free(p);
    errno = 0;
    CHECK(aligned_alloc(64, SIZE_MAX - 100) == NULL && errno == ENOMEM);
    /* memalign rounds a non-power-of-two alignment up, as glibc does. */
    p = memalign(48, 10);
    CHECK(p != NULL && (uintptr_t)p % 64 == 0);
    free(p);
    errno = 0;
    CHECK(memalign(SIZE_MAX / 2 + 2, 8) == NULL && errno == EINVAL);
    /* valloc and pvalloc: page-aligned; pvalloc rounds the size up. */
    p = valloc(10);
    CHECK(p != NULL && (uintptr_t)p % (size_t)ps == 0);
    free(p);
    p = pvalloc(10);
    CHECK(p != NULL && (uintptr_t)p % (size_t)ps == 0 && malloc_usable_size(p) >= (size_t)ps);
    memset(p, 2, (size_t)ps);
    free(p);
    p = pvalloc(0);
    CHECK(p != NULL && (uintptr_t)p % (size_t)ps == 0);
    free(p);
    errno = 0;
    CHECK(pvalloc(SIZE_MAX - 10) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(valloc(SIZE_MAX - 10) == NULL && errno == ENOMEM);
}

/* Runs malloc_stats() with stderr captured, and returns the backend's own
 * figure for bytes in use, parsed from its own report. */
static long long stats_in_use(const char *backend, char *text, size_t cap)
{
    char path[] = "/tmp/mallocshim-stats-XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    long long v = -1;
    FILE *f;
    char line[512];

    fflush(stderr);
    dup2(fd, 2);
    malloc_stats();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, text, cap - 1);
    text[n > 0 ? n : 0] = '\0';
    close(fd);
    f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        long long x;
        if (!strcmp(backend, "glibc") && sscanf(line, "in use bytes = %lld", &x) == 1)
            v = x;  /* the last one is the total */
        else if (!strcmp(backend, "jemalloc") && sscanf(line, "Allocated: %lld", &x) == 1)
            v = x;
        else if (!strcmp(backend, "tcmalloc") && strstr(line, "Bytes in use by application") &&
                 sscanf(line, "MALLOC: %lld", &x) == 1)
            v = x;
    }
    if (f)
        fclose(f);
    unlink(path);
    return v;
}

static void check_backend_served(const char *want)
{
    static char before_text[1 << 16], after_text[1 << 16];
    /* 100 kB: above jemalloc's thread-cache limit, whose counts are merged
     * into stats.allocated only now and then; below glibc's mmap threshold. */
    enum { N = 200, SZ = 100000 };
    static void *blocks[N];
    struct mallinfo2 m0, m1;

    CHECK(strcmp(tu_backend(), want) == 0);
    if (strcmp(tu_backend(), want) != 0)
        fprintf(stderr, "backend is %s, expected %s\n", tu_backend(), want);

    long long before = stats_in_use(want, before_text, sizeof before_text);
    m0 = mallinfo2();
    for (int i = 0; i < N; i++) {
        blocks[i] = malloc(SZ);
        memset(blocks[i], 1, SZ);
    }
    long long after = stats_in_use(want, after_text, sizeof after_text);
    m1 = mallinfo2();

    /* The backend's own report, in its own format, saw the 10 MB. */
    if (!strcmp(want, "glibc"))
        CHECK(strstr(after_text, "Arena 0:") && strstr(after_text, "system bytes"));
    if (!strcmp(want, "jemalloc"))
        CHECK(strstr(after_text, "jemalloc statistics") != NULL);
    if (!strcmp(want, "tcmalloc"))
        CHECK(strstr(after_text, "MALLOC:") && strstr(after_text, "Bytes in use by application"));
    CHECK(before >= 0 && after >= 0);
    CHECK(after - before >= (long long)N * SZ);
    if (after - before < (long long)N * SZ)
        fprintf(stderr, "in use before %lld after %lld\n", before, after);
    CHECK(m1.uordblks - m0.uordblks >= (size_t)N * SZ);
    (void)mallinfo();

    /* malloc_info: XML from the backend, EINVAL for unknown options. */
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    CHECK(malloc_info(0, mem) == 0);
    fclose(mem);
    CHECK(buf && strncmp(buf, "<malloc version=", 16) == 0);
    free(buf);
    CHECK(malloc_info(1, stdout) == EINVAL);   /* glibc returns it, not errno */

    for (int i = 0; i < N; i++)
        free(blocks[i]);
    CHECK(malloc_trim(0) >= 0);
    CHECK(mallopt(M_TRIM_THRESHOLD, 1 << 20) == 1 || strcmp(want, "glibc") != 0);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: api EXPECTED_BACKEND\n");
        return 2;
    }
    check_malloc_free();
    check_calloc();
    check_realloc();
    check_reallocarray();
    check_aligned();
    if (strcmp(argv[1], "none") == 0)
        CHECK(strcmp(tu_backend(), "none") == 0);   /* the bare reference run */
    else
        check_backend_served(argv[1]);
    return tu_finish("api");
}
