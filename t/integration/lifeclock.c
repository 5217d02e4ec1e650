/* lifeclock: the lifetimes the shim records match the program's own clock.
 * For 2.5 s (across the sampler's switch to the TSC and its corrections),
 * it allocates a block, sleeps 20 ms and frees it, timing each with
 * CLOCK_MONOTONIC: after malloc returns to before free is called (lo), and
 * before malloc is called to after free returns (hi). Every free event of
 * these blocks in the segment's event ring must say lo <= lifetime <= hi,
 * within 50 us, and each alloc event's time must fall within 2 ms of the
 * program's, on CLOCK_MONOTONIC. A clock that steps (its scale corrected by
 * a jump), runs at a wrong rate or drifts away fails this.
 * Neither tolerance is a bound on the scheduler: each time the shim takes
 * lies between two readings of this program's own, so a preemption only
 * widens lo..hi. They bound how far the shim's clock may stand from
 * CLOCK_MONOTONIC: none where it is clock_gettime; with the TSC, a slew of
 * at most 1000 ppm (20 us over 20 ms) and an offset under TSC_STEP_NS (1
 * ms, clock.c) plus what a late sampler pass lets it drift.
 * Usage: lifeclock SHM_DIR (run with sample:1). */
#include "config.h"

#include <time.h>

#include "segutil.h"

#define SIZE 12345
#define MAXN 400
#define SLACK_NS 50000

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    static uint64_t lo[MAXN], hi[MAXN], addr[MAXN], born_lo[MAXN], born_hi[MAXN];
    const struct seg_header *h;
    int n = 0;

    if (argc != 2)
        return 2;
    free(malloc(1));                 /* names the segment, starts the sampler */
    h = su_open(argv[1], (int)getpid());
    if (!h)
        return 1;
    CHECK(h->sample == 1);
    uint64_t start = now_ns();
    while (n < MAXN && now_ns() - start < 2500000000ull) {
        struct timespec d = { 0, 20000000L };
        uint64_t t0 = now_ns();
        void *p = malloc(SIZE);
        uint64_t t1 = now_ns();
        while (nanosleep(&d, &d) != 0)
            ;
        uint64_t t2 = now_ns();
        free(p);
        uint64_t t3 = now_ns();
        born_lo[n] = t0;
        born_hi[n] = t1;
        lo[n] = t2 - t1;
        hi[n] = t3 - t0;
        addr[n++] = (uint64_t)(uintptr_t)p;
    }

    /* The free events of SIZE-byte blocks, oldest first: one per loop. */
    const struct seg_events *eh = (const struct seg_events *)((const char *)h + su_hdr.off_events);
    const struct seg_event *ev = (const struct seg_event *)(eh + 1);
    uint64_t head = __atomic_load_n(&eh->head, __ATOMIC_ACQUIRE), cap = su_hdr.events_cap;
    int i = 0, j = 0, bad = 0, off = 0;
    /* Events are stamped CLOCK_REALTIME as the shim's clock plus the
     * offset between the two clocks at its start. */
    uint64_t rt_off = su_hdr.start_ns - su_hdr.start_mono_ns;
    for (uint64_t k = head > cap ? head - cap : 0; k < head && i < n; k++) {
        const struct seg_event *e = &ev[k % cap];
        if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != k + 1 || e->size != SIZE)
            continue;
        if (e->kind == SEG_EV_ALLOC && j < n) {
            /* The shim's clock follows CLOCK_MONOTONIC (shimdump compares
             * the two): within 2 ms. */
            uint64_t born = e->t_ns - rt_off;
            if (born + 2000000 < born_lo[j] || born > born_hi[j] + 2000000) {
                if (off++ < 5)
                    fprintf(stderr, "lifeclock: block %d born %+.3f ms off the program's clock\n",
                            j, ((double)born - (double)born_lo[j]) / 1e6);
            }
            j++;
        }
        if (e->kind != SEG_EV_FREE)
            continue;
        CHECK(e->addr == addr[i]);
        if (e->lifetime_ns + SLACK_NS < lo[i] || e->lifetime_ns > hi[i] + SLACK_NS) {
            if (bad++ < 5)
                fprintf(stderr, "lifeclock: block %d lived %.3f ms by the shim, %.3f..%.3f ms "
                        "by the program\n", i, e->lifetime_ns / 1e6, lo[i] / 1e6, hi[i] / 1e6);
        }
        i++;
    }
    CHECK(i == n && j == n);
    CHECK(bad == 0);
    CHECK(off == 0);
    if (i != n || j != n || bad || off)
        fprintf(stderr, "lifeclock: %d blocks, %d alloc and %d free events found, %d lifetimes "
                "outside, %d births off\n", n, j, i, bad, off);
    else {
        /* Say which clock the shim's tracked path ran on. */
        char cs[32] = "";
        FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
        if (f) {
            if (fgets(cs, sizeof cs, f))
                cs[strcspn(cs, "\n")] = '\0';
            fclose(f);
        }
        printf("%d lifetimes of 20 ms within the program's own bounds (%s)\n", n,
               strcmp(cs, "tsc") == 0 ? "TSC clock after 0.5 s"
                                      : "clocksource not tsc: clock_gettime throughout");
    }
    return tu_finish("lifeclock");
}
