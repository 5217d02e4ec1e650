/* shmfault: a program that allocates from THREADS threads while its test
 * does things to the segment's files, and that has SIGBUS and SIGSEGV
 * handlers of its own (as mysqld has). Its own faults must reach its own
 * handlers, before and after; nothing done to the segment may fault it.
 *
 * Usage: shmfault DIR THREADS
 *   makes one SIGBUS (a page past the end of a file of its own) and one
 *   SIGSEGV (a PROT_NONE page), starts THREADS threads that churn through
 *   malloc and free, writes DIR/ready, and lets them churn until DIR/stop
 *   appears (the test looks at the segment's files meanwhile; at most 60 s
 *   after DIR/go), then repeats both faults and writes DIR/done. Exit 0 when each fault reached
 *   its handler both times and every thread's blocks kept their contents. */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "handshake.h"
#include "testutil.h"

static sigjmp_buf back;
static volatile sig_atomic_t caught_bus, caught_segv;
static const char *dir;

static void on_fault(int sig, siginfo_t *si, void *ctx)
{
    (void)si;
    (void)ctx;
    if (sig == SIGBUS)
        caught_bus++;
    else
        caught_segv++;
    siglongjmp(back, 1);
}

/* One SIGBUS and one SIGSEGV of the program's own. Returns how many of the
 * two reached the handler. */
static int own_faults(void)
{
    char path[512];
    long pg = sysconf(_SC_PAGESIZE);
    int before = caught_bus + caught_segv;
    snprintf(path, sizeof path, "%s/own", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && ftruncate(fd, pg) == 0);
    volatile char *m = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED);
    if (sigsetjmp(back, 1) == 0)
        m[pg] = 1;   /* past the end of the file: SIGBUS */
    munmap((void *)m, (size_t)pg * 2);
    close(fd);
    volatile char *n = mmap(NULL, (size_t)pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (sigsetjmp(back, 1) == 0)
        n[0] = 1;    /* SIGSEGV */
    munmap((void *)n, (size_t)pg);
    return caught_bus + caught_segv - before;
}

static volatile int phase;   /* 3: stop */

static void *churn(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    void *keep[256] = { 0 };
    size_t kept[256] = { 0 };
    long rounds = 0;
    while (phase != 3) {
        unsigned k = (seed = seed * 1103515245u + 12345u) >> 24;
        size_t n = 16 + ((seed >> 8) % 20000);
        if (keep[k]) {
            if (!tu_intact(keep[k], kept[k], k))
                tu_failures++;
            free(keep[k]);
        }
        keep[k] = malloc(n);
        kept[k] = n;
        tu_fill(keep[k], n, k);
        rounds++;
    }
    for (unsigned k = 0; k < 256; k++)
        free(keep[k]);
    return (void *)rounds;
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    pthread_t t[64];
    int nt;

    if (argc != 3 || (nt = atoi(argv[2])) < 1 || nt > 64) {
        fprintf(stderr, "usage: shmfault DIR THREADS\n");
        return 2;
    }
    dir = argv[1];
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);
    CHECK(own_faults() == 2);
    for (int i = 0; i < nt; i++)
        CHECK(pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i + 1)) == 0);
    sleep_ms(300);
    put(dir, "ready", "\n");
    await(dir, "go");
    await_ms(dir, "stop", 60000);   /* several of the sampler's passes (interval_ms:100) */
    phase = 3;
    long total = 0;
    for (int i = 0; i < nt; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (long)r;
    }
    CHECK(own_faults() == 2);
    CHECK(caught_bus == 2 && caught_segv == 2);
    printf("%ld allocations, faults caught: SIGBUS %d, SIGSEGV %d\n", total, (int)caught_bus,
           (int)caught_segv);
    put(dir, "done", "\n");
    return tu_finish("shmfault");
}
