/* capprog: a program to capture (t/cli/capture.sh), whose every
 * malloc-family call in a window is known. Usage:
 *   capprog DIR THREADS OPS [exit]
 * It makes a starting heap (START blocks of 3000 B), starts THREADS
 * threads and writes DIR/ready. On DIR/go, each thread makes OPS seeded
 * calls (malloc, calloc, realloc, free, posix_memalign, aligned_alloc,
 * frees of its share of half the starting heap, and frees of blocks that
 * the thread before it made, passed through a mailbox), then frees what it
 * holds; nothing else in the process calls the malloc family meanwhile
 * (no stdio, no thread starts or ends). Then it writes DIR/log, a line
 * per call, "TID OP SIZE AUX ID" in each thread's order (OP: trace.h's
 * enum trace_op; AUX, ID in hex as the trace has them), and "cross N"
 * (frees of another thread's block), without a call of the malloc family
 * either, and DIR/done; on DIR/quit it exits. With `exit`, it exits right
 * after DIR/done instead, with the capture still running (its trace must
 * still end whole). Up to 2000 OPS, at most 2 OPS + 32 calls per thread:
 * within one thread's capture buffers (4 x 1024), so the writer's pace
 * never matters; more (up to OPS_MAX) outrun them when the writer is held
 * (t/cli/capdrop.sh). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define START 400
#define LIVE 32
#define OPS_MAX 6000   /* each op is at most 2 calls: up to 2000 ops, 4032 <= 4 x 1024 */

enum { OP_MALLOC = 1, OP_CALLOC = 2, OP_REALLOC = 3, OP_FREE = 4, OP_MEMALIGN = 5 };

struct rec {
    uint32_t op;
    uint64_t size, aux, id;
};

struct thr {
    pthread_t th;
    int idx;
    uint32_t tid;
    struct rec *log;
    size_t nlog;
    uint64_t rng;
    void *mailbox;             /* a block from the thread before, to free */
    unsigned cross;
};

static const char *dir;
static int nthreads, ops;
static struct thr *thr;
static void *start_blocks[START];
static int go, quit, done_count;

static void pause_ms(long ms)
{
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

static int exists(const char *name)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void touch(const char *name)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0)
        close(fd);
}

static uint64_t next(struct thr *t)
{
    t->rng ^= t->rng << 13;
    t->rng ^= t->rng >> 7;
    t->rng ^= t->rng << 17;
    return t->rng;
}

static void logit(struct thr *t, uint32_t op, uint64_t size, const void *aux, const void *id)
{
    struct rec *r = &t->log[t->nlog++];
    r->op = op;
    r->size = size;
    r->aux = (uint64_t)(uintptr_t)aux;
    r->id = (uint64_t)(uintptr_t)id;
}

static void *worker(void *arg)
{
    struct thr *t = arg;
    void *live[LIVE] = { 0 };
    int share = START / 2 / nthreads, freed_start = 0;

    t->tid = (uint32_t)syscall(SYS_gettid);
    while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
        pause_ms(1);
    for (int i = 0; i < ops; i++) {
        uint64_t r = next(t);
        int slot = (int)(r % LIVE);
        size_t size = 16 + (size_t)((r >> 8) % 20000);
        void *p;
        switch ((r >> 32) % 8) {
        case 0:
        case 1:
            if (live[slot]) {
                logit(t, OP_FREE, 0, NULL, live[slot]);
                free(live[slot]);
            }
            p = malloc(size);
            logit(t, OP_MALLOC, size, NULL, p);
            live[slot] = p;
            break;
        case 2:
            if (live[slot]) {
                logit(t, OP_FREE, 0, NULL, live[slot]);
                free(live[slot]);
            }
            p = calloc(3, size / 3 + 1);
            logit(t, OP_CALLOC, size / 3 + 1, (void *)3, p);
            live[slot] = p;
            break;
        case 3:
            p = realloc(live[slot], size);
            logit(t, OP_REALLOC, size, live[slot], p);
            live[slot] = p;
            break;
        case 4:
            if (live[slot]) {
                logit(t, OP_FREE, 0, NULL, live[slot]);
                free(live[slot]);
            }
            if (posix_memalign(&p, 64, size) != 0)
                p = NULL;
            logit(t, OP_MEMALIGN, size, NULL, p);
            live[slot] = p;
            break;
        case 5:
            if (live[slot]) {
                logit(t, OP_FREE, 0, NULL, live[slot]);
                free(live[slot]);
            }
            p = aligned_alloc(4096, 4096 * (1 + size % 3));
            logit(t, OP_MEMALIGN, 4096 * (1 + size % 3), NULL, p);
            live[slot] = p;
            break;
        case 6:
            /* a block of the starting heap */
            if (freed_start < share) {
                p = start_blocks[t->idx * share + freed_start++];
                logit(t, OP_FREE, 0, NULL, p);
                free(p);
            }
            break;
        case 7: {
            /* to the next thread's mailbox; its own mailbox, freed */
            struct thr *n = &thr[(t->idx + 1) % nthreads];
            if (live[slot] && !__atomic_load_n(&n->mailbox, __ATOMIC_ACQUIRE)) {
                __atomic_store_n(&n->mailbox, live[slot], __ATOMIC_RELEASE);
                live[slot] = NULL;
            }
            p = __atomic_exchange_n(&t->mailbox, NULL, __ATOMIC_ACQ_REL);
            if (p) {
                logit(t, OP_FREE, 0, NULL, p);
                free(p);
                t->cross++;
            }
            break;
        }
        }
        free(NULL);   /* not recorded */
    }
    for (int s = 0; s < LIVE; s++)
        if (live[s]) {
            logit(t, OP_FREE, 0, NULL, live[s]);
            free(live[s]);
        }
    __atomic_fetch_add(&done_count, 1, __ATOMIC_RELEASE);
    /* A block passed to us after we looked stays in the mailbox: freed
     * after the capture, by main (not logged). */
    while (!__atomic_load_n(&quit, __ATOMIC_ACQUIRE))
        pause_ms(1);
    return NULL;
}

/* DIR/log, written with write(2) and snprintf into our own buffer: no
 * call of the malloc family (the capture may still run). */
static int write_log(void)
{
    char path[4096], line[128];
    unsigned cross = 0;
    int ok = 1;
    snprintf(path, sizeof path, "%s/log", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    for (int i = 0; i < nthreads; i++) {
        for (size_t k = 0; k < thr[i].nlog; k++) {
            const struct rec *r = &thr[i].log[k];
            int n = snprintf(line, sizeof line, "%u %u %llu %llx %llx\n", thr[i].tid, r->op,
                             (unsigned long long)r->size, (unsigned long long)r->aux,
                             (unsigned long long)r->id);
            ok &= write(fd, line, (size_t)n) == n;
        }
        cross += thr[i].cross;
    }
    int n = snprintf(line, sizeof line, "cross %u\n", cross);
    ok &= write(fd, line, (size_t)n) == n;
    return close(fd) == 0 && ok ? 0 : -1;
}

int main(int argc, char **argv)
{

    if (argc < 4 || (nthreads = atoi(argv[2])) < 1 || nthreads > 64 ||
        (ops = atoi(argv[3])) < 1 || ops > OPS_MAX) {
        fprintf(stderr, "usage: capprog DIR THREADS OPS(<=%d) [exit]\n", OPS_MAX);
        return 2;
    }
    dir = argv[1];
    int exit_early = argc > 4 && strcmp(argv[4], "exit") == 0;
    for (int i = 0; i < START; i++)
        start_blocks[i] = malloc(3000);
    thr = calloc((size_t)nthreads, sizeof *thr);
    for (int i = 0; i < nthreads; i++) {
        thr[i].idx = i;
        thr[i].rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
        /* the log: ours, not the malloc family's */
        thr[i].log = mmap(NULL, sizeof(struct rec) * (2 * OPS_MAX + LIVE + 8), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (thr[i].log == MAP_FAILED || pthread_create(&thr[i].th, NULL, worker, &thr[i]) != 0) {
            fprintf(stderr, "capprog: cannot start thread %d\n", i);
            return 1;
        }
    }
    touch("ready");
    while (!exists("go"))
        pause_ms(10);
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&done_count, __ATOMIC_ACQUIRE) < nthreads)
        pause_ms(1);
    if (write_log() != 0)
        return 1;
    touch("done");
    if (exit_early)
        exit(0);   /* the capture under way must end whole */
    while (!exists("quit"))
        pause_ms(10);
    __atomic_store_n(&quit, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < nthreads; i++) {
        pthread_join(thr[i].th, NULL);
        free(thr[i].mailbox);
    }
    return 0;
}
