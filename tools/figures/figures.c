/* figures: the figures of a snapshot, made once (see figures.h). */
#include "config.h"

#include "figures.h"

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figfmt.h"

/* ---- Time ---- */

uint64_t fig_as_of(const struct dump *d)
{
    if (d->state == DS_ALIVE || !d->heartbeat_ns)
        return d->snap_ns;
    return d->heartbeat_ns;
}

double fig_uptime_s(const struct dump *d)
{
    uint64_t end = fig_as_of(d);
    return end > d->start_ns ? (double)(end - d->start_ns) / 1e9 : 0;
}

struct fig_age fig_age_of(const struct dump *d, uint64_t t_ns)
{
    struct fig_age a = { 0, 0, 0 };
    uint64_t now = fig_as_of(d);
    if (!t_ns)
        return a;
    a.known = 1;
    a.ns = now > t_ns ? now - t_ns : 0;
    a.stale = a.ns > (uint64_t)FIG_STALE_INTERVALS * (d->interval_ms ? d->interval_ms : 1000) * 1000000ull;
    return a;
}

/* ---- The backend's own statistics ---- */

void fig_alloc_of(const struct dump *d, const struct dump_sample *s, struct fig_alloc *a)
{
    memset(a, 0, sizeof *a);
    if (!s)
        return;
    const uint64_t *v = s->be.v;
    a->t_ns = s->be.t_ns;
    a->live_lo = s->be.live_lo;
    a->live_hi = s->be.live_hi;
    a->have = 1;
    switch (d->backend_id) {
    case SEG_BACKEND_GLIBC:
        a->in_use = v[4] + v[1];
        a->footprint = v[0] + v[1];
        a->in_use_name = "glibc in use (uordblks+hblkhd)";
        a->fp_name = "glibc arenas + mmap (arena+hblkhd)";
        a->more[a->nmore++] = (struct fig_more){ "arenas", v[5], 0 };
        a->more[a->nmore++] = (struct fig_more){ "free inside them", v[2], 1 };
        a->more[a->nmore++] = (struct fig_more){ "keepcost", v[3], 1 };
        break;
    case SEG_BACKEND_JEMALLOC:
        a->in_use = v[1];
        a->footprint = v[2];
        a->in_use_name = "jemalloc active";
        a->fp_name = "jemalloc resident";
        a->more[a->nmore++] = (struct fig_more){ "allocated", v[0], 1 };
        a->more[a->nmore++] = (struct fig_more){ "mapped", v[3], 1 };
        a->more[a->nmore++] = (struct fig_more){ "retained", v[4], 1 };
        a->more[a->nmore++] = (struct fig_more){ "metadata", v[5], 1 };
        break;
    case SEG_BACKEND_TCMALLOC:
        a->in_use = v[0];
        a->footprint = v[1] > v[3] ? v[1] - v[3] : 0;
        a->in_use_name = "tcmalloc allocated";
        a->fp_name = "tcmalloc heap, mapped";
        a->more[a->nmore++] = (struct fig_more){ "page heap free", v[2], 1 };
        a->more[a->nmore++] = (struct fig_more){ "unmapped", v[3], 1 };
        break;
    default:
        memset(a, 0, sizeof *a);
    }
}

char *fig_backend_release(const struct dump *d, char *dst, size_t cap)
{
    /* "5.3.0-0-g54eaed1d8b...": jemalloc's git description; the release
     * is enough */
    snprintf(dst, cap, "%.*s", (int)strcspn(d->backend_version, "- "), d->backend_version);
    return dst;
}

/* ---- Sampling ---- */

char *fig_sampling(const struct dump *d, char *dst, size_t cap)
{
    char b[24];
    if (d->track_off) {
        snprintf(dst, cap, "no block (track:off)");
    } else if (d->sample <= 1) {
        snprintf(dst, cap, "every block (sample:1)");
    } else if (!d->sample_bytes) {
        snprintf(dst, cap, "1 in %u blocks", d->sample);
    } else {
        /* p(u) >= 0.999 from u = G ln(1000 (1 - 1/N)) */
        double g = (double)d->sample_bytes, u = g * log(1000.0 * (1 - 1.0 / d->sample));
        snprintf(dst, cap, "about 1 in %u small blocks, every block of %s or more",
                 d->sample, figfmt_bytes(b, sizeof b, u > 0 ? (u < 1.8e19 ? (uint64_t)u : UINT64_MAX) : 0));
    }
    return dst;
}

/* ---- The waterfall ---- */

static double ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0.0;
}

void fig_waterfall(const struct dump *d, struct fig_step st[FS_COUNT])
{
    static const char *const key[FS_COUNT] = { "live_req", "live_usable", "alloc_in_use",
                                               "alloc_footprint", "rss", "peak_rss" };
    static const char *const name[FS_COUNT] = { "live requested", "live usable",
                                                "allocator: in use", "allocator: holds",
                                                "process RSS", "peak RSS" };
    static const char *const what[FS_COUNT] = {
        "what the program asked for", "rounded up to the allocator's sizes",
        "handed out, as the allocator counts", "its arenas, heaps or extents",
        "resident memory, now", "the highest RSS seen",
    };
    const struct dump_sample *s = dump_last(d);
    const struct dump_class *t = &d->total;
    struct fig_alloc a;
    char b[24];

    fig_alloc_of(d, s, &a);
    memset(st, 0, FS_COUNT * sizeof *st);
    for (int k = 0; k < FS_COUNT; k++) {
        st[k].key = key[k];
        st[k].name = name[k];
        st[k].what = what[k];
        snprintf(st[k].label, sizeof st[k].label, "%s", name[k]);
    }
    /* counted now: as of the snapshot itself */
    st[FS_REQ].have = st[FS_USABLE].have = 1;
    st[FS_REQ].v = t->live_req;
    st[FS_REQ].t_ns = st[FS_USABLE].t_ns = fig_as_of(d);
    if (d->exact) {
        snprintf(st[FS_REQ].label, sizeof st[FS_REQ].label, "live requested (exact)");
    } else {
        st[FS_REQ].err = t->live_req_err;
        if (t->live_req && t->live_req_err)
            snprintf(st[FS_REQ].label, sizeof st[FS_REQ].label, "live requested (estimate %s)",
                     figfmt_err(b, sizeof b, (double)t->live_req_err, (double)t->live_req, FF_TERSE));
        else
            snprintf(st[FS_REQ].label, sizeof st[FS_REQ].label, "live requested (estimate)");
    }
    st[FS_USABLE].v = t->live_usable;
    snprintf(st[FS_USABLE].label, sizeof st[FS_USABLE].label, "live usable (exact; +%s rounding)",
             figfmt_bytes(b, sizeof b, t->live_usable > t->live_req ? t->live_usable - t->live_req : 0));
    if (a.have) {
        st[FS_INUSE].have = st[FS_FOOT].have = 1;
        st[FS_INUSE].v = a.in_use;
        st[FS_FOOT].v = a.footprint;
        st[FS_INUSE].t_ns = st[FS_FOOT].t_ns = a.t_ns;
        snprintf(st[FS_INUSE].label, sizeof st[FS_INUSE].label, "%s", a.in_use_name);
        snprintf(st[FS_FOOT].label, sizeof st[FS_FOOT].label, "%s", a.fp_name);
    }
    if (s) {
        st[FS_RSS].have = 1;
        st[FS_RSS].v = s->rss;
        st[FS_RSS].t_ns = s->t_ns;
    }
    if (d->peak_rss) {
        st[FS_PEAK].have = 1;
        st[FS_PEAK].v = d->peak_rss;
        st[FS_PEAK].t_ns = d->peak_rss_ns;
    }
    for (int k = 0; k < FS_COUNT; k++) {
        st[k].ratio = st[k].have ? ratio(st[k].v, t->live_req) : 0;
        /* the peak's time is when it happened, not an age of the figure */
        if (k != FS_PEAK && st[k].have)
            st[k].age = fig_age_of(d, st[k].t_ns);
    }
}

/* ---- Size classes ---- */

static double class_key(const struct dump *d, unsigned c, enum fig_class_key key)
{
    const struct dump_class *k = &d->cls[c];
    double s = 0;
    switch (key) {
    case FK_LIVE:
        /* live bytes first; classes with only past allocations after them */
        return k->live_usable ? (double)k->live_usable + 0x1p62 : (double)k->allocs;
    case FK_USABLE:
        return (double)k->live_usable;
    case FK_LIFE:
    case FK_AGE:
        for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++)
            s += (double)(key == FK_LIFE ? k->life[b] : k->age[b]);
        return s;
    }
    return 0;
}

int fig_pick_classes(const struct dump *const *d, size_t n, enum fig_class_key key, int max,
                     unsigned *out, int *more)
{
    double k[SIZECLASS_COUNT];
    int all = 0, m = 0;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        k[c] = 0;
        for (size_t i = 0; i < n; i++) {
            double v = class_key(d[i], c, key);
            if (v > k[c])
                k[c] = v;
        }
        all += k[c] > 0;
    }
    /* the max best by key (ties: the smaller class), then in size order */
    for (int i = 0; i < all && (max <= 0 || i < max); i++) {
        int best = -1;
        for (unsigned c = 0; c < SIZECLASS_COUNT; c++)
            if (k[c] > 0 && (best < 0 || k[c] > k[best]))
                best = (int)c;
        out[m++] = (unsigned)best;
        k[best] = 0;
    }
    for (int i = 1; i < m; i++)
        for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
            unsigned t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    *more = all - m;
    return m;
}

void fig_class_of(const struct dump *d, unsigned c, struct fig_class *out)
{
    const struct dump_class *k = &d->cls[c];
    memset(out, 0, sizeof *out);
    out->waste = k->live_usable && k->live_req < k->live_usable ? 1.0 - ratio(k->live_req, k->live_usable) : 0;
    for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++) {
        out->life[b] = (double)k->life[b];
        out->age[b] = (double)k->age[b];
        out->life_all += out->life[b];
        out->age_all += out->age[b];
    }
    out->life_n = k->tracked_freed;
    out->age_n = k->tracked_live;
    /* where the counts are known (JSON format 5 on), few but not none */
    int known = d->json_version >= 5;
    out->life_few = known && out->life_all > 0 && k->tracked_freed < FIG_FEW_TRACKED;
    out->age_few = known && out->age_all > 0 && k->tracked_live < FIG_FEW_TRACKED;
}

int fig_median_bucket(const uint64_t *v)
{
    uint64_t sum = 0, acc = 0;
    for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++)
        sum += v[b];
    if (!sum)
        return -1;
    for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++)
        if ((acc += v[b]) * 2 >= sum)
            return (int)b;
    return LIFEBUCKET_LAST;
}

uint64_t fig_bucket_le_ns(const struct dump *d, int b, int *clamped)
{
    uint64_t le = lifebucket_max_ns(b < 0 ? 0 : (unsigned)b);
    double upd = fig_uptime_s(d) * 1e9;   /* a snapshot's times are what its file says */
    uint64_t up = upd > 0 && upd < 1.8e19 ? (uint64_t)upd : 0;
    int c = !d->inherited && up > 0 && up < le;
    if (clamped)
        *clamped = c;
    return c ? up : le;
}

/* ---- Call sites ---- */

const char *const fig_rank_key[FR_COUNT] = { "by_live_bytes", "by_long_lived_bytes", "by_alloc_rate",
                                             "by_peak_live_bytes" };

/* The live blocks of stack s older than bucket b: their requested bytes
 * and that estimate's standard error (the buckets' are independent). */
static void older(const struct dump_stack *s, unsigned b, uint64_t *bytes, double *err)
{
    double var = 0;
    *bytes = 0;
    for (unsigned i = b + 1; i < LIFEBUCKET_COUNT; i++) {
        *bytes += s->age_req[i];
        var += (double)s->age_req_err[i] * (double)s->age_req_err[i];
    }
    *err = sqrt(var);
}

void fig_site_of(const struct dump *d, size_t index, unsigned long_bucket, struct fig_site *o)
{
    const struct dump_stack *s = &d->stacks[index];
    double up = fig_uptime_s(d);
    uint64_t ob;
    memset(o, 0, sizeof *o);
    o->index = index;
    o->s = s;
    older(s, long_bucket, &ob, &o->long_bytes_err);
    o->live_bytes = (double)s->live_req;
    o->live_bytes_err = (double)s->live_req_err;
    o->long_bytes = (double)ob;
    o->live_blocks = (double)s->live_count;
    o->allocs = (double)s->allocs;
    o->allocs_per_s = up > 0 ? o->allocs / up : 0;
    o->bytes_per_s = up > 0 ? (double)s->req_bytes / up : 0;
    o->avg_live = s->live_count ? s->live_req / s->live_count : 0;
    o->avg_alloc = s->allocs ? s->req_bytes / s->allocs : 0;
    o->age_median = fig_median_bucket(s->age_count);
    o->life_median = fig_median_bucket(s->life);
    if (d->at_peak.ns) {
        o->peak_bytes = (double)s->peak_req;
        o->peak_bytes_err = (double)s->peak_req_err;
        o->peak_blocks = (double)s->peak_count;
    }
}

static uint64_t rank_key(const struct dump_stack *s, enum fig_rank r, unsigned long_bucket)
{
    uint64_t b;
    double err;
    switch (r) {
    case FR_LIVE: return s->live_req;
    case FR_LONG: older(s, long_bucket, &b, &err); return b;
    case FR_PEAK: return s->peak_req;
    default: return s->allocs;
    }
}

size_t fig_sites(const struct dump *d, enum fig_rank rank, unsigned long_bucket,
                 struct fig_site *out, size_t max)
{
    size_t n = 0;
    size_t *idx = max ? calloc(max, sizeof *idx) : NULL;
    uint64_t *key = max ? calloc(max, sizeof *key) : NULL;
    if (!idx || !key) {
        free(idx);
        free(key);
        return 0;
    }
    if (rank == FR_PEAK && !d->at_peak.ns) {
        free(idx);
        free(key);
        return 0;
    }
    for (size_t i = 0; i < d->nstacks; i++) {
        uint64_t k = rank_key(&d->stacks[i], rank, long_bucket);
        if (k == 0)
            continue;
        /* insertion into the top max, best first; ties keep table order */
        size_t at = n < max ? n : max;
        while (at > 0 && key[at - 1] < k)
            at--;
        if (at >= max)
            continue;
        size_t last = n < max ? n : max - 1;
        memmove(idx + at + 1, idx + at, (last - at) * sizeof *idx);
        memmove(key + at + 1, key + at, (last - at) * sizeof *key);
        idx[at] = i;
        key[at] = k;
        if (n < max)
            n++;
    }
    for (size_t i = 0; i < n; i++)
        fig_site_of(d, idx[i], long_bucket, &out[i]);
    free(idx);
    free(key);
    return n;
}

void fig_peak(const struct dump *d, struct fig_peak *o)
{
    const struct dump_peak *p = &d->at_peak;
    uint64_t now = fig_as_of(d);
    memset(o, 0, sizeof *o);
    if (!p->ns || d->stack_depth == 0)
        return;
    o->have = 1;
    o->t_ns = p->ns;
    o->since_start_s = p->ns > d->start_ns ? (double)(p->ns - d->start_ns) / 1e9 : 0;
    o->ago_ns = now > p->ns ? now - p->ns : 0;
    o->live_usable = p->live_usable;
    o->live_req = p->live_req;
    o->rss = p->rss;
    o->live_ratio = d->total.live_req ? (double)p->live_req / (double)d->total.live_req : 0;
}

void fig_coverage(const struct dump *d, const struct fig_site *shown, size_t n, int at_peak,
                  struct fig_cover *o)
{
    double var_sites = 0, var_all = 0;
    memset(o, 0, sizeof *o);
    if (d->stack_depth == 0 || (at_peak && !d->at_peak.ns))
        return;
    for (size_t i = 0; i < n; i++) {
        double b = at_peak ? shown[i].peak_bytes : shown[i].live_bytes;
        double e = at_peak ? shown[i].peak_bytes_err : shown[i].live_bytes_err;
        o->sites += b;
        var_sites += e * e;
    }
    for (size_t i = 0; i < d->nstacks; i++) {
        const struct dump_stack *s = &d->stacks[i];
        double b = (double)(at_peak ? s->peak_req : s->live_req);
        double e = (double)(at_peak ? s->peak_req_err : s->live_req_err);
        o->stacks += b > 0;
        o->all += b;
        var_all += e * e;
    }
    o->shown = n;
    o->sites_err = sqrt(var_sites);
    o->all_err = sqrt(var_all);
    if (at_peak) {
        o->nostack = (double)d->at_peak.nostack_req;
        o->nostack_err = (double)d->at_peak.nostack_req_err;
        o->live = (double)d->at_peak.live_req;
        o->tracked_dropped = d->at_peak.tracked_dropped;
    } else {
        o->nostack = (double)d->nostack_live_req;
        o->nostack_err = (double)d->nostack_live_req_err;
        o->live = (double)d->total.live_req;
        o->live_err = (double)d->total.live_req_err;
        o->tracked_dropped = d->dropped;
    }
    o->stacks_dropped = d->stacks_dropped;
    o->rest = o->live - o->all - o->nostack;
    o->rest_err = sqrt(o->live_err * o->live_err + var_all + o->nostack_err * o->nostack_err);
    o->have = o->live > 0;
    if (o->have) {
        o->share = o->sites / o->live;
        /* the shown sites' error, and the total's, as independent shares */
        double rs = o->sites > 0 ? o->sites_err / o->sites : 0, rl = o->live_err / o->live;
        o->share_err = o->share * sqrt(rs * rs + rl * rl);
    }
    /* a rest within three of its errors, or under 1%, is nothing to say */
    o->rest_big = fabs(o->rest) > 3 * o->rest_err && fabs(o->rest) >= 0.01 * o->live;
}

char *fig_cover_text(const struct fig_cover *c, char *dst, size_t cap, enum figfmt_style st)
{
    char a[24], b[24], e[24], f[24], g[24], h[24], k[24];
    size_t n;
    if (!c->have) {
        snprintf(dst, cap, "no live bytes to account for");
        return dst;
    }
    figfmt_bytes(a, sizeof a, (uint64_t)(c->sites + 0.5));
    figfmt_err(e, sizeof e, c->sites_err, c->sites, st);
    figfmt_bytes(b, sizeof b, (uint64_t)(c->live + 0.5));
    figfmt_bytes(h, sizeof h, (uint64_t)(c->nostack + 0.5));
    if (c->stacks <= c->shown)   /* the sites shown are every stack with live bytes */
        n = (size_t)snprintf(dst, cap, "the %zu site%s shown (every stack with live bytes) "
                             "hold%s %s%s%s of %s live requested bytes (%.0f%%); blocks without "
                             "a stack %s", c->shown, c->shown == 1 ? "" : "s",
                             c->shown == 1 ? "s" : "", a, *e ? " " : "", e, b, 100 * c->share, h);
    else
        n = (size_t)snprintf(dst, cap, "the %zu site%s shown hold%s %s%s%s of %s live requested "
                             "bytes (%.0f%%); all %zu stacks with live bytes hold %s%s%s, blocks "
                             "without a stack %s", c->shown, c->shown == 1 ? "" : "s",
                             c->shown == 1 ? "s" : "", a, *e ? " " : "", e, b, 100 * c->share,
                             c->stacks, figfmt_bytes(f, sizeof f, (uint64_t)(c->all + 0.5)),
                             c->all_err > 0 ? " " : "",
                             figfmt_err(g, sizeof g, c->all_err, c->all, st), h);
    if (n >= cap)
        return dst;
    if (c->rest_big && c->rest > 0) {
        n += (size_t)snprintf(dst + n, cap - n, "; %s in no tracked entry",
                              figfmt_bytes(k, sizeof k, (uint64_t)(c->rest + 0.5)));
        if (n < cap && c->tracked_dropped)
            snprintf(dst + n, cap - n, " (%s tracked allocations found the tracked table full)",
                     figfmt_count(a, sizeof a, (double)c->tracked_dropped));
        else if (n < cap)
            snprintf(dst + n, cap - n, " (more than the estimates' errors: blocks the estimate "
                     "of live bytes counts that the tracked blocks do not stand for)");
    } else if (c->rest_big) {
        snprintf(dst + n, cap - n, "; the stacks' sum is %s over the live estimate, beyond "
                 "their errors", figfmt_bytes(k, sizeof k, (uint64_t)(-c->rest + 0.5)));
    }
    return dst;
}

/* ---- Qualifiers ---- */

static void note(struct fig_note *out, size_t max, size_t *n, enum fig_sev sev, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void note(struct fig_note *out, size_t max, size_t *n, enum fig_sev sev, const char *fmt, ...)
{
    va_list ap;
    if (*n >= max)
        return;
    out[*n].sev = sev;
    va_start(ap, fmt);
    vsnprintf(out[*n].text, sizeof out[*n].text, fmt, ap);
    va_end(ap);
    (*n)++;
}

/* The settings changes a process went through (shimdump --set), and what
 * they leave out of its figures. */
static size_t settings_notes(const struct dump *d, struct fig_note *out, size_t max, size_t n)
{
    char a[32], b[32], smp[120];
    uint64_t last = fig_settings_since(d);
    if (last) {
        uint64_t as_of = fig_as_of(d);
        note(out, max, &n, FN_INFO, "sampling changed %u time%s while it ran (shimdump --set), last "
             "at %s, %s before these figures: now %s; a block keeps the weight it was tracked "
             "with", d->settings_n,
             d->settings_n == 1 ? "" : "s", figfmt_utc(a, sizeof a, last),
             figfmt_dur(b, sizeof b, as_of > last ? as_of - last : 0, FF_WORDS),
             fig_sampling(d, smp, sizeof smp));
    }
    if (d->track_off)
        note(out, max, &n, FN_WARN, "tracking is off (track:off%s%s): call sites, lifetimes and "
             "ages show only blocks tracked before; counts and usable bytes go on; shimdump "
             "--set track:on PID turns it back on", last ? " since " : "",
             last ? figfmt_utc(a, sizeof a, last) : "");
    else if (d->track_was_off)
        note(out, max, &n, FN_WARN, "tracking was off for a while (track:off): blocks allocated then "
             "are in no call site, lifetime or age, and those still live are missing from them; "
             "counts and usable bytes are whole");
    if (!d->track_off && d->stacks_off && d->stack_depth)
        note(out, max, &n, FN_INFO, "call stacks are off (stacks:off%s%s): blocks tracked since "
             "have no call site; shimdump --set stacks:on PID turns them back on",
             last ? " since " : "", last ? figfmt_utc(a, sizeof a, last) : "");
    return n;
}

int fig_every_block(const struct dump *d)
{
    return d->sample <= 1 && !d->track_was_off;
}

uint64_t fig_settings_since(const struct dump *d)
{
    return d->nchanges ? d->changes[d->nchanges - 1].t_ns : 0;
}

size_t fig_notes(const struct dump *d, struct fig_note *out, size_t max)
{
    size_t n = 0;
    char a[32], b[32];
    const struct dump_sample *s = dump_last(d);

    if (d->state == DS_DEAD || d->state == DS_EXITED)
        note(out, max, &n, FN_BAD, "%s: the figures are as of its last sample%s%s%s%s",
             d->state == DS_DEAD ? "the process is gone without exiting normally"
                                 : "the process has exited",
             d->heartbeat_ns ? ", " : " (it took none)",
             d->heartbeat_ns ? figfmt_dur(b, sizeof b, d->snap_ns > d->heartbeat_ns ?
                                          d->snap_ns - d->heartbeat_ns : 0, FF_WORDS) : "",
             d->heartbeat_ns ? " before this read, " : "",
             d->heartbeat_ns ? figfmt_utc(a, sizeof a, d->heartbeat_ns) : "");
    if (d->inherited)
        note(out, max, &n, FN_WARN, "a fork child's segment: counts from before the fork are approximate");
    if (d->copy && d->state == DS_ALIVE)
        note(out, max, &n, FN_WARN, "read from the copy in the segment directory, as of %s: the "
             "process's own segment could not be opened (another user's process, or it closed "
             "the descriptor)", d->copy_ns ? figfmt_utc(a, sizeof a, d->copy_ns) : "never");
    if (d->copy_stale)
        note(out, max, &n, FN_BAD, "the copy could not be written since then (its file system is "
             "full?): the figures are stale");
    if (d->state == DS_ALIVE && s) {
        struct fig_age age = fig_age_of(d, s->t_ns);
        if (age.stale)
            note(out, max, &n, FN_WARN, "the last sample is %s old: the process's sampler has not "
                 "run since (the process stopped, or starved of CPU)",
                 figfmt_dur(b, sizeof b, age.ns, FF_WORDS));
    }
    if (s && s->be.t_ns) {
        struct fig_age age = fig_age_of(d, s->be.t_ns);
        if (age.stale)
            note(out, max, &n, FN_INFO, "the allocator's own figures were taken %s before these "
                 "(they cost more than the rest, so they are taken less often)",
                 figfmt_dur(b, sizeof b, age.ns, FF_WORDS));
    }
    /* The allocator's in use below the live usable bytes it is shown
     * beside: those are counted when the snapshot is read, its figures a
     * moment (or passes) before, and the live bytes moved meanwhile. */
    struct fig_alloc al;
    fig_alloc_of(d, s, &al);
    if (al.have && al.t_ns && al.in_use < d->total.live_usable && al.in_use >= al.live_lo) {
        char iu[24], lu[24], lo[24], hi[24];
        struct fig_age age = fig_age_of(d, al.t_ns);
        note(out, max, &n, FN_INFO, "the allocator's in use (%s) is below the live usable bytes "
             "(%s): its figures were taken %s before, when the live usable bytes were between %s "
             "and %s, which it holds", figfmt_bytes(iu, sizeof iu, al.in_use),
             figfmt_bytes(lu, sizeof lu, d->total.live_usable),
             figfmt_dur(b, sizeof b, age.ns, FF_WORDS), figfmt_bytes(lo, sizeof lo, al.live_lo),
             figfmt_bytes(hi, sizeof hi, al.live_hi));
    }
    if (!d->consistent)
        note(out, max, &n, FN_WARN, "some figures kept changing while read; they are as close as could be read");
    if (!d->counts_ok)
        note(out, max, &n, FN_WARN, "some classes count more frees than allocations (a corrupt or torn segment)");
    if (d->dropped)
        note(out, max, &n, FN_WARN, "%llu tracked allocations found the table full and are not in "
             "the heat maps", (unsigned long long)d->dropped);
    n = settings_notes(d, out, max, n);
    return n;
}

/* ---- History ---- */

static void point_from_sample(struct fig_point *p, const struct dump_sample *s)
{
    memset(p, 0, sizeof *p);
    p->t_ns = s->t_ns;
    p->rss = p->rss_min = p->rss_max = s->rss;
    p->live = p->live_max = s->live_req;
    p->live_usable = s->live_usable;
    p->be = s->be;
    p->samples = 1;
}

int fig_history(const struct dump *d, struct fig_history *h)
{
    size_t cap = 0;

    h->pts = NULL;
    h->npts = h->nfine = 0;
    if (d->ntiers > 0) {
        size_t nt = d->ntiers < DUMP_TIERS_MAX ? d->ntiers : DUMP_TIERS_MAX;
        uint64_t cut[DUMP_TIERS_MAX], first = UINT64_MAX;
        int whole[DUMP_TIERS_MAX], finer_whole = 0;
        size_t skip[DUMP_TIERS_MAX];
        struct fig_point *straddle = NULL;
        for (size_t t = 0; t < nt; t++) {
            const struct dump_tier *tr = &d->tiers[t];
            /* A fork child's segment goes on from its parent's copy: the
             * points that end before its start are the parent's life, not
             * its own (drawn at its start, they made one column of all of
             * them). A tier that has such points reaches back past the
             * start: it holds the child's whole life. */
            skip[t] = 0;
            while (skip[t] < tr->npoints && tr->points[skip[t]].last.t_ns < d->start_ns)
                skip[t]++;
            cut[t] = first;   /* tier t is drawn only before the finer tiers begin */
            /* and not at all where a finer tier holds the whole life: then
             * no coarse point spans samples that the finer ones lack */
            whole[t] = finer_whole;
            if (skip[t] < tr->npoints && tr->points[skip[t]].last.t_ns < first)
                first = tr->points[skip[t]].last.t_ns;
            finer_whole |= skip[t] < tr->npoints && (tr->dropped == 0 || skip[t] > 0);
            cap += tr->npoints - skip[t];
        }
        if (cap && !(h->pts = malloc(cap * sizeof *h->pts)))
            return ENOMEM;
        for (size_t t = nt; t-- > 0;) {
            const struct dump_tier *tr = &d->tiers[t];
            for (size_t i = skip[t]; i < tr->npoints; i++) {
                const struct dump_point *q = &tr->points[i];
                struct fig_point *p;
                /* at or after the finer tiers' start: kept only when its
                 * span begins before it (it follows a point before it, or,
                 * the tier's first, it spans samples from before) */
                uint64_t span = (uint64_t)q->samples * d->interval_ms * 1000000ull;
                int straddles = i > skip[t] ? tr->points[i - 1].last.t_ns < cut[t]
                                      : q->last.t_ns - (q->last.t_ns > span ? span : q->last.t_ns) < cut[t];
                if (q->last.t_ns >= cut[t] && (!straddles || cut[t] == 0 || whole[t]))
                    continue;
                p = &h->pts[h->npts++];
                point_from_sample(p, &q->last);
                p->step_ms = tr->step_ms;
                p->rss_min = q->rss_min < q->last.rss ? q->rss_min : q->last.rss;
                p->rss_max = q->rss_max > q->last.rss ? q->rss_max : q->last.rss;
                p->live_max = q->live_req_max > q->last.live_req ? q->live_req_max : q->last.live_req;
                p->samples = q->samples;
                if (straddle) {
                    /* the first point after a straddling one: its values there */
                    straddle->rss = p->rss;
                    straddle->live = p->live;
                    straddle->live_usable = p->live_usable;
                    straddle->be = p->be;
                    straddle = NULL;
                }
                if (q->last.t_ns >= cut[t]) {
                    p->t_ns = cut[t] - 1;
                    straddle = p;
                }
                if (t == 0)
                    h->nfine++;
            }
        }
        return 0;
    }
    if (d->nseries && !(h->pts = malloc(d->nseries * sizeof *h->pts)))
        return ENOMEM;
    for (size_t i = 0; i < d->nseries; i++) {
        if (d->series[i].t_ns < d->start_ns)
            continue;   /* a fork parent's, as above */
        point_from_sample(&h->pts[h->npts], &d->series[i]);
        h->pts[h->npts++].step_ms = d->interval_ms;
    }
    h->nfine = h->npts;
    return 0;
}

size_t fig_history_from(const struct fig_history *h, uint64_t since_ns)
{
    size_t i = 0;
    while (i < h->npts && h->pts[i].t_ns < since_ns)
        i++;
    return i;
}

size_t fig_bin(const struct fig_history *h, size_t from, uint64_t t0, uint64_t t1, size_t ncols,
               struct fig_point *out, size_t *col)
{
    size_t nb = 0, prev = (size_t)-1;
    double span = t1 > t0 ? (double)(t1 - t0) : 1;
    for (size_t i = from; i < h->npts && ncols; i++) {
        const struct fig_point *p = &h->pts[i];
        double x = p->t_ns > t0 ? (double)(p->t_ns - t0) / span : 0;
        size_t c = x >= 1 ? ncols - 1 : (size_t)(x * (double)ncols);
        if (nb && c == prev) {
            struct fig_point *q = &out[nb - 1];
            uint64_t mn = q->rss_min < p->rss_min ? q->rss_min : p->rss_min;
            uint64_t mx = q->rss_max > p->rss_max ? q->rss_max : p->rss_max;
            uint64_t lm = q->live_max > p->live_max ? q->live_max : p->live_max;
            uint64_t ns = q->samples + p->samples;
            *q = *p;
            q->rss_min = mn;
            q->rss_max = mx;
            q->live_max = lm;
            q->samples = ns;
        } else {
            if (col)
                col[nb] = c;
            out[nb++] = *p;
        }
        prev = c;
    }
    return nb;
}

/* ---- Two snapshots ---- */

static double grown(uint64_t a, uint64_t b)
{
    return b >= a ? (double)(b - a) : 0;
}

int fig_rates(const struct dump *a, const struct dump *b, struct fig_rates *r)
{
    memset(r, 0, sizeof *r);
    if (b->snap_ns <= a->snap_ns)
        return 0;
    r->dt_s = (double)(b->snap_ns - a->snap_ns) / 1e9;
    r->allocs = grown(a->total.allocs, b->total.allocs) / r->dt_s;
    r->frees = grown(a->total.frees, b->total.frees) / r->dt_s;
    r->req_bytes = grown(a->total.req_bytes, b->total.req_bytes) / r->dt_s;
    return 1;
}

static void row(struct fig_row *r, const char *key, const char *name, enum fig_kind kind, int ha,
                double a, int hb, double b)
{
    r->key = key;
    snprintf(r->name, sizeof r->name, "%s", name);
    r->kind = kind;
    r->have_a = ha;
    r->have_b = hb;
    r->a = ha ? a : 0;
    r->b = hb ? b : 0;
    r->ratio = ha && hb && a > 0 ? b / a : 0;
}

size_t fig_diff(const struct dump *a, const struct dump *b, int all, struct fig_row *rows,
                size_t *nhead, int *more)
{
    struct fig_step sa[FS_COUNT], sb[FS_COUNT];
    const struct dump *both[2] = { a, b };
    unsigned pick[SIZECLASS_COUNT];
    size_t n = 0;

    fig_waterfall(a, sa);
    fig_waterfall(b, sb);
    for (int k = 0; k < FS_COUNT; k++)
        row(&rows[n++], sa[k].key,
            k == FS_REQ && a->exact && b->exact ? "live requested (exact)"
            : k == FS_INUSE ? "allocator in use" : k == FS_FOOT ? "allocator footprint" : sa[k].name,
            FV_BYTES, sa[k].have, (double)sa[k].v, sb[k].have, (double)sb[k].v);
    row(&rows[n++], "rss_per_live", "RSS / live requested", FV_RATIO, sa[FS_RSS].have,
        sa[FS_RSS].ratio, sb[FS_RSS].have, sb[FS_RSS].ratio);
    row(&rows[n++], "peak_rss_per_live", "peak RSS / live requested", FV_RATIO,
        sa[FS_PEAK].have, sa[FS_PEAK].ratio, sb[FS_PEAK].have, sb[FS_PEAK].ratio);
    row(&rows[n++], "allocs", "allocations", FV_COUNT, 1, (double)a->total.allocs, 1,
        (double)b->total.allocs);
    row(&rows[n++], "frees", "frees", FV_COUNT, 1, (double)a->total.frees, 1, (double)b->total.frees);
    row(&rows[n++], "live_count", "live blocks", FV_COUNT, 1, (double)a->total.live_count, 1,
        (double)b->total.live_count);
    row(&rows[n++], "requested_bytes", "bytes requested in all", FV_BYTES, 1,
        (double)a->total.req_bytes, 1, (double)b->total.req_bytes);
    *nhead = n;
    int m = fig_pick_classes(both, 2, FK_USABLE, all ? 0 : 16, pick, more);
    for (int i = 0; i < m; i++) {
        char lab[40];
        row(&rows[n++], "class_live_usable", figfmt_class(lab, sizeof lab, pick[i], FF_TERSE),
            FV_BYTES, 1, (double)a->cls[pick[i]].live_usable, 1, (double)b->cls[pick[i]].live_usable);
    }
    return n;
}
