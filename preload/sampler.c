/* sampler: the sampler thread, started by the first tracked allocation:
 * every interval_ms it sums the slots into the time series, takes the ages
 * of the tracked blocks, refines the clock and rewrites the copy. */
#include "config.h"

#include "rec.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <linux/futex.h>

#include "capture.h"
#include "debug.h"
#include "log.h"
#include "seg.h"
#include "segread.h"
#include "sizeclass.h"
#include "stack.h"

/* Where the shim's own allocations count, outside the segment: the
 * sampler thread's (sampler_own) and those the shim causes in a program
 * thread (shim_own: pthread_create's and pthread_join's, around the
 * sampler's start and stop), so that the program's figures hold only the
 * program's. Each written by one thread at a time. */
static struct seg_slot sampler_own, shim_own;
static pthread_t sampler_thread;   /* valid in S_RUN; read-only after */
/* glibc's count of the process's threads (its private __nptl_nthreads,
 * which libthread_db reads too), or NULL where it cannot be found; then
 * /proc/self/status stands in. Set by sampler_init (record_start),
 * read-only after. */
static const unsigned int *nptl_nthreads;
static long sampler_interval;      /* interval_ms */

/* Declared, with their rules, in rec.h. */
int sampler_state;
pthread_mutex_t sampler_mu = PTHREAD_MUTEX_INITIALIZER;

void sampler_init(long interval_ms)
{
    sampler_interval = interval_ms;
    nptl_nthreads = dlvsym(RTLD_DEFAULT, "__nptl_nthreads", "GLIBC_PRIVATE");
}

/* Reads a small /proc file into buf (NUL-terminated); returns its length. */
size_t read_proc(const char *path, char *buf, size_t cap)
{
    struct stat st;
    int fd = high_fd(open(path, O_RDONLY | O_CLOEXEC));
    size_t got = 0;
    buf[0] = '\0';
    if (fd < 0)
        return 0;
    if (fstat(fd, &st) != 0)
        return 0;   /* not ours any more (EBADF): nothing of ours to close */
    while (got < cap - 1) {
        ssize_t r = read(fd, buf + got, cap - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    /* Closed only while it is still ours (segfile.c's copy_write says why). */
    if (file_id_ok(fd, st.st_dev, st.st_ino))
        close(fd);
    buf[got] = '\0';
    return got;
}

/* The value in kB of "name:" in a /proc status-like text, in bytes. */
static uint64_t proc_field_kb(const char *text, const char *name)
{
    const char *p = text;
    size_t nl = strlen(name);
    while ((p = strstr(p, name)) != NULL) {
        if ((p == text || p[-1] == '\n') && p[nl] == ':') {
            uint64_t v = 0;
            for (p += nl + 1; *p == ' ' || *p == '\t'; p++)
                ;
            for (; *p >= '0' && *p <= '9'; p++)
                v = v * 10 + (uint64_t)(*p - '0');
            return v * 1024;
        }
        p += nl;
    }
    return 0;
}

/* One stack's live tracked blocks at a pass, summed for the peak (seg.h,
 * struct seg_stacks, "The peak"). */
struct peak_sum {
    uint64_t req, count, tracked;
    double var;
};

/* The peak's state, the sampler thread's alone; live_usable is reset when
 * a sampler starts (a fork child's finds its own peak). `sum`: stacks_cap
 * + 1 entries (the last for blocks without a stack), then `had`:
 * stacks_cap flags, set for the entries whose peak figures the last peak
 * made non-zero; mapped at the first new peak (MAP_FAILED: could not be;
 * no peak sites then). A fork child's copy of them matches its copy of
 * the segment: fork takes sampler_mu, which peak_write holds. */
static struct {
    uint64_t live_usable;        /* the highest seen */
    struct peak_sum *sum;
    uint8_t *had;
    size_t bytes;                /* of sum[] */
} pk;

struct age_ctx {
    uint64_t (*age)[LIFEBUCKET_COUNT];
    uint64_t now;
    struct peak_sum *peak;       /* non-NULL at a new peak: sum the stacks too */
};

static void age_add(struct seg_track *e, void *arg)
{
    struct age_ctx *a = arg;
    uint64_t t = __atomic_load_n(&e->alloc_ns, __ATOMIC_ACQUIRE);
    uint64_t u = __atomic_load_n(&e->usable, __ATOMIC_RELAXED);
    float w = seg_track_weight(__atomic_load_n(&e->weight, __ATOMIC_RELAXED));
    if (t == 0)
        return;
    /* weighted counts (seg.h, "Weights") */
    a->age[sizeclass_of(u)][lifebucket_of(a->now > t ? a->now - t : 0)] += seg_w_count(w);
    if (a->peak) {
        uint32_t id = __atomic_load_n(&e->stack, __ATOMIC_RELAXED);
        uint64_t req = __atomic_load_n(&e->req, __ATOMIC_RELAXED);
        struct peak_sum *p = &a->peak[id >= 1 && id <= geo.stacks_cap ? id - 1 : geo.stacks_cap];
        p->req += seg_w_bytes(w, req);
        p->count += seg_w_count(w);
        p->tracked++;
        p->var += (double)w * ((double)w - 1) * (double)req * (double)req;
    }
}

static uint64_t double_bits(double v)
{
    union { double d; uint64_t u; } x = { v };
    return x.u;
}

/* The scratch for a pass's sums by stack, zeroed, or NULL (no stack table,
 * or no memory: then no peak sites, said once). Its own mapping, not the
 * heap: the sampler's allocations are the shim's, and this one is bounded
 * by the stack table: 33 bytes a stack, 132 KiB for the 4096 of the
 * default, all of it zeroed at each new peak. */
static struct peak_sum *peak_scratch(void)
{
    if (geo.stack_depth == 0 || pk.sum == MAP_FAILED)
        return NULL;
    if (pk.sum == NULL) {
        pk.bytes = ((size_t)geo.stacks_cap + 1) * sizeof *pk.sum;
        pk.sum = mmap(NULL, pk.bytes + geo.stacks_cap, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (pk.sum == MAP_FAILED) {
            log_msg("no memory to keep the call sites of the peak (%zu bytes); they are not kept",
                    pk.bytes + geo.stacks_cap);
            return NULL;
        }
        pk.had = (uint8_t *)pk.sum + pk.bytes;
        return pk.sum;   /* fresh pages are zero */
    }
    memset(pk.sum, 0, pk.bytes);
    return pk.sum;
}

/* Writes the sums of a new peak into the stack table (seg.h, struct
 * seg_stacks, "The peak"): the entries with live blocks now, and those
 * that had some at the last peak (zeroed); every other entry's figures are
 * zero already (a fresh entry's are). Only those: an entry's page that no
 * thread has written is a hole of the memory file, which even a read would
 * make resident. The sequence is made even first: a fork child's copy may
 * hold an odd one, caught mid-write in its parent. Precondition:
 * sampler_mu held. */
static void peak_write(const struct seg_sample *smp, const struct peak_sum *sum)
{
    struct seg_stacks *sh = (struct seg_stacks *)((char *)seg + geo.off_stacks);
    char *ent = (char *)(sh + 1);
    uint64_t s = sh->peak_seq & ~(uint64_t)1;
    __atomic_store_n(&sh->peak_seq, s + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    for (uint32_t i = 0; i < geo.stacks_cap; i++) {
        struct seg_stack *e = (struct seg_stack *)(ent + (uint64_t)i * geo.stack_stride);
        if (sum[i].tracked == 0 && !pk.had[i])
            continue;
        pk.had[i] = sum[i].tracked != 0;
        __atomic_store_n(&e->peak_req, sum[i].req, __ATOMIC_RELAXED);
        __atomic_store_n(&e->peak_count, sum[i].count, __ATOMIC_RELAXED);
        __atomic_store_n(&e->peak_tracked, sum[i].tracked, __ATOMIC_RELAXED);
        __atomic_store_n(&e->peak_var, double_bits(sum[i].var), __ATOMIC_RELAXED);
    }
    const struct peak_sum *none = &sum[geo.stacks_cap];
    sh->peak_ns = smp->t_ns;
    sh->peak_live_usable = smp->live_usable;
    sh->peak_live_req = smp->live_req;
    sh->peak_rss = smp->rss;
    sh->peak_nostack_req = none->req;
    sh->peak_nostack_count = none->count;
    sh->peak_nostack_var = double_bits(none->var);
    sh->peak_tracked_dropped = __atomic_load_n(&seg->tracked_dropped, __ATOMIC_RELAXED);
    __atomic_store_n(&sh->peak_seq, s + 2, __ATOMIC_RELEASE);
}

/* Writes size bytes of src over dst, but the first 8: both start with
 * their seqlock's counter (seg.h), dst's made odd while it writes, even
 * after, release order. The sampler is the one writer. */
static void seq_write(void *dst, const void *src, size_t size)
{
    uint64_t *seq = dst;
    SHIM_ASSERT((*seq & 1) == 0 || rec_inherited());
    __atomic_store_n(seq, *seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    memcpy((char *)dst + 8, (const char *)src + 8, size - 8);
    __atomic_store_n(seq, *seq + 1, __ATOMIC_RELEASE);
}

/* Adds sample smp to the newest point of each history tier (seg.h, struct
 * seg_history): the point under way lives in its entry, so a reader sees
 * it as it grows, and a fork child goes on from its copy. Precondition:
 * sampler_mu held. */
static void history_add(const struct seg_sample *smp)
{
    for (unsigned t = 0; t < geo.ntiers; t++) {
        uint64_t n = history->heads[t];
        struct seg_point *e = &tier_points[t][n % geo.tier_cap[t]];
        struct seg_point p;
        if (e->number == n && e->samples > 0 && e->samples < geo.tier_step[t]) {
            p = *e;
        } else {   /* a new point, in place of point n - cap (or of nothing) */
            memset(&p, 0, sizeof p);
            p.number = n;
            p.rss_min = UINT64_MAX;
        }
        p.last = *smp;
        p.samples++;
        if (smp->rss < p.rss_min)
            p.rss_min = smp->rss;
        if (smp->rss > p.rss_max)
            p.rss_max = smp->rss;
        if (smp->live_usable > p.live_usable_max)
            p.live_usable_max = smp->live_usable;
        if (smp->live_req > p.live_req_max)
            p.live_req_max = smp->live_req;
        seq_write(e, &p, sizeof p);
        if (p.samples == geo.tier_step[t])
            __atomic_store_n(&history->heads[t], n + 1, __ATOMIC_RELEASE);
    }
}

/* The backend's statistics are due again BE_CPU_SHARE times as long after
 * the last snapshot as it took of the sampler's CPU time, so that they cost
 * at most 1/BE_CPU_SHARE of a CPU; and after BE_AGE_MAX passes whatever
 * they cost, so that no figure shown is older than that: a heap whose walk
 * takes more than BE_AGE_MAX/BE_CPU_SHARE intervals (0.3 s at 1 s) costs
 * one walk per BE_AGE_MAX passes. glibc's walk every free chunk of every
 * arena, each arena locked while it is walked: about 0.3 us a free chunk,
 * 101 ms on a 1 GiB heap of 344,000 free chunks in 16 arenas, where the
 * program's slowest malloc+free took 14-18 ms during a walk against 2-4 ms
 * without (bench/snapcost.sh). Such a heap is walked every 10 s, a heap of
 * a few thousand free chunks at every pass; one of 5 million free chunks
 * (1.5 s) every 30 s, 5% of a CPU, a thread needing an arena waiting up to
 * that arena's share. (A ceiling of 5 passes walked the 1 GiB heap every
 * 5 s, at 2.9% of a CPU.) Measured in CPU time, not wall time: on a busy
 * host a snapshot preempted midway took 40 ms of wall time for 1 ms of
 * work, and froze the figures for 20 s. */
#define BE_CPU_SHARE 100
#define BE_AGE_MAX 30
/* glibc counts its arenas with malloc_info, a second walk of them all. An
 * arena is made only for a thread's first allocation (or when one fails
 * for want of memory), so the count is taken again only when a thread has
 * come since, and no more often than every BE_ARENAS_EVERY snapshots (a
 * server that starts a thread per connection would walk twice at each). */
#define BE_ARENAS_EVERY 10

/* The snapshot's state, the sampler thread's alone; reset when a sampler
 * starts (a fork child's starts afresh: none of its parent's figures). */
static struct {
    struct seg_backend_stats last;
    uint64_t due;                /* CLOCK_MONOTONIC */
    uint64_t threads_counted;    /* threads_seen at the last arena count */
    unsigned passes;             /* since the last snapshot */
    unsigned since_full;         /* snapshots since the last arena count */
} bs;

static long program_threads(void);

/* A snapshot whose in-use figure reads below the floor under live bytes
 * taken around it is torn: tcmalloc reads its central lists unlocked
 * before its page heap and thread caches, and a block moved meanwhile
 * between its caches is counted free twice. With one thread churning
 * 1000-byte blocks and no shim, up to 0.44% of 400,000 reads of
 * tcmalloc's current_allocated_bytes (0 to 1,773 in six runs, as the
 * machine's load went) fell below the blocks allocated before the read and
 * not freed by its end, by up to 4 MB: far more than a block in
 * flight per thread (bench/tornstats.c). A thread descheduled between the
 * two halves of such a move leaves the figure torn while it waits: under
 * make check's load, two takes 10 ms apart read the same figure, 1.7 MB
 * below the floor (t/integration/tornfig.sh). So a backend whose figure
 * can tear (in_use set: tcmalloc's) has its snapshot taken again, up to
 * BE_TAKES times in all, until one holds its floor; where none does, the
 * floor is 0, unknown. The others' figures are not taken again, so that
 * shimdump --check still finds a sample below its floor there: jemalloc's
 * stats.active (after its epoch) never fell below in 100,000 reads, and
 * glibc's arenas are each read under their lock. */
#define BE_TAKES 4

/* Fills *out with the backend's statistics: taken now when due (above),
 * else the last ones, as of their own time. sum holds the counters summed
 * just before (sample_once), sum_ok whether that sum was whole: the floor
 * and ceiling of live bytes (seg.h, struct seg_backend_stats) are 0,
 * unknown, where a sum was not. Sampler thread only. */
static void backend_stats(struct seg_backend_stats *out, const struct seg_counters *sum, int sum_ok)
{
    static struct seg_counters before[SIZECLASS_COUNT], after[SIZECLASS_COUNT];

    if (bs.last.t_ns != 0 && clock_ns(CLOCK_MONOTONIC) < bs.due && ++bs.passes < BE_AGE_MAX) {
        *out = bs.last;
        return;
    }
    uint64_t threads = __atomic_load_n(&seg->threads_seen, __ATOMIC_RELAXED);
    int full = bs.last.t_ns == 0 ||
               (threads != bs.threads_counted && bs.since_full + 1 >= BE_ARENAS_EVERY);
    if (full) {
        bs.threads_counted = threads;
        bs.since_full = 0;
    } else {
        bs.since_full++;
    }
    uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (unsigned take = 1;; take++) {
        uint64_t t_ns = clock_ns(CLOCK_REALTIME);
        be->snapshot(&bs.last, full && take == 1);   /* (the arena count: once) */
        int after_ok = seg_sum(seg, &geo, after) == 0;
        uint64_t alloc = 0, freed = 0, alloc_end = 0, freed_start = 0;
        for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
            alloc += sum[c].usable_alloc;
            freed += after[c].usable_free;
            alloc_end += after[c].usable_alloc;
            freed_start += sum[c].usable_free;
        }
        long nthreads = program_threads();
        uint64_t flight = (uint64_t)(nthreads > 0 ? nthreads : 1) * SEG_INFLIGHT_BYTES;
        int known = sum_ok && after_ok;
        bs.last.live_lo = known && alloc > freed + flight ? alloc - freed - flight : 0;
        bs.last.live_hi = known && alloc_end > freed_start ? alloc_end - freed_start : 0;
        bs.last.t_ns = t_ns;
        if (!be->in_use || bs.last.live_lo == 0)
            break;
        uint64_t use = be->in_use(&bs.last);
        if (use >= bs.last.live_lo)
            break;
        if (take == BE_TAKES) {
            bs.last.live_lo = 0;
            break;
        }
        /* the next take's floor: from the counters just before it */
        sum_ok = seg_sum(seg, &geo, before) == 0;
        sum = before;
    }
    uint64_t cpu1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    bs.due = clock_ns(CLOCK_MONOTONIC) + (cpu1 - cpu0) * BE_CPU_SHARE;
    bs.passes = 0;
    *out = bs.last;
}

static void sample_once(void)
{
    static struct seg_counters sum[SIZECLASS_COUNT];
    static struct seg_tracked trk[SIZECLASS_COUNT];
    static uint64_t age[SIZECLASS_COUNT][LIFEBUCKET_COUNT];
    static char text[4096];
    struct seg_sample smp;
    uint64_t now_mono;

    /* Under sampler_mu (the fork handlers take it): a child never starts
     * with a correction half made. */
    pthread_mutex_lock(&sampler_mu);
    tsc_refine();
    pthread_mutex_unlock(&sampler_mu);
    now_mono = mono_now();   /* the tracked blocks' clock, for their ages */

    memset(&smp, 0, sizeof smp);
    smp.t_ns = clock_ns(CLOCK_REALTIME);
    /* /proc/self/status is cheap; smaps_rollup walks every mapping (80 ms per
     * 8 GiB of 4 KiB pages), so the huge-page figure is refreshed only every
     * 30th pass, and carries its own time. */
    static uint64_t huge, huge_ns;
    static unsigned pass;
    if (read_proc("/proc/self/status", text, sizeof text)) {
        smp.rss = proc_field_kb(text, "VmRSS");
        smp.rss_anon = proc_field_kb(text, "RssAnon");
        smp.vsz = proc_field_kb(text, "VmSize");
    }
    if (pass++ % 30 == 0 && read_proc("/proc/self/smaps_rollup", text, sizeof text)) {
        huge = proc_field_kb(text, "AnonHugePages");
        huge_ns = smp.t_ns;
    }
    smp.rss_huge = huge;
    smp.rss_huge_ns = huge_ns;
    /* The counters just before the backend's statistics: the two as near
     * one moment as they can be (seg.h, struct seg_backend_stats). */
    int sum_ok = seg_sum_classes(seg, &geo, sum, trk) == 0;
    int exact = seg_req_exact(seg, &geo);
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        smp.live_count += sum[c].allocs - sum[c].frees;
        smp.live_usable += sum[c].usable_alloc - sum[c].usable_free;
        smp.live_req += sum[c].allocs != sum[c].frees ? seg_live_req(&sum[c], &trk[c], exact) : 0;
        smp.allocs += sum[c].allocs;
        smp.frees += sum[c].frees;
        smp.req_bytes += sum[c].req_bytes;
    }
    backend_stats(&smp.backend, sum, sum_ok);
    if (with_stacks) {
        stack_refresh_objects();
        stack_check_fds();
    }

    /* Ages of the tracked blocks still live; at a new peak of live usable
     * bytes (exact, so that an estimate's noise on a plateau makes no new
     * peak; and from a whole sum only, which a slot kept busy can deny),
     * their sums by stack too. */
    struct age_ctx ctx = { age, now_mono, NULL };
    if (sum_ok && smp.live_usable > pk.live_usable && (ctx.peak = peak_scratch()) != NULL)
        pk.live_usable = smp.live_usable;
    memset(age, 0, sizeof age);
    table_scan(age_add, &ctx);

    pthread_mutex_lock(&sampler_mu);
    /* the sampler is the one writer of ages and the series, under
     * sampler_mu (fork takes it): every write before is whole */
    SHIM_ASSERT((ages->seq & 1) == 0 || rec_inherited());
    __atomic_store_n(&ages->seq, ages->seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    ages->at_ns = now_mono;
    ages->dropped = __atomic_load_n(&seg->tracked_dropped, __ATOMIC_RELAXED);
    memcpy(ages->count, age, sizeof age);
    __atomic_store_n(&ages->seq, ages->seq + 1, __ATOMIC_RELEASE);

    uint64_t n = series->head;
    seq_write(&samples[n % geo.series_cap], &smp, sizeof smp);
    if (smp.rss > series->peak_rss) {
        series->peak_rss = smp.rss;
        series->peak_rss_ns = smp.t_ns;
    }
    __atomic_store_n(&series->head, n + 1, __ATOMIC_RELEASE);
    history_add(&smp);
    if (ctx.peak)
        peak_write(&smp, ctx.peak);
    __atomic_store_n(&seg->heartbeat_ns, smp.t_ns, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&sampler_mu);
    if (published == 0)
        publish();   /* the first pass: the copy, then its name */
    else if (published == 1)
        copy_refresh(COPY_PASS);
}

/* The program's threads alive, the caller included, not the sampler:
 * glibc's own count where it can be read (main's pthread_exit took itself
 * off it), else /proc's, less a main thread that has exited (a zombie
 * leader stays in Threads:) and less the sampler. */
static long program_threads(void)
{
    char text[1024];
    if (nptl_nthreads)
        return (long)__atomic_load_n(nptl_nthreads, __ATOMIC_ACQUIRE) - 1;
    /* /proc/self/stat: after the command's closing parenthesis, field 3 is
     * the main thread's state and field 20 num_threads. Unknown: assume
     * somebody else is there (2), so that nothing stops. */
    const char *p = read_proc("/proc/self/stat", text, sizeof text) ? strrchr(text, ')') : NULL;
    if (!p || p[1] != ' ')
        return 2;
    long zombie = p[2] == 'Z', n = -1;
    for (int field = 3; field < 20 && p; field++)
        p = strchr(p + 1, ' ');
    if (p)
        n = strtol(p + 1, NULL, 10);
    return n >= 1 ? n - zombie - 1 : 2;
}

/* Runs fn(arg) with the calling thread's allocations counted in shim_own,
 * outside the segment, and none tracked: what the shim makes a program
 * thread allocate or free is not the program's. */
static int as_shim(int (*fn)(void *), void *arg)
{
    struct seg_counters *cls = rt.cls;
    struct seg_tracked *trk = rt.trk;
    long countdown = rt.countdown, cost_b = rt.cost_b;
    int cap_off = rt.cap_off;
    rt.cls = shim_own.cls;
    rt.trk = shim_own.trk;
    rt.countdown = LONG_MAX;
    rt.cost_b = 0;   /* (up to 2^52 an allocation with sample_bytes:0) */
    rt.cap_off = 1;
    int r = fn(arg);
    rt.cls = cls;
    rt.trk = trk;
    rt.countdown = countdown;
    rt.cost_b = cost_b;
    rt.cap_off = cap_off;
    return r;
}

/* Waits until `until` (CLOCK_MONOTONIC, absolute) or a change of
 * sampler_state from `seen`, whichever comes first. */
static void sampler_wait(const struct timespec *until, int seen)
{
    syscall(SYS_futex, &sampler_state, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, seen, until,
            NULL, FUTEX_BITSET_MATCH_ANY);
}

/* How long the sampler sleeps at most between looks at the thread count:
 * a program thread that never called the malloc family has none of our
 * thread-exit hooks, so when it is the last to go, the sampler finds
 * itself alone at its next look. Once a second: looking every 100 ms cost
 * MariaDB's point selects about a tenth of their rate on a 2-vCPU VM,
 * though perf saw no CPU in it (a process of its own waking as often cost
 * them about as much; bench/results/myrocks-2026-12-04.txt). At most 1 s
 * (one carry below). */
#define SAMPLER_LOOK_NS 1000000000L
_Static_assert(SAMPLER_LOOK_NS <= 1000000000L, "one carry into tv_sec");

/* Sleeps until `next` (absolute), looking at the thread count every
 * SAMPLER_LOOK_NS, and for shimdump's capture requests (capture.c); while
 * a capture runs, writing its buffers as they fill. Returns 1 to go on, 0
 * when the sampler must end: asked to (S_STOP), or alone in the process,
 * where it takes S_STOP itself; a capture under way is then finished. */
static int sampler_sleep(const struct timespec *next)
{
    for (;;) {
        struct timespec now, until;
        int st = __atomic_load_n(&sampler_state, __ATOMIC_ACQUIRE);
        if (st == S_STOP || (st == S_RUN && program_threads() <= 0 &&
                             __atomic_compare_exchange_n(&sampler_state, &st, S_STOP, 0,
                                                         __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))) {
            capture_end_sampler();
            return 0;
        }
        if (capture_active()) {
            capture_tick();
        } else {
            capture_poll();
            if (capture_active())
                continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next->tv_sec || (now.tv_sec == next->tv_sec && now.tv_nsec >= next->tv_nsec))
            return 1;
        until = now;
        until.tv_nsec += SAMPLER_LOOK_NS;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        if (until.tv_sec > next->tv_sec || (until.tv_sec == next->tv_sec && until.tv_nsec > next->tv_nsec))
            until = *next;
        if (capture_active())
            capture_wait(&until);   /* a millisecond at most, or a full buffer */
        else
            sampler_wait(&until, st);
    }
}

static void ts_add_ms(struct timespec *t, long ms)
{
    t->tv_nsec += (ms % 1000) * 1000000L;
    t->tv_sec += ms / 1000 + t->tv_nsec / 1000000000L;
    t->tv_nsec %= 1000000000L;
}

/* The sampler thread. It returns (never pthread_exit, which would load
 * libgcc_s to unwind) when asked to stop or when it is alone: glibc then
 * takes it off its count, and if it was the last, ends the process with
 * exit(0) as the program's last thread would have. */
static void *sampler_main(void *arg)
{
    struct timespec next;
    long interval_ms = (long)(uintptr_t)arg;

    /* Its allocations are the shim's, not the program's (malloc_info's
     * FILE, under glibc): counted in a slot outside the segment, never
     * tracked, and no stacks. It frees only what it allocated. */
    rt.cls = sampler_own.cls;
    rt.trk = sampler_own.trk;
    rt.state = T_LIVE;
    rt.countdown = LONG_MAX;
    rt.cap_off = 2;
    memset(&bs, 0, sizeof bs);   /* a fork child's sampler: its own figures */
    pk.live_usable = 0;          /* and its own peak (the scratch, if any, is its copy) */
    capture_listen();
    /* The first pass waits min(interval, 200 ms). Run at once, on the CPU
     * of the thread that created it (a program's allocating thread), it
     * kept that thread off its CPU for 2-5 ms in about one start in three
     * (a program timing its own malloc+free pairs saw max 3.5-5.2 ms where
     * its usual max is 0.5-0.8 ms, every backend); woken from a sleep, it
     * runs where there is room (max 0.4-1.5 ms in 47 starts of 48, one
     * 4.1 ms). In a fork child, a whole interval: most children exec
     * within milliseconds, and many close every descriptor first
     * (subprocess's close_fds): a first pass, which names the child's copy,
     * racing that close would only say why it failed, on the child's
     * stderr. A child that lives on is named one interval after its first
     * tracked allocation (shimdump finds it through /proc before). */
    clock_gettime(CLOCK_MONOTONIC, &next);
    ts_add_ms(&next, rec_inherited() || interval_ms < 200 ? interval_ms : 200);
    if (!sampler_sleep(&next))
        return NULL;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (;;) {
        struct timespec now;
        sample_once();
        ts_add_ms(&next, interval_ms);
        /* After a pass that ran late, the next one is a whole interval from
         * now, rather than back to back. */
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec || (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec)) {
            next = now;
            ts_add_ms(&next, interval_ms);
        }
        if (!sampler_sleep(&next))
            return NULL;
    }
}

static int create_sampler(void *arg)
{
    pthread_attr_t attr;
    int err;
    (void)arg;
    /* The default stack size (address space only): when the program's
     * last thread is gone first, the process's exit (its atexit handlers
     * and static destructors) runs on this thread. */
    pthread_attr_init(&attr);
    err = pthread_create(&sampler_thread, &attr, sampler_main, (void *)(uintptr_t)sampler_interval);
    pthread_attr_destroy(&attr);
    return err;
}

/* Started by the first tracked allocation, so that short-lived processes
 * (a shell's children) never get a thread. All signals are blocked in it:
 * they belong to the program's threads. Joinable, for sampler_stop_if_last. */
void start_sampler(void)
{
    int none = S_NONE, err = errno;
    sigset_t all, old;

    if (!__atomic_compare_exchange_n(&sampler_state, &none, S_STARTING, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (as_shim(create_sampler, NULL) == 0) {
        pthread_setname_np(sampler_thread, "mallocshim");
        __atomic_store_n(&sampler_state, S_RUN, __ATOMIC_RELEASE);
    } else {
        __atomic_store_n(&sampler_state, S_STOP, __ATOMIC_RELEASE);
        log_msg("cannot start the sampler thread; the time series stays empty");
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = err;   /* inside malloc: a success leaves errno alone */
}

static int join_sampler(void *arg)
{
    struct timespec deadline;
    (void)arg;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += 5;
    return pthread_clockjoin_np(sampler_thread, NULL, CLOCK_MONOTONIC, &deadline);
}

/* Called by each program thread on its way out (slot_exit). When it is the
 * program's last thread, the sampler ends first and is joined, so that this
 * thread is the last that glibc counts: its exit then ends the process with
 * exit(0), as without the shim, and a signal pending for the process is
 * handled as it would be. The join waits for a pass under way (milliseconds);
 * after 5 s it gives up with a line, and the sampler ends at its next look. */
void sampler_stop_if_last(void)
{
    int run = S_RUN;
    if (__atomic_load_n(&sampler_state, __ATOMIC_ACQUIRE) != S_RUN || program_threads() > 1 ||
        !__atomic_compare_exchange_n(&sampler_state, &run, S_STOP, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return;
    syscall(SYS_futex, &sampler_state, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
    int cancel, saved = errno;
    /* The join is a cancellation point; a thread cancelled on its way out
     * must still see it done. */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    int err = as_shim(join_sampler, NULL);
    pthread_setcancelstate(cancel, NULL);
    errno = saved;
    if (err)
        log_msg("the sampler thread did not end: %s", strerrordesc_np(err));
}
