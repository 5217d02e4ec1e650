/* clock: the tracked blocks' clock (mono_now), the TSC scaled to
 * CLOCK_MONOTONIC where the kernel keeps time by it, and its refinement by
 * the sampler thread. */
#include "config.h"

#include "rec.h"

#include <string.h>

/* The tracked path's clock: the TSC, scaled to CLOCK_MONOTONIC's
 * nanoseconds, where the kernel itself keeps time by it (its clocksource is
 * "tsc", so the counters are invariant and in step across CPUs); else
 * clock_gettime. rdtsc costs a few ns where clock_gettime costs ~20, and a
 * tracked block reads the clock twice.
 *
 * The scale comes from the sampler thread, never from a short measurement:
 * 200 us of busy waiting at start (as before 0.1.0) was 0.03% off on an
 * idle machine and far more when preempted (30 us is 15%), and the first
 * correction then stepped the clock by what it had gathered (0.3 ms idle,
 * tens of ms in CI), into the lifetimes of blocks that lived across it. So
 * until the sampler has a baseline of TSC_BASELINE_NS, mono_now is
 * clock_gettime; from then on, the TSC mapped through an anchor (tsc_a,
 * mono_a) and a scale (mult, ns per tick << 32) at the TSC's rate over the
 * whole baseline. Each later pass moves the anchor to where the mapping
 * stands now, so that the clock never steps, and sets the scale to close
 * half the gap to CLOCK_MONOTONIC (which readers of the table compare it
 * with) over one more period like the last, within +-1000 ppm: stable
 * whatever the passes' spacing. Only a gap over TSC_STEP_NS (a suspend, a
 * migrated VM) is closed by a step.
 *
 * Synchronization: the sampler thread is the only writer, under sampler_mu.
 * The anchor is a latch (two copies and a sequence number whose low bit
 * says which copy readers take while the other is written), so a reader
 * never waits for the writer, even one stopped mid-write or lost to a fork
 * that skipped the fork handlers; it only retries when the sequence moved
 * under it, and after 64 retries reads clock_gettime. */
#if defined(__x86_64__)
#include <x86intrin.h>
#define TSC_BASELINE_NS 500000000ull
#define TSC_STEP_NS     1000000ull
struct clk_anchor {
    uint64_t tsc_a, mono_a, mult;
};
static int use_tsc;                /* set once, after clk is first written */
static int tsc_ok;                 /* the clocksource is the TSC */
static uint64_t tsc0, mono0;       /* a pair from start: the baseline's origin */
static uint64_t last_m;            /* CLOCK_MONOTONIC at the last refinement */
static struct {
    uint64_t seq;
    struct clk_anchor c[2];
} clk __attribute__((aligned(64)));

static inline uint64_t clk_map(const struct clk_anchor *a, uint64_t t)
{
    return a->mono_a + (uint64_t)(((unsigned __int128)(t > a->tsc_a ? t - a->tsc_a : 0) * a->mult) >> 32);
}

uint64_t mono_now(void)
{
    if (likely(__atomic_load_n(&use_tsc, __ATOMIC_ACQUIRE))) {
        for (int i = 0; i < 64; i++) {
            uint64_t s = __atomic_load_n(&clk.seq, __ATOMIC_ACQUIRE);
            const struct clk_anchor *p = &clk.c[s & 1];
            struct clk_anchor a = {
                __atomic_load_n(&p->tsc_a, __ATOMIC_RELAXED),
                __atomic_load_n(&p->mono_a, __ATOMIC_RELAXED),
                __atomic_load_n(&p->mult, __ATOMIC_RELAXED),
            };
            uint64_t t = __rdtsc();
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (__atomic_load_n(&clk.seq, __ATOMIC_RELAXED) == s)
                return clk_map(&a, t);
        }
    }
    return clock_ns(CLOCK_MONOTONIC);
}

/* A TSC reading and the CLOCK_MONOTONIC time it was taken at: the middle
 * of the tightest of a few brackets (m1, rdtsc, m2), so that a preemption
 * in one does not skew it. */
static void tsc_pair(uint64_t *t, uint64_t *m)
{
    uint64_t best = UINT64_MAX;
    *t = *m = 0;
    for (int i = 0; i < 8; i++) {
        uint64_t m1 = clock_ns(CLOCK_MONOTONIC), tt = __rdtsc(), m2 = clock_ns(CLOCK_MONOTONIC);
        if (m2 >= m1 && m2 - m1 < best) {
            best = m2 - m1;
            *t = tt;
            *m = m1 + (m2 - m1) / 2;
            if (best < 200)
                break;
        }
    }
}

static void clk_copy(struct clk_anchor *dst, const struct clk_anchor *src)
{
    __atomic_store_n(&dst->tsc_a, src->tsc_a, __ATOMIC_RELAXED);
    __atomic_store_n(&dst->mono_a, src->mono_a, __ATOMIC_RELAXED);
    __atomic_store_n(&dst->mult, src->mult, __ATOMIC_RELAXED);
}

/* The latch's write: readers go to copy 1 while copy 0 is written, then
 * to copy 0 while copy 1 is. */
static void clk_store(const struct clk_anchor *a)
{
    __atomic_store_n(&clk.seq, clk.seq + 1, __ATOMIC_RELAXED);   /* odd: copy 1 */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    clk_copy(&clk.c[0], a);
    __atomic_store_n(&clk.seq, clk.seq + 1, __ATOMIC_RELEASE);   /* even: copy 0 */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    clk_copy(&clk.c[1], a);
}

/* Once per sampler pass, under sampler_mu. */
void tsc_refine(void)
{
    uint64_t t, m;
    if (!tsc_ok)
        return;
    tsc_pair(&t, &m);
    if (t <= tsc0 || m <= mono0 || m - mono0 < TSC_BASELINE_NS)
        return;
    /* The TSC's rate over the whole baseline, ns per tick << 32. */
    uint64_t rate = (uint64_t)(((unsigned __int128)(m - mono0) << 32) / (t - tsc0));
    if (rate == 0)
        return;
    uint64_t period = last_m && m > last_m ? m - last_m : 0;
    last_m = m;
    if (!__atomic_load_n(&use_tsc, __ATOMIC_RELAXED)) {
        struct clk_anchor a = { t, m, rate };
        clk_store(&a);
        __atomic_store_n(&use_tsc, 1, __ATOMIC_RELEASE);
        return;
    }
    /* Where the mapping stands now; gap > 0: it is behind. */
    uint64_t f = clk_map(&clk.c[clk.seq & 1], t);
    int64_t gap = (int64_t)(m - f);
    struct clk_anchor a = { t, f, rate };
    if (gap > (int64_t)TSC_STEP_NS || gap < -(int64_t)TSC_STEP_NS || period == 0) {
        a.mono_a = m;
    } else {
        double scale = 1.0 + (double)gap / 2.0 / (double)period;
        scale = scale < 0.999 ? 0.999 : scale > 1.001 ? 1.001 : scale;
        a.mult = (uint64_t)((double)rate * scale);
    }
    clk_store(&a);
}

void tsc_start(void)
{
    char cs[32];
    tsc_pair(&tsc0, &mono0);
    tsc_ok = read_proc("/sys/devices/system/clocksource/clocksource0/current_clocksource", cs,
                       sizeof cs) && strncmp(cs, "tsc", 3) == 0;
}
#else
uint64_t mono_now(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}
void tsc_refine(void) {}
void tsc_start(void) {}
#endif
