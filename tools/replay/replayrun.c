/* replayrun: the replay process: a plan's threads run under the allocator
 * the shim serves, and what it costs in memory and time (replayrun.h). */
#include "config.h"

#include "replayrun.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dump.h"
#include "replayplan.h"

/* Ops done between two looks at the waiters flag: a waiter sleeps at most
 * that many ops longer than needed (it spins first, and sleeps 100 ms at
 * most in any case). */
#define PUBLISH_EVERY 64
#define SPINS 64

/* One replay thread. Synchronization: `done`, `pre_done` are written by the
 * thread only (release), read by any (acquire); `waiters` is set by a
 * waiter and cleared by the thread, both with sequentially consistent
 * order against `done` (see wait_for); `futex` only grows, by the thread;
 * `wait_thread`/`wait_index` are the thread's own, read by the watchdog
 * (relaxed: for its message only). The rest is the thread's own until it
 * is joined. */
struct rthread {
    _Atomic uint64_t done;             /* main ops done */
    _Atomic uint32_t futex;
    _Atomic uint32_t waiters;
    _Atomic uint64_t pre_done;         /* blocks of its prelude made */
    _Atomic uint32_t wait_thread;      /* PLAN_NONE: not waiting */
    _Atomic uint32_t finished;
    _Atomic uint64_t wait_index;
    _Atomic uint32_t pacing;           /* asleep until its op's time (--pace) */
    uint64_t t_start, t_end;           /* CLOCK_MONOTONIC, ns */
    uint64_t failed, blocked, lost, clobbered;
    uint64_t unpublished;              /* ops since the last look at waiters */
    uint32_t index;
    uint64_t hang_at;                  /* SHIMREPLAY_TEST_HANG: stop before this main op */
    double spacer_due;                 /* bytes of free space owed (spacer) */
    void **spacers;                    /* made, to free after the preludes */
    size_t nspacers, capspacers;
    uint64_t spaced;                   /* their chunks' bytes */
    int spacer_refused;                /* malloc refused one: no more */
    _Atomic uint64_t spacer_ops;       /* spacers made and freed, for the stall guard */
    struct plan_op *buf;               /* one block, mmap'ed */
    pthread_t pt;
} __attribute__((aligned(128)));

/* Read-only once the threads start. */
static struct {
    const struct replay_opts *o;
    int fd;
    struct plan_header h;
    struct plan_thread *threads;
    struct plan_block *blocks;
    void **slots;
    struct rthread *rt;
    uint32_t nth;
    size_t page;
    pthread_barrier_t start;
    /* Bytes of spacer per byte of the starting heap's blocks that
     * plan_spaced admits (spacer): the free space asked for
     * (replay_opts.start_free) over those blocks' bytes. */
    double spacer_per_byte;
    /* C++ operators, nothrow where they throw, from the shim */
    void *(*new_)(size_t, const void *);
    void *(*new_arr)(size_t, const void *);
    void *(*new_al)(size_t, size_t, const void *);
    void *(*new_arr_al)(size_t, size_t, const void *);
    void (*del)(void *);
    void (*del_arr)(void *);
    void (*del_n)(void *, size_t);
    void (*del_arr_n)(void *, size_t);
    void (*del_al)(void *, size_t);
    void (*del_arr_al)(void *, size_t);
} g;

static const char nothrow_tag[1];   /* what a std::nothrow_t const & points to */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    int n = snprintf(buf, sizeof buf, "shimreplay: replay under %s: ", g.o ? g.o->backend : "?");
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    va_end(ap);
    n = (int)strlen(buf);
    buf[n++] = '\n';
    if (write(2, buf, (size_t)n) < 0) {
        /* nothing more to say */
    }
    _exit(DX_SYS);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *map(size_t n)
{
    void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static int pread_all(int fd, void *buf, size_t n, uint64_t off)
{
    while (n > 0) {
        ssize_t k = pread(fd, buf, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k < 0 ? errno : ENODATA;
        buf = (char *)buf + k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

/* ---- Memory figures ---- */

/* Resident bytes now, from /proc/self/statm (no stdio, no allocation). */
static uint64_t rss_now(void)
{
    char buf[256];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    ssize_t n;
    char *p;
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    p = strchr(buf, ' ');
    return p ? strtoull(p + 1, NULL, 10) * g.page : 0;
}

/* VmHWM, the peak resident size, in bytes. */
static uint64_t rss_peak(void)
{
    char buf[4096], *p;
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    ssize_t n;
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    p = strstr(buf, "VmHWM:");
    return p ? strtoull(p + 6, NULL, 10) * 1024 : 0;
}

/* ---- Waiting for another thread ---- */

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

/* Wakes the threads waiting on me, if any. The fence orders my `done`
 * stores before the look at `waiters`; a waiter orders its `waiters`
 * store before its look at `done` the same way, so one of us sees the
 * other. */
static void publish(struct rthread *me)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&me->waiters, memory_order_relaxed)) {
        atomic_store_explicit(&me->waiters, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&me->futex, 1, memory_order_release);
        futex(&me->futex, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
    }
    me->unpublished = 0;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Until thread u has done its main op idx. */
static void wait_for(struct rthread *me, uint32_t u, uint64_t idx)
{
    struct rthread *o = &g.rt[u];
    struct timespec ts = { 0, 100 * 1000000L };

    if (atomic_load_explicit(&o->done, memory_order_acquire) > idx)
        return;
    me->blocked++;
    publish(me);   /* whoever waits for me must not wait on unpublished ops */
    atomic_store_explicit(&me->wait_index, idx, memory_order_relaxed);
    atomic_store_explicit(&me->wait_thread, u, memory_order_relaxed);
    for (int i = 0; i < SPINS; i++) {
        cpu_relax();
        if (atomic_load_explicit(&o->done, memory_order_acquire) > idx)
            goto out;
    }
    for (;;) {
        uint32_t f = atomic_load_explicit(&o->futex, memory_order_acquire);
        atomic_store_explicit(&o->waiters, 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&o->done, memory_order_acquire) > idx)
            break;
        futex(&o->futex, FUTEX_WAIT_PRIVATE, f, &ts);
        if (atomic_load_explicit(&o->done, memory_order_acquire) > idx)
            break;
    }
out:
    atomic_thread_fence(memory_order_acquire);
    atomic_store_explicit(&me->wait_thread, PLAN_NONE, memory_order_relaxed);
}

/* ---- The ops ---- */

static void touch(void *p, uint64_t size)
{
    unsigned char *c = p;
    if (!p || g.o->touch == REPLAY_TOUCH_NONE)
        return;
    if (g.o->touch == REPLAY_TOUCH_FIRST) {
        memset(c, 0x5a, size < REPLAY_TOUCH_BYTES ? (size_t)size : REPLAY_TOUCH_BYTES);
        return;
    }
    for (uint64_t off = 0; off < size; off += g.page)
        c[off] = 0x5a;
    if (size)
        c[size - 1] = 0x5a;
}

static void put(struct rthread *me, uint32_t slot, void *p, uint64_t size)
{
    if (g.slots[slot])
        me->clobbered++;
    g.slots[slot] = p;
    if (!p)
        me->failed++;
    touch(p, size);
}

static void *take(struct rthread *me, uint32_t slot)
{
    void *p;
    if (slot == PLAN_NONE)
        return NULL;
    p = g.slots[slot];
    g.slots[slot] = NULL;
    if (!p)
        me->lost++;
    return p;
}

static int slot_ok(uint32_t slot)
{
    return slot < g.h.nslots;
}

/* An op out of range: the plan file is not what shimreplay wrote. */
static void __attribute__((noreturn)) bad_op(const struct rthread *me, const struct plan_op *op)
{
    die("thread %u: an op of kind %u out of range: the plan file is corrupt", me->index, op->kind);
}

/* A spacer of `size` bytes, kept to be freed after the preludes; returns
 * the bytes of free space it will leave, its chunk's (glibc's usable size
 * and its size field: fordblks, which start_free is, counts chunks), 0
 * when malloc refused it. Its pointer goes into memory of our own (mmap),
 * so that the heap holds nothing the trace did not. */
static uint64_t spacer_make(struct rthread *me, uint64_t size)
{
    if (me->nspacers == me->capspacers) {
        size_t cap = me->capspacers ? 2 * me->capspacers : 4096;
        void *q = me->spacers ? mremap(me->spacers, me->capspacers * sizeof(void *),
                                       cap * sizeof(void *), MREMAP_MAYMOVE)
                              : mmap(NULL, cap * sizeof(void *), PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (q == MAP_FAILED)
            die("out of memory for the starting heap's free space");
        me->spacers = q;
        me->capspacers = cap;
    }
    void *p = malloc(size);
    if (!p)
        return 0;
    touch(p, size);
    me->spacers[me->nspacers++] = p;
    atomic_fetch_add_explicit(&me->spacer_ops, 1, memory_order_relaxed);
    /* never less than asked: a libc without malloc_usable_size answers 0
     * through the shim, and would make size / 8 spacers a block */
    uint64_t chunk = malloc_usable_size(p) + sizeof(size_t);
    return chunk > size ? chunk : size;
}

/* After a block of the starting heap that plan_spaced admits, spacers of
 * its size while the thread's share of the free space is due
 * (spacer_per_byte, see replay_opts.start_free): freed once every prelude
 * is made, each leaves a hole beside a block, as the captured heap had its
 * free chunks among its live ones. More free space than live bytes is more
 * than one a block. The first one that malloc refuses ends the thread's. */
static void spacer(struct rthread *me, uint64_t size)
{
    if (!plan_spaced(size) || g.spacer_per_byte <= 0 || me->spacer_refused)
        return;
    me->spacer_due += (double)size * g.spacer_per_byte;
    while (me->spacer_due >= (double)size) {
        uint64_t got = spacer_make(me, size);
        if (!got) {
            me->spacer_refused = 1;
            return;
        }
        me->spaced += got;
        me->spacer_due -= (double)got;
    }
}

/* A prelude op; returns the blocks it made. */
static uint64_t start_op(struct rthread *me, const struct plan_op *op)
{
    if (op->kind == PLAN_START && slot_ok(op->slot)) {
        put(me, op->slot, malloc(op->size), op->size);
        spacer(me, op->size);
        return 1;
    }
    if (op->kind != PLAN_START_RUN || !slot_ok(op->slot) || op->n > g.h.nslots - op->slot)
        bad_op(me, op);
    for (uint64_t i = 0; i < op->n; i++) {
        put(me, (uint32_t)(op->slot + i), malloc(op->size), op->size);
        spacer(me, op->size);
    }
    return op->n;
}

static void main_op(struct rthread *me, const struct plan_op *op)
{
    size_t al = (size_t)1 << (op->align & 63);
    void *p;

    if ((op->slot != PLAN_NONE && !slot_ok(op->slot)) ||
        (op->old_slot != PLAN_NONE && !slot_ok(op->old_slot)) || op->align > TRACE_ALIGN_LOG2_MAX)
        bad_op(me, op);
    if (op->dep_thread != PLAN_NONE) {
        if (op->dep_thread >= g.nth || op->dep_index >= g.threads[op->dep_thread].main_ops)
            bad_op(me, op);
        wait_for(me, op->dep_thread, op->dep_index);
    }
    switch (op->kind) {
    case TRACE_OP_MALLOC: put(me, op->slot, malloc(op->size), op->size); break;
    case TRACE_OP_CALLOC:
        put(me, op->slot, calloc(op->n, op->size), op->n * op->size);
        break;
    case TRACE_OP_REALLOC: {
        void *old = op->old_slot == PLAN_NONE ? NULL : g.slots[op->old_slot];
        if (op->old_slot != PLAN_NONE && !old)
            me->lost++;
        p = realloc(old, op->size);
        if (op->slot == PLAN_NONE) {   /* realloc(p, 0), which freed p at capture */
            if (op->old_slot != PLAN_NONE)
                g.slots[op->old_slot] = NULL;
            if (p)
                free(p);
        } else if (p || !op->size) {
            if (op->old_slot != PLAN_NONE)
                g.slots[op->old_slot] = NULL;
            put(me, op->slot, p, op->size);
        } else {
            me->failed++;   /* the old block stays where it is */
        }
        break;
    }
    case TRACE_OP_MEMALIGN: put(me, op->slot, memalign(al, op->size), op->size); break;
    case TRACE_OP_ALIGNED_ALLOC: put(me, op->slot, aligned_alloc(al, op->size), op->size); break;
    case TRACE_OP_POSIX_MEMALIGN:
        if (posix_memalign(&p, al, op->size) != 0)
            p = NULL;
        put(me, op->slot, p, op->size);
        break;
    case TRACE_OP_VALLOC: put(me, op->slot, valloc(op->size), op->size); break;
    case TRACE_OP_PVALLOC: put(me, op->slot, pvalloc(op->size), op->size); break;
    case TRACE_OP_NEW: put(me, op->slot, g.new_(op->size, nothrow_tag), op->size); break;
    case TRACE_OP_NEW_ARRAY: put(me, op->slot, g.new_arr(op->size, nothrow_tag), op->size); break;
    case TRACE_OP_NEW_ALIGNED: put(me, op->slot, g.new_al(op->size, al, nothrow_tag), op->size); break;
    case TRACE_OP_NEW_ARRAY_ALIGNED:
        put(me, op->slot, g.new_arr_al(op->size, al, nothrow_tag), op->size);
        break;
    /* A free of a block the replay could not make (NULL) calls nothing:
     * the shim's sized delete wants a block. */
    case TRACE_OP_FREE: if ((p = take(me, op->slot))) free(p); break;
    case TRACE_OP_DELETE: if ((p = take(me, op->slot))) g.del(p); break;
    case TRACE_OP_DELETE_ARRAY: if ((p = take(me, op->slot))) g.del_arr(p); break;
    case TRACE_OP_DELETE_SIZED: if ((p = take(me, op->slot))) g.del_n(p, op->size); break;
    case TRACE_OP_DELETE_ARRAY_SIZED: if ((p = take(me, op->slot))) g.del_arr_n(p, op->size); break;
    case TRACE_OP_DELETE_ALIGNED: if ((p = take(me, op->slot))) g.del_al(p, al); break;
    case TRACE_OP_DELETE_ARRAY_ALIGNED: if ((p = take(me, op->slot))) g.del_arr_al(p, al); break;
    default: bad_op(me, op);
    }
}

/* --pace: the first thread past the start sets the origin; the others
 * take it. A thread's `pacing` says it is asleep until its op's time, for
 * the watchdog (a quiet stretch of the trace is no stall). */
static _Atomic uint64_t pace_t0;

/* Under 20 us early, an op goes now: a sleep that short oversleeps anyway. */
#define PACE_MIN_NS 20000ull

/* Waits until the op's time (t_ns after the origin). */
static void pace_to(struct rthread *me, uint64_t t_ns)
{
    uint64_t t0 = atomic_load_explicit(&pace_t0, memory_order_relaxed), now = now_ns(), at;
    if (!t0) {
        uint64_t none = 0;
        t0 = atomic_compare_exchange_strong(&pace_t0, &none, now) ? now : none;
    }
    at = t0 + t_ns;
    if (now + PACE_MIN_NS >= at)
        return;
    publish(me);   /* whoever waits for me must not wait on ops I did */
    atomic_store(&me->pacing, 1);
    struct timespec ts = { (time_t)(at / 1000000000ull), (long)(at % 1000000000ull) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
    atomic_store(&me->pacing, 0);
}

static void hang(void)
{
    for (;;)
        pause();
}

static void *thread_main(void *arg)
{
    struct rthread *me = arg;
    const struct plan_thread *pt = &g.threads[me->index];
    uint64_t k = pt->first_block, end = pt->first_block + pt->nblocks, i = 0;
    int rc;

    for (; k < end && g.blocks[k].prelude; k++) {
        const struct plan_block *bl = &g.blocks[k];
        if ((rc = pread_all(g.fd, me->buf, (size_t)bl->nops * sizeof *me->buf, bl->off)) != 0)
            die("reading the plan: %s", strerror(rc));
        for (uint32_t j = 0; j < bl->nops; j++) {
            uint64_t n = start_op(me, &me->buf[j]);
            atomic_store_explicit(&me->pre_done,
                                  atomic_load_explicit(&me->pre_done, memory_order_relaxed) + n,
                                  memory_order_relaxed);
        }
    }
    /* The spacers go once every thread's prelude is made, so that no
     * prelude fills another's holes. */
    if (g.spacer_per_byte > 0) {
        pthread_barrier_wait(&g.start);
        for (size_t j = 0; j < me->nspacers; j++) {
            free(me->spacers[j]);
            atomic_fetch_add_explicit(&me->spacer_ops, 1, memory_order_relaxed);
        }
        if (me->spacers)
            munmap(me->spacers, me->capspacers * sizeof(void *));
    }
    pthread_barrier_wait(&g.start);
    me->t_start = now_ns();
    for (; k < end; k++) {
        const struct plan_block *bl = &g.blocks[k];
        if ((rc = pread_all(g.fd, me->buf, (size_t)bl->nops * sizeof *me->buf, bl->off)) != 0)
            die("reading the plan: %s", strerror(rc));
        for (uint32_t j = 0; j < bl->nops; j++, i++) {
            if (i == me->hang_at) {
                publish(me);
                hang();
            }
            if (g.o->pace)
                pace_to(me, me->buf[j].t_ns);
            main_op(me, &me->buf[j]);
            atomic_store_explicit(&me->done, i + 1, memory_order_release);
            if (++me->unpublished == PUBLISH_EVERY)
                publish(me);
        }
    }
    me->t_end = now_ns();
    publish(me);
    atomic_store_explicit(&me->finished, 1, memory_order_release);
    return NULL;
}

/* ---- Setting up ---- */

/* The C++ operators, from the shim (which exports them all); the C calls
 * stand in for any that are missing. */
static void *c_new(size_t n, const void *tag) { (void)tag; return malloc(n); }
static void *c_new_al(size_t n, size_t al, const void *tag) { (void)tag; return aligned_alloc(al, (n + al - 1) & ~(al - 1)); }
static void c_del(void *p) { free(p); }
static void c_del_n(void *p, size_t n) { (void)n; free(p); }

static void *sym(const char *name, void *fallback)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    return p ? p : fallback;
}

static void resolve(void)
{
    *(void **)&g.new_ = sym("_ZnwmRKSt9nothrow_t", (void *)c_new);
    *(void **)&g.new_arr = sym("_ZnamRKSt9nothrow_t", (void *)c_new);
    *(void **)&g.new_al = sym("_ZnwmSt11align_val_tRKSt9nothrow_t", (void *)c_new_al);
    *(void **)&g.new_arr_al = sym("_ZnamSt11align_val_tRKSt9nothrow_t", (void *)c_new_al);
    *(void **)&g.del = sym("_ZdlPv", (void *)c_del);
    *(void **)&g.del_arr = sym("_ZdaPv", (void *)c_del);
    *(void **)&g.del_n = sym("_ZdlPvm", (void *)c_del_n);
    *(void **)&g.del_arr_n = sym("_ZdaPvm", (void *)c_del_n);
    *(void **)&g.del_al = sym("_ZdlPvSt11align_val_t", (void *)c_del_n);
    *(void **)&g.del_arr_al = sym("_ZdaPvSt11align_val_t", (void *)c_del_n);
}

static void load_plan(int fd)
{
    struct stat st;
    size_t tlen, blen;
    int rc;

    if (fstat(fd, &st) != 0)
        die("the plan: %s", strerror(errno));
    if ((rc = pread_all(fd, &g.h, sizeof g.h, 0)) != 0 || plan_check(&g.h, (uint64_t)st.st_size, NULL, NULL))
        die("the plan file is not one shimreplay wrote");
    g.nth = g.h.stats.threads;
    tlen = (size_t)g.nth * sizeof *g.threads;
    blen = (size_t)g.h.nblocks * sizeof *g.blocks;
    if (!(g.threads = map(tlen)) || !(g.blocks = map(blen)))
        die("out of memory for the plan's tables");
    if ((rc = pread_all(fd, g.threads, tlen, g.h.threads_off)) != 0 ||
        (rc = pread_all(fd, g.blocks, blen, g.h.blocks_off)) != 0 ||
        plan_check(&g.h, (uint64_t)st.st_size, g.threads, g.blocks))
        die("the plan file is not one shimreplay wrote");
    g.fd = fd;
}

/* SHIMREPLAY_TEST_HANG=T:N (see replayrun.h). */
static void test_hang(void)
{
    const char *s = getenv("SHIMREPLAY_TEST_HANG");
    char *end;
    unsigned long t;
    unsigned long long n;
    if (!s)
        return;
    t = strtoul(s, &end, 10);
    if (*end != ':')
        return;
    n = strtoull(end + 1, &end, 10);
    if (!*end && t < g.nth)
        g.rt[t].hang_at = n;
}

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0 && g.o->report_fd >= 0 && write(g.o->report_fd, buf, (size_t)n) < 0) {
        /* the parent went away: it will not want the rest */
    }
}

/* The watchdog's message: the first thread that is not done, and, when it
 * waits, the chain of threads it waits on. */
static void stalled(void)
{
    char msg[400];
    size_t n = 0;
    uint32_t t = PLAN_NONE;
    for (uint32_t i = 0; i < g.nth; i++)
        if (!atomic_load(&g.rt[i].finished)) {
            t = i;
            break;
        }
    if (t == PLAN_NONE)
        die("no op done in %u s", g.o->stall_s);
    for (unsigned hops = 0; hops < 4 && n < sizeof msg - 100; hops++) {
        struct rthread *r = &g.rt[t];
        uint32_t w = atomic_load_explicit(&r->wait_thread, memory_order_relaxed);
        n += (size_t)snprintf(msg + n, sizeof msg - n, "%sthread %u (tid %u) is at op %" PRIu64 " of %" PRIu64,
                              hops ? "; " : "", t, g.threads[t].tid, atomic_load(&r->done),
                              g.threads[t].main_ops);
        if (w == PLAN_NONE || w >= g.nth)
            break;
        n += (size_t)snprintf(msg + n, sizeof msg - n, ", waiting for thread %u's op %" PRIu64, w,
                              atomic_load_explicit(&r->wait_index, memory_order_relaxed));
        t = w;
    }
    die("no op done in %u s: %s", g.o->stall_s, msg);
}

int replay_run(int plan_fd, const struct replay_opts *o)
{
    const char *(*backend)(void);
    uint64_t total = 0, last = UINT64_MAX, last_change, base, t0 = UINT64_MAX, t1 = 0;
    struct replay_result r;

    memset(&r, 0, sizeof r);
    g.o = o;
    prctl(PR_SET_NAME, "shimreplay", 0, 0, 0);   /* exec'ed as /proc/self/exe: "exe" */
    g.page = (size_t)sysconf(_SC_PAGESIZE);
    *(void **)&backend = dlsym(RTLD_DEFAULT, "mallocshim_backend");
    if (!backend)
        die("libmallocshim.so is not loaded in the replay process");
    if (strcmp(backend(), o->backend) != 0)
        die("the shim serves %s, not %s (see its message above)", backend(), o->backend);
    resolve();
    load_plan(plan_fd);
    if (!(g.slots = map((size_t)g.h.nslots * sizeof *g.slots)) ||
        !(g.rt = map((size_t)g.nth * sizeof *g.rt)))
        die("out of memory for %" PRIu64 " slots", g.h.nslots);
    for (uint32_t i = 0; i < g.nth; i++) {
        g.rt[i].index = i;
        g.rt[i].hang_at = UINT64_MAX;
        atomic_store(&g.rt[i].wait_thread, PLAN_NONE);
        total += g.threads[i].main_ops;
        if (!(g.rt[i].buf = map(PLAN_BLOCK_OPS * sizeof(struct plan_op))))
            die("out of memory for the threads' buffers");
    }
    if (o->start_free && g.h.stats.spaced_bytes)
        g.spacer_per_byte = (double)o->start_free / (double)g.h.stats.spaced_bytes;
    /* Progress counts the starting heap's blocks as well as the ops. */
    total += g.h.stats.start_blocks + g.h.stats.orphans;
    test_hang();
    /* Every thread makes its prelude, then all start their main ops at
     * once. The watchdog runs meanwhile (a prelude can hang too). */
    if (pthread_barrier_init(&g.start, NULL, g.nth) != 0)
        die("cannot make a barrier");
    base = rss_now();
    for (uint32_t i = 0; i < g.nth; i++) {
        int rc = pthread_create(&g.rt[i].pt, NULL, thread_main, &g.rt[i]);
        if (rc)
            die("cannot start thread %u of %u: %s", i, g.nth, strerror(rc));
    }

    /* The watchdog: progress to the parent, and the stall guard. */
    last_change = now_ns();
    for (;;) {
        uint64_t done = 0, finished = 0, busy = 0, spacer_ops = 0, now;
        struct timespec ts = { 0, 100 * 1000000L };
        for (uint32_t i = 0; i < g.nth; i++) {
            uint32_t fin = atomic_load_explicit(&g.rt[i].finished, memory_order_acquire);
            done += atomic_load_explicit(&g.rt[i].done, memory_order_relaxed) +
                    atomic_load_explicit(&g.rt[i].pre_done, memory_order_relaxed);
            spacer_ops += atomic_load_explicit(&g.rt[i].spacer_ops, memory_order_relaxed);
            finished += fin;
            /* neither done, nor asleep for its time, nor waiting for another */
            busy += !fin && !atomic_load(&g.rt[i].pacing) &&
                    atomic_load_explicit(&g.rt[i].wait_thread, memory_order_relaxed) == PLAN_NONE;
        }
        if (finished == g.nth)
            break;
        now = now_ns();
        /* With --pace, every thread asleep for its time (or waiting for one
         * that is) is a quiet stretch of the trace; one thread in a call
         * keeps the clock running. */
        /* a spacer made or freed is progress too, not shown */
        if (done + spacer_ops != last || (o->pace && busy == 0)) {
            last = done + spacer_ops;
            last_change = now;
        } else if (now - last_change >= (uint64_t)o->stall_s * 1000000000ull) {
            stalled();
        }
        report("progress %" PRIu64 " %" PRIu64 "\n", done, total);
        nanosleep(&ts, NULL);
    }
    for (uint32_t i = 0; i < g.nth; i++) {
        pthread_join(g.rt[i].pt, NULL);
        r.ops += atomic_load(&g.rt[i].done);
        r.failed += g.rt[i].failed;
        r.blocked += g.rt[i].blocked;
        r.lost += g.rt[i].lost;
        r.clobbered += g.rt[i].clobbered;
        r.spaced += g.rt[i].spaced;
        if (g.threads[i].main_ops) {
            t0 = g.rt[i].t_start < t0 ? g.rt[i].t_start : t0;
            t1 = g.rt[i].t_end > t1 ? g.rt[i].t_end : t1;
        }
    }
    r.ns = t1 > t0 ? t1 - t0 : 0;
    r.end_rss = rss_now();
    r.peak_rss = rss_peak();
    r.base_rss = base;
    report("result ops=%" PRIu64 " ns=%" PRIu64 " peak_rss=%" PRIu64 " end_rss=%" PRIu64
           " base_rss=%" PRIu64 " failed=%" PRIu64 " blocked=%" PRIu64 " lost=%" PRIu64
           " clobbered=%" PRIu64 " spaced=%" PRIu64 " backend=%s\n",
           r.ops, r.ns, r.peak_rss, r.end_rss, r.base_rss, r.failed, r.blocked, r.lost, r.clobbered,
           r.spaced, o->backend);
    return DX_OK;
}

uint64_t replay_memory_need(const struct plan_stats *st)
{
    uint64_t slots, need;
    if (__builtin_mul_overflow(st->slots, sizeof(void *), &slots) ||
        __builtin_add_overflow(st->peak_live, slots, &need))
        return UINT64_MAX;
    return need;
}

int replay_parse_result(const char *line, struct replay_result *r, char *backend, unsigned backend_len)
{
    char b[64];
    if (sscanf(line, "result ops=%" SCNu64 " ns=%" SCNu64 " peak_rss=%" SCNu64 " end_rss=%" SCNu64
                     " base_rss=%" SCNu64 " failed=%" SCNu64 " blocked=%" SCNu64 " lost=%" SCNu64
                     " clobbered=%" SCNu64 " spaced=%" SCNu64 " backend=%63s",
               &r->ops, &r->ns, &r->peak_rss, &r->end_rss, &r->base_rss, &r->failed, &r->blocked,
               &r->lost, &r->clobbered, &r->spaced, b) != 11)
        return EINVAL;
    snprintf(backend, backend_len, "%s", b);
    return 0;
}
