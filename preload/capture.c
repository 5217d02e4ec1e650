/* capture: a trace of every malloc-family call, asked for by
 * `shimdump --capture` (capture.h says how it sits on the calls; capctl.h
 * how it is asked for; trace.h what the file holds).
 *
 * Each thread that calls while a capture runs takes a slot (once per
 * capture): CAP_NBUF buffers of CAP_CHUNK events, which it fills in turn
 * and the writer (the sampler thread) empties in the same turn, one chunk
 * of the file per buffer. One producer and one consumer per slot, and a
 * count per buffer between them: the thread raises n[b] as it adds an
 * event (release), the writer sets it back to 0 once the buffer's chunk is
 * written (release); the thread starts a buffer only when its n is 0. So
 * a thread's chunks are written in the order of its events, and nothing on
 * the calls takes a lock or writes a line that another thread writes but
 * once a chunk (the writer's wake-up).
 *
 * The buffers are reserved once (address space, MAP_NORESERVE), touched as
 * threads fill them and given back (MADV_DONTNEED) when a capture ends.
 * They are never unmapped: a thread preempted inside a wrapper when the
 * capture ended may still store its event, into memory that stays ours.
 *
 * The starting heap (the blocks live when the capture begins, per class)
 * is the segment's counters summed just before the table is swapped in:
 * a block allocated between the two is in neither, and its free, in the
 * trace, makes the replay create it (an "orphan", replayplan.h); nothing
 * is counted twice. */
#include "config.h"

#include "capture.h"
#include "rec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <linux/futex.h>
#include <linux/membarrier.h>

#include "capctl.h"
#include "debug.h"
#include "fmt.h"
#include "log.h"
#include "segread.h"
#include "sizeclass.h"
#ifdef HAVE_ZSTD
#include "trace.h"
#endif

/* Read by every wrapper; set by capture_init, read-only after. */
static const struct backend_ops *inner;        /* record's table */
static void (*set_table)(const struct backend_ops *table, const struct backend_ops *cxx);
static int listen_on;                          /* the `capture` key */
static char start_path[CONF_PATH_MAX];         /* capture_start, %p put in; "" for none */
static uint64_t max_bytes_conf;                /* the `capture_max` key */
static char conf_text[256];

static void cap_respond(int fd, uint32_t kind, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The listening socket, and its identity. Sampler thread only. */
static int lfd = -1;
static dev_t lfd_dev;
static ino_t lfd_ino;

#ifdef HAVE_ZSTD

static struct backend_ops cap_ops, cap_cxx_ops; /* the wrappers: C's, C++'s */

#define CAP_CHUNK     1024u            /* events a buffer holds: one chunk */
#define CAP_NBUF      4u               /* buffers per thread */
#define CAP_SLOTS     TRACE_THREADS_MAX
#define CAP_LEVEL     (-3)             /* zstd's level: fast (trace.h, "Byte planes") */
#define CAP_WAIT_NS   50000000ull      /* a thread with no free buffer waits so long, then drops */
#define CAP_TICK_NS   1000000L         /* the writer looks at least this often */
#define CAP_LOOK_NS   100000000ull     /* and at shimdump's connection this often */
#define CAP_REPORT_NS 500000000ull     /* a CAPCTL_PROGRESS this often */
#define CAP_REST_NS   1000000000ull    /* between the end of a capture and the next start */
#define CAP_STUCK_NS  1000000000ull    /* a writer not seen running for so long is stuck */
#define CAP_RSS_NS    100000000ull     /* the process's RSS read this often (trace.h) */

enum { CAP_IDLE = 0, CAP_ACTIVE, CAP_ENDING };

/* One thread's buffers. The thread writes `p` and raises n[]; the writer
 * writes `w` and lowers n[]; each on its own cache line. */
struct cap_slot {
    struct {
        uint32_t cur;              /* the buffer being filled */
        uint32_t fill;             /* events in it */
        uint32_t tid;              /* set before its first event (release) */
        uint32_t busy;             /* 1 while the thread puts an event (see cap_finish) */
        uint64_t dropped;          /* events lost: no free buffer, or a call inside a call */
    } p __attribute__((aligned(64)));
    uint32_t n[CAP_NBUF] __attribute__((aligned(64)));
    struct {
        uint32_t next;             /* the buffer the writer writes next */
        uint32_t partial;          /* the final drain wrote buffer `next`, partly filled */
        uint64_t chunks;           /* chunks written of this slot */
    } w __attribute__((aligned(64)));
};

/* What the wrappers read, on its own line: Synchronization: written by the
 * sampler thread only (state, epoch, release), read by every thread. */
static struct {
    int state;                     /* CAP_IDLE, CAP_ACTIVE, CAP_ENDING */
    uint32_t epoch;                /* one more at each start: a slot of an older one is not this one's */
    uint64_t start_mono;           /* mono_now() at the start */
} cs __attribute__((aligned(64)));
/* Written by threads once each per capture (atomic add). */
static uint32_t nclaimed __attribute__((aligned(64)));
/* Threads without a slot (all CAP_SLOTS taken): their events, lost. Atomic. */
static uint64_t lost __attribute__((aligned(64)));
/* A thread that filled a buffer adds one and wakes the writer (futex). */
static uint32_t kick __attribute__((aligned(64)));
/* The writer adds one each time it frees buffers, and wakes the threads
 * waiting for one (futex) when `waiters` says there are. */
static uint32_t space __attribute__((aligned(64)));
static int waiters;
/* When the writer last showed it runs (CLOCK_MONOTONIC): each tick, each
 * chunk written. */
static uint64_t writer_ns __attribute__((aligned(64)));
/* Set by capture_exit (any thread); read by the writer. */
static int exit_asked;
/* Calls that reached a wrapper as the capture ended (their events are not
 * in the file: counted as dropped). Atomic. */
static uint64_t late;
/* Whether slot i's buffers are writable: the reservation is PROT_NONE (no
 * commit charge, even with vm.overcommit_memory=2) until a thread takes
 * the slot, and stays writable after (a thread stopped inside a wrapper may
 * still write it). Written by the claiming thread, kept across captures. */
static uint8_t slot_mapped[TRACE_THREADS_MAX];
/* MEMBARRIER_CMD_PRIVATE_EXPEDITED is registered (cap_finish). Sampler
 * thread only. */
static int membarrier_ok;

/* The slots and their buffers: reserved at the first capture, never
 * unmapped. Written by the sampler thread before it first starts a
 * capture (release of cs.state), read-only after. */
static struct cap_slot *slots_cap;
static struct trace_event *evbuf;
static size_t evbuf_len;
/* A thread beyond CAP_SLOTS is given this: its events count in `lost`. */
static struct cap_slot no_slot;

/* The writer's own (the sampler thread's). */
static struct {
    int conn, fd;                              /* shimdump's connection; the trace */
    dev_t conn_dev, fd_dev;
    ino_t conn_ino, fd_ino;
    uint32_t seconds;
    uint64_t max_bytes;
    uint64_t start_blocks, start_bytes;
    uint64_t next_look, next_report;           /* mono_now() */
    uint64_t ended;                            /* CLOCK_MONOTONIC of the last end */
    uint32_t used;                             /* slots claimed, as of the last drain */
    int err;                                   /* a failed write's errno */
    int from_start;                            /* capture_start's: no shimdump on conn */
    int cxx_due;                               /* from_start: C++'s table still to swap in */
    uint64_t hwm_start, rss_max, next_rss;     /* the real RSS (trace.h, format 4) */
    struct trace_writer w;
    void *ws;
    size_t ws_len;
} cw = { .conn = -1, .fd = -1 };

static inline struct trace_event *buf_of(const struct cap_slot *s, uint32_t b)
{
    return evbuf + ((size_t)(s - slots_cap) * CAP_NBUF + b) * CAP_CHUNK;
}

static long futex(uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, w, op | FUTEX_PRIVATE_FLAG, val, ts, NULL, 0);
}

/* ---- The threads' side: the wrappers and their events ---- */

/* Wakes the writer: a buffer is full. */
static void cap_kick(void)
{
    __atomic_fetch_add(&kick, 1, __ATOMIC_RELEASE);
    futex(&kick, FUTEX_WAKE, 1, NULL);
}

#define SLOT_EV_BYTES ((size_t)CAP_NBUF * CAP_CHUNK * sizeof(struct trace_event))

/* A slot for the calling thread in this capture, or NULL: no capture (the
 * call counted late), or a thread of the shim's own. */
__attribute__((noinline))
static struct cap_slot *cap_claim(void)
{
    if (rt.cap_off)
        return NULL;
    if (__atomic_load_n(&cs.state, __ATOMIC_ACQUIRE) != CAP_ACTIVE) {
        __atomic_fetch_add(&late, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    uint32_t e = __atomic_load_n(&cs.epoch, __ATOMIC_ACQUIRE);
    uint32_t i = __atomic_fetch_add(&nclaimed, 1, __ATOMIC_RELAXED);
    struct cap_slot *s = i < CAP_SLOTS ? &slots_cap[i] : &no_slot;
    if (s != &no_slot && !slot_mapped[i]) {
        int saved = errno;
        if (mprotect(buf_of(s, 0), SLOT_EV_BYTES, PROT_READ | PROT_WRITE) == 0)
            slot_mapped[i] = 1;
        else
            s = &no_slot;   /* no memory to commit: its events count as lost */
        errno = saved;
    }
    if (s != &no_slot) {
        /* cleared by the writer at the start (below the claims of the
         * last capture), or never used */
        s->p.cur = s->p.fill = 0;
        s->p.dropped = 0;
        __atomic_store_n(&s->p.tid, my_tid(), __ATOMIC_RELEASE);
    }
    rt.cap = s;
    rt.cap_epoch = e;
    return s;
}

/* Waits for buffer b of s to be written (CAP_WAIT_NS at most). Returns 1
 * when it is free, 0 when the event is to be dropped. */
__attribute__((noinline))
static int cap_wait_free(struct cap_slot *s, uint32_t b)
{
    /* A writer not seen running for a second is stuck (in a write to slow
     * storage, say), not slow: every call would wait its 50 ms, a convoy.
     * Drop without waiting until it runs again. A slow one is waited for,
     * so that a busy program's capture stays whole. */
    /* A capture from the start (capture_start) may fill its buffers before
     * any tracked allocation has started the sampler, its writer: start it
     * now (a no-op once started). */
    if (__atomic_load_n(&sampler_state, __ATOMIC_ACQUIRE) == S_NONE)
        start_sampler();
    uint64_t seen_ns = __atomic_load_n(&writer_ns, __ATOMIC_ACQUIRE);
    uint64_t now0 = clock_ns(CLOCK_MONOTONIC);
    if (now0 > seen_ns && now0 - seen_ns > CAP_STUCK_NS)
        return 0;
    int saved = errno;
    uint64_t t0 = 0;
    int ok = 0;
    for (;;) {
        uint32_t seen = __atomic_load_n(&space, __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&s->n[b], __ATOMIC_ACQUIRE) == 0) {
            ok = 1;
            break;
        }
        if (__atomic_load_n(&cs.state, __ATOMIC_ACQUIRE) != CAP_ACTIVE)
            break;
        uint64_t now = clock_ns(CLOCK_MONOTONIC);
        if (!t0)
            t0 = now;
        else if (now - t0 > CAP_WAIT_NS)
            break;
        cap_kick();
        struct timespec ts = { 0, CAP_TICK_NS };
        __atomic_fetch_add(&waiters, 1, __ATOMIC_ACQ_REL);
        futex(&space, FUTEX_WAIT, seen, &ts);
        __atomic_fetch_sub(&waiters, 1, __ATOMIC_RELEASE);
    }
    errno = saved;
    return ok;
}

/* Puts one event into the calling thread's buffer. */
static void cap_put(unsigned op, uint64_t t, const void *id, const void *aux, uint64_t size,
                    size_t usable, unsigned align_or_len)
{
    struct cap_slot *s = rt.cap;
    if (unlikely(rt.cap_off))
        return;   /* the shim's own call (as_shim: the sampler's start), in a thread with a slot */
    if (unlikely(s == NULL || rt.cap_epoch != __atomic_load_n(&cs.epoch, __ATOMIC_RELAXED))) {
        s = cap_claim();
        if (s == NULL)
            return;
    }
    if (unlikely(s == &no_slot)) {
        __atomic_fetch_add(&lost, 1, __ATOMIC_RELAXED);
        return;
    }
    if (unlikely(s->p.busy)) {
        /* a signal handler's call inside ours, on this thread */
        __atomic_store_n(&s->p.dropped, s->p.dropped + 1, __ATOMIC_RELAXED);
        return;
    }
    /* busy, then the state and epoch again: cap_finish sets the state,
     * then (membarrier) reads busy; so an event is either seen here as
     * too late, or waited for there before the last buffers are written. */
    __atomic_store_n(&s->p.busy, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (unlikely(__atomic_load_n(&cs.state, __ATOMIC_RELAXED) != CAP_ACTIVE ||
                 __atomic_load_n(&cs.epoch, __ATOMIC_RELAXED) != rt.cap_epoch)) {
        __atomic_store_n(&s->p.busy, 0, __ATOMIC_RELEASE);
        __atomic_fetch_add(&late, 1, __ATOMIC_RELAXED);
        return;
    }
    uint32_t b = s->p.cur, i = s->p.fill;
    SHIM_ASSERT(b < CAP_NBUF && i < CAP_CHUNK);
    if (i == 0 && __atomic_load_n(&s->n[b], __ATOMIC_ACQUIRE) != 0 && !cap_wait_free(s, b)) {
        __atomic_store_n(&s->p.dropped, s->p.dropped + 1, __ATOMIC_RELAXED);
        __atomic_store_n(&s->p.busy, 0, __ATOMIC_RELEASE);
        return;
    }
    struct trace_event *e = &buf_of(s, b)[i];
    e->t_ns = t > cs.start_mono ? t - cs.start_mono : 0;
    e->id = (uint64_t)(uintptr_t)id;
    e->aux = (uint64_t)(uintptr_t)aux;
    e->size = size;
    e->usable = usable > UINT32_MAX ? UINT32_MAX : (uint32_t)usable;
    e->op = (uint8_t)op;
    e->flags = 0;
    e->align = (uint8_t)align_or_len;   /* log2 of the alignment, or a realloc's length */
    e->reserved = (uint8_t)(align_or_len >> 8);
    __atomic_store_n(&s->n[b], i + 1, __ATOMIC_RELEASE);
    if (i + 1 == CAP_CHUNK) {
        s->p.cur = (b + 1) % CAP_NBUF;
        s->p.fill = 0;
        __atomic_store_n(&s->p.busy, 0, __ATOMIC_RELEASE);
        int saved = errno;
        cap_kick();
        errno = saved;
    } else {
        s->p.fill = i + 1;
        __atomic_store_n(&s->p.busy, 0, __ATOMIC_RELEASE);
    }
}

static inline unsigned log2_of(size_t align)
{
    return align ? (unsigned)__builtin_ctzl(align) : 0;
}

/* The usable size of a block the call returned (0 for none). */
static inline size_t usable_of(void *p)
{
    return p ? hot.usable(p) : 0;
}

/* Allocations and reallocs are stamped after the call returned; frees
 * before the call; a realloc carries its call's length too (trace.h). */
static void *cap_malloc(size_t n)
{
    void *p = inner->malloc(n);
    cap_put(TRACE_OP_MALLOC, mono_now(), p, NULL, n, usable_of(p), 0);
    return p;
}

static void cap_free(void *p)
{
    if (p != NULL)
        cap_put(TRACE_OP_FREE, mono_now(), p, NULL, 0, hot.usable(p), 0);
    inner->free(p);
}

static void cap_free_sized(void *p, size_t n)
{
    cap_put(TRACE_OP_DELETE_SIZED, mono_now(), p, NULL, n, hot.usable(p), 0);
    inner->free_sized(p, n);
}

static void *cap_calloc(size_t n, size_t size)
{
    void *p = inner->calloc(n, size);
    cap_put(TRACE_OP_CALLOC, mono_now(), p, (void *)(uintptr_t)n, size, usable_of(p), 0);
    return p;
}

static void *cap_realloc(void *p, size_t n)
{
    size_t ou = usable_of(p);
    uint64_t t0 = mono_now();
    void *q = inner->realloc(p, n);
    uint64_t t1 = mono_now();
    cap_put(TRACE_OP_REALLOC, t1, q, p, n, ou, trace_dur_encode(t1 > t0 ? t1 - t0 : 0));
    return q;
}

static void *cap_aligned(size_t align, size_t n)
{
    void *p = inner->aligned(align, n);
    cap_put(TRACE_OP_MEMALIGN, mono_now(), p, NULL, n, usable_of(p), log2_of(align));
    return p;
}

/* C++'s operators (cxx.c's table while a capture runs): new[] is recorded
 * as new, and the aligned deletes as delete, as cxx.c serves them. */
static void *cap_new(size_t n)
{
    void *p = inner->malloc(n);
    cap_put(TRACE_OP_NEW, mono_now(), p, NULL, n, usable_of(p), 0);
    return p;
}

static void cap_delete(void *p)
{
    if (p != NULL)
        cap_put(TRACE_OP_DELETE, mono_now(), p, NULL, 0, hot.usable(p), 0);
    inner->free(p);
}

static void *cap_new_aligned(size_t align, size_t n)
{
    void *p = inner->aligned(align, n);
    cap_put(TRACE_OP_NEW_ALIGNED, mono_now(), p, NULL, n, usable_of(p), log2_of(align));
    return p;
}

/* ---- The writer's side (the sampler thread) ---- */


/* Writes every full buffer, in each slot's order; with `final`, the
 * partly filled ones too. Sets cw.err on a failed write. Writes nothing
 * once the file has reached max_bytes: it ends at the first chunk that
 * reaches the limit, and what threads hold buffered then is not written. */
static void cap_drain(int final)
{
    uint32_t used = __atomic_load_n(&nclaimed, __ATOMIC_ACQUIRE);
    int freed = 0;
    if (used > CAP_SLOTS)
        used = CAP_SLOTS;
    cw.used = used;
    for (uint32_t i = 0; i < used && !cw.err && cw.w.off < cw.max_bytes; i++) {
        struct cap_slot *s = &slots_cap[i];
        uint32_t tid = __atomic_load_n(&s->p.tid, __ATOMIC_ACQUIRE);
        if (tid == 0)
            continue;   /* claimed, not yet set: no event either */
        for (uint32_t k = 0; k < CAP_NBUF && !cw.err && cw.w.off < cw.max_bytes; k++) {
            uint32_t b = s->w.next;
            uint32_t m = __atomic_load_n(&s->n[b], __ATOMIC_ACQUIRE);
            if (m == 0 || (m < CAP_CHUNK && !final))
                break;
            /* The file is still the one shimdump gave: a program that
             * closed the number and reused it must not get our bytes. */
            if (!file_id_ok(cw.fd, cw.fd_dev, cw.fd_ino)) {
                cw.err = EBADF;
                break;
            }
            int rc = trace_writer_chunk(&cw.w, tid, buf_of(s, b), m);
            if (rc != 0) {
                cw.err = rc;
                break;
            }
            s->w.chunks++;
            __atomic_store_n(&writer_ns, clock_ns(CLOCK_MONOTONIC), __ATOMIC_RELEASE);
            if (m < CAP_CHUNK) {
                s->w.partial = 1;
                break;   /* final: written as it is; it stays (see cap_finish) */
            }
            __atomic_store_n(&s->n[b], 0, __ATOMIC_RELEASE);
            s->w.next = (b + 1) % CAP_NBUF;
            freed = 1;
        }
    }
    if (freed) {
        __atomic_fetch_add(&space, 1, __ATOMIC_RELEASE);
        if (__atomic_load_n(&waiters, __ATOMIC_ACQUIRE))
            futex(&space, FUTEX_WAKE, INT32_MAX, NULL);
    }
}

/* Events lost: threads without a slot, calls that found no free buffer
 * or came as the capture ended, and (final) what the buffers still hold
 * that was not written (the file reached its limit, or a write failed). */
static uint64_t cap_dropped(int final)
{
    uint64_t d = __atomic_load_n(&lost, __ATOMIC_RELAXED) + __atomic_load_n(&late, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < cw.used; i++) {
        struct cap_slot *s = &slots_cap[i];
        d += __atomic_load_n(&s->p.dropped, __ATOMIC_RELAXED);
        for (uint32_t k = 0; final && k < CAP_NBUF; k++) {
            uint32_t b = (s->w.next + k) % CAP_NBUF;
            uint32_t m = __atomic_load_n(&s->n[b], __ATOMIC_ACQUIRE);
            if (m == 0 || (k == 0 && m < CAP_CHUNK && s->w.partial))
                break;   /* empty, or the partial one already written */
            d += m;
            if (m < CAP_CHUNK)
                break;
        }
    }
    return d;
}

/* Threads that wrote a chunk, by tid (a tid the kernel gave twice in one
 * capture is one thread to a reader). */
static uint32_t cap_threads(void)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < cw.used; i++) {
        if (!slots_cap[i].w.chunks)
            continue;
        uint32_t j = 0;
        while (j < i && !(slots_cap[j].w.chunks && slots_cap[j].p.tid == slots_cap[i].p.tid))
            j++;
        n += j == i;
    }
    return n;
}

static void cap_fill_msg(struct capctl_msg *m, uint32_t kind)
{
    memset(m, 0, sizeof *m);
    m->magic = CAPCTL_MAGIC;
    m->version = CAPCTL_VERSION;
    m->kind = kind;
    m->seconds = cw.seconds;
    m->max_bytes = cw.max_bytes;
    m->events = cw.w.events;
    m->bytes = cw.w.off;
    m->dropped = cap_dropped(0);
    uint64_t now = mono_now();
    m->elapsed_ns = now > cs.start_mono ? now - cs.start_mono : 0;
    m->start_blocks = cw.start_blocks;
    m->start_bytes = cw.start_bytes;
    m->threads = cw.used;   /* threads with a slot; CAPCTL_DONE counts those that wrote */
}

/* Sends m on shimdump's connection, if it is still ours; never waits. */
static void cap_send(const struct capctl_msg *m)
{
    if (file_id_ok(cw.conn, cw.conn_dev, cw.conn_ino))
        send(cw.conn, m, sizeof *m, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void cap_close_conn(void)
{
    if (file_id_ok(cw.conn, cw.conn_dev, cw.conn_ino))
        close(cw.conn);
    cw.conn = -1;
}

/* The process's VmRSS and VmHWM in bytes, from /proc/self/status (open
 * and read: no stdio, no allocation). Returns 0, or an errno value (*rss
 * and *hwm then 0). */
static int cap_rss(uint64_t *rss, uint64_t *hwm)
{
    char buf[4096];
    ssize_t n = 0, r;
    *rss = *hwm = 0;
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    while (n < (ssize_t)sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - (size_t)n)) > 0)
        n += r;
    close(fd);
    buf[n] = '\0';
    static const char *const keys[2] = { "\nVmHWM:", "\nVmRSS:" };
    uint64_t *out[2] = { hwm, rss };
    for (int k = 0; k < 2; k++) {
        const char *p = strstr(buf, keys[k]);
        if (!p)
            return ENOENT;
        p += strlen(keys[k]);
        while (*p == ' ' || *p == '\t')
            p++;
        uint64_t v = 0;
        while (*p >= '0' && *p <= '9' && v < (1ull << 50))
            v = v * 10 + (uint64_t)(*p++ - '0');
        *out[k] = v << 10;   /* kB */
    }
    return 0;
}

/* The real RSS at the end into the trailer (trace.h): the peak is the
 * kernel's VmHWM where it rose during the capture, else the highest VmRSS
 * read. */
static void cap_rss_end(void)
{
    uint64_t rss, hwm;
    if (cap_rss(&rss, &hwm) != 0 || !cw.hwm_start)
        return;
    uint64_t seen = cw.rss_max > rss ? cw.rss_max : rss;
    cw.w.rss_end = rss;
    cw.w.rss_peak = hwm > cw.hwm_start ? hwm : seen;
}

/* Ends the capture: record's table back, every buffer written, the
 * trailer, CAPCTL_DONE. */
static void cap_finish(uint32_t end)
{
    struct capctl_msg m;
    struct timespec settle = { 0, CAP_TICK_NS };

    __atomic_store_n(&cs.state, CAP_ENDING, __ATOMIC_SEQ_CST);
    set_table(inner, inner);
    __atomic_fetch_add(&space, 1, __ATOMIC_RELEASE);
    futex(&space, FUTEX_WAKE, INT32_MAX, NULL);
    /* Every thread that is putting an event finishes it before the last
     * buffers are written: a barrier on every thread of the process (so a
     * thread's busy is seen, or it sees the state), then a wait for each
     * busy slot, 100 ms in all at most. Without membarrier, a pause in its
     * place. A call that comes later is counted late. */
    if (!membarrier_ok || syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
        nanosleep(&settle, NULL);
    uint32_t used = __atomic_load_n(&nclaimed, __ATOMIC_ACQUIRE);
    uint64_t until = clock_ns(CLOCK_MONOTONIC) + 100000000ull;
    for (uint32_t i = 0; i < used && i < CAP_SLOTS; i++) {
        struct timespec tiny = { 0, 50000 };
        while (__atomic_load_n(&slots_cap[i].p.busy, __ATOMIC_ACQUIRE) &&
               clock_ns(CLOCK_MONOTONIC) < until)
            nanosleep(&tiny, NULL);
    }
    cap_drain(1);
    uint64_t now = mono_now();
    uint64_t dropped = cap_dropped(1);
    if (!cw.err) {
        cw.w.threads = cap_threads();
        cap_rss_end();
        if (!file_id_ok(cw.fd, cw.fd_dev, cw.fd_ino))
            cw.err = EBADF;
        else
            cw.err = trace_writer_end(&cw.w, dropped, now > cs.start_mono ? now - cs.start_mono : 0);
    }
    if (file_id_ok(cw.fd, cw.fd_dev, cw.fd_ino))
        close(cw.fd);
    cw.fd = -1;
    cap_fill_msg(&m, CAPCTL_DONE);
    m.threads = cw.w.threads;
    m.end = cw.err ? CAPCTL_END_ERROR : end;
    m.err = cw.err;
    if (cw.err)
        fmt_buf(m.text, sizeof m.text, "writing the trace failed: %s", strerrordesc_np(cw.err));
    cap_send(&m);
    cap_close_conn();
    if (cw.from_start && cw.err)
        log_msg("capture_start: writing %s failed: %s; the trace ends there, recording goes on",
                start_path, strerrordesc_np(cw.err));
    cw.from_start = 0;
    /* The buffers' memory back; their address space stays (see above). */
    madvise(evbuf, evbuf_len, MADV_DONTNEED);
    cw.ended = clock_ns(CLOCK_MONOTONIC);
    __atomic_store_n(&cs.state, CAP_IDLE, __ATOMIC_RELEASE);
}

/* The starting heap: the live blocks and their usable bytes per class, as
 * the segment's counters say now. */
static void cap_start_heap(struct trace_header *h)
{
    static struct seg_counters sum[SIZECLASS_COUNT];
    seg_sum(seg, &geo, sum);
    cw.start_blocks = cw.start_bytes = 0;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        /* every free in the sum is of a block whose allocation is in it
         * (segread.c), but a sum given up on (EAGAIN) is as close as could
         * be read: never below nothing */
        uint64_t n = sum[c].allocs > sum[c].frees ? sum[c].allocs - sum[c].frees : 0;
        uint64_t u = sum[c].usable_alloc > sum[c].usable_free
                         ? sum[c].usable_alloc - sum[c].usable_free : 0;
        if (n > TRACE_START_BLOCKS_MAX - cw.start_blocks)
            n = TRACE_START_BLOCKS_MAX - cw.start_blocks;
        if (u > (1ull << 50))
            u = 1ull << 50;
        h->start[c].live_count = n;
        h->start[c].live_usable = n ? u : 0;
        cw.start_blocks += n;
        cw.start_bytes += h->start[c].live_usable;
    }
}

/* What the allocator holds free besides the live blocks, by its own
 * count, where it is glibc: the free chunks of every arena, each arena's
 * top chunk among them (mallinfo2's fordblks), the holes that a replay
 * under the same config starts with (trace.h). jemalloc's and tcmalloc's
 * free space is not asked: their replays start from the live blocks alone.
 * Called in the sampler thread (never captured, and it asks the same every
 * pass), just before the starting heap is read, mallinfo2 alone: it locks
 * each arena in turn and sums its bins. */
static void cap_start_free(struct trace_header *h)
{
    if (geo.backend != SEG_BACKEND_GLIBC || !be->mallinfo2)
        return;
    struct mallinfo2 m = be->mallinfo2();
    h->start_free = m.fordblks < (1ull << 50) ? m.fordblks : 1ull << 50;
    h->flags |= TRACE_F_START_FREE;
}

/* The compressor (loaded), its workspace, the slots and the reservation
 * of their buffers, once. Returns 0, or an errno value with why set. */
static int cap_reserve(char *why, size_t whylen)
{
    if (slots_cap)
        return 0;
    if (trace_writer_load(why, whylen) != 0)
        return ENOENT;
    size_t slen = (sizeof(struct cap_slot) * CAP_SLOTS + 4095) & ~(size_t)4095;
    size_t elen = (size_t)CAP_SLOTS * SLOT_EV_BYTES;
    cw.ws_len = trace_writer_workspace(CAP_CHUNK, CAP_LEVEL);
    if (cw.ws_len == 0) {
        fmt_buf(why, whylen, "this libzstd cannot compress at level %d", CAP_LEVEL);
        return ENOTSUP;
    }
    void *ws = mmap(NULL, cw.ws_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *sl = mmap(NULL, slen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    /* address space only: each slot's part is made writable when taken */
    void *ev = mmap(NULL, elen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (ws == MAP_FAILED || sl == MAP_FAILED || ev == MAP_FAILED) {
        int err = errno;
        if (ws != MAP_FAILED)
            munmap(ws, cw.ws_len);
        if (sl != MAP_FAILED)
            munmap(sl, slen);
        if (ev != MAP_FAILED)
            munmap(ev, elen);
        fmt_buf(why, whylen, "cannot map the threads' buffers (%zu MiB of address space): %s",
                elen >> 20, strerrordesc_np(err));
        return err;
    }
    madvise(ev, elen, MADV_NOHUGEPAGE);   /* a thread's 160 KiB must not become 2 MiB */
    cw.ws = ws;
    evbuf = ev;
    evbuf_len = elen;
    membarrier_ok = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    __atomic_store_n(&slots_cap, (struct cap_slot *)sl, __ATOMIC_RELEASE);
    return 0;
}

/* A capture that cannot start: the reason said to shimdump on conn, or,
 * for capture_start's (conn < 0), on stderr. */
static void cap_refuse(int conn, int err, const char *why)
{
    if (conn >= 0)
        cap_respond(conn, CAPCTL_REFUSED, err, "%s", why);
    else
        log_msg("capture_start: %s: %s; no trace, recording goes on", start_path, why);
}

/* Starts a capture into fd for shimdump on conn, as asked in *req; or,
 * with conn < 0 and no req, capture_start's from the shim's start, with
 * no time limit. Returns 0, or refuses (the reason said on conn, or on
 * stderr) and returns -1. */
static int cap_start(int conn, int fd, const struct capctl_msg *req)
{
    struct stat st;
    struct trace_header h;
    struct capctl_msg m;
    int err;

    int fl = fcntl(fd, F_GETFL);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || fl < 0 || (fl & O_ACCMODE) == O_RDONLY ||
        (fl & O_APPEND)) {
        /* pwrite places the chunks; O_APPEND would put every one at the end */
        cap_refuse(conn, EBADF, "the trace's descriptor is not a regular file open "
                   "for writing (without O_APPEND)");
        return -1;
    }
    uint64_t now = clock_ns(CLOCK_MONOTONIC);
    if (cw.ended && now - cw.ended < CAP_REST_NS) {
        cap_refuse(conn, EBUSY, "a capture ended less than a second ago; try again");
        return -1;
    }
    char why[160];
    if ((err = cap_reserve(why, sizeof why)) != 0) {
        cap_refuse(conn, err, why);
        return -1;
    }
    memset(&h, 0, sizeof h);
    h.pid = (uint32_t)getpid();
    h.page_size = (uint32_t)sysconf(_SC_PAGESIZE);
    h.flags = TRACE_F_START_EXACT | (conn < 0 ? TRACE_F_FROM_START : 0);
    h.backend = geo.backend;
    memcpy(h.comm, seg->comm, sizeof h.comm < sizeof seg->comm ? sizeof h.comm : sizeof seg->comm);
    h.comm[sizeof h.comm - 1] = '\0';
    fmt_buf(h.backend_name, sizeof h.backend_name, "%s", be->name);
    fmt_buf(h.config, sizeof h.config, "%s", conf_text);

    /* Slots of the last capture cleared (a thread takes one by its
     * number; claims made as it ended count too), then the heap and the
     * clock's origin, then the table. */
    uint32_t prev = __atomic_load_n(&nclaimed, __ATOMIC_ACQUIRE);
    memset(slots_cap, 0, sizeof(struct cap_slot) * (prev < CAP_SLOTS ? prev : CAP_SLOTS));
    cw.used = 0;
    __atomic_store_n(&nclaimed, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&lost, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&late, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&writer_ns, clock_ns(CLOCK_MONOTONIC), __ATOMIC_RELEASE);
    cap_start_free(&h);
    cw.hwm_start = cw.rss_max = 0;
    if (cap_rss(&h.rss_start, &h.hwm_start) == 0 && h.hwm_start) {
        h.flags |= TRACE_F_RSS;
        cw.hwm_start = h.hwm_start;
        cw.rss_max = h.rss_start;
    }
    cap_start_heap(&h);
    h.start_ns = clock_ns(CLOCK_REALTIME);
    cs.start_mono = mono_now();
    h.start_mono_ns = cs.start_mono;
    memset(&cw.w, 0, sizeof cw.w);
    if ((err = trace_writer_begin(&cw.w, fd, &h, CAP_CHUNK, CAP_LEVEL, cw.ws, cw.ws_len)) != 0) {
        fmt_buf(why, sizeof why, "cannot write the trace's header: %s", strerrordesc_np(err));
        cap_refuse(conn, err, why);
        return -1;
    }
    cw.conn = conn;
    cw.fd = fd;
    cw.conn_dev = 0;
    cw.err = 0;
    if (conn >= 0 && fstat(conn, &st) == 0) {
        cw.conn_dev = st.st_dev;
        cw.conn_ino = st.st_ino;
    }
    fstat(fd, &st);
    cw.fd_dev = st.st_dev;
    cw.fd_ino = st.st_ino;
    cw.seconds = req ? req->seconds : 0;   /* 0: no time limit */
    cw.max_bytes = req && req->max_bytes && req->max_bytes < max_bytes_conf ? req->max_bytes
                                                                             : max_bytes_conf;
    cw.from_start = conn < 0;
    cw.next_rss = cs.start_mono + CAP_RSS_NS;
    cw.next_look = cs.start_mono + CAP_LOOK_NS;
    cw.next_report = cs.start_mono + CAP_REPORT_NS;
    __atomic_store_n(&exit_asked, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&cs.epoch, cs.epoch + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&cs.state, CAP_ACTIVE, __ATOMIC_RELEASE);
    set_table(&cap_ops, &cap_cxx_ops);
    if (conn >= 0) {
        cap_fill_msg(&m, CAPCTL_STARTED);
        cap_send(&m);
    }
    return 0;
}

int capture_active(void)
{
    return __atomic_load_n(&cs.state, __ATOMIC_ACQUIRE) == CAP_ACTIVE;
}

void capture_tick(void)
{
    if (!capture_active())
        return;
    __atomic_store_n(&writer_ns, clock_ns(CLOCK_MONOTONIC), __ATOMIC_RELEASE);
    cap_drain(0);
    if (cw.err) {
        cap_finish(CAPCTL_END_ERROR);
        return;
    }
    if (cw.cxx_due) {
        /* capture_start's: record_start handed dispatch one table for
         * both (capture_init); C++'s own wrappers from now on */
        cw.cxx_due = 0;
        set_table(&cap_ops, &cap_cxx_ops);
    }
    uint64_t now = mono_now();
    if (cw.seconds && now - cs.start_mono >= (uint64_t)cw.seconds * 1000000000ull) {
        cap_finish(CAPCTL_END_TIME);
        return;
    }
    if (now >= cw.next_rss && cw.hwm_start) {
        uint64_t rss, hwm;
        cw.next_rss = now + CAP_RSS_NS;
        if (cap_rss(&rss, &hwm) == 0 && rss > cw.rss_max)
            cw.rss_max = rss;
    }
    if (cw.w.off >= cw.max_bytes) {
        cap_finish(CAPCTL_END_SIZE);
        return;
    }
    if (__atomic_load_n(&exit_asked, __ATOMIC_ACQUIRE)) {
        cap_finish(CAPCTL_END_EXIT);
        return;
    }
    if (now >= cw.next_look) {
        /* shimdump's STOP, or its end (EOF, or the number not ours); and
         * another request, refused */
        struct capctl_msg m;
        cw.next_look = now + CAP_LOOK_NS;
        capture_poll();
        ssize_t r = file_id_ok(cw.conn, cw.conn_dev, cw.conn_ino)
                        ? recv(cw.conn, &m, sizeof m, MSG_DONTWAIT) : 0;
        if (cw.from_start) {
            /* no shimdump to ask for its end: the size limit or the exit */
        } else if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR) ||
            (r == (ssize_t)sizeof m && m.kind == CAPCTL_STOP)) {
            cap_finish(CAPCTL_END_ASKED);
            return;
        }
    }
    if (now >= cw.next_report) {
        struct capctl_msg m;
        cw.next_report = now + CAP_REPORT_NS;
        cap_fill_msg(&m, CAPCTL_PROGRESS);
        cap_send(&m);
    }
}

void capture_wait(const struct timespec *until)
{
    struct timespec now, ts;
    uint32_t seen = __atomic_load_n(&kick, __ATOMIC_ACQUIRE);
    clock_gettime(CLOCK_MONOTONIC, &now);
    ts.tv_sec = 0;
    ts.tv_nsec = CAP_TICK_NS;
    int64_t left = (int64_t)(until->tv_sec - now.tv_sec) * 1000000000 + (until->tv_nsec - now.tv_nsec);
    if (left <= 0)
        return;
    if (left < CAP_TICK_NS)
        ts.tv_nsec = left;
    futex(&kick, FUTEX_WAIT, seen, &ts);
}

void capture_end_sampler(void)
{
    if (capture_active())
        cap_finish(CAPCTL_END_EXIT);
}

void capture_exit(void)
{
    if (!capture_active())
        return;
    if (rt.cap_off == 2 || __atomic_load_n(&sampler_state, __ATOMIC_ACQUIRE) == S_NONE) {
        /* the sampler thread itself; or no sampler, no other writer (a
         * short program captured from its start) */
        cap_finish(CAPCTL_END_EXIT);
        return;
    }
    __atomic_store_n(&exit_asked, 1, __ATOMIC_RELEASE);
    futex(&kick, FUTEX_WAKE, 1, NULL);
    for (int i = 0; i < 5000 && __atomic_load_n(&cs.state, __ATOMIC_ACQUIRE) != CAP_IDLE; i++) {
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
}

void capture_fork_child(void)
{
    rt.cap = NULL;
    if (__atomic_load_n(&cs.state, __ATOMIC_RELAXED) != CAP_IDLE) {
        set_table(inner, inner);
        __atomic_store_n(&cs.state, CAP_IDLE, __ATOMIC_RELEASE);
        /* the parent's descriptors, if the numbers are still theirs */
        if (file_id_ok(cw.fd, cw.fd_dev, cw.fd_ino))
            close(cw.fd);
        if (file_id_ok(cw.conn, cw.conn_dev, cw.conn_ino))
            close(cw.conn);
        cw.fd = cw.conn = -1;
        cw.from_start = cw.cxx_due = 0;
        madvise(evbuf, evbuf_len, MADV_DONTNEED);
    }
    if (file_id_ok(lfd, lfd_dev, lfd_ino))
        close(lfd);   /* the parent's socket: the child listens under its own pid */
    lfd = -1;
}

#else /* !HAVE_ZSTD */

int capture_active(void) { return 0; }
void capture_tick(void) {}
void capture_wait(const struct timespec *until) { (void)until; }
void capture_end_sampler(void) {}
void capture_exit(void) {}
void capture_fork_child(void)
{
    if (file_id_ok(lfd, lfd_dev, lfd_ino))
        close(lfd);
    lfd = -1;
}

#endif /* HAVE_ZSTD */

/* ---- Requests ---- */

static void cap_respond(int fd, uint32_t kind, int err, const char *fmt, ...)
{
    struct capctl_msg m;
    va_list ap;
    memset(&m, 0, sizeof m);
    m.magic = CAPCTL_MAGIC;
    m.version = CAPCTL_VERSION;
    m.kind = kind;
    m.err = err;
    va_start(ap, fmt);
    fmt_vbuf(m.text, sizeof m.text, fmt, ap);
    va_end(ap);
    send(fd, &m, sizeof m, MSG_DONTWAIT | MSG_NOSIGNAL);
}

void capture_listen(void)
{
    struct sockaddr_un a;
    struct stat st;
    if (!listen_on || lfd >= 0)
        return;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    int len = fmt_buf(a.sun_path + 1, sizeof a.sun_path - 1, CAPCTL_NAME, (unsigned)getpid());
    int fd = high_fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd < 0)
        return;
    if (bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)) != 0 ||
        listen(fd, 4) != 0 || fstat(fd, &st) != 0) {
        /* The name is taken: by a process of this pid in another pid
         * namespace that shares this network namespace, or by a socket
         * that someone made to pass for this process's. shimdump --capture
         * checks whose it is before it sends anything; here, one line. */
        if (errno == EADDRINUSE)
            log_msg("capture: the socket name %s is taken by another socket (another process's, "
                    "maybe another user's): shimdump --capture cannot reach this process",
                    a.sun_path + 1);
        close(fd);
        return;
    }
    lfd_dev = st.st_dev;
    lfd_ino = st.st_ino;
    lfd = fd;
}

/* Whether a user of uid may capture this process: root; or its owner,
 * where ptrace would let them (one user in every uid and gid, dumpable):
 * a setuid or setgid program, or one that changed users, is root's to
 * capture only. */
static int may_capture(uid_t uid)
{
    uid_t r, e, su;
    gid_t rg, eg, sg;
    if (uid == 0)
        return 1;
    if (getresuid(&r, &e, &su) != 0 || getresgid(&rg, &eg, &sg) != 0)
        return 0;
    return uid == e && r == e && su == e && rg == eg && sg == eg &&
           prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1;
}

/* One connection: who asks, what, and a capture or a refusal. */
static void cap_request(int c)
{
    struct ucred cred;
    socklen_t cl = sizeof cred;
    struct capctl_msg req;
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * 4)];
    } ctl;
    struct iovec iov = { &req, sizeof req };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                         .msg_controllen = sizeof ctl.buf };
    struct pollfd pf = { c, POLLIN, 0 };
    int fd = -1;

    /* Who, before anything is read: another user (anyone may connect to
     * an abstract socket) is closed on at once, so that nobody else can
     * keep this thread waiting, nor hand it descriptors to close. shimdump
     * tells such a user why before it connects. */
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 ||
        (cred.uid != 0 && cred.uid != geteuid())) {
        close(c);
        return;
    }
    /* The request, before any answer: a socket closed with a message
     * unread would reset the connection and lose the answer. shimdump
     * sends it as it connects; a capture under way waits for it 20 ms at
     * most (its writer is this thread). */
    memset(&req, 0, sizeof req);
    ssize_t r = poll(&pf, 1, capture_active() ? 20 : 500) == 1
                    ? recvmsg(c, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) : -1;
    for (struct cmsghdr *h = r >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; h; h = CMSG_NXTHDR(&mh, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
            continue;
        size_t nfd = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t k = 0; k < nfd; k++) {
            int got;
            memcpy(&got, CMSG_DATA(h) + k * sizeof(int), sizeof got);
            if (fd < 0)
                fd = high_fd(got);
            else
                close(got);
        }
    }
    if (!may_capture(cred.uid)) {
        cap_respond(c, CAPCTL_REFUSED, EPERM, "only root may %s it: it runs as more than one "
                    "user or group, or is not dumpable (as ptrace would say)",
                    r == (ssize_t)sizeof req && req.kind == CAPCTL_SET ? "change the settings of"
                                                                       : "capture");
    } else if (r == (ssize_t)sizeof req && !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
               req.magic == CAPCTL_MAGIC && req.version == CAPCTL_VERSION &&
               req.kind == CAPCTL_SET && fd < 0) {
        char why[sizeof req.text], now[sizeof req.text];
        req.text[sizeof req.text - 1] = '\0';
        int err = settings_apply(req.text, why, sizeof why, now, sizeof now);
        if (err && err != EALREADY)
            cap_respond(c, CAPCTL_REFUSED, err, "%s", why);
        else
            cap_respond(c, CAPCTL_SET_DONE, err, "%s", now);
    } else if (r != (ssize_t)sizeof req || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
        req.magic != CAPCTL_MAGIC || req.version != CAPCTL_VERSION || req.kind != CAPCTL_START ||
        req.seconds < 1 || req.seconds > CAPCTL_SECONDS_MAX || fd < 0) {
        cap_respond(c, CAPCTL_REFUSED, EPROTO, "not a capture request this libmallocshim.so "
                    "understands (protocol %u)", CAPCTL_VERSION);
    } else if (!capture_active()) {
#ifdef HAVE_ZSTD
        if (cap_start(c, fd, &req) == 0)
            return;   /* conn and fd are the capture's now */
#else
        cap_respond(c, CAPCTL_REFUSED, ENOTSUP, "this libmallocshim.so was built without zstd: "
                    "it cannot capture");
#endif
    } else {
        cap_respond(c, CAPCTL_REFUSED, EBUSY, "a capture is under way");
    }
    if (fd >= 0)
        close(fd);
    close(c);
}

void capture_poll(void)
{
    struct stat st;
    if (lfd < 0)
        return;
    /* The program may have closed our number and reused it for a socket
     * of its own: never accept on that. */
    if (fstat(lfd, &st) != 0 || st.st_dev != lfd_dev || st.st_ino != lfd_ino) {
        lfd = -1;
        return;
    }
    for (int k = 0; k < 4; k++) {
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            break;
        cap_request(high_fd(c));
    }
}

/* capture_start's PATH with %p (the pid), %e (the program's name, as
 * glibc has it from argv[0], up to 64 bytes, each byte but letters, digits,
 * '.', '_' and '-' made '_') and %% put in, into start_path. %e tells apart
 * the images of one pid: mysqld_safe's `nohup mariadbd` is nohup's image,
 * then mariadbd's. Returns 0, or ENAMETOOLONG. */
static int cap_start_name(const char *pat)
{
    size_t o = 0;
    for (const char *p = pat; *p; p++) {
        char num[72];
        const char *put = num;
        if (p[0] == '%' && p[1] == 'p') {
            fmt_buf(num, sizeof num, "%u", (unsigned)getpid());
            p++;
        } else if (p[0] == '%' && p[1] == 'e') {
            const char *e = program_invocation_short_name;
            size_t k = 0;
            for (; e && e[k] && k < 64; k++)
                num[k] = (e[k] >= 'a' && e[k] <= 'z') || (e[k] >= 'A' && e[k] <= 'Z') ||
                                 (e[k] >= '0' && e[k] <= '9') || e[k] == '.' || e[k] == '_' ||
                                 e[k] == '-' ? e[k] : '_';
            if (k == 0 || (k <= 2 && num[0] == '.'))
                num[k++] = '_';   /* never empty, ".", or ".." */
            num[k] = '\0';
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            num[0] = '%', num[1] = '\0';
            p++;
        } else {
            num[0] = *p, num[1] = '\0';
        }
        size_t n = strlen(put);
        if (o + n >= sizeof start_path)
            return ENAMETOOLONG;
        memcpy(start_path + o, put, n);
        o += n;
    }
    start_path[o] = '\0';
    return 0;
}

const struct backend_ops *capture_init(const struct conf *c, const struct backend_ops *rec,
                  void (*set)(const struct backend_ops *table, const struct backend_ops *cxx))
{
    inner = rec;
    set_table = set;
    listen_on = c->capture;
    max_bytes_conf = (uint64_t)c->capture_max;
    conf_format(c, conf_text, sizeof conf_text);
#ifdef HAVE_ZSTD
    cap_ops = *rec;
    cap_ops.malloc = cap_malloc;
    cap_ops.free = cap_free;
    cap_ops.free_sized = cap_free_sized;
    cap_ops.calloc = cap_calloc;
    cap_ops.realloc = cap_realloc;
    cap_ops.aligned = cap_aligned;
    cap_cxx_ops = cap_ops;
    cap_cxx_ops.malloc = cap_new;
    cap_cxx_ops.free = cap_delete;
    cap_cxx_ops.aligned = cap_new_aligned;
#endif
    if (!c->capture_start[0])
        return rec;
    if (cap_start_name(c->capture_start) != 0) {
        fmt_buf(start_path, sizeof start_path, "%s", c->capture_start);
        log_msg("capture_start: %s: the name is too long with %%p and %%e put in; no trace, "
                "recording goes on", start_path);
        return rec;
    }
#ifdef HAVE_ZSTD
    /* A new file only: never one that is there (planted, or a link, by
     * anyone), owner-only. */
    int fd = open(start_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        log_msg("capture_start: cannot create %s: %s; no trace, recording goes on", start_path,
                strerrordesc_np(errno));
        return rec;
    }
    fd = high_fd(fd);
    if (fd < 0 || cap_start(-1, fd, NULL) != 0) {
        if (fd >= 0)
            close(fd);
        unlink(start_path);   /* ours, made just now, and empty but for a header */
        return rec;
    }
    /* Dispatch sets the table that record_start returns for both C and
     * C++ (dispatch.c), after this: C's wrappers for both until the
     * writer's first tick puts C++'s own (cxx_due). */
    cw.cxx_due = 1;
    return &cap_ops;
#else
    log_msg("capture_start: %s: this libmallocshim.so was built without zstd; no trace, "
            "recording goes on", start_path);
    return rec;
#endif
}
