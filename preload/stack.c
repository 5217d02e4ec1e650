/* stack: takes the call stack of each tracked allocation, stores each
 * distinct stack once in the segment's stack table, and keeps the list of
 * mapped objects (path, load address, build id) that a reader needs to name
 * the frames, even after the process is gone.
 *
 * Two unwinders, both dlopen'ed with RTLD_LOCAL rather than linked (linked,
 * libunwind's _Unwind_* and backtrace() would enter the program's global
 * scope and could take over C++ exception handling from libgcc's, which an
 * observer must not do):
 * - libgcc's _Unwind_Backtrace (glibc's _dl_find_object finds the unwind
 *   tables; nothing kept per thread), about 0.85 us for ten frames;
 * - libunwind's unw_backtrace, about 0.055 us, but with a 256 KiB cache per
 *   thread that uses it: 63-66 MiB of RSS for 256 threads that take stacks.
 * So each thread starts on libgcc's, and a thread that has taken
 * SLOW_CAPTURES stacks (a hot one) moves to libunwind if fewer than
 * `fast_max` threads are on it (the key unwind_threads, 16 by default; the
 * thread that starts the shim is the first); one that finds them all taken
 * tries again SLOW_CAPTURES stacks later (unwind_threads:0 loads no
 * libunwind). A thread gives its place back on its way out
 * (stack_thread_exit). Both give the same frames (the return addresses), so
 * a call site's stack is one entry whichever took it.
 *
 * libgcc's unwinder takes a global mutex, and allocates under it, once the
 * program has registered unwind tables of its own (__register_frame and its
 * kin: JIT compilers): an allocation made there would deadlock in it. guard.c
 * wraps those calls, and from the first one on every stack is libunwind's
 * (with its cache in every thread that takes one: no bound of fast_max
 * then), or, where libunwind is not in use, stacks stop. A program that calls them
 * through a handle of its own on libgcc_s (dlsym(handle, ...)), or from a
 * library opened with RTLD_DEEPBIND, is not seen.
 * Only the tracked path (about 1 in `sample` allocations) comes here. */
#include "config.h"

#include "stack.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#include "debug.h"
#include "fmt.h"
#include "log.h"

/* Frames of the shim itself (malloc, the recording path, this file) above
 * the caller's: unwound, then left out. */
#define SKIP_MAX 10
#define PATH_MAX_LEN 4096

/* A thread moves to libunwind after this many stacks, if one of the
 * fast_max places is free. */
#define SLOW_CAPTURES 256

/* Set by stack_start, read-only after, except `unwind`, which goes to NULL
 * (relaxed atomic) when stacks stop for good. `unwind`: the capture
 * function (gcc_backtrace, or libunwind's when libgcc's is missing);
 * `fast`: libunwind's unw_backtrace, or NULL. */
static int (*unwind)(void **buffer, int size);
static int (*fast)(void **buffer, int size);   /* unw_backtrace */
static _Unwind_Reason_Code (*gcc_walk)(_Unwind_Trace_Fn, void *);   /* _Unwind_Backtrace */
static _Unwind_Ptr (*gcc_ip)(struct _Unwind_Context *);              /* _Unwind_GetIP */
static uint32_t depth, cap;
static struct seg_header *seg_hdr;
static uint64_t stride;
static struct seg_stacks *head;
static char *entries;
static struct seg_objs *objs_head;
static struct seg_obj *objs;
static uint32_t objs_cap;
static uintptr_t self_lo, self_hi;   /* this library's loaded range */

/* libunwind 1.6 opens a pipe at its first use and, to check that memory is
 * readable, reads one byte from its read end and writes one to its write end
 * while it unwinds some frames. If the program closed those descriptors
 * (closefrom, a daemon's cleanup) and reused the numbers, that would read
 * from and write into the program's own files or sockets, and libunwind's
 * recovery closes them. So the pipe is identified at start, and the shim's
 * wrappers of close, dup2, dup3, close_range and closefrom (guard.c) stop
 * capturing for good, and wait for the captures under way, before such a
 * call closes either end. A close that bypasses libc (a raw system call) is
 * caught by the sampler thread's check, once per interval_ms. Set by
 * stack_start; `pipe_fd[0]` < 0 when libunwind opened no pipe (or the
 * process has no segment of its own: stack_detach). `owner`: the process
 * whose pipe it is; a vfork child, which shares this memory but not the
 * descriptors, closes nothing of ours. */
static int pipe_fd[2] = { -1, -1 };
static dev_t pipe_dev[2];
static ino_t pipe_ino[2];
static pid_t owner;
/* Plays the role of `gate` below for good once the pipe is (being) closed:
 * sequentially consistent, Dekker style against `inflight`; never cleared.
 * `pipe_logged`: its stderr line was written (atomic exchange). The line
 * waits for the next allocation that would have taken a stack, so that a
 * fork child that closes descriptors before exec prints nothing into what
 * its new image writes. */
static int pipe_lost, pipe_logged;
/* Set once no capture can be inside libunwind any more after pipe_lost:
 * the numbers are the program's from then on, and its closes of them need
 * no look. Synchronization: relaxed atomic; set once, never cleared. */
static int pipe_done;

/* The fork gate. Synchronization: sequentially consistent, Dekker style: a
 * capture raises `inflight` and then reads `gate`; fork raises `gate` and
 * then waits for `inflight` to drain. So no thread is inside libunwind (and
 * none of its locks is held) while the process forks. Tracked allocations,
 * fork and the closing of libunwind's pipe (pipe_gone) touch these. */
static int gate, inflight;
/* Set by fork's prepare when captures did not drain in time (a capturing
 * thread waits for something the forking thread holds); the child then
 * takes no stacks, since it may have inherited one of libunwind's locks
 * held. Synchronization: written in prepare, read in the child. */
static int drain_failed;

/* Set while this thread takes a stack (inflight raised, libunwind
 * running): a malloc from in there (libunwind's thread-local data) is
 * tracked without a stack, and a fork or a close from a signal handler
 * that interrupted it must not wait for it. (The shim's own sampler
 * thread never comes here: it tracks nothing.) */
static __thread int capturing __attribute__((tls_model("initial-exec")));
/* This thread's alternate signal stack, [alt_lo, alt_hi), as its last
 * sigaltstack call through libc set it (guard.c); empty when none. [was_lo,
 * was_hi): the one it replaced while running on it (a handler on an
 * SS_AUTODISARM stack may set another; the kernel restores the first on
 * return). No stack is taken on either. */
static __thread uintptr_t alt_lo __attribute__((tls_model("initial-exec")));
static __thread uintptr_t alt_hi __attribute__((tls_model("initial-exec")));
static __thread uintptr_t was_lo __attribute__((tls_model("initial-exec")));
static __thread uintptr_t was_hi __attribute__((tls_model("initial-exec")));

/* This thread's place among the fast_max on libunwind: `on_fast` 1
 * while it holds one, 2 once it is on its way out (it asks for none);
 * `slow_left`, the stacks it takes with libgcc's before it asks for one.
 * `fast_used`: the places held (relaxed atomic; a thread that took one
 * beyond fast_max gives it back at once). `fast_max`: the places
 * (unwind_threads; set by stack_start).
 * `frames_registered`: the program registered unwind tables (guard.c), so
 * every stack is libunwind's from now on (relaxed atomic; never cleared). */
static __thread int on_fast __attribute__((tls_model("initial-exec")));
static __thread unsigned slow_left __attribute__((tls_model("initial-exec")));
static unsigned fast_used, fast_max;
static int frames_registered;

static struct seg_stack *entry(uint32_t i)
{
    return (struct seg_stack *)(entries + (uint64_t)i * stride);
}

static uint64_t frames_hash(const uint64_t *f, uint32_t n)
{
    uint64_t h = 0x84222325cbf29ce4ull ^ n;
    for (uint32_t i = 0; i < n; i++) {
        h = (h ^ f[i]) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
    }
    return h ? h : 1;
}

/* The id of the stack f[0..n), stored if it is new; 0 when the table has
 * no room for it within SEG_STACK_PROBE entries. */
static uint32_t intern(const uint64_t *f, uint32_t n, uint64_t h)
{
    uint32_t i = (uint32_t)((h >> 32) % cap);
    /* an entry holds `depth` frames (its stride) */
    SHIM_ASSERT(n >= 1 && n <= depth);
    for (uint32_t k = 0; k < SEG_STACK_PROBE; k++, i = i + 1 == cap ? 0 : i + 1) {
        SHIM_ASSERT(i < cap);
        struct seg_stack *e = entry(i);
        uint64_t eh = __atomic_load_n(&e->hash, __ATOMIC_ACQUIRE);
        if (eh == 0) {
            if (__atomic_compare_exchange_n(&e->hash, &eh, h, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                uint64_t *dst = (uint64_t *)(e + 1);
                for (uint32_t j = 0; j < n; j++)
                    __atomic_store_n(&dst[j], f[j], __ATOMIC_RELAXED);
                __atomic_store_n(&e->depth, n, __ATOMIC_RELAXED);
                __atomic_store_n(&e->ready, 1, __ATOMIC_RELEASE);
                /* each entry is claimed once (its hash is never cleared);
                 * not so in a fork child's copy (lifecycle.c), which may
                 * count an entry that it then claims again */
                uint64_t used = __atomic_fetch_add(&head->used, 1, __ATOMIC_RELAXED);
                SHIM_ASSERT(used < cap || (seg_hdr->flags & SEG_F_INHERITED));
                return i + 1;
            }
            /* lost the race: eh now holds the winner's hash */
        }
        if (eh != h)
            continue;
        /* The same hash: the same stack, once its writer has published it
         * (a few stores away; a writer preempted there costs a duplicate
         * entry, which readers merge). */
        for (int spin = 0; spin < 256 && !__atomic_load_n(&e->ready, __ATOMIC_ACQUIRE); spin++)
            __builtin_ia32_pause();
        if (!__atomic_load_n(&e->ready, __ATOMIC_ACQUIRE) || e->depth != n)
            continue;
        const uint64_t *g = (const uint64_t *)(e + 1);
        uint32_t j = 0;
        while (j < n && g[j] == f[j])
            j++;
        if (j == n)
            return i + 1;
    }
    __atomic_fetch_add(&head->dropped, 1, __ATOMIC_RELAXED);
    return 0;
}

/* Waits (up to 100 ms) until no other thread is inside the unwinder, once
 * the caller has raised `gate` or `pipe_lost` (this thread's own capture,
 * which a signal handler may have interrupted, cannot finish meanwhile).
 * Returns 0 when none is left, 1 when some did not finish in time. */
static int drain(void)
{
    struct timespec t0, t;
    int self = capturing ? 1 : 0;
    if (__atomic_load_n(&inflight, __ATOMIC_SEQ_CST) <= self)
        return 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* A capture takes microseconds; never wait forever: the waiting thread
     * may hold a lock that a capturing thread waits for. */
    while (__atomic_load_n(&inflight, __ATOMIC_SEQ_CST) > self) {
        sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) > 100000000L)
            return 1;
    }
    return 0;
}

/* The one stderr line that says stacks stopped because the pipe went. */
static void pipe_note(void)
{
    if (!__atomic_exchange_n(&pipe_logged, 1, __ATOMIC_RELAXED))
        log_msg("the program closed libunwind's descriptors %d and %d; call stacks stop "
                "here (set stacks:0 for such programs)", pipe_fd[0], pipe_fd[1]);
}

/* Stops capturing for good, because libunwind's pipe is being or was
 * closed, and waits for the captures under way. `now`: write the line now
 * rather than at the next allocation that would have taken a stack. */
static void pipe_gone(int now)
{
    if (!__atomic_exchange_n(&pipe_lost, 1, __ATOMIC_SEQ_CST)) {
        /* later tracked allocations return at once */
        __atomic_store_n(&unwind, NULL, __ATOMIC_RELAXED);
        __atomic_fetch_or(&seg_hdr->flags, SEG_F_STACKS_STOPPED, __ATOMIC_RELAXED);
    }
    if (now)
        pipe_note();
    /* every closer waits, not only the first: another thread's close of
     * the other end must not pass a capture still running either */
    if (drain())
        log_msg("a call stack was still being taken while descriptor %d or %d closed",
                pipe_fd[0], pipe_fd[1]);
    else if (!capturing)
        __atomic_store_n(&pipe_done, 1, __ATOMIC_RELAXED);
}

/* Whether descriptor fd is still the pipe end i. */
static int pipe_is(int fd, int i)
{
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_ino == pipe_ino[i] && st.st_dev == pipe_dev[i];
}

int stack_fds_closing(unsigned lo, unsigned hi)
{
    int r = pipe_fd[0], w = pipe_fd[1];
    if (r < 0 || __atomic_load_n(&pipe_done, __ATOMIC_RELAXED))
        return 0;
    int hit_r = (unsigned)r >= lo && (unsigned)r <= hi;
    int hit_w = (unsigned)w >= lo && (unsigned)w <= hi;
    if (!hit_r && !hit_w)
        return 0;
    if (getpid() != owner)
        return 0;   /* a vfork child: its descriptors are its own */
    /* libunwind itself, recovering from a read or write that failed,
     * closes its pipe: if the number is someone else's by now (closed by
     * a raw system call and reused), leave it open. */
    if (capturing && lo == hi && !pipe_is((int)lo, hit_r ? 0 : 1)) {
        pipe_gone(1);
        return 1;
    }
    pipe_gone(0);
    return 0;
}

void stack_check_fds(void)
{
    if (pipe_fd[0] < 0 || __atomic_load_n(&pipe_lost, __ATOMIC_RELAXED))
        return;
    if (!pipe_is(pipe_fd[0], 0) || !pipe_is(pipe_fd[1], 1))
        pipe_gone(1);
}

void stack_altstack_set(const void *sp, size_t size, int disable)
{
    char here;
    uintptr_t at = (uintptr_t)&here, lo = alt_lo, hi = alt_hi;
    /* A signal may arrive between any two stores: each state in between
     * covers the old range or the new one. */
    alt_lo = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    alt_hi = UINTPTR_MAX;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (at - lo < hi - lo) {
        was_lo = lo;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        was_hi = hi;
    }
    alt_lo = disable ? 0 : (uintptr_t)sp;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    alt_hi = disable ? 0 : (uintptr_t)sp + size;
}

#ifdef HAVE_LIBUNWIND
/* The lowest n free descriptors. */
static void lowest_free(int *out, int n)
{
    for (int fd = 0, k = 0; k < n && fd < 65536; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF)
            out[k++] = fd;
}

/* Runs libunwind once, so that it opens its pipe now, and finds the pipe:
 * pipe2() takes the lowest free descriptors. Free descriptors below 3 are
 * held on /dev/null meanwhile, so that the pipe never becomes the program's
 * stdin, stdout or stderr (a daemon that closed them would find a pipe
 * there). Returns 0, or EBUSY when the two descriptors are something else
 * than the two ends of one pipe (another thread opened files meanwhile):
 * then libunwind is not used. */
static int find_pipe(void)
{
    int fd[2] = { -1, -1 }, held[3], nheld = 0;
    void *tmp[4];
    struct stat st[2];

    for (;;) {
        int low[1] = { -1 };
        lowest_free(low, 1);
        if (low[0] < 0 || low[0] > 2)
            break;
        int h = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (h < 0 || h > 2) {
            if (h >= 0)
                close(h);
            break;
        }
        held[nheld++] = h;
    }
    lowest_free(fd, 2);
    capturing = 1;
    fast(tmp, 4);
    capturing = 0;
    while (nheld > 0)
        close(held[--nheld]);
    if (fd[0] < 3)
        return EBUSY;
    int open0 = fstat(fd[0], &st[0]) == 0, open1 = fstat(fd[1], &st[1]) == 0;
    if (!open0 && !open1)
        return 0;   /* a libunwind without the pipe */
    int fl0 = fcntl(fd[0], F_GETFL), fl1 = fcntl(fd[1], F_GETFL);
    if (!open0 || !open1 || !S_ISFIFO(st[0].st_mode) || !S_ISFIFO(st[1].st_mode) ||
        st[0].st_ino != st[1].st_ino || st[0].st_dev != st[1].st_dev || fl0 < 0 || fl1 < 0 ||
        !(fl0 & O_NONBLOCK) || !(fl1 & O_NONBLOCK))
        return EBUSY;
    owner = getpid();
    for (int i = 0; i < 2; i++) {
        pipe_fd[i] = fd[i];
        pipe_dev[i] = st[i].st_dev;
        pipe_ino[i] = st[i].st_ino;
    }
    return 0;
}
#endif

/* Whether a return address lies in the shim's own code. */
static inline int own_frame(uintptr_t ip)
{
    return ip - self_lo < self_hi - self_lo;
}

/* The frames of the shim's own on top of buf's n. */
static int own_frames(void *const *buf, int n)
{
    int k = 0;
    while (k < n && own_frame((uintptr_t)buf[k]))
        k++;
    return k;
}

struct walk {
    void **buf;
    int n, max, own;
};

/* One frame of libgcc's walk: the shim's own frames on top (up to
 * SKIP_MAX) do not count against the depth, so that the walk stops as soon
 * as it has the program's `depth` frames. */
static _Unwind_Reason_Code walk_one(struct _Unwind_Context *ctx, void *arg)
{
    struct walk *w = arg;
    _Unwind_Ptr ip = gcc_ip(ctx);
    if (w->n >= w->max || ip == 0)
        return _URC_END_OF_STACK;
    if (w->n == w->own && w->own < SKIP_MAX && own_frame(ip)) {
        w->own++;
        w->max++;
    }
    w->buf[w->n++] = (void *)ip;
    return _URC_NO_REASON;
}

/* libgcc's unwinder: the return addresses from the caller's frame
 * outwards, the shim's own and then up to `size` of the program's (buffer
 * holds size + SKIP_MAX). */
__attribute__((noinline))
static int gcc_backtrace(void **buffer, int size)
{
    struct walk w = { buffer, 0, size, 0 };
    gcc_walk(walk_one, &w);
    return w.n;
}

/* The most frames of the shim's own that a stack of libunwind's has begun
 * with (relaxed atomic; raised, though two threads that raise it at once
 * may leave the lower value: one more unwinding later). unw_backtrace
 * cannot leave them out as it goes, so it is asked for this many beyond
 * `depth`. Every frame unwound costs, and asking for SKIP_MAX more each
 * time unwound up to 6 frames that were then dropped: in mariadbd a stack
 * of libunwind's cost 4,416 instructions and now 3,931, one of libgcc's
 * 53,600 and now 44,930 (callgrind). */
static int own_seen;

/* libunwind's unw_backtrace, called as gcc_backtrace is, inline in
 * stack_capture. Where the stack began with more of the shim's frames than
 * own_seen and was cut short, it is taken again with room for them (once
 * per new most). */
static inline __attribute__((always_inline)) int fast_backtrace(void **buffer, int size)
{
    int own = __atomic_load_n(&own_seen, __ATOMIC_RELAXED);
    for (;;) {
        int want = size + own;
        int n = fast(buffer, want);
        int k = own_frames(buffer, n);
        if (n < want || k <= own || own >= SKIP_MAX)
            return n;
        own = k < SKIP_MAX ? k : SKIP_MAX;
        if (own > __atomic_load_n(&own_seen, __ATOMIC_RELAXED))
            __atomic_store_n(&own_seen, own, __ATOMIC_RELAXED);
    }
}

/* The unwinder for this thread's next stack: `fn` (stack_start's choice),
 * or libunwind where the thread holds or gets a place on it. */
static int (*pick(int (*fn)(void **, int)))(void **, int)
{
    if (__atomic_load_n(&frames_registered, __ATOMIC_RELAXED)) {
        /* Never libgcc's now (NULL: no stack; stack_frames_registered
         * stopped them where libunwind is not in use), and no new cache of
         * libunwind's in a thread's last destructors, after its own. */
        return fast == NULL || on_fast == 2 ? NULL : fast;
    }
    if (fast == NULL)
        return fn;
    if (on_fast == 1)
        return fast;
    if (on_fast == 2 || slow_left < SLOW_CAPTURES) {
        slow_left++;
        return fn;
    }
    slow_left = 0;
    if (__atomic_fetch_add(&fast_used, 1, __ATOMIC_RELAXED) < fast_max) {
        on_fast = 1;
        __atomic_fetch_add(&head->fast_threads, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&head->fast_moves, 1, __ATOMIC_RELAXED);
        return fast;
    }
    __atomic_fetch_sub(&fast_used, 1, __ATOMIC_RELAXED);
    return fn;
}

void stack_thread_exit(void)
{
    if (on_fast == 1) {
        unsigned held = __atomic_fetch_sub(&fast_used, 1, __ATOMIC_RELAXED);
        SHIM_ASSERT(held > 0);   /* this thread's place among them */
        if (head != NULL)
            __atomic_fetch_sub(&head->fast_threads, 1, __ATOMIC_RELAXED);
    }
    on_fast = 2;   /* the stacks of its last destructors: libgcc's */
}

void stack_frames_registered(void)
{
    if (__atomic_exchange_n(&frames_registered, 1, __ATOMIC_RELAXED))
        return;
    if (seg_hdr != NULL && fast == NULL && __atomic_load_n(&unwind, __ATOMIC_RELAXED) != NULL) {
        __atomic_store_n(&unwind, NULL, __ATOMIC_RELAXED);
        __atomic_fetch_or(&seg_hdr->flags, SEG_F_STACKS_STOPPED, __ATOMIC_RELAXED);
        log_msg("the program registers unwind tables of its own (__register_frame) and libunwind "
                "is not in use; call stacks stop here (libgcc's unwinder could wait for itself)");
    }
}

uint32_t stack_capture(size_t req, float w)
{
    /* return addresses, then (in place) the frames kept as uint64_t */
    union { void *p; uint64_t u; } buf[SEG_STACK_DEPTH_MAX + SKIP_MAX];
    int n, k = 0;

    int (*fn)(void **, int) = __atomic_load_n(&unwind, __ATOMIC_RELAXED);
    if (fn == NULL) {
        if (__atomic_load_n(&pipe_lost, __ATOMIC_RELAXED))
            pipe_note();
        return 0;
    }
    if (capturing) {
        __atomic_fetch_add(&head->failed, 1, __ATOMIC_RELAXED);
        return 0;
    }
    /* On an alternate signal stack (a crash handler's, often 8 KiB), the
     * unwinder's few KiB could run off its end into whatever lies below. */
    if ((uintptr_t)buf - alt_lo < alt_hi - alt_lo || (uintptr_t)buf - was_lo < was_hi - was_lo) {
        __atomic_fetch_add(&head->failed, 1, __ATOMIC_RELAXED);
        return 0;
    }
    capturing = 1;
    __atomic_fetch_add(&inflight, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&gate, __ATOMIC_SEQ_CST) || __atomic_load_n(&pipe_lost, __ATOMIC_SEQ_CST)) {
        __atomic_fetch_sub(&inflight, 1, __ATOMIC_SEQ_CST);
        capturing = 0;
        __atomic_fetch_add(&head->failed, 1, __ATOMIC_RELAXED);
        return 0;
    }
    int (*how)(void **, int) = pick(fn);
    if (how == NULL)
        n = 0;
    else if (how == fast)
        n = fast_backtrace((void **)buf, (int)depth);   /* inline: no frame more */
    else
        n = how((void **)buf, (int)depth);
    __atomic_fetch_sub(&inflight, 1, __ATOMIC_SEQ_CST);
    capturing = 0;

    k = own_frames((void **)buf, n);
    uint32_t m = n - k > (int)depth ? depth : (uint32_t)(n > k ? n - k : 0);
    if (m == 0) {
        __atomic_fetch_add(&head->failed, 1, __ATOMIC_RELAXED);
        return 0;
    }
    uint64_t *f = &buf[k].u;
    uint32_t id = intern(f, m, frames_hash(f, m));
    if (id) {
        struct seg_stack *e = entry(id - 1);
        __atomic_fetch_add(&e->allocs, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&e->w_allocs, seg_w_count(w), __ATOMIC_RELAXED);
        __atomic_fetch_add(&e->req_bytes, seg_w_bytes(w, req), __ATOMIC_RELAXED);
    }
    return id;
}

void stack_free(uint32_t id, unsigned bucket, float w)
{
    if (id == 0 || id > cap)
        return;
    struct seg_stack *e = entry(id - 1);
    uint64_t wn = seg_w_count(w);
    __atomic_fetch_add(&e->frees, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&e->w_frees, wn, __ATOMIC_RELAXED);
    if (bucket < LIFEBUCKET_COUNT)
        __atomic_fetch_add(&e->lifetime[bucket], wn, __ATOMIC_RELAXED);
}

void stack_fork_prepare(void)
{
    if (unwind == NULL)
        return;
    __atomic_store_n(&gate, 1, __ATOMIC_SEQ_CST);
    /* fork from a signal handler that interrupted this thread's own
     * capture cannot drain: drain() says so at once */
    drain_failed = drain();
}

void stack_fork_done(int child)
{
    if (unwind == NULL)
        return;
    if (child) {
        owner = getpid();
        capturing = 0;
        __atomic_store_n(&fast_used, on_fast == 1 ? 1 : 0, __ATOMIC_RELAXED);
        if (head != NULL)
            __atomic_store_n(&head->fast_threads, on_fast == 1 ? 1 : 0, __ATOMIC_RELAXED);
        __atomic_store_n(&inflight, 0, __ATOMIC_SEQ_CST);
        if (drain_failed) {
            unwind = NULL;   /* for good: libunwind's state may be mid-update */
            __atomic_fetch_or(&seg_hdr->flags, SEG_F_STACKS_STOPPED, __ATOMIC_RELAXED);
            log_msg("fork child %d: a call stack was being taken in another thread at fork; "
                    "this process takes no stacks", (int)getpid());
        }
    }
    __atomic_store_n(&gate, 0, __ATOMIC_SEQ_CST);
}

void stack_detach(void)
{
    on_fast = 0;   /* the fork child's one thread: the segment is not its own */
    __atomic_store_n(&unwind, NULL, __ATOMIC_RELAXED);
    pipe_fd[0] = pipe_fd[1] = -1;
}

/* ---- Mapped objects ---- */

/* Whether [a, a+n) lies inside one of the object's PT_LOAD segments, so
 * that reading it cannot fault. */
static int loaded(const struct dl_phdr_info *info, uint64_t a, uint64_t n)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) && a >= lo && n <= ph->p_filesz &&
            a - lo <= ph->p_filesz - n)
            return 1;
    }
    return 0;
}

/* The object's GNU build id, from its PT_NOTE segments in memory (only
 * those inside a loaded segment). */
static uint32_t build_id(const struct dl_phdr_info *info, uint8_t *out, size_t cap_out)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE || !loaded(info, info->dlpi_addr + ph->p_vaddr, ph->p_memsz))
            continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
        size_t left = ph->p_memsz;
        while (left >= sizeof(ElfW(Nhdr))) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            size_t name = ((size_t)nh->n_namesz + 3) & ~(size_t)3;
            size_t desc = ((size_t)nh->n_descsz + 3) & ~(size_t)3;
            size_t body = left - sizeof *nh;
            if (name > body || desc > body - name)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                memcmp(p + sizeof *nh, "GNU", 4) == 0 && nh->n_descsz <= cap_out) {
                memcpy(out, p + sizeof *nh + name, nh->n_descsz);
                return nh->n_descsz;
            }
            p += sizeof *nh + name + desc;
            left = body - name - desc;
        }
    }
    return 0;
}

/* The loaded range of an object: its PT_LOAD segments. */
static void load_range(const struct dl_phdr_info *info, uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < *lo)
            *lo = a;
        if (a + ph->p_memsz > *hi)
            *hi = a + ph->p_memsz;
    }
}

struct scan {
    unsigned index;            /* of the object being looked at: 0 is the program */
};

/* Synchronization: the sampler thread's (and stack_start's, before the
 * sampler exists). */
static unsigned long long seen_adds, seen_subs;

static int add_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct scan *sc = arg;
    char path[PATH_MAX_LEN];
    uint64_t lo, hi;
    uint32_t flags = 0;
    unsigned index = sc->index++;

    if (index == 0 && size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        if (info->dlpi_adds == seen_adds && info->dlpi_subs == seen_subs)
            return 1;   /* nothing loaded or unloaded since the last time */
        seen_adds = info->dlpi_adds;
        seen_subs = info->dlpi_subs;
    }
    if (index == 0 && (info->dlpi_name == NULL || info->dlpi_name[0] == '\0')) {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        if (n <= 0)
            return 0;
        path[n] = '\0';
        flags |= SEG_OBJ_MAIN;
    } else if (info->dlpi_name && info->dlpi_name[0] == '/') {
        fmt_buf(path, sizeof path, "%s", info->dlpi_name);
    } else {
        return 0;   /* the vDSO: no file to read */
    }
    load_range(info, &lo, &hi);
    if (hi <= lo)
        return 0;
    uint64_t n = objs_head->count;
    for (uint64_t i = 0; i < n; i++)
        if (objs[i].bias == info->dlpi_addr && objs[i].lo == lo && objs[i].hi == hi &&
            strncmp(objs[i].path, path, sizeof objs[i].path - 1) == 0)
            return 0;
    if (n >= objs_cap) {
        __atomic_fetch_add(&objs_head->dropped, 1, __ATOMIC_RELAXED);
        return 0;
    }
    struct seg_obj *o = &objs[n];
    o->bias = info->dlpi_addr;
    o->lo = lo;
    o->hi = hi;
    o->build_id_len = build_id(info, o->build_id, sizeof o->build_id);
    if (strlen(path) >= sizeof o->path)
        flags |= SEG_OBJ_TRUNCATED;
    o->flags = flags;
    fmt_buf(o->path, sizeof o->path, "%s", path);
    __atomic_store_n(&objs_head->count, n + 1, __ATOMIC_RELEASE);
    return 0;
}

void stack_refresh_objects(void)
{
    struct scan sc = { 0 };
    if (objs_head != NULL)
        dl_iterate_phdr(add_object, &sc);
}

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
    uint64_t lo, hi, me = (uint64_t)(uintptr_t)arg;
    load_range(info, &lo, &hi);
    if (me - lo < hi - lo) {
        self_lo = (uintptr_t)lo;
        self_hi = (uintptr_t)hi;
        return 1;
    }
    return 0;
}

/* Loads libunwind into `fast` and finds its pipe. Returns "" on success,
 * else why not (then `fast` is NULL); a reason is not worth a line when
 * the build has no libunwind only if libgcc's serves. */
static const char *start_fast(void)
{
#ifndef HAVE_LIBUNWIND
    return "";   /* the builder's choice: not worth a line at each start */
#else
    static char why[160];
    void *h;
    /* A program that uses libunwind itself may have opened its pipe
     * already, and then the pipe cannot be found (see find_pipe). */
    if ((h = dlopen(LIBUNWIND_SONAME, RTLD_NOW | RTLD_NOLOAD)) != NULL) {
        fmt_buf(why, sizeof why, "the program loads %s itself and the shim cannot tell its "
                "descriptors from the program's", LIBUNWIND_SONAME);
        return why;
    }
    dlerror();
    h = dlopen(LIBUNWIND_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL || (*(void **)&fast = dlsym(h, "unw_backtrace")) == NULL) {
        const char *e = dlerror();
        fmt_buf(why, sizeof why, "cannot load %s (%s)", LIBUNWIND_SONAME,
                e ? e : "no unw_backtrace");
        fast = NULL;
        return why;
    }
    if (find_pipe() != 0) {
        fast = NULL;
        return "cannot tell libunwind's descriptors from the program's";
    }
    /* this thread has used libunwind (its cache is made): it keeps it */
    on_fast = 1;
    fast_used = 1;
    head->fast_threads = 1;
    head->fast_moves = 1;
    return "";
#endif
}

int stack_start(struct seg_header *seg, const struct seg_header *geo, unsigned unwind_threads)
{
    char *b = (char *)seg;
    void *h;

    seg_hdr = seg;
    depth = geo->stack_depth;
    cap = geo->stacks_cap;
    stride = geo->stack_stride;
    head = (struct seg_stacks *)(b + geo->off_stacks);
    entries = (char *)(head + 1);
    objs_head = (struct seg_objs *)(b + geo->off_objs);
    objs = (struct seg_obj *)(objs_head + 1);
    objs_cap = geo->objs_cap;
    stack_refresh_objects();
    dl_iterate_phdr(find_self, (void *)(uintptr_t)&stack_start);
    if (self_hi <= self_lo) {
        log_msg("cannot find the shim's own code among the loaded objects; no call stacks");
        return ENOENT;
    }
    /* libgcc's unwinder: the program's own copy when it has one (RTLD_LOCAL
     * loads nothing twice). Nested allocations of dlopen are served by the
     * bootstrap buffer. */
    if ((h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL)) != NULL) {
        *(void **)&gcc_walk = dlsym(h, "_Unwind_Backtrace");
        *(void **)&gcc_ip = dlsym(h, "_Unwind_GetIP");
    }
    int have_gcc = gcc_walk != NULL && gcc_ip != NULL;
    fast_max = unwind_threads;
    /* unwind_threads:0 is the user's choice: no libunwind, and no line */
    const char *why = fast_max > 0 ? start_fast() : "";
    if (fast == NULL && !have_gcc) {
        log_msg("cannot load libgcc_s.so.1's unwinder%s%s; no call stacks (stacks:0 turns "
                "this note off)", why[0] ? ", and " : "", why);
        return ENOENT;
    }
    if (fast == NULL && why[0] != '\0')
        log_msg("%s; call stacks with libgcc's unwinder only, which is slower per stack "
                "(stacks:0 turns this note off)", why);
    unwind = have_gcc ? gcc_backtrace : fast;
    return 0;
}
