/* figdiag: the diagnosis (figures.h, fig_diagnose): a few findings, each
 * from named figures, with its confidence, the fix to try and how to check
 * it first. The thresholds are here and in doc/shimdump.1, DIAGNOSIS. */
#include "config.h"

#include "figures.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "figfmt.h"

#define MIB (1ull << 20)

/* Free space held inside the allocator: an alarm from FREE_MIN bytes and
 * FREE_SHARE of what it holds; high confidence from FREE_HIGH. */
#define FREE_MIN (16 * MIB)
#define FREE_SHARE 0.15
#define FREE_HIGH 0.30

/* A leak suspect: live requested bytes that grew by LEAK_MIN and by
 * LEAK_GROWTH of where they started, over LEAK_POINTS points or more, in
 * at least LEAK_POINTS steps and LEAK_RISES of them (a growth spread over
 * time, not one burst), no more than LEAK_DROPS of the steps going down
 * by over 1%, while no
 * more than LEAK_FREED of the bytes allocated over the span were freed.
 * A call site only grows when it freed at most LEAK_SITE_FREES of its
 * blocks, its live blocks were made over LEAK_SITE_AGES age buckets or
 * more (not in one burst; the buckets are a factor of 4 wide), and it
 * holds LEAK_SITE_SHARE of the growth. */
#define LEAK_MIN (8 * MIB)
#define LEAK_GROWTH 0.5
#define LEAK_POINTS 6
#define LEAK_RISES 0.33
#define LEAK_DROPS 0.10
#define LEAK_FREED 0.5
#define LEAK_SITE_FREES 0.01
#define LEAK_SITE_AGES 2
#define LEAK_SITE_SHARE 0.10
#define LEAK_SITES 3

/* RSS far above what the allocator holds: by OUT_MIN bytes and OUT_SHARE
 * of RSS. */
#define OUT_MIN (32 * MIB)
#define OUT_SHARE 0.25

/* Size-class rounding: live usable bytes over live requested by ROUND_MIN
 * bytes and ROUND_SHARE of the usable bytes. */
#define ROUND_MIN (4 * MIB)
#define ROUND_SHARE 0.10

const char *const fig_conf_name[3] = { "low", "medium", "high" };

static const char check_capture[] = "`shimdump --capture=20 PID` records 20 s of its calls, then "
                                    "`shimreplay --all FILE` replays them under each allocator and "
                                    "setting, with the RSS each ends at";

static void put(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void put(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
}

static struct fig_finding *add(struct fig_finding *out, size_t max, size_t *n, const char *id,
                               enum fig_sev sev, enum fig_conf conf)
{
    if (*n >= max)
        return NULL;
    struct fig_finding *f = &out[(*n)++];
    memset(f, 0, sizeof *f);
    f->id = id;
    f->sev = sev;
    f->conf = conf;
    return f;
}

static double share(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0;
}

/* "pid 123"-style stand-in for PID in the commands: the real pid, live. */
static const char *pid_word(const struct dump *d, char *buf, size_t cap)
{
    snprintf(buf, cap, "%u", d->pid);
    return buf;
}

/* ---- Free space held inside the allocator ---- */

static void free_held(const struct dump *d, struct fig_finding *out, size_t max, size_t *n)
{
    const struct dump_sample *s = dump_last(d);
    struct fig_alloc a;
    struct fig_finding *f;
    char b1[24], b2[24], b3[24], b4[24], pid[16], cpus[48];
    uint64_t held, dirty = 0;

    fig_alloc_of(d, s, &a);
    if (!a.have)
        return;
    const uint64_t *v = s->be.v;
    switch (d->backend_id) {
    case SEG_BACKEND_GLIBC:
        held = v[2];   /* fordblks: free chunks in the arenas, their tops included */
        break;
    case SEG_BACKEND_JEMALLOC:
        /* resident less the pages in use and the metadata: dirty pages not
         * yet purged; active less allocated: free regions of slabs */
        dirty = v[2] > v[1] + v[5] ? v[2] - v[1] - v[5] : 0;
        held = dirty + (v[1] > v[0] ? v[1] - v[0] : 0);
        break;
    case SEG_BACKEND_TCMALLOC:
        held = v[2];   /* the page heap's free pages, not yet released */
        break;
    default:
        return;
    }
    /* What it says it holds may not all be resident (jemalloc's resident
     * is a most, counting pages never touched): free bytes count only as
     * far as the heap is resident, from /proc where known, else RSS. */
    struct fig_mem m;
    fig_memory(d, &m);
    uint64_t res = m.have ? m.part[FM_HEAP].v : s->rss;
    uint64_t fp = a.footprint < res ? a.footprint : res;
    uint64_t used = d->backend_id == SEG_BACKEND_JEMALLOC ? v[0] : a.in_use;
    if (held > (fp > used ? fp - used : 0))
        held = fp > used ? fp - used : 0;
    if (dirty > held)
        dirty = held;
    double sh = share(held, fp);
    if (held < FREE_MIN || sh < FREE_SHARE)
        return;
    if (!(f = add(out, max, n, "alloc_free_held", FN_WARN, sh >= FREE_HIGH ? FC_HIGH : FC_MEDIUM)))
        return;
    pid_word(d, pid, sizeof pid);
    if (d->mem.cpus)
        snprintf(cpus, sizeof cpus, "%llu CPUs", (unsigned long long)d->mem.cpus);
    else
        snprintf(cpus, sizeof cpus, "an unknown number of CPUs");
    figfmt_bytes(b1, sizeof b1, held);
    figfmt_bytes(b2, sizeof b2, fp);
    switch (d->backend_id) {
    case SEG_BACKEND_GLIBC: {
        uint64_t arenas = v[5], want = d->mem.cpus ? d->mem.cpus : 2;
        put(f->what, sizeof f->what, "glibc holds %s (%.0f%%) free in %llu arena%s on %s: freed "
            "memory that its arenas keep and do not give back", b1, sh * 100,
            (unsigned long long)arenas, arenas == 1 ? "" : "s", cpus);
        put(f->rests_on, sizeof f->rests_on, "glibc's free_bytes (fordblks), arena_bytes + "
            "mmap_bytes (%s resident) and arenas, of the last sample%s", b2,
            d->mem.cpus ? "; the CPUs from the process's affinity" : "");
        if (arenas > want)
            put(f->fix, sizeof f->fix, "try `arenas = %llu` or `backend = jemalloc` in "
                "mallocshim.conf (a restart)", (unsigned long long)want);
        else
            put(f->fix, sizeof f->fix, "try `backend = jemalloc` in mallocshim.conf (a restart); "
                "with few arenas already, glibc's holes are from lifetimes mixed in one arena");
        break;
    }
    case SEG_BACKEND_JEMALLOC:
        put(f->what, sizeof f->what, "jemalloc holds %s (%.0f%% of its %s resident) free: %s in "
            "dirty pages not yet given back, %s in free regions of slabs", b1, sh * 100, b2,
            figfmt_bytes(b3, sizeof b3, dirty),
            figfmt_bytes(b4, sizeof b4, held - dirty));
        put(f->rests_on, sizeof f->rests_on, "jemalloc's resident, active, allocated and "
            "metadata, of the last sample; its resident as far as %s says", m.have ?
            "/proc's anonymous memory" : "RSS");
        if (dirty * 2 >= held)
            put(f->fix, sizeof f->fix, "have it purge sooner: `jemalloc.dirty_decay_ms = 1000` "
                "and `jemalloc.muzzy_decay_ms = 0` in mallocshim.conf, or "
                "`jemalloc.background_thread = true` (a restart)");
        else
            put(f->fix, sizeof f->fix, "fewer arenas mix fewer lifetimes: `arenas = %llu` in "
                "mallocshim.conf (a restart)",
                (unsigned long long)(d->mem.cpus ? d->mem.cpus : 2));
        break;
    default:
        put(f->what, sizeof f->what, "tcmalloc's page heap holds %s (%.0f%% of its %s heap) "
            "free and not given back to the system", b1, sh * 100, b2);
        put(f->rests_on, sizeof f->rests_on, "tcmalloc's pageheap_free_bytes, heap_size and "
            "pageheap_unmapped_bytes, of the last sample");
        put(f->fix, sizeof f->fix, "have it release free spans at once: "
            "`tcmalloc.aggressive_memory_decommit = 1` in mallocshim.conf (a restart), or "
            "TCMALLOC_RELEASE_RATE=10 in its environment");
        break;
    }
    put(f->check, sizeof f->check, "%s; here: `shimdump --capture=20 %s`",
        check_capture, pid);
}

/* ---- Live bytes that only grow ---- */

/* A name for a stack: its first named frame, else its first frame's object
 * and offset. */
static void site_name(const struct dump *d, const struct dump_stack *s, char *dst, size_t cap)
{
    for (uint32_t i = 0; i < s->depth; i++) {
        const struct dump_frame *fr = &d->frames[s->frame0 + i];
        if (fr->func) {
            if (fr->file)
                snprintf(dst, cap, "%.80s (%.60s:%u)", fr->func,
                         strrchr(fr->file, '/') ? strrchr(fr->file, '/') + 1 : fr->file, fr->line);
            else
                snprintf(dst, cap, "%.120s", fr->func);
            return;
        }
    }
    if (s->depth) {
        const struct dump_frame *fr = &d->frames[s->frame0];
        const char *o = fr->obj >= 0 && (size_t)fr->obj < d->nobjs ? d->objs[fr->obj].path : "?";
        const char *slash = strrchr(o, '/');
        char clean[80];
        dump_clean_text(clean, sizeof clean, slash ? slash + 1 : o, strlen(slash ? slash + 1 : o));
        snprintf(dst, cap, "%s+0x%llx", clean, (unsigned long long)fr->obj_off);
        return;
    }
    snprintf(dst, cap, "stack %u", s->id);
}

/* The call sites whose live bytes only grow (of a growth of `grew` bytes),
 * the most first, as a list in words into dst; returns how many. */
static size_t growing_sites(const struct dump *d, uint64_t grew, char *dst, size_t cap)
{
    size_t idx[LEAK_SITES], n = 0, used = 0;
    dst[0] = '\0';
    for (size_t i = 0; i < d->nstacks; i++) {
        const struct dump_stack *s = &d->stacks[i];
        unsigned buckets = 0;
        for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++)
            buckets += s->age_count[b] > 0;
        if (!s->live_req || !s->allocs || (double)s->frees > LEAK_SITE_FREES * (double)s->allocs ||
            buckets < LEAK_SITE_AGES || (double)s->live_req < LEAK_SITE_SHARE * (double)grew)
            continue;
        size_t at = n < LEAK_SITES ? n : LEAK_SITES;
        while (at > 0 && d->stacks[idx[at - 1]].live_req < s->live_req)
            at--;
        if (at >= LEAK_SITES)
            continue;
        size_t last = n < LEAK_SITES ? n : LEAK_SITES - 1;
        memmove(idx + at + 1, idx + at, (last - at) * sizeof *idx);
        idx[at] = i;
        if (n < LEAK_SITES)
            n++;
    }
    for (size_t i = 0; i < n && used < cap; i++) {
        char name[160], b[24];
        site_name(d, &d->stacks[idx[i]], name, sizeof name);
        int w = snprintf(dst + used, cap - used, "%s%s (%s live)", i ? ", " : "", name,
                         figfmt_bytes(b, sizeof b, d->stacks[idx[i]].live_req));
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return n;
}

static void leak(const struct dump *d, struct fig_finding *out, size_t max, size_t *n)
{
    const struct dump_tier *t = dump_tier_for(d, 0);
    struct fig_finding *f;
    char b1[24], b2[24], b3[24], b4[24], dur[32], pid[16], sites[400];
    size_t from = 0, drops = 0, rises = 0;

    if (!t || t->npoints < LEAK_POINTS)
        return;
    while (from < t->npoints && t->points[from].last.t_ns < d->start_ns)
        from++;   /* a fork child's copy of its parent's */
    if (t->npoints - from < LEAK_POINTS)
        return;
    const struct dump_sample *a = &t->points[from].last, *b = &t->points[t->npoints - 1].last;
    if (b->live_req < a->live_req + LEAK_MIN || (double)b->live_req < (1 + LEAK_GROWTH) * (double)a->live_req)
        return;
    for (size_t i = from + 1; i < t->npoints; i++) {
        drops += (double)t->points[i].last.live_req < 0.99 * (double)t->points[i - 1].last.live_req;
        rises += t->points[i].last.live_req > t->points[i - 1].last.live_req;
    }
    size_t steps = t->npoints - from - 1;
    if ((double)drops > LEAK_DROPS * (double)steps || rises < LEAK_POINTS ||
        (double)rises < LEAK_RISES * (double)steps)
        return;
    uint64_t grew = b->live_req - a->live_req;
    uint64_t asked = b->req_bytes > a->req_bytes ? b->req_bytes - a->req_bytes : 0;
    uint64_t freed = asked > grew ? asked - grew : 0;
    if (asked && (double)freed > LEAK_FREED * (double)asked)
        return;
    size_t ns = d->nstacks ? growing_sites(d, grew, sites, sizeof sites) : 0;
    uint64_t span = b->t_ns > a->t_ns ? b->t_ns - a->t_ns : 0;
    enum fig_conf conf = ns ? FC_HIGH : d->stack_depth ? FC_MEDIUM : FC_MEDIUM;
    if (span < 60ull * 1000000000ull)
        conf = FC_LOW + (ns > 0);
    if (!(f = add(out, max, n, "leak_suspect", FN_WARN, conf)))
        return;
    pid_word(d, pid, sizeof pid);
    put(f->what, sizeof f->what, "live bytes only grow: from %s to %s over %s, while %s of the %s "
        "allocated meanwhile was freed (%.0f%%)%s%s",
        figfmt_bytes(b1, sizeof b1, a->live_req), figfmt_bytes(b2, sizeof b2, b->live_req),
        figfmt_dur(dur, sizeof dur, span, FF_WORDS), figfmt_bytes(b3, sizeof b3, freed),
        figfmt_bytes(b4, sizeof b4, asked), 100 * share(freed, asked),
        ns ? "; call sites that free nothing, their blocks made over time: " : "",
        ns ? sites : d->stack_depth ? "; no call site stands out" : "");
    put(f->rests_on, sizeof f->rests_on, "live requested and requested bytes over %zu points of "
        "the history%s", t->npoints - from,
        ns ? "; each site's frees, allocations and live blocks by age" : "");
    if (ns)
        put(f->fix, sizeof f->fix, "look at who keeps those blocks: `shimdump --stacks %s` has "
            "their frames and source lines", pid);
    else
        put(f->fix, sizeof f->fix, "find who holds them: `stacks = 8` in mallocshim.conf (a "
            "restart), then `shimdump --stacks %s`", pid);
    put(f->check, sizeof f->check, "see whether it levels off: `shimdump --watch %s` (a cache "
        "filling up levels off; a leak does not)", pid);
}

/* ---- Memory outside the heap ---- */

static void outside(const struct dump *d, struct fig_finding *out, size_t max, size_t *n)
{
    struct fig_mem m;
    struct fig_alloc a;
    struct fig_finding *f;
    const struct dump_sample *s = dump_last(d);
    char b1[24], b2[24], b3[24], b4[24], pid[16];

    fig_memory(d, &m);
    fig_alloc_of(d, s, &a);
    pid_word(d, pid, sizeof pid);
    if (m.have) {
        uint64_t heap = m.part[FM_HEAP].v, out_b = m.rss - heap;
        if (out_b < OUT_MIN || share(out_b, m.rss) < OUT_SHARE)
            return;
        /* the biggest part outside the heap */
        int big = FM_STACKS;
        for (int k = FM_STACKS; k < FM_COUNT; k++)
            if (m.part[k].v > m.part[big].v)
                big = k;
        /* code and the shim's segment are there in any process: no alarm */
        enum fig_sev sev = big == FM_CODE || big == FM_FILE_OTHER ? FN_INFO : FN_WARN;
        if (!(f = add(out, max, n, "outside_heap", sev, FC_HIGH)))
            return;
        put(f->what, sizeof f->what, "RSS %s is %s above the allocator's heap (%s): the most of "
            "it, %s, is %s", figfmt_bytes(b1, sizeof b1, m.rss),
            figfmt_bytes(b2, sizeof b2, out_b), figfmt_bytes(b3, sizeof b3, heap),
            figfmt_bytes(b4, sizeof b4, m.part[big].v), m.part[big].name);
        put(f->rests_on, sizeof f->rests_on, "the kernel's RssAnon, RssFile and RssShmem, and "
            "smaps mapping by mapping, read now; the allocator's own count of what it holds");
        switch (big) {
        case FM_ANON_OTHER:
            put(f->fix, sizeof f->fix, "not the allocator's: memory the program maps itself (a "
                "database's buffer pool: InnoDB's innodb_buffer_pool_size, RocksDB's block "
                "cache); size it in the program's own settings");
            break;
        case FM_STACKS:
            put(f->fix, sizeof f->fix, "fewer threads, or smaller stacks (ulimit -s; MariaDB's "
                "thread_stack, thread_pool_size)");
            break;
        case FM_SHIM:
            put(f->fix, sizeof f->fix, "the shim's own segment: fewer `slots`, `history` points or "
                "`stacks` in mallocshim.conf");
            break;
        case FM_ANON_FILES:
        case FM_CODE:
        case FM_FILE_OTHER:
            put(f->fix, sizeof f->fix, "nothing to do in the allocator: mapped files are page "
                "cache the kernel can take back");
            break;
        default:
            put(f->fix, sizeof f->fix, "shared memory of the program's own: see who maps it in "
                "/proc/%s/maps", pid);
        }
        put(f->check, sizeof f->check, "`shimdump %s` breaks RSS down class by class; "
            "`grep -e Rss -e '^[0-9a-f]' /proc/%s/smaps` shows it mapping by mapping", pid, pid);
        return;
    }
    /* Not known from /proc: RSS against the allocator's count, as sampled */
    if (!s || !a.have || s->rss < a.footprint)
        return;
    uint64_t out_b = s->rss - a.footprint;
    if (out_b < OUT_MIN || share(out_b, s->rss) < OUT_SHARE)
        return;
    if (!(f = add(out, max, n, "outside_heap", FN_WARN, FC_LOW)))
        return;
    put(f->what, sizeof f->what, "RSS %s is %s above what the allocator holds (%s); what it is "
        "is %s", figfmt_bytes(b1, sizeof b1, s->rss), figfmt_bytes(b2, sizeof b2, out_b),
        figfmt_bytes(b3, sizeof b3, a.footprint), m.why);
    put(f->rests_on, sizeof f->rests_on, "RSS and the allocator's %s, of the last sample", a.fp_name);
    put(f->fix, sizeof f->fix, "see what it is first");
    put(f->check, sizeof f->check, "`shimdump %s` on the running process breaks RSS down class by "
        "class", pid);
}

/* ---- Size-class rounding ---- */

static void rounding(const struct dump *d, struct fig_finding *out, size_t max, size_t *n)
{
    const struct dump_class *t = &d->total;
    struct fig_finding *f;
    char b1[24], b2[24], b3[24], b4[24], cl[40], pid[16];
    if (t->live_usable <= t->live_req)
        return;
    uint64_t waste = t->live_usable - t->live_req;
    double sh = share(waste, t->live_usable);
    if (waste < ROUND_MIN || sh < ROUND_SHARE)
        return;
    unsigned worst = 0;
    uint64_t ww = 0;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        const struct dump_class *k = &d->cls[c];
        uint64_t w = k->live_usable > k->live_req ? k->live_usable - k->live_req : 0;
        if (w > ww)
            ww = w, worst = c;
    }
    const struct dump_class *k = &d->cls[worst];
    if (!(f = add(out, max, n, "class_rounding", FN_WARN, d->exact ? FC_HIGH : FC_MEDIUM)))
        return;
    pid_word(d, pid, sizeof pid);
    put(f->what, sizeof f->what, "%s (%.0f%%) of the live usable bytes were not asked for: the "
        "allocator rounds sizes up to its classes; the most in %s blocks, %s: a mean %s asked for, "
        "%s given", figfmt_bytes(b1, sizeof b1, waste), sh * 100,
        figfmt_class(cl, sizeof cl, worst, FF_TERSE), figfmt_bytes(b2, sizeof b2, ww),
        figfmt_bytes(b3, sizeof b3, k->live_count ? k->live_req / k->live_count : 0),
        figfmt_bytes(b4, sizeof b4, k->live_count ? k->live_usable / k->live_count : 0));
    put(f->rests_on, sizeof f->rests_on, "live usable bytes (exact) against live requested bytes "
        "(%s), per size class", d->exact ? "exact" : "estimated");
    put(f->fix, sizeof f->fix, "sizes just above a class boundary: ask for the size the "
        "allocator gives (or a little less); %s", d->backend_id == SEG_BACKEND_GLIBC
        ? "glibc rounds to 16 bytes, so this is many small blocks: pack them"
        : "glibc rounds to 16 bytes only: `backend = glibc` trades this for its arenas");
    put(f->check, sizeof f->check, "`shimdump --stacks %s` shows which call sites ask for those "
        "sizes; %s", pid, check_capture);
}

/* ---- All of them ---- */

size_t fig_diagnose(const struct dump *d, struct fig_finding *out, size_t max)
{
    size_t n = 0, alarms = 0;
    if (!max)
        return 0;
    free_held(d, out, max, &n);
    leak(d, out, max, &n);
    outside(d, out, max, &n);
    rounding(d, out, max, &n);
    for (size_t i = 0; i < n; i++)
        alarms += out[i].sev >= FN_WARN;
    if (!alarms) {
        struct fig_step st[FS_COUNT];
        struct fig_finding *f;
        char b1[24], b2[24], b3[24], b4[24];
        fig_waterfall(d, st);
        /* the healthy line goes first, before what is only for information */
        if (n >= max)
            n = max - 1;
        memmove(out + 1, out, n * sizeof *out);
        n++;
        f = &out[0];
        memset(f, 0, sizeof *f);
        f->id = "healthy";
        f->sev = FN_INFO;
        f->conf = st[FS_INUSE].have && st[FS_RSS].have ? FC_HIGH : FC_LOW;
        if (st[FS_RSS].have && st[FS_FOOT].have)
            put(f->what, sizeof f->what, "nothing stands out: RSS %s is %.2f times the live "
                "requested bytes (%s); the allocator holds %s for %s in use",
                figfmt_bytes(b1, sizeof b1, st[FS_RSS].v), st[FS_RSS].ratio,
                figfmt_bytes(b2, sizeof b2, st[FS_REQ].v), figfmt_bytes(b3, sizeof b3, st[FS_FOOT].v),
                figfmt_bytes(b4, sizeof b4, st[FS_INUSE].v));
        else
            put(f->what, sizeof f->what, "nothing stands out yet: the process has no sample yet");
        put(f->rests_on, sizeof f->rests_on, "the waterfall, and each rule's figures below its "
            "thresholds");
    }
    return n;
}
