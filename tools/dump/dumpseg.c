/* dumpseg: a struct dump from a segment image (a mapping or a buffer); every
 * count and offset of the image is checked before it is used. */
#include "config.h"

#include "dump.h"
#include "segread.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* The most samples a dump keeps (the newest): a day at 1 s. */
#define DUMP_SERIES_MAX 86400u
/* The most points a dump keeps of one coarse tier (the newest): two weeks
 * of 1 min points, so that a --json of the largest history still reads
 * back (dumpmap.c's DUMP_JSON_MAX). */
#define DUMP_POINTS_MAX 20160u
/* The most stacks a dump keeps. */
#define DUMP_STACKS_MAX 65536u

void dump_why(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    if (!why || !len)
        return;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

void dump_clean_text(char *dst, size_t cap, const char *s, size_t n)
{
    size_t i;
    if (cap == 0)
        return;
    for (i = 0; i < n && i + 1 < cap && s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];
        dst[i] = ch < 0x20 || ch >= 0x7f ? '?' : (char)ch;
    }
    dst[i] = '\0';
}

const char *dump_be_name(int backend_id)
{
    static const char *const names[3] = { "glibc", "jemalloc", "tcmalloc" };
    return backend_id >= 0 && backend_id <= 2 ? names[backend_id] : "";
}

const char *dump_be_field(int backend_id, unsigned i)
{
    static const char *const names[3][6] = {
        { "arena_bytes", "mmap_bytes", "free_bytes", "keepcost_bytes", "in_use_bytes", "arenas" },
        { "allocated", "active", "resident", "mapped", "retained", "metadata" },
        { "current_allocated_bytes", "heap_size", "pageheap_free_bytes",
          "pageheap_unmapped_bytes", "", "" },
    };
    if (backend_id < 0 || backend_id > 2 || i >= 6)
        return "";
    return names[backend_id][i];
}

int dump_be_bytes(int backend_id, unsigned i)
{
    /* glibc's arena count is the one field that is not bytes */
    return *dump_be_field(backend_id, i) && !(backend_id == SEG_BACKEND_GLIBC && i == 5);
}

const struct dump_sample *dump_last(const struct dump *d)
{
    return d->nseries ? &d->series[d->nseries - 1] : NULL;
}

/* The time the first span of tier k starts. */
static uint64_t tier_reach(const struct dump *d, const struct dump_tier *k)
{
    uint64_t span = (uint64_t)k->points[0].samples * d->interval_ms * 1000000ull;
    uint64_t t = k->points[0].last.t_ns;
    return t > span ? t - span : 0;
}

const struct dump_tier *dump_tier_for(const struct dump *d, uint64_t since_ns)
{
    size_t n = d->ntiers < DUMP_TIERS_MAX ? d->ntiers : DUMP_TIERS_MAX;
    const struct dump_tier *best = NULL;
    for (size_t t = 0; t < n; t++) {
        const struct dump_tier *k = &d->tiers[t];
        if (k->npoints == 0)
            continue;
        best = k;
        if (k->dropped == 0 || (since_ns && tier_reach(d, k) <= since_ns))
            return k;
    }
    return best;
}

void dump_free(struct dump *d)
{
    free(d->series);
    for (size_t t = 0; t < DUMP_TIERS_MAX; t++)
        free(d->tiers[t].points);
    for (size_t i = 0; i < d->nframes; i++) {
        free(d->frames[i].func);
        free(d->frames[i].note);
        free(d->frames[i].file);
    }
    free(d->frames);
    free(d->stacks);
    free(d->objs);
    memset(d, 0, sizeof *d);
}

static uint64_t ld(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static uint64_t sub_sat(uint64_t a, uint64_t b, int *ok)
{
    if (b > a) {
        *ok = 0;
        return 0;
    }
    return a - b;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

static void sample_from_seg(struct dump_sample *o, const struct seg_sample *s)
{
    o->t_ns = s->t_ns;
    o->live_count = s->live_count;
    o->live_usable = s->live_usable;
    o->live_req = s->live_req;
    o->allocs = s->allocs;
    o->frees = s->frees;
    o->req_bytes = s->req_bytes;
    o->rss = s->rss;
    o->rss_anon = s->rss_anon;
    o->rss_huge = s->rss_huge;
    o->vsz = s->vsz;
    o->rss_huge_ns = s->rss_huge_ns;
    _Static_assert(offsetof(struct seg_backend_stats, f) == 5 * 8, "a..f in a row");
    memcpy(o->be.v, &s->backend.a, sizeof o->be.v);
    o->be.t_ns = s->backend.t_ns;
    o->be.live_lo = s->backend.live_lo;
    o->be.live_hi = s->backend.live_hi;
}

int dump_fine_tier(struct dump *d, uint64_t dropped)
{
    struct dump_tier *k = &d->tiers[0];
    d->ntiers = 1;
    k->step_ms = d->interval_ms;
    k->dropped = dropped;
    if (d->nseries == 0)
        return 0;
    if (!(k->points = calloc(d->nseries, sizeof *k->points)))
        return ENOMEM;
    for (size_t i = 0; i < d->nseries; i++) {
        struct dump_point *p = &k->points[k->npoints++];
        p->last = d->series[i];
        p->rss_min = p->rss_max = p->last.rss;
        p->live_usable_max = p->last.live_usable;
        p->live_req_max = p->last.live_req;
        p->samples = 1;
    }
    return 0;
}

/* The coarse tiers (seg.h, struct seg_history): each tier's complete
 * points and its newest, partial one, oldest first; an entry caught being
 * rewritten, or holding another point than the one wanted, is left out
 * (and, when it was being written, the dump is not consistent). */
static void read_history(struct dump *d, const char *base, const struct seg_header *h)
{
    const struct seg_history *hist = (const void *)(base + h->off_history);
    for (unsigned t = 0; t < h->ntiers && d->ntiers < DUMP_TIERS_MAX; t++) {
        const struct seg_point *ring = (const void *)(base + seg_tier_off(h, t));
        struct dump_tier *k = &d->tiers[d->ntiers++];
        uint64_t head = ld(&hist->heads[t]), cap = h->tier_cap[t], step = h->tier_step[t];
        uint64_t n = head < cap - 1 ? head + 1 : cap;   /* with the partial one */
        k->step_ms = step * d->interval_ms;
        if (n > DUMP_POINTS_MAX)
            n = DUMP_POINTS_MAX;
        k->dropped = head + 1 - n;
        if (!(k->points = calloc(n, sizeof *k->points)))
            continue;
        for (uint64_t i = head + 1 - n; i != head + 1; i++) {
            const struct seg_point *e = &ring[i % cap];
            struct seg_point p;
            if (seg_read_locked(&e->last.seq, (const char *)e + 8, (char *)&p + 8, sizeof p - 8) != 0) {
                d->consistent = 0;
                continue;
            }
            /* complete points have all their samples; the newest may have
             * fewer, or none yet */
            if (p.number != i || p.last.t_ns == 0 || p.samples == 0 || p.samples > step ||
                (i != head && p.samples != step)) {
                if (k->npoints == 0 && i != head)
                    k->dropped = i + 1;   /* let go while we read */
                continue;
            }
            struct dump_point *o = &k->points[k->npoints++];
            sample_from_seg(&o->last, &p.last);
            o->rss_min = p.rss_min;
            o->rss_max = p.rss_max;
            o->live_usable_max = p.live_usable_max;
            o->live_req_max = p.live_req_max;
            o->samples = p.samples;
        }
    }
}

/* The series, oldest first. Returns the samples taken before the oldest
 * it holds. */
static uint64_t read_series(struct dump *d, const char *base, const struct seg_header *h)
{
    const struct seg_series *sr = (const void *)(base + h->off_series);
    const struct seg_sample *ring = (const void *)(sr + 1);
    uint64_t head = ld(&sr->head);
    uint64_t n = head < h->series_cap ? head : h->series_cap;

    if (n > DUMP_SERIES_MAX)
        n = DUMP_SERIES_MAX;
    if (n == 0 || !(d->series = calloc(n, sizeof *d->series)))
        return head - n;
    for (uint64_t i = head - n; i != head; i++) {
        const struct seg_sample *e = &ring[i % h->series_cap];
        struct seg_sample s;
        if (seg_read_locked(&e->seq, (const char *)e + 8, (char *)&s + 8, sizeof s - 8) != 0) {
            d->consistent = 0;
            continue;
        }
        if (s.t_ns == 0)
            continue;   /* a hostile or half-made ring: no time, no sample */
        sample_from_seg(&d->series[d->nseries++], &s);
    }
    /* A sample the sampler wrote after head was read lands on the oldest
     * entries, whole and with a good seqlock. Sample i is overwritten by
     * sample i + cap, which is complete once head passes it: drop what was
     * copied from entries the ring has moved past meanwhile (the samples
     * kept are the newest, copied last). The one being written now is the
     * seqlock's, but for the instant between its last store and head's:
     * then the oldest entry holds the newest sample. */
    uint64_t now = ld(&sr->head), lost = 0;
    if (now > h->series_cap && now - h->series_cap > head - n)
        lost = now - h->series_cap - (head - n);
    if (lost >= d->nseries) {
        d->nseries = 0;
    } else if (lost) {
        memmove(d->series, d->series + lost, (d->nseries - lost) * sizeof *d->series);
        d->nseries -= lost;
    }
    if (d->nseries >= 2 && d->series[0].t_ns > d->series[d->nseries - 1].t_ns) {
        memmove(d->series, d->series + 1, (d->nseries - 1) * sizeof *d->series);
        d->nseries--;
        lost++;
    }
    return head - n + lost;
}

/* Working memory of read_stacks, reachable from here so that a read cut
 * short by SIGBUS (a file that shrank; see dumpmap.c) can still free it. */
enum { SCR_RES, SCR_INDEX, SCR_SEEN, SCR_COUNT };
static void *scratch[SCR_COUNT];

static void *scratch_calloc(int slot, size_t n, size_t size)
{
    free(scratch[slot]);
    return scratch[slot] = calloc(n, size);
}

static void scratch_free(void)
{
    for (int i = 0; i < SCR_COUNT; i++) {
        free(scratch[i]);
        scratch[i] = NULL;
    }
}

void dump_image_abandon(void)
{
    scratch_free();
}

/* Calls fn on each entry of the tracked table that holds a block. Pages
 * of a live file's table that were never written are skipped (mincore):
 * reading a hole of a tmpfs file through a mapping would allocate it. */
static void scan_track(const void *base, const struct seg_header *h,
                       void (*fn)(const struct seg_track *e, void *ctx), void *ctx)
{
    const struct seg_track *tab = (const struct seg_track *)((const char *)base + h->off_track);
    long ps = sysconf(_SC_PAGESIZE);
    size_t pg = ps > 0 ? (size_t)ps : 4096, bytes = (size_t)h->track_cap * sizeof *tab;
    size_t lead = (uintptr_t)tab & (pg - 1);
    size_t npages = (lead + bytes + pg - 1) / pg;
    unsigned char *res = scratch_calloc(SCR_RES, npages, 1);
    int have = res && ((uintptr_t)base & (pg - 1)) == 0 &&
               mincore((char *)tab - lead, lead + bytes, res) == 0;
    for (uint32_t i = 0; i < h->track_cap; i++) {
        size_t page = (lead + (size_t)i * sizeof *tab) / pg;
        if (have && !(res[page] & 1))
            continue;
        if (ld(&tab[i].addr) > 1 && ld(&tab[i].alloc_ns) != 0)
            fn(&tab[i], ctx);
    }
}

/* A weighted count in fixed point (SEG_W_ONE a block), as blocks. */
static uint64_t w_blocks(uint64_t fixed)
{
    return (fixed >> SEG_W_SHIFT) + ((fixed >> (SEG_W_SHIFT - 1)) & 1);
}

/* The variances of a stack's estimates, summed while the table is scanned
 * (struct dump_stack keeps their roots). */
struct stack_var {
    double live, age[LIFEBUCKET_COUNT];
};

struct stack_scan {
    struct dump *d;
    const uint32_t *index;     /* stack id -> dump.stacks index + 1, 0 none */
    uint32_t cap;
    uint64_t now;
    struct stack_var *var;     /* per dump.stacks entry */
    uint64_t nostack_fixed;    /* the blocks without a stack, fixed point */
    double nostack_var;
};

/* A tracked live block into its stack's estimates: its weight w times it,
 * and w (w - 1) times its square into their variances (a Poisson sample's
 * weighted sum). The counts are summed in fixed point (SEG_W_ONE a block)
 * and made blocks once the scan is done. */
static void stack_add_block(const struct seg_track *e, void *arg)
{
    struct stack_scan *sc = arg;
    uint32_t id = __atomic_load_n(&e->stack, __ATOMIC_RELAXED);
    uint64_t req = ld(&e->req), usable = ld(&e->usable), t = ld(&e->alloc_ns);
    float w = seg_track_weight(__atomic_load_n(&e->weight, __ATOMIC_RELAXED));
    uint64_t wreq = seg_w_bytes(w, req);
    if (id == 0 || id > sc->cap || sc->index[id] == 0) {
        sc->nostack_fixed = add_sat(sc->nostack_fixed, seg_w_count(w));
        sc->d->nostack_live_req = add_sat(sc->d->nostack_live_req, wreq);
        sc->nostack_var += (double)w * ((double)w - 1) * (double)req * (double)req;
        return;
    }
    size_t i = sc->index[id] - 1;
    struct dump_stack *s = &sc->d->stacks[i];
    unsigned b = lifebucket_of(sc->now > t ? sc->now - t : 0);
    double v = (double)w * ((double)w - 1) * (double)req * (double)req;
    s->tracked_live++;
    s->live_count = add_sat(s->live_count, seg_w_count(w));
    s->live_req = add_sat(s->live_req, wreq);
    s->live_usable = add_sat(s->live_usable, seg_w_bytes(w, usable));
    s->age_count[b] = add_sat(s->age_count[b], seg_w_count(w));
    s->age_req[b] = add_sat(s->age_req[b], wreq);
    sc->var[i].live += v;
    sc->var[i].age[b] += v;
}

static uint64_t root(double v)
{
    double r = sqrt(v > 0 ? v : 0) + 0.5;
    return r < 1.8e19 ? (uint64_t)r : UINT64_MAX;
}

/* The standard error of each class's estimate of live requested bytes
 * (seg_req_stderr), from the tracked table's live blocks. The total's error
 * is the root of the sum of the squares (the classes' samples are
 * independent). */
struct err_scan {
    double n[SIZECLASS_COUNT], wu[SIZECLASS_COUNT];
    double a[SIZECLASS_COUNT], b[SIZECLASS_COUNT], c[SIZECLASS_COUNT];
};

static void err_add_block(const struct seg_track *e, void *arg)
{
    struct err_scan *es = arg;
    double u = (double)ld(&e->usable), r = (double)ld(&e->req);
    double w = seg_track_weight(__atomic_load_n(&e->weight, __ATOMIC_RELAXED)), ww = w * (w - 1);
    unsigned c = sizeclass_of((size_t)ld(&e->usable));
    es->n[c] += 1;
    es->wu[c] += w * u;
    es->a[c] += ww * r * r;
    es->b[c] += ww * r * u;
    es->c[c] += ww * u * u;
}

/* The sampling settings as they stand, and their changes (shimdump --set),
 * under the header's settings seqlock; where it keeps moving, the header
 * as read (h). */
static void read_settings(struct dump *d, const struct seg_header *file, const struct seg_header *h)
{
    struct seg_change ch[SEG_CHANGES_MAX];
    uint32_t sample = h->sample, n = 0, flags = h->flags;
    uint64_t sb = h->sample_bytes;
    int got = 0;
    for (int tries = 0; tries < 200 && !got; tries++) {
        if (tries)
            sched_yield();
        uint32_t s0 = __atomic_load_n(&file->settings_seq, __ATOMIC_ACQUIRE);
        if (s0 & 1)
            continue;
        uint32_t t_sample = __atomic_load_n(&file->sample, __ATOMIC_RELAXED);
        uint64_t t_sb = __atomic_load_n(&file->sample_bytes, __ATOMIC_RELAXED);
        uint32_t t_flags = __atomic_load_n(&file->flags, __ATOMIC_RELAXED);
        uint32_t t_n = __atomic_load_n(&file->settings_n, __ATOMIC_RELAXED);
        memcpy(ch, (const void *)file->changes, sizeof ch);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&file->settings_seq, __ATOMIC_RELAXED) == s0) {
            sample = t_sample, sb = t_sb, flags = t_flags, n = t_n;
            got = 1;
        }
    }
    if (!got)
        d->consistent = 0;   /* (the header as read, and no changes: never a torn mix) */
    d->sample = sample >= 1 ? sample : 1;
    d->sample_bytes = sb;
    d->track_off = !!(flags & SEG_F_TRACK_OFF);
    d->stacks_off = !!(flags & SEG_F_STACKS_OFF);
    d->track_was_off = !!(flags & (SEG_F_TRACK_OFF | SEG_F_TRACK_WAS_OFF));
    d->settings_n = n;
    d->nchanges = n < SEG_CHANGES_MAX ? n : SEG_CHANGES_MAX;
    for (size_t i = 0; i < d->nchanges; i++) {
        const struct seg_change *c = &ch[(n - d->nchanges + i) % SEG_CHANGES_MAX];
        d->changes[i].t_ns = c->t_ns;
        d->changes[i].sample = c->sample >= 1 ? c->sample : 1;
        d->changes[i].sample_bytes = c->sample_bytes;
        d->changes[i].track = !(c->flags & SEG_F_TRACK_OFF);
        d->changes[i].stacks = !(c->flags & SEG_F_STACKS_OFF);
    }
}

static void estimate_errors(struct dump *d, const void *base, const struct seg_header *h)
{
    static struct err_scan es;
    double total = 0;

    if (d->exact)
        return;
    memset(&es, 0, sizeof es);
    scan_track(base, h, err_add_block, &es);
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        struct dump_class *k = &d->cls[c];
        if (k->live_count == 0)
            continue;
        double e = seg_req_stderr(k->live_usable, k->live_req, es.n[c], es.wu[c], es.a[c],
                                  es.b[c], es.c[c]);
        k->live_req_err = e < 1.8e19 ? (uint64_t)(e + 0.5) : UINT64_MAX;
        total += e * e;
    }
    scratch_free();
    total = sqrt(total);
    d->total.live_req_err = total < 1.8e19 ? (uint64_t)(total + 0.5) : UINT64_MAX;
}

static int frames_equal(const struct dump *d, const struct dump_stack *a, const struct dump_stack *b)
{
    if (a->depth != b->depth)
        return 0;
    for (uint32_t i = 0; i < a->depth; i++)
        if (d->frames[a->frame0 + i].addr != d->frames[b->frame0 + i].addr)
            return 0;
    return 1;
}

static double bits_double(uint64_t u)
{
    union { uint64_t u; double d; } x = { u };
    return x.d == x.d && x.d > 0 ? x.d : 0;   /* a file's NaN or negative: none */
}

/* The call sites at the peak of live bytes (seg.h, struct seg_stacks, "The
 * peak"), into d->at_peak and each stack's peak_*, under peak_seq: retried
 * while it is odd or changes, and left out (at_peak.ns 0) when it never
 * settles. index maps entry i + 1 to its dump stack + 1, as read_stacks
 * made it: duplicates add up. A fork child's peak before its own start is
 * its parent's, not its own: left out too. */
static void read_peak(struct dump *d, const struct seg_stacks *sh, const struct seg_header *h,
                      const uint32_t *index)
{
    const char *ent = (const char *)(sh + 1);
    double *var = calloc(d->nstacks ? d->nstacks : 1, sizeof *var);
    struct dump_peak p;

    if (!var)
        return;
    for (int tries = 0; tries < 1000; tries++) {
        uint64_t s1 = __atomic_load_n(&sh->peak_seq, __ATOMIC_ACQUIRE);
        if (s1 & 1)
            continue;
        memset(&p, 0, sizeof p);
        p.ns = ld(&sh->peak_ns);
        p.live_usable = ld(&sh->peak_live_usable);
        p.live_req = ld(&sh->peak_live_req);
        p.rss = ld(&sh->peak_rss);
        p.nostack_count = w_blocks(ld(&sh->peak_nostack_count));
        p.nostack_req = ld(&sh->peak_nostack_req);
        p.nostack_req_err = root(bits_double(ld(&sh->peak_nostack_var)));
        p.tracked_dropped = ld(&sh->peak_tracked_dropped);
        for (size_t i = 0; i < d->nstacks; i++) {
            struct dump_stack *s = &d->stacks[i];
            s->peak_count = s->peak_req = s->peak_tracked = 0;
            var[i] = 0;
        }
        for (uint32_t i = 0; i < h->stacks_cap; i++) {
            if (index[i + 1] == 0)
                continue;
            const struct seg_stack *e = (const struct seg_stack *)(ent + (uint64_t)i * h->stack_stride);
            struct dump_stack *s = &d->stacks[index[i + 1] - 1];
            s->peak_count = add_sat(s->peak_count, ld(&e->peak_count));
            s->peak_req = add_sat(s->peak_req, ld(&e->peak_req));
            s->peak_tracked = add_sat(s->peak_tracked, ld(&e->peak_tracked));
            var[index[i + 1] - 1] += bits_double(ld(&e->peak_var));
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&sh->peak_seq, __ATOMIC_RELAXED) != s1)
            continue;
        if (p.ns == 0 || p.ns < h->start_ns)
            break;
        d->at_peak = p;
        for (size_t i = 0; i < d->nstacks; i++) {
            d->stacks[i].peak_count = w_blocks(d->stacks[i].peak_count);
            d->stacks[i].peak_req_err = root(var[i]);
        }
        free(var);
        return;
    }
    for (size_t i = 0; i < d->nstacks; i++)
        d->stacks[i].peak_count = d->stacks[i].peak_req = d->stacks[i].peak_tracked = 0;
    free(var);
}

/* The stack table and object list, and each stack's live blocks from the
 * tracked table. Entries that two threads stored twice (a rare race, see
 * seg.h) are merged. */
static void read_stacks(struct dump *d, const void *base, const struct seg_header *h, int state,
                        uint64_t ages_at)
{
    const char *b = base;
    const struct seg_stacks *sh = (const struct seg_stacks *)(b + h->off_stacks);
    const struct seg_objs *oh = (const struct seg_objs *)(b + h->off_objs);
    const struct seg_obj *ov = (const struct seg_obj *)(oh + 1);
    uint32_t *index = NULL;
    uint64_t n;

    d->stack_depth = h->stack_depth;
    if (h->stack_depth == 0)
        return;
    d->stacks_used = ld(&sh->used);
    d->stacks_dropped = ld(&sh->dropped);
    d->stacks_failed = ld(&sh->failed);
    d->fast_threads = ld(&sh->fast_threads);
    d->fast_moves = ld(&sh->fast_moves);
    d->objs_dropped = ld(&oh->dropped);

    n = ld(&oh->count);
    if (n > h->objs_cap)
        n = h->objs_cap;
    if (n && (d->objs = calloc(n, sizeof *d->objs)) != NULL) {
        for (uint64_t i = 0; i < n; i++) {
            struct dump_obj *o = &d->objs[d->nobjs];
            memcpy(o->path, ov[i].path, sizeof o->path);
            o->path[sizeof o->path - 1] = '\0';
            o->bias = ov[i].bias;
            o->lo = ov[i].lo;
            o->hi = ov[i].hi;
            o->flags = ov[i].flags;
            o->build_id_len = ov[i].build_id_len <= sizeof o->build_id ? ov[i].build_id_len : 0;
            memcpy(o->build_id, ov[i].build_id, o->build_id_len);
            if (o->hi > o->lo && o->path[0])
                d->nobjs++;
        }
    }

    /* Two passes over the table: count, then copy. */
    size_t ns = 0, nf = 0;
    for (uint32_t i = 0; i < h->stacks_cap; i++) {
        const struct seg_stack *e = (const struct seg_stack *)(b + h->off_stacks + sizeof *sh +
                                                               (uint64_t)i * h->stack_stride);
        if (__atomic_load_n(&e->ready, __ATOMIC_ACQUIRE) != 1)
            continue;
        uint32_t dep = __atomic_load_n(&e->depth, __ATOMIC_RELAXED);
        if (dep == 0 || dep > h->stack_depth)
            continue;
        ns++;
        nf += dep;
    }
    if (ns > DUMP_STACKS_MAX)
        ns = DUMP_STACKS_MAX;
    if (nf > (size_t)ns * h->stack_depth)
        nf = (size_t)ns * h->stack_depth;
    size_t seen_mask = 1;
    while (seen_mask < 2 * ns)
        seen_mask <<= 1;
    struct seen { uint64_t hash; uint32_t idx; } *seen =
        scratch_calloc(SCR_SEEN, seen_mask, sizeof(struct seen));
    seen_mask--;
    index = scratch_calloc(SCR_INDEX, (size_t)h->stacks_cap + 1, sizeof *index);
    if (!index || !seen || !ns || !(d->stacks = calloc(ns, sizeof *d->stacks)) ||
        !(d->frames = calloc(nf, sizeof *d->frames))) {
        scratch_free();
        return;
    }
    for (uint32_t i = 0; i < h->stacks_cap && d->nstacks < ns; i++) {
        const struct seg_stack *e = (const struct seg_stack *)(b + h->off_stacks + sizeof *sh +
                                                               (uint64_t)i * h->stack_stride);
        if (__atomic_load_n(&e->ready, __ATOMIC_ACQUIRE) != 1)
            continue;
        uint32_t dep = __atomic_load_n(&e->depth, __ATOMIC_RELAXED);
        if (dep == 0 || dep > h->stack_depth || d->nframes + dep > nf)
            continue;
        const uint64_t *fr = (const uint64_t *)(e + 1);
        struct dump_stack *s = &d->stacks[d->nstacks];
        memset(s, 0, sizeof *s);
        s->id = i + 1;
        s->depth = dep;
        s->frame0 = d->nframes;
        for (uint32_t j = 0; j < dep; j++) {
            struct dump_frame *f = &d->frames[d->nframes + j];
            f->addr = ld(&fr[j]);
            f->obj = -1;
        }
        s->tracked_allocs = ld(&e->allocs);
        s->allocs = w_blocks(ld(&e->w_allocs));
        s->req_bytes = ld(&e->req_bytes);
        s->frees = w_blocks(ld(&e->w_frees));
        for (unsigned k = 0; k < LIFEBUCKET_COUNT; k++)
            s->life[k] = w_blocks(ld(&e->lifetime[k]));
        /* A duplicate of an earlier entry (same hash, same frames) folds
         * into it; `seen` maps hashes to stacks, open addressing. */
        uint64_t hash = ld(&e->hash);
        size_t same = d->nstacks, slot = (size_t)(hash * 0x9E3779B97F4A7C15ull >> 32) & seen_mask;
        for (; seen[slot].idx; slot = (slot + 1) & seen_mask)
            if (seen[slot].hash == hash && frames_equal(d, &d->stacks[seen[slot].idx - 1], s)) {
                same = seen[slot].idx - 1;
                break;
            }
        if (same == d->nstacks) {
            seen[slot].hash = hash;
            seen[slot].idx = (uint32_t)d->nstacks + 1;
        }
        if (same != d->nstacks) {
            struct dump_stack *t = &d->stacks[same];
            t->allocs = add_sat(t->allocs, s->allocs);
            t->tracked_allocs = add_sat(t->tracked_allocs, s->tracked_allocs);
            t->req_bytes = add_sat(t->req_bytes, s->req_bytes);
            t->frees = add_sat(t->frees, s->frees);
            for (unsigned k = 0; k < LIFEBUCKET_COUNT; k++)
                t->life[k] = add_sat(t->life[k], s->life[k]);
            index[i + 1] = (uint32_t)same + 1;
            continue;
        }
        index[i + 1] = (uint32_t)d->nstacks + 1;
        d->nframes += dep;
        d->nstacks++;
    }

    /* Ages up to now for a live process (the table's clock is
     * CLOCK_MONOTONIC); for one that is gone, or a copied file, up to its
     * sampler's last pass, or else its start. */
    struct stack_scan sc = { d, index, h->stacks_cap, 0, NULL, 0, 0 };
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    sc.now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    if (state != DS_ALIVE)
        sc.now = ages_at ? ages_at : h->start_mono_ns;
    d->ages_at_ns = sc.now;
    if (!(sc.var = calloc(d->nstacks ? d->nstacks : 1, sizeof *sc.var))) {
        scratch_free();
        return;
    }
    scan_track(base, h, stack_add_block, &sc);
    d->nostack_live_count = w_blocks(sc.nostack_fixed);
    d->nostack_live_req_err = root(sc.nostack_var);
    for (size_t i = 0; i < d->nstacks; i++) {
        struct dump_stack *s = &d->stacks[i];
        s->live_count = w_blocks(s->live_count);
        s->live_req_err = root(sc.var[i].live);
        for (unsigned k = 0; k < LIFEBUCKET_COUNT; k++) {
            s->age_count[k] = w_blocks(s->age_count[k]);
            s->age_req_err[k] = root(sc.var[i].age[k]);
        }
    }
    free(sc.var);
    read_peak(d, sh, h, index);
    scratch_free();
}

int dump_from_image(struct dump *d, const void *base, uint64_t size, int state, char *why,
                    size_t whylen)
{
    const struct seg_header *file = base;
    struct seg_header h;
    struct seg_counters sum[SIZECLASS_COUNT];
    struct seg_tracked trk[SIZECLASS_COUNT];
    struct seg_ages ages;
    uint32_t version;
    int rc;

    memset(d, 0, sizeof *d);
    memset(&h, 0, sizeof h);
    memcpy(&h, base, size < sizeof h ? (size_t)size : sizeof h);
    rc = seg_validate(&h, size, &version);
    if (rc == EPROTO && h.magic == SEG_MAGIC) {
        dump_why(why, whylen, "segment format version %u; this shimdump reads version %u",
                version, SEG_VERSION);
        return DX_VERSION;
    }
    if (rc == EPROTO) {
        dump_why(why, whylen, "not a mallocshim segment (bad magic number)");
        return DX_CORRUPT;
    }
    if (rc != 0) {
        if (size >= sizeof h && h.total_size > size)
            dump_why(why, whylen, "truncated segment: %llu bytes of %llu",
                    (unsigned long long)size, (unsigned long long)h.total_size);
        else
            dump_why(why, whylen, "corrupt segment: its header's sizes and offsets do not agree");
        return DX_CORRUPT;
    }
    /* The backend's figures are named by its id, and a saved snapshot
     * names the backend by its name: the two must agree. */
    if (h.backend > 2 || strncmp(h.backend_name, dump_be_name((int)h.backend),
                                 sizeof h.backend_name) != 0) {
        dump_why(why, whylen, "corrupt segment: backend id %u does not match its name",
                (unsigned)h.backend);
        return DX_CORRUPT;
    }

    d->json_version = DUMP_JSON_VERSION;
    d->state = state;
    d->pid = h.pid;
    d->uid = h.uid;
    dump_clean_text(d->comm, sizeof d->comm, h.comm, sizeof h.comm);
    dump_clean_text(d->backend, sizeof d->backend, h.backend_name, sizeof h.backend_name);
    dump_clean_text(d->backend_version, sizeof d->backend_version, h.backend_version,
                    sizeof h.backend_version);
    dump_clean_text(d->config, sizeof d->config, h.config, sizeof h.config);
    d->backend_id = (int)h.backend;
    d->interval_ms = h.interval_ms;
    d->start_ns = h.start_ns;
    d->heartbeat_ns = ld(&file->heartbeat_ns);
    d->threads_seen = ld(&file->threads_seen);
    d->dropped = ld(&file->tracked_dropped);
    uint32_t flags = __atomic_load_n(&file->flags, __ATOMIC_ACQUIRE);
    d->inherited = !!(flags & SEG_F_INHERITED);
    d->copy = !!(flags & SEG_F_COPY);
    d->copy_stale = !!(flags & SEG_F_COPY_STALE);
    d->copy_ns = d->copy ? ld(&file->copy_ns) : 0;
    if ((flags & SEG_F_FINISHED) && state != DS_ALIVE)
        d->state = DS_EXITED;
    d->exact = seg_req_exact(base, &h);
    d->consistent = 1;
    read_settings(d, file, &h);
    d->counts_ok = 1;
    {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        d->snap_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }

    if (seg_sum_classes(base, &h, sum, trk) != 0)
        d->consistent = 0;
    if (seg_read_locked(&((const struct seg_ages *)((const char *)base + h.off_ages))->seq,
                        (const char *)base + h.off_ages + 8, (char *)&ages + 8,
                        sizeof ages - 8) != 0)
        d->consistent = 0;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        struct dump_class *k = &d->cls[c];
        const struct seg_tracked t = trk[c];
        k->allocs = sum[c].allocs;
        k->frees = sum[c].frees;
        k->reallocs = sum[c].reallocs;
        k->req_bytes = sum[c].req_bytes;
        k->live_count = sub_sat(sum[c].allocs, sum[c].frees, &d->counts_ok);
        k->live_usable = sub_sat(sum[c].usable_alloc, sum[c].usable_free, &d->counts_ok);
        k->live_req = k->live_count ? seg_live_req(&sum[c], &t, d->exact) : 0;
        k->tracked_freed = t.frees;
        k->tracked_live = t.allocs > t.frees ? t.allocs - t.frees : 0;
        for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++) {
            k->life[b] = w_blocks(t.lifetime[b]);
            k->age[b] = w_blocks(ages.count[c][b]);
        }
    }
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        const struct dump_class *k = &d->cls[c];
        struct dump_class *t = &d->total;
        t->allocs = add_sat(t->allocs, k->allocs);
        t->frees = add_sat(t->frees, k->frees);
        t->reallocs = add_sat(t->reallocs, k->reallocs);
        t->req_bytes = add_sat(t->req_bytes, k->req_bytes);
        t->live_count = add_sat(t->live_count, k->live_count);
        t->live_usable = add_sat(t->live_usable, k->live_usable);
        t->live_req = add_sat(t->live_req, k->live_req);
        t->tracked_freed = add_sat(t->tracked_freed, k->tracked_freed);
        t->tracked_live = add_sat(t->tracked_live, k->tracked_live);
        for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++) {
            t->life[b] = add_sat(t->life[b], k->life[b]);
            t->age[b] = add_sat(t->age[b], k->age[b]);
        }
    }
    estimate_errors(d, base, &h);
    uint64_t series_dropped = read_series(d, base, &h);
    dump_fine_tier(d, series_dropped);   /* out of memory: the series alone */
    read_history(d, base, &h);
    d->no_unwinder = !!(flags & SEG_F_NO_UNWINDER);
    d->stacks_stopped = !!(flags & SEG_F_STACKS_STOPPED);
    read_stacks(d, base, &h, d->state, ages.at_ns);
    /* the ceiling over what was live while all that was read */
    struct seg_counters after[SIZECLASS_COUNT];
    uint64_t alloc = 0, freed = 0;
    if (seg_sum(base, &h, after) != 0)
        d->consistent = 0;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        alloc = add_sat(alloc, after[c].usable_alloc);
        freed = add_sat(freed, sum[c].usable_free);
    }
    d->live_usable_hi = alloc > freed ? alloc - freed : 0;
    /* The peak last: the sampler raises it before it adds a sample to the
     * series and the history, so read after them it is at least every RSS
     * they hold. */
    const struct seg_series *sr = (const void *)((const char *)base + h.off_series);
    d->peak_rss = ld(&sr->peak_rss);
    d->peak_rss_ns = ld(&sr->peak_rss_ns);
    return DX_OK;
}
