/* pprof: a dump's call stacks as a heap profile in pprof's format, encoded
 * with protobuf-c (profile.proto) and gzip'd with zlib. The values are the
 * figures layer's estimates of each stack (fig_site_of), split by age. */
#include "config.h"

#include "pprof.h"

#ifndef HAVE_PPROF

#include <errno.h>

const char *pprof_missing(void)
{
    return "not built in: " PPROF_MISSING;
}

int pprof_build(const struct dump *d, unsigned char **out, size_t *len)
{
    (void)d;
    *out = NULL;
    *len = 0;
    return ENOSYS;
}

#else

#include "figfmt.h"
#include "figures.h"
#include "profile.pb-c.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;

const char *pprof_missing(void)
{
    return NULL;
}

/* Every sample's values, in Go's heap profiles' order, so that pprof's
 * -sample_index and its heap defaults read them as they read Go's. */
enum { V_ALLOC_OBJECTS, V_ALLOC_SPACE, V_INUSE_OBJECTS, V_INUSE_SPACE, V_COUNT };
static const char *const value_type[V_COUNT][2] = {
    { "alloc_objects", "count" }, { "alloc_space", "bytes" },
    { "inuse_objects", "count" }, { "inuse_space", "bytes" },
};

#define LABELS_MAX 6

/* A sample with its values, labels and locations in one allocation. */
struct sample_rec {
    Sample m;
    int64_t v[V_COUNT];
    Label lab[LABELS_MAX];
    Label *labp[LABELS_MAX];
    uint64_t loc[];
};

struct loc_rec {
    Location m;
    Line line;
    Line *linep;
    int obj;                   /* d->objs index, or -1 */
    int named, placed;         /* has a function; has a file and line */
};

/* A map of 64-bit keys to indices (open addressing; val 0: empty slot, so
 * values are index + 1). Strings are keyed by their hash and compared. */
struct idmap {
    uint64_t *key;
    uint32_t *val;
    size_t cap, n;
};

/* The profile under construction. Invariants: str[0] is ""; every id a
 * message holds is its index + 1 in its array; every string index is < nstr. */
struct build {
    const struct dump *d;
    char **str;
    size_t nstr, capstr;
    struct idmap strs, fns, locs;
    Function **fn;
    size_t nfn, capfn;
    struct loc_rec **loc;
    size_t nloc, caploc;
    struct sample_rec **smp;
    size_t nsmp, capsmp;
    int64_t *comment;
    size_t ncomment, capcomment;
    int64_t k_age, k_bytes, k_class, k_process, k_pid, k_backend, u_bytes;
    int64_t s_process, s_backend;
    int64_t inuse_space;       /* the samples' sum */
    double inuse_var;          /* its variance: the stacks' estimates' squared errors */
    int oom;                   /* a step ran out of memory: the build fails */
};

static int grow(void *arrp, size_t *cap, size_t n, size_t size)
{
    void **arr = arrp;
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 64;
    void *p = reallocarray(*arr, nc, size);
    if (!p)
        return ENOMEM;
    *arr = p;
    *cap = nc;
    return 0;
}

static uint64_t hash_bytes(const char *s)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

/* The slot of key in m (cap > 0): where it is, or the empty slot where it
 * goes. For strings (str non-NULL), a slot matches only when its string is
 * s too. */
static size_t idmap_slot(const struct idmap *m, uint64_t key, char *const *str, const char *s)
{
    size_t i = mix(key) & (m->cap - 1);
    while (m->val[i] && (m->key[i] != key || (str && strcmp(str[m->val[i] - 1], s) != 0)))
        i = (i + 1) & (m->cap - 1);
    return i;
}

/* Makes room for one more entry (at most half full). Returns 0 or ENOMEM. */
static int idmap_reserve(struct idmap *m)
{
    if (2 * (m->n + 1) <= m->cap)
        return 0;
    struct idmap nm = { NULL, NULL, m->cap ? 2 * m->cap : 256, m->n };
    nm.key = calloc(nm.cap, sizeof *nm.key);
    nm.val = calloc(nm.cap, sizeof *nm.val);
    if (!nm.key || !nm.val) {
        free(nm.key);
        free(nm.val);
        return ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->val[i])
            continue;
        /* keys are distinct, or (strings) their strings are: a plain probe */
        size_t j = mix(m->key[i]) & (nm.cap - 1);
        while (nm.val[j])
            j = (j + 1) & (nm.cap - 1);
        nm.key[j] = m->key[i];
        nm.val[j] = m->val[i];
    }
    free(m->key);
    free(m->val);
    *m = nm;
    return 0;
}

static void idmap_free(struct idmap *m)
{
    free(m->key);
    free(m->val);
}

/* The string table index of s, added when new; 0 ("") on failure, with
 * b->oom set. */
static int64_t str_of(struct build *b, const char *s)
{
    if (!s || !*s)
        return 0;
    uint64_t h = hash_bytes(s);
    if (idmap_reserve(&b->strs) != 0)
        goto oom;
    size_t i = idmap_slot(&b->strs, h, b->str, s);
    if (b->strs.val[i])
        return b->strs.val[i] - 1;
    char *c = strdup(s);
    if (!c || grow(&b->str, &b->capstr, b->nstr, sizeof *b->str) != 0) {
        free(c);
        goto oom;
    }
    b->str[b->nstr] = c;
    b->strs.key[i] = h;
    b->strs.val[i] = (uint32_t)++b->nstr;
    b->strs.n++;
    return (int64_t)b->nstr - 1;
oom:
    b->oom = 1;
    return 0;
}

static void comment(struct build *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void comment(struct build *b, const char *fmt, ...)
{
    char t[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t, sizeof t, fmt, ap);
    va_end(ap);
    int64_t s = str_of(b, t);
    if (grow(&b->comment, &b->capcomment, b->ncomment, sizeof *b->comment) != 0) {
        b->oom = 1;
        return;
    }
    b->comment[b->ncomment++] = s;
}

/* The function named name in file (either may be NULL): its id, 0 on
 * failure. */
static uint64_t function_of(struct build *b, const char *name, const char *file)
{
    int64_t n = str_of(b, name), f = str_of(b, file);
    uint64_t key = (uint64_t)n << 32 | (uint64_t)f;
    if (b->oom || idmap_reserve(&b->fns) != 0)
        return b->oom = 1, 0;
    size_t i = idmap_slot(&b->fns, key, NULL, NULL);
    if (b->fns.val[i])
        return b->fns.val[i];
    Function *fn = malloc(sizeof *fn);
    if (!fn || grow(&b->fn, &b->capfn, b->nfn, sizeof *b->fn) != 0) {
        free(fn);
        return b->oom = 1, 0;
    }
    perftools__profiles__function__init(fn);
    fn->id = b->nfn + 1;
    fn->name = fn->system_name = n;
    fn->filename = f;
    b->fn[b->nfn++] = fn;
    b->fns.key[i] = key;
    b->fns.val[i] = (uint32_t)fn->id;
    b->fns.n++;
    return fn->id;
}

/* A location of its own: its id, 0 on failure. */
static uint64_t location_new(struct build *b, uint64_t address, int obj, uint64_t fn, uint32_t line,
                             int placed)
{
    struct loc_rec *l = calloc(1, sizeof *l);
    if (!l || grow(&b->loc, &b->caploc, b->nloc, sizeof *b->loc) != 0) {
        free(l);
        return b->oom = 1, 0;
    }
    perftools__profiles__location__init(&l->m);
    l->m.id = b->nloc + 1;
    l->m.address = address;
    l->obj = obj;
    if (fn) {
        perftools__profiles__line__init(&l->line);
        l->line.function_id = fn;
        l->line.line = line;
        l->linep = &l->line;
        l->m.n_line = 1;
        l->m.line = &l->linep;
        l->named = 1;
        l->placed = placed;
    }
    b->loc[b->nloc++] = l;
    return l->m.id;
}

/* The location of frame f, one per return address: its id, 0 on failure. */
static uint64_t location_of(struct build *b, const struct dump_frame *f)
{
    if (idmap_reserve(&b->locs) != 0)
        return b->oom = 1, 0;
    size_t i = idmap_slot(&b->locs, f->addr, NULL, NULL);
    if (b->locs.val[i])
        return b->locs.val[i];
    uint64_t fn = f->func ? function_of(b, f->func, f->file) : 0;
    int obj = f->obj >= 0 && (size_t)f->obj < b->d->nobjs ? f->obj : -1;
    /* the call, not the return address: the byte before it, which pprof
     * (and addr2line) put in the call's line, as dump_symbolize does */
    uint64_t id = b->oom ? 0 : location_new(b, f->addr ? f->addr - 1 : 0, obj, fn,
                                            f->file ? f->line : 0, f->file != NULL);
    if (id) {
        b->locs.key[i] = f->addr;
        b->locs.val[i] = (uint32_t)id;
        b->locs.n++;
    }
    return id;
}

static int64_t est_int(double v)
{
    if (!(v > 0))
        return 0;
    return v >= 9.2e18 ? INT64_MAX : (int64_t)llround(v);
}

/* Splits total over n parts in proportion to w[] (tracked figures), each
 * part the difference of rounded running shares: the parts sum to total
 * exactly, so that pprof's totals are the estimates' totals. */
static void split(int64_t total, const uint64_t *w, size_t n, int64_t *out)
{
    long double sum = 0, acc = 0;
    int64_t prev = 0;
    for (size_t i = 0; i < n; i++)
        sum += w[i];
    for (size_t i = 0; i < n; i++) {
        acc += w[i];
        int64_t cum = i + 1 == n ? total : sum > 0 ? (int64_t)llroundl(total * acc / sum) : 0;
        out[i] = cum - prev;
        prev = cum;
    }
}

/* A sample on the nloc locations of loc, with values v and no labels yet.
 * Returns it, or NULL (b->oom set). */
static struct sample_rec *sample_new(struct build *b, const uint64_t *loc, size_t nloc,
                                     const int64_t v[V_COUNT])
{
    struct sample_rec *s = calloc(1, sizeof *s + nloc * sizeof *loc);
    if (!s || grow(&b->smp, &b->capsmp, b->nsmp, sizeof *b->smp) != 0) {
        free(s);
        b->oom = 1;
        return NULL;
    }
    perftools__profiles__sample__init(&s->m);
    memcpy(s->v, v, sizeof s->v);
    memcpy(s->loc, loc, nloc * sizeof *loc);
    s->m.n_location_id = nloc;
    s->m.location_id = s->loc;
    s->m.n_value = V_COUNT;
    s->m.value = s->v;
    s->m.label = s->labp;
    b->smp[b->nsmp++] = s;
    /* the process's labels on every sample: profiles of several processes
     * merged by pprof keep them apart */
    int64_t pid = b->d->pid;
    struct { int64_t key, str, num; } base[] = {
        { b->k_process, b->s_process, 0 }, { b->k_pid, 0, pid }, { b->k_backend, b->s_backend, 0 },
    };
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
        Label *l = &s->lab[s->m.n_label];
        perftools__profiles__label__init(l);
        l->key = base[i].key;
        l->str = base[i].str;
        l->num = base[i].num;
        s->labp[s->m.n_label++] = l;
    }
    return s;
}

static void label(struct sample_rec *s, int64_t key, int64_t str, int64_t num, int64_t unit)
{
    if (!s || s->m.n_label >= LABELS_MAX)
        return;
    Label *l = &s->lab[s->m.n_label];
    perftools__profiles__label__init(l);
    l->key = key;
    l->str = str;
    l->num = num;
    l->num_unit = unit;
    s->labp[s->m.n_label++] = l;
}

/* Stack i: a sample of its allocations, and one per age bucket of its live
 * blocks. The values are fig_site_of's, as --stacks shows them. */
static void add_stack(struct build *b, size_t i, uint64_t *locbuf)
{
    const struct dump *d = b->d;
    const struct dump_stack *st = &d->stacks[i];
    struct fig_site site;
    size_t n = 0;
    char t[48];

    fig_site_of(d, i, 0, &site);
    for (uint32_t k = 0; k < st->depth && st->frame0 + k < d->nframes; k++) {
        const struct dump_frame *f = &d->frames[st->frame0 + k];
        uint64_t id = location_of(b, f);
        if (!id)
            return;
        locbuf[n++] = id;
    }
    /* the alloc_space estimate: fig_site_of's own, before it is a rate */
    int64_t v[V_COUNT] = { est_int(site.allocs), est_int((double)st->req_bytes), 0, 0 };
    if (v[V_ALLOC_OBJECTS] || v[V_ALLOC_SPACE]) {
        struct sample_rec *s = sample_new(b, locbuf, n, v);
        label(s, b->k_bytes, 0, (int64_t)site.avg_alloc, b->u_bytes);
    }

    int64_t objs = est_int(site.live_blocks), bytes = est_int(site.live_bytes);
    if (!objs && !bytes)
        return;
    b->inuse_space += bytes;
    b->inuse_var += site.live_bytes_err * site.live_bytes_err;
    int64_t cls = 0;
    if (st->live_count)
        cls = str_of(b, figfmt_class(t, sizeof t, sizeclass_of(st->live_usable / st->live_count),
                                     FF_TERSE));
    uint64_t nage = 0;
    for (unsigned a = 0; a < LIFEBUCKET_COUNT; a++)
        nage += st->age_count[a];
    int64_t so[LIFEBUCKET_COUNT], sb[LIFEBUCKET_COUNT];
    if (nage != st->live_count) {
        /* ages that do not add up (a torn read): one sample, no age */
        int64_t w[V_COUNT] = { 0, 0, objs, bytes };
        struct sample_rec *s = sample_new(b, locbuf, n, w);
        label(s, b->k_bytes, 0, (int64_t)site.avg_live, b->u_bytes);
        label(s, b->k_class, cls, 0, 0);
        return;
    }
    split(objs, st->age_count, LIFEBUCKET_COUNT, so);
    split(bytes, st->age_req, LIFEBUCKET_COUNT, sb);
    for (unsigned a = 0; a < LIFEBUCKET_COUNT; a++) {
        if (!st->age_count[a] || (!so[a] && !sb[a]))
            continue;
        int64_t w[V_COUNT] = { 0, 0, so[a], sb[a] };
        struct sample_rec *s = sample_new(b, locbuf, n, w);
        label(s, b->k_age, str_of(b, figfmt_bucket(t, sizeof t, (int)a, FF_TERSE)), 0, 0);
        label(s, b->k_bytes, 0, (int64_t)(st->age_req[a] / st->age_count[a]), b->u_bytes);
        label(s, b->k_class, cls, 0, 0);
    }
}

/* The live tracked blocks that have no stack (the table was full, or the
 * unwinder failed), under one frame of their own, so that the profile's
 * inuse totals are those of every tracked block. */
static void add_nostack(struct build *b)
{
    const struct dump *d = b->d;
    int64_t v[V_COUNT] = { 0, 0, est_int((double)d->nostack_live_count),
                           est_int((double)d->nostack_live_req) };
    if (!v[V_INUSE_OBJECTS] && !v[V_INUSE_SPACE])
        return;
    b->inuse_space += v[V_INUSE_SPACE];
    double err = (double)d->nostack_live_req_err;
    b->inuse_var += err * err;
    uint64_t fn = function_of(b, "[no call stack]", NULL);
    uint64_t loc = fn ? location_new(b, 0, -1, fn, 0, 0) : 0;
    if (loc)
        sample_new(b, &loc, 1, v);
}

/* The coverage of live bytes by the stacks (all of them are in the
 * profile), and the top sites at the peak of live bytes, which the profile's
 * values (live now) do not hold (figures.h, fig_coverage and fig_peak). */
static void peak_comments(struct build *b)
{
    const struct dump *d = b->d;
    struct fig_site site[3];
    struct fig_cover c;
    struct fig_peak p;
    char text[600], t[40], x[24], y[24];

    fig_coverage(d, NULL, 0, 0, &c);
    if (c.have) {
        c.shown = c.stacks;   /* every stack is in the profile */
        c.sites = c.all;
        c.sites_err = c.all_err;
        c.share = c.all / c.live;
        comment(b, "coverage: %s", fig_cover_text(&c, text, sizeof text, FF_TERSE));
    }
    fig_peak(d, &p);
    if (!p.have)
        return;
    size_t n = fig_sites(d, FR_PEAK, 0, site, 3), at = 0;
    text[0] = '\0';
    for (size_t i = 0; i < n && at < sizeof text; i++) {
        const struct dump_frame *fr = site[i].s->depth && site[i].s->frame0 < d->nframes
                                          ? &d->frames[site[i].s->frame0] : NULL;
        at += (size_t)snprintf(text + at, sizeof text - at, "%s%s %s", i ? ", " : "",
                               fr && fr->func ? fr->func : "(unnamed)",
                               figfmt_bytes(x, sizeof x, (uint64_t)(site[i].peak_bytes + 0.5)));
    }
    comment(b, "peak of live bytes: %s, %s live requested, RSS %s then; its top sites (not in "
               "these values, which are live now): %s", figfmt_utc(t, sizeof t, p.t_ns),
            figfmt_bytes(x, sizeof x, p.live_req), figfmt_bytes(y, sizeof y, p.rss),
            n ? text : "none");
}

/* What the profile holds and how it was sampled, for pprof -comments. */
static void add_comments(struct build *b)
{
    const struct dump *d = b->d;
    struct fig_note notes[FIG_NOTES_MAX];
    char rel[64], up[32];
    uint32_t rate = d->sample ? d->sample : 1;
    char smp[120];

    comment(b, "mallocshim heap profile: pid %u (%s), backend %s %s, read from %s", d->pid, d->comm,
            d->backend, fig_backend_release(d, rel, sizeof rel), d->source);
    if (rate == 1)
        comment(b, "sampling: every allocation tracked (sample:1): the values are exact");
    else
        comment(b, "sampling: %s tracked at random (sample:%u, sample_bytes:%llu), each block "
                   "counting for 1/p of them: the values are estimates, as shimdump --stacks "
                   "gives them", fig_sampling(d, smp, sizeof smp), rate,
                (unsigned long long)d->sample_bytes);
    comment(b, "inuse_*: tracked blocks live now, by call stack and age (label age); "
               "alloc_*: allocations since the start, %s ago",
            figfmt_elapsed(up, sizeof up, fig_uptime_s(d)));
    /* the two totals side by side, each with its error, so that a reader
     * sees that they agree */
    comment(b, "inuse_space: %lld B, standard error %.0f B; live requested bytes of all blocks "
               "(the counters): %llu B, standard error %llu B",
            (long long)b->inuse_space, sqrt(b->inuse_var), (unsigned long long)d->total.live_req,
            (unsigned long long)d->total.live_req_err);
    peak_comments(b);
    if (d->stacks_dropped || d->stacks_failed)
        comment(b, "stacks: %llu did not fit the table and %llu could not be taken: their live "
                   "blocks are under [no call stack]",
                (unsigned long long)d->stacks_dropped, (unsigned long long)d->stacks_failed);
    /* what qualifies the figures (a dead process, a stale copy, a fork
     * child's); not the notes that only explain them */
    size_t nn = fig_notes(d, notes, FIG_NOTES_MAX);
    for (size_t i = 0; i < nn; i++)
        if (notes[i].sev != FN_INFO)
            comment(b, "note: %s", notes[i].text);
}

/* The mappings of the objects that locations are in, the program first
 * (pprof takes mapping[0] for the main binary), each saying whether all its
 * locations are named (pprof names again the mappings that are not). */
static int add_mappings(struct build *b, Mapping ***out, size_t *nout)
{
    const struct dump *d = b->d;
    uint64_t *id = calloc(d->nobjs ? d->nobjs : 1, sizeof *id);
    int *named = calloc(d->nobjs ? d->nobjs : 1, sizeof *named);
    int *placed = calloc(d->nobjs ? d->nobjs : 1, sizeof *placed);
    Mapping **m = calloc(d->nobjs ? d->nobjs : 1, sizeof *m);
    size_t n = 0;
    int rc = ENOMEM;

    if (!id || !named || !placed || !m)
        goto out;
    for (size_t i = 0; i < d->nobjs; i++)
        named[i] = placed[i] = -1;   /* -1: no location in it */
    for (size_t i = 0; i < b->nloc; i++) {
        int o = b->loc[i]->obj;
        if (o < 0)
            continue;
        named[o] = (named[o] != 0) && b->loc[i]->named;
        placed[o] = (placed[o] != 0) && b->loc[i]->placed;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < d->nobjs; i++) {
            const struct dump_obj *o = &d->objs[i];
            int main_obj = (o->flags & SEG_OBJ_MAIN) != 0;
            if ((pass == 0) != main_obj || (!main_obj && named[i] < 0))
                continue;
            Mapping *mp = calloc(1, sizeof *mp);
            if (!mp)
                goto out;
            perftools__profiles__mapping__init(mp);
            mp->id = n + 1;
            /* lo is where the first PT_LOAD, the one at file offset 0, is
             * mapped: pprof finds the object's load base from the two */
            mp->memory_start = o->lo;
            mp->memory_limit = o->hi;
            mp->file_offset = 0;
            mp->filename = str_of(b, o->path);
            char hex[2 * sizeof o->build_id + 1];
            uint32_t bl = o->build_id_len <= sizeof o->build_id ? o->build_id_len : 0;
            for (uint32_t k = 0; k < bl; k++)
                snprintf(hex + 2 * k, 3, "%02x", o->build_id[k]);
            hex[2 * bl] = '\0';
            mp->build_id = str_of(b, hex);
            mp->has_functions = named[i] > 0;
            mp->has_filenames = mp->has_line_numbers = placed[i] > 0;
            m[n++] = mp;
            id[i] = mp->id;
        }
    }
    for (size_t i = 0; i < b->nloc; i++)
        if (b->loc[i]->obj >= 0)
            b->loc[i]->m.mapping_id = id[b->loc[i]->obj];
    rc = b->oom ? ENOMEM : 0;
out:
    free(id);
    free(named);
    free(placed);
    *out = m;
    *nout = n;
    return rc;
}

/* gzip (RFC 1952) of in[len] into a malloc'ed *out. Returns 0 or ENOMEM. */
static int gzip(const uint8_t *in, size_t len, unsigned char **out, size_t *outlen)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return ENOMEM;
    size_t cap = deflateBound(&z, len);
    unsigned char *buf = malloc(cap);
    if (!buf || len > UINT32_MAX) {
        free(buf);
        deflateEnd(&z);
        return ENOMEM;
    }
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)len;
    z.next_out = buf;
    z.avail_out = (uInt)cap;
    int zr = deflate(&z, Z_FINISH);
    *outlen = z.total_out;
    deflateEnd(&z);
    if (zr != Z_STREAM_END) {
        free(buf);
        return ENOMEM;
    }
    *out = buf;
    return 0;
}

static void build_free(struct build *b)
{
    for (size_t i = 0; i < b->nstr; i++)
        free(b->str[i]);
    for (size_t i = 0; i < b->nfn; i++)
        free(b->fn[i]);
    for (size_t i = 0; i < b->nloc; i++)
        free(b->loc[i]);
    for (size_t i = 0; i < b->nsmp; i++)
        free(b->smp[i]);
    free(b->str);
    free(b->fn);
    free(b->loc);
    free(b->smp);
    free(b->comment);
    idmap_free(&b->strs);
    idmap_free(&b->fns);
    idmap_free(&b->locs);
}

int pprof_build(const struct dump *d, unsigned char **out, size_t *len)
{
    struct build b;
    Profile p;
    ValueType vt[V_COUNT], *vtp[V_COUNT], period_type;
    Mapping **maps = NULL;
    Sample **samples = NULL;
    Location **locations = NULL;
    size_t nmaps = 0;
    uint64_t *locbuf = NULL;
    uint8_t *packed = NULL;
    int rc = ENOMEM;

    *out = NULL;
    *len = 0;
    if (d->stack_depth == 0)
        return EINVAL;
    memset(&b, 0, sizeof b);
    b.d = d;
    b.str = calloc(64, sizeof *b.str);
    if (!b.str || !(b.str[0] = strdup("")))
        goto out;
    b.nstr = 1;
    b.capstr = 64;
    perftools__profiles__profile__init(&p);
    for (int i = 0; i < V_COUNT; i++) {
        perftools__profiles__value_type__init(&vt[i]);
        vt[i].type = str_of(&b, value_type[i][0]);
        vt[i].unit = str_of(&b, value_type[i][1]);
        vtp[i] = &vt[i];
    }
    b.k_age = str_of(&b, "age");
    b.k_bytes = b.u_bytes = str_of(&b, "bytes");
    b.k_class = str_of(&b, "size_class");
    b.k_process = str_of(&b, "process");
    b.k_pid = str_of(&b, "pid");
    b.k_backend = str_of(&b, "backend");
    b.s_process = str_of(&b, d->comm);
    b.s_backend = str_of(&b, d->backend);

    if (!(locbuf = calloc(d->stack_depth, sizeof *locbuf)))
        goto out;
    for (size_t i = 0; i < d->nstacks && !b.oom; i++)
        add_stack(&b, i, locbuf);
    add_nostack(&b);
    add_comments(&b);
    if (b.oom || add_mappings(&b, &maps, &nmaps) != 0)
        goto out;

    p.n_sample_type = V_COUNT;
    p.sample_type = vtp;
    p.default_sample_type = vt[V_INUSE_SPACE].type;
    perftools__profiles__value_type__init(&period_type);
    period_type.type = str_of(&b, "allocations");
    period_type.unit = str_of(&b, "count");
    p.period_type = &period_type;
    p.period = d->sample ? d->sample : 1;
    uint64_t as_of = fig_as_of(d);
    p.time_nanos = as_of <= INT64_MAX ? (int64_t)as_of : 0;
    p.duration_nanos = d->start_ns && d->start_ns < as_of && as_of - d->start_ns <= INT64_MAX ?
                       (int64_t)(as_of - d->start_ns) : 0;
    p.n_comment = b.ncomment;
    p.comment = b.comment;
    samples = calloc(b.nsmp ? b.nsmp : 1, sizeof *samples);
    locations = calloc(b.nloc ? b.nloc : 1, sizeof *locations);
    if (b.oom || !samples || !locations)
        goto out;
    for (size_t i = 0; i < b.nsmp; i++)
        samples[i] = &b.smp[i]->m;
    for (size_t i = 0; i < b.nloc; i++)
        locations[i] = &b.loc[i]->m;
    p.n_sample = b.nsmp;
    p.sample = samples;
    p.n_mapping = nmaps;
    p.mapping = maps;
    p.n_location = b.nloc;
    p.location = locations;
    p.n_function = b.nfn;
    p.function = b.fn;
    p.n_string_table = b.nstr;
    p.string_table = b.str;

    size_t plen = perftools__profiles__profile__get_packed_size(&p);
    if (!(packed = malloc(plen ? plen : 1)))
        goto out;
    perftools__profiles__profile__pack(&p, packed);
    rc = gzip(packed, plen, out, len);
out:
    for (size_t i = 0; i < nmaps; i++)
        free(maps[i]);
    free(maps);
    free(samples);
    free(locations);
    free(packed);
    free(locbuf);
    build_free(&b);
    return rc;
}

#endif
