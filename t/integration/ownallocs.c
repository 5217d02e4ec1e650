/* ownallocs: the shim's own allocations are never the program's. The
 * program allocates N blocks one by one until the sampler thread has
 * started (at a tracked allocation, amid the blocks) and made a pass;
 * pthread_create's allocations for that thread, and the thread's own, must
 * not appear: the live segment's totals grow by exactly N allocations and
 * the blocks' usable bytes, and by exactly N frees once they are freed.
 * Reads its own live segment from the start, allocating nothing to do so.
 * Usage: ownallocs */
#include "config.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "segutil.h"

#define NMAX 4000000
static void *blk[NMAX];

/* Whether a thread named "mallocshim" runs here; allocates nothing. */
static int sampler_running(void)
{
    char buf[4096], path[128], comm[32];
    int found = 0, dfd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    long n;
    while (dfd >= 0 && !found && (n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n && !found;) {
            const char *name = buf + off + 19;
            off += *(const unsigned short *)(buf + off + 16);
            if (name[0] == '.')
                continue;
            snprintf(path, sizeof path, "/proc/self/task/%s/comm", name);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            ssize_t r = fd >= 0 ? read(fd, comm, sizeof comm - 1) : -1;
            if (fd >= 0)
                close(fd);
            found = r > 0 && (comm[r] = '\0', strcmp(comm, "mallocshim\n") == 0);
        }
    }
    if (dfd >= 0)
        close(dfd);
    return found;
}

static void totals(const struct seg_header *h, uint64_t *allocs, uint64_t *frees, uint64_t *live_usable)
{
    static struct su_snap s;
    su_snap(h, &s);
    *allocs = *frees = *live_usable = 0;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        *allocs += s.c[c].allocs;
        *frees += s.c[c].frees;
        *live_usable += s.c[c].usable_alloc - s.c[c].usable_free;
    }
}

int main(void)
{
    uint64_t a0, f0, u0, a1, f1, u1, a2, f2, u2, usable = 0;
    long n = 0;
    const struct seg_header *h = su_open_live((int)getpid());
    if (!h)
        return 1;
    if (sampler_running()) {
        /* A tracked allocation before main (1 in `sample`): nothing to see. */
        printf("sampler already running\n");
        return 77;
    }
    totals(h, &a0, &f0, &u0);
    while (n < NMAX) {
        blk[n] = malloc(24 + (size_t)(n % 8) * 8);
        usable += malloc_usable_size(blk[n]);
        n++;
        if (n % 256 == 0 && sampler_running())
            break;
    }
    CHECK(n < NMAX);
    /* Its first pass: its own allocations (glibc's malloc_info) are made. */
    for (int waited = 0; waited < 30000 && __atomic_load_n(&h->heartbeat_ns, __ATOMIC_ACQUIRE) == 0;
         waited++)
        usleep(1000);
    CHECK(__atomic_load_n(&h->heartbeat_ns, __ATOMIC_ACQUIRE) != 0);
    totals(h, &a1, &f1, &u1);
    for (long i = 0; i < n; i++)
        free(blk[i]);
    totals(h, &a2, &f2, &u2);
    printf("%ld blocks: +%llu allocs, +%llu frees, +%llu live usable (blocks: %llu); "
           "freed: +%llu frees, live usable %+lld\n", n, (unsigned long long)(a1 - a0),
           (unsigned long long)(f1 - f0), (unsigned long long)(u1 - u0), (unsigned long long)usable,
           (unsigned long long)(f2 - f1), (long long)(u2 - u0));
    CHECK(a1 - a0 == (uint64_t)n);
    CHECK(f1 - f0 == 0);
    CHECK(u1 - u0 == usable);
    CHECK(a2 == a1);
    CHECK(f2 - f1 == (uint64_t)n);
    CHECK(u2 == u0);
    return tu_finish("ownallocs");
}
