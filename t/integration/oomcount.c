/* oomcount: a malloc that fails is not counted. Under an address-space
 * limit just above what the process uses, the program allocates SIZE-byte
 * blocks (3000 unless told) until 100 mallocs have failed (the backend can
 * map no more), and the live segment's totals (all classes: glibc serves
 * some from chunks a little larger) must have grown by exactly the blocks
 * it got, and the requested and live usable bytes by exactly theirs:
 * jemalloc's and tcmalloc's mallocs up to 64 KiB are counted before the
 * backend's call and uncounted when it fails (record.c), glibc's after.
 * Reads its own live segment, mapped before the limit. Exits 77 when the
 * limit cannot be set.
 * Usage: oomcount [SIZE] */
#include "config.h"

#include <sys/resource.h>
#include <unistd.h>

#include "segutil.h"

#define NMAX 200000
static void *blk[NMAX];

/* The process's address space now, in bytes (VmSize). */
static unsigned long vm_size(void)
{
    char buf[4096];
    unsigned long kb = 0;
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n > 0) {
        buf[n] = '\0';
        const char *v = strstr(buf, "VmSize:");
        if (v)
            kb = strtoul(v + 7, NULL, 10);
    }
    return kb * 1024;
}

int main(int argc, char **argv)
{
    static struct su_snap a, b;
    long size = argc > 1 ? atol(argv[1]) : 3000;
    if (size <= 0 || (unsigned long)size * NMAX < (64ul << 20) * 2)
        return 2;
    const struct seg_header *h = su_open_live((int)getpid());
    if (!h)
        return 1;
    su_snap(h, &a);
    struct rlimit lim = { vm_size() + (64ul << 20), RLIM_INFINITY };
    if (setrlimit(RLIMIT_AS, &lim) != 0)
        return 77;
    long n = 0, failed = 0;
    while (n < NMAX && failed < 100) {
        if ((blk[n] = malloc((size_t)size)) != NULL)
            n++;
        else
            failed++;   /* each failure, counted and uncounted */
    }
    lim.rlim_cur = RLIM_INFINITY;
    setrlimit(RLIMIT_AS, &lim);
    su_snap(h, &b);
    uint64_t allocs = 0, live = 0, req = 0, lu = 0, want_lu = 0;
    for (long i = 0; i < n; i++)
        want_lu += malloc_usable_size(blk[i]);
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        allocs += b.c[c].allocs - a.c[c].allocs;
        req += b.c[c].req_bytes - a.c[c].req_bytes;
        lu += (b.c[c].usable_alloc - b.c[c].usable_free) -
              (a.c[c].usable_alloc - a.c[c].usable_free);
        live += (b.c[c].allocs - b.c[c].frees) - (a.c[c].allocs - a.c[c].frees);
    }
    printf("%ld blocks of %ld bytes, %ld failed mallocs; +%llu allocs, +%llu live, +%llu bytes "
           "requested, +%llu live usable (the blocks' %llu)\n", n, size, failed,
           (unsigned long long)allocs, (unsigned long long)live, (unsigned long long)req,
           (unsigned long long)lu, (unsigned long long)want_lu);
    CHECK(n < NMAX && failed == 100);
    CHECK(allocs == (uint64_t)n && live == (uint64_t)n);
    CHECK(req == (uint64_t)n * (uint64_t)size);
    CHECK(lu == want_lu);
    for (long i = 0; i < n; i++)
        free(blk[i]);
    return tu_finish("oomcount");
}
