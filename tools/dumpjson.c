/* dumpjson: a struct dump as JSON (the schema in doc/shimdump.1), and back:
 * a small strict parser, bounded in depth and size, for --diff of saved
 * snapshots. */
#include "config.h"

#include "dump.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- Writing ---- */

static void jstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static const char *state_name(int s)
{
    switch (s) {
    case DS_ALIVE: return "alive";
    case DS_EXITED: return "exited";
    case DS_DEAD: return "dead";
    default: return "unknown";
    }
}

static int state_parse(const char *s)
{
    if (!strcmp(s, "alive"))
        return DS_ALIVE;
    if (!strcmp(s, "exited"))
        return DS_EXITED;
    if (!strcmp(s, "dead"))
        return DS_DEAD;
    return DS_UNKNOWN;
}

static void be_stats(FILE *f, int id, const uint64_t be[6])
{
    int first = 1;
    fputc('{', f);
    for (unsigned i = 0; i < 6; i++) {
        const char *n = dump_be_field(id, i);
        if (!*n)
            continue;
        fprintf(f, "%s\"%s\": %llu", first ? "" : ", ", n, (unsigned long long)be[i]);
        first = 0;
    }
    fputc('}', f);
}

static void hist_as(FILE *f, const char *name, const char *what, const uint64_t *v)
{
    fprintf(f, "\"%s\": [", name);
    for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++) {
        uint64_t le = lifebucket_max_ns(b);
        if (le == UINT64_MAX)
            fprintf(f, "%s{\"le_ns\": null, \"%s\": %llu}", b ? ", " : "", what,
                    (unsigned long long)v[b]);
        else
            fprintf(f, "%s{\"le_ns\": %llu, \"%s\": %llu}", b ? ", " : "",
                    (unsigned long long)le, what, (unsigned long long)v[b]);
    }
    fputc(']', f);
}

static void hist(FILE *f, const char *name, const uint64_t *v)
{
    hist_as(f, name, "count", v);
}

void dump_write_stack_json(FILE *f, const struct dump *d, const struct dump_stack *s,
                           const char *indent)
{
    fprintf(f, "{\"id\": %u, \"allocs\": %llu, \"requested_bytes\": %llu, \"frees\": %llu, "
               "\"live_count\": %llu, \"live_bytes\": %llu, \"live_usable_bytes\": %llu,\n%s ",
            s->id, (unsigned long long)s->allocs, (unsigned long long)s->req_bytes,
            (unsigned long long)s->frees, (unsigned long long)s->live_count,
            (unsigned long long)s->live_req, (unsigned long long)s->live_usable, indent);
    hist(f, "lifetime_hist", s->life);
    fprintf(f, ",\n%s ", indent);
    hist(f, "age_hist", s->age_count);
    fprintf(f, ",\n%s ", indent);
    hist_as(f, "age_bytes_hist", "bytes", s->age_req);
    fprintf(f, ",\n%s \"frames\": [", indent);
    for (uint32_t i = 0; i < s->depth && s->frame0 + i < d->nframes; i++) {
        const struct dump_frame *fr = &d->frames[s->frame0 + i];
        fprintf(f, "%s\n%s  {\"addr\": %llu, \"object\": ", i ? "," : "", indent,
                (unsigned long long)fr->addr);
        if (fr->obj >= 0 && (size_t)fr->obj < d->nobjs)
            fprintf(f, "%d, \"offset\": %llu", fr->obj, (unsigned long long)fr->obj_off);
        else
            fputs("null, \"offset\": null", f);
        fputs(", \"function\": ", f);
        if (fr->func) {
            jstr(f, fr->func);
            fprintf(f, ", \"function_offset\": %llu", (unsigned long long)fr->func_off);
        } else {
            fputs("null, \"function_offset\": null", f);
        }
        fputs(", \"note\": ", f);
        if (fr->note)
            jstr(f, fr->note);
        else
            fputs("null", f);
        fputc('}', f);
    }
    fputs("]}", f);
}

void dump_write_objects_json(FILE *f, const struct dump *d, const char *indent)
{
    fputc('[', f);
    for (size_t i = 0; i < d->nobjs; i++) {
        const struct dump_obj *o = &d->objs[i];
        fprintf(f, "%s\n%s  {\"path\": ", i ? "," : "", indent);
        jstr(f, o->path);
        fprintf(f, ", \"bias\": %llu, \"lo\": %llu, \"hi\": %llu, \"build_id\": \"",
                (unsigned long long)o->bias, (unsigned long long)o->lo, (unsigned long long)o->hi);
        for (uint32_t k = 0; k < o->build_id_len && k < sizeof o->build_id; k++)
            fprintf(f, "%02x", o->build_id[k]);
        fprintf(f, "\", \"main\": %s}", (o->flags & SEG_OBJ_MAIN) ? "true" : "false");
    }
    fputc(']', f);
}

static void call_stacks(FILE *f, const struct dump *d)
{
    fprintf(f, "  \"call_stacks\": {\"depth\": %u, \"unwinder\": %s, \"stopped\": %s, \"symbolized\": %s, "
               "\"stored\": %llu, \"dropped\": %llu, \"failed\": %llu, \"objects_dropped\": %llu, "
               "\"ages_at_ns\": %llu, \"no_stack_live_count\": %llu, \"no_stack_live_bytes\": %llu,\n"
               "    \"libunwind_threads\": %llu, \"libunwind_moves\": %llu,\n"
               "    \"objects\": ",
            d->stack_depth, d->no_unwinder ? "false" : "true", d->stacks_stopped ? "true" : "false",
            d->symbolized ? "true" : "false",
            (unsigned long long)d->stacks_used, (unsigned long long)d->stacks_dropped,
            (unsigned long long)d->stacks_failed, (unsigned long long)d->objs_dropped,
            (unsigned long long)d->ages_at_ns, (unsigned long long)d->nostack_live_count,
            (unsigned long long)d->nostack_live_req, (unsigned long long)d->fast_threads,
            (unsigned long long)d->fast_moves);
    dump_write_objects_json(f, d, "    ");
    fputs(",\n    \"stacks\": [", f);
    for (size_t i = 0; i < d->nstacks; i++) {
        fputs(i ? ",\n      " : "\n      ", f);
        dump_write_stack_json(f, d, &d->stacks[i], "      ");
    }
    fputs(d->nstacks ? "\n    ]},\n" : "]},\n", f);
}

/* The counters that totals and each size class share. */
static void counts(FILE *f, const struct dump_class *k)
{
    fprintf(f, "\"allocs\": %llu, \"frees\": %llu, \"reallocs\": %llu, "
               "\"requested_bytes\": %llu, \"live_count\": %llu, \"live_bytes\": %llu, "
               "\"live_bytes_stderr\": %llu, \"live_usable_bytes\": %llu",
            (unsigned long long)k->allocs, (unsigned long long)k->frees,
            (unsigned long long)k->reallocs, (unsigned long long)k->req_bytes,
            (unsigned long long)k->live_count, (unsigned long long)k->live_req,
            (unsigned long long)k->live_req_err, (unsigned long long)k->live_usable);
}

static void opt_u64(FILE *f, const char *key, int have, uint64_t v, const char *tail)
{
    if (have)
        fprintf(f, "  \"%s\": %llu%s", key, (unsigned long long)v, tail);
    else
        fprintf(f, "  \"%s\": null%s", key, tail);
}

void dump_write_json(FILE *f, const struct dump *d)
{
    const struct dump_sample *last = dump_last(d);
    const struct dump_class *t = &d->total;
    int first = 1;

    fprintf(f, "{\n  \"format_version\": %d,\n", DUMP_JSON_VERSION);
    fprintf(f, "  \"tool\": \"shimdump %s\",\n", PACKAGE_VERSION);
    fputs("  \"source\": ", f);
    jstr(f, d->source);
    fprintf(f, ",\n  \"pid\": %u,\n  \"uid\": %u,\n  \"comm\": ", d->pid, d->uid);
    jstr(f, d->comm);
    fprintf(f, ",\n  \"state\": \"%s\",\n  \"backend\": ", state_name(d->state));
    jstr(f, d->backend);
    fputs(",\n  \"backend_version\": ", f);
    jstr(f, d->backend_version);
    fputs(",\n  \"config\": ", f);
    jstr(f, d->config);
    fprintf(f, ",\n  \"started_ns\": %llu,\n  \"heartbeat_ns\": %llu,\n  \"snapshot_ns\": %llu,\n",
            (unsigned long long)d->start_ns, (unsigned long long)d->heartbeat_ns,
            (unsigned long long)d->snap_ns);
    fprintf(f, "  \"interval_ms\": %u,\n  \"threads_seen\": %llu,\n", d->interval_ms,
            (unsigned long long)d->threads_seen);
    fprintf(f, "  \"sampling\": {\"sample\": %u, \"live_bytes\": \"%s\", \"tracked_dropped\": %llu, "
               "\"inherited\": %s, \"consistent\": %s, \"counts_ok\": %s, \"copy\": %s, "
               "\"copy_stale\": %s, \"copy_ns\": %llu},\n",
            d->sample, d->exact ? "exact" : "estimate", (unsigned long long)d->dropped,
            d->inherited ? "true" : "false", d->consistent ? "true" : "false",
            d->counts_ok ? "true" : "false", d->copy ? "true" : "false",
            d->copy_stale ? "true" : "false", (unsigned long long)d->copy_ns);
    fputs("  \"totals\": {", f);
    counts(f, t);
    fputs("},\n", f);
    opt_u64(f, "rss_bytes", last != NULL, last ? last->rss : 0, ",\n");
    opt_u64(f, "rss_anon_bytes", last != NULL, last ? last->rss_anon : 0, ",\n");
    opt_u64(f, "rss_huge_bytes", last != NULL, last ? last->rss_huge : 0, ",\n");
    opt_u64(f, "vsz_bytes", last != NULL, last ? last->vsz : 0, ",\n");
    opt_u64(f, "peak_rss_bytes", d->peak_rss != 0, d->peak_rss, ",\n");
    opt_u64(f, "peak_rss_ns", d->peak_rss != 0, d->peak_rss_ns, ",\n");
    fputs("  \"backend_stats\": ", f);
    if (last)
        be_stats(f, d->backend_id, last->be);
    else
        fputs("null", f);
    fputs(",\n", f);
    if (d->stack_depth)
        call_stacks(f, d);
    fputs("  \"size_classes\": [", f);
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        const struct dump_class *k = &d->cls[c];
        uint64_t any = k->allocs | k->live_count | k->live_usable;
        for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++)
            any |= k->life[b] | k->age[b];
        if (!any)
            continue;
        fprintf(f, "%s\n    {\"class\": %u, \"min_size\": %llu, ", first ? "" : ",", c,
                (unsigned long long)sizeclass_min(c));
        if (c == SIZECLASS_LAST)
            fputs("\"max_size\": null, ", f);
        else
            fprintf(f, "\"max_size\": %llu, ", (unsigned long long)sizeclass_max(c));
        counts(f, k);
        fputs(",\n     ", f);
        hist(f, "lifetime_hist", k->life);
        fputs(",\n     ", f);
        hist(f, "age_hist", k->age);
        fputc('}', f);
        first = 0;
    }
    fputs(first ? "],\n" : "\n  ],\n", f);
    fputs("  \"series\": [", f);
    for (size_t i = 0; i < d->nseries; i++) {
        const struct dump_sample *s = &d->series[i];
        fprintf(f, "%s\n    {\"t\": %llu, \"live_count\": %llu, \"live_bytes\": %llu, "
                   "\"live_usable_bytes\": %llu, \"allocs\": %llu, \"frees\": %llu, "
                   "\"requested_bytes\": %llu, \"rss_bytes\": %llu, \"rss_anon_bytes\": %llu, "
                   "\"rss_huge_bytes\": %llu, \"vsz_bytes\": %llu, \"backend_stats\": ",
                i ? "," : "", (unsigned long long)s->t_ns, (unsigned long long)s->live_count,
                (unsigned long long)s->live_req, (unsigned long long)s->live_usable,
                (unsigned long long)s->allocs, (unsigned long long)s->frees,
                (unsigned long long)s->req_bytes, (unsigned long long)s->rss,
                (unsigned long long)s->rss_anon, (unsigned long long)s->rss_huge,
                (unsigned long long)s->vsz);
        be_stats(f, d->backend_id, s->be);
        fputc('}', f);
    }
    fputs(d->nseries ? "\n  ]\n}\n" : "]\n}\n", f);
}

/* ---- Parsing ---- */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

/* A key is compared raw, escapes and all: the schema's keys are plain
 * ASCII, so a key written with escapes matches none of them, as it should.
 * Keeping keys as spans saves a malloc per key. */
struct jspan {
    const char *p;
    size_t n;
};

struct jv {
    enum jtype type;
    int neg, isint;       /* J_NUM: a negative number; an integer that fits 64 bits */
    uint64_t u;           /* J_NUM: the integer; J_BOOL: 0 or 1 */
    char *s;              /* J_STR */
    size_t n;             /* J_ARR, J_OBJ: children */
    struct jv *kid;
    struct jspan *key;    /* J_OBJ: the keys, as spans of the input text */
};

#define J_DEPTH_MAX 16
#define J_STR_MAX 4096

/* A full snapshot (85 classes x 42 buckets, a day of samples) has about
 * 2M values; more is not ours, and would only cost memory. */
#define J_NODES_MAX 4000000

struct jp {
    const char *p, *end;
    const char *err;
    const char *at;
    size_t nodes;
};

static void jfree(struct jv *v)
{
    if (!v)
        return;
    free(v->s);
    for (size_t i = 0; i < v->n; i++)
        jfree(&v->kid[i]);
    free(v->kid);
    free(v->key);
    memset(v, 0, sizeof *v);
}

static int fail(struct jp *j, const char *msg)
{
    if (!j->err) {
        j->err = msg;
        j->at = j->p;
    }
    return -1;
}

static void ws(struct jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int lit(struct jp *j, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0)
        return 0;
    j->p += n;
    return 1;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Appends ch to a growing string buffer; strings longer than J_STR_MAX
 * are cut (no field of the schema is near that). */
static int sbuf_put(char **buf, size_t *n, size_t *cap, char ch)
{
    if (*n >= J_STR_MAX)
        return 0;
    if (*n + 1 >= *cap) {
        size_t nc = *cap ? *cap * 2 : 32;
        char *b = realloc(*buf, nc);
        if (!b)
            return -1;
        *buf = b;
        *cap = nc;
    }
    (*buf)[(*n)++] = ch;
    return 0;
}

/* A string; non-ASCII and control characters become '?'. With out NULL,
 * only checked, and *span set to its raw text between the quotes. */
static int jstring(struct jp *j, char **out, struct jspan *span)
{
    char *buf = NULL;
    size_t n = 0, cap = 0;
    if (j->p >= j->end || *j->p != '"')
        return fail(j, "expected a string");
    j->p++;
    if (span)
        span->p = j->p;
    while (j->p < j->end && *j->p != '"') {
        char ch = *j->p++;
        if ((unsigned char)ch < 0x20) {
            free(buf);
            return fail(j, "control character in a string");
        }
        if (ch == '\\') {
            if (j->p >= j->end)
                break;
            ch = *j->p++;
            switch (ch) {
            case '"': case '\\': case '/': break;
            case 'b': case 'f': case 'n': case 'r': case 't': ch = '?'; break;
            case 'u': {
                int v = 0;
                for (int k = 0; k < 4; k++) {
                    int h = j->p < j->end ? hexval(*j->p) : -1;
                    if (h < 0) {
                        free(buf);
                        return fail(j, "bad \\u escape");
                    }
                    v = v * 16 + h;
                    j->p++;
                }
                ch = v >= 0x20 && v < 0x7f ? (char)v : '?';
                break;
            }
            default:
                free(buf);
                return fail(j, "bad escape in a string");
            }
        } else if ((unsigned char)ch >= 0x7f) {
            ch = '?';
        }
        if (out && sbuf_put(&buf, &n, &cap, ch) != 0) {
            free(buf);
            return fail(j, "out of memory");
        }
    }
    if (j->p >= j->end) {
        free(buf);
        return fail(j, "unterminated string");
    }
    if (span)
        span->n = (size_t)(j->p - span->p);
    j->p++;
    if (!out)
        return 0;
    if (sbuf_put(&buf, &n, &cap, '\0') != 0 || !buf) {
        free(buf);
        if (!(buf = calloc(1, 1)))
            return fail(j, "out of memory");
    }
    buf[n < J_STR_MAX ? n : J_STR_MAX - 1] = '\0';
    *out = buf;
    return 0;
}

static int jvalue(struct jp *j, struct jv *v, int depth);

static int jpush(struct jp *j, struct jv *v, size_t *cap)
{
    if (++j->nodes > J_NODES_MAX)
        return fail(j, "too many values for a snapshot");
    if (v->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        struct jv *k = realloc(v->kid, nc * sizeof *k);
        if (!k)
            return fail(j, "out of memory");
        v->kid = k;
        if (v->type == J_OBJ) {
            struct jspan *ks = realloc(v->key, nc * sizeof *ks);
            if (!ks)
                return fail(j, "out of memory");
            v->key = ks;
        }
        *cap = nc;
    }
    memset(&v->kid[v->n], 0, sizeof v->kid[0]);
    if (v->type == J_OBJ)
        v->key[v->n] = (struct jspan){ NULL, 0 };
    v->n++;
    return 0;
}

static int jnumber(struct jp *j, struct jv *v)
{
    const char *s = j->p;
    int digits = 0, frac = 0;
    v->type = J_NUM;
    v->isint = 1;
    if (j->p < j->end && *j->p == '-') {
        v->neg = 1;
        j->p++;
    }
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        unsigned d = (unsigned)(*j->p - '0');
        if (v->u > (UINT64_MAX - d) / 10)
            v->isint = 0;
        v->u = v->u * 10 + d;
        digits++;
        j->p++;
    }
    if (!digits)
        return fail(j, "bad number");
    if (j->p < j->end && *j->p == '.') {
        frac = 1;
        for (j->p++; j->p < j->end && *j->p >= '0' && *j->p <= '9'; j->p++)
            ;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        frac = 1;
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
            j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9')
            return fail(j, "bad number");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    }
    if (frac || v->neg)
        v->isint = 0;
    (void)s;
    return 0;
}

static int jvalue(struct jp *j, struct jv *v, int depth)
{
    size_t cap = 0;
    ws(j);
    if (depth > J_DEPTH_MAX)
        return fail(j, "nested too deeply");
    if (j->p >= j->end)
        return fail(j, "unexpected end of input");
    switch (*j->p) {
    case '{':
    case '[': {
        int obj = *j->p == '{';
        char close = obj ? '}' : ']';
        v->type = obj ? J_OBJ : J_ARR;
        j->p++;
        ws(j);
        if (j->p < j->end && *j->p == close) {
            j->p++;
            return 0;
        }
        for (;;) {
            struct jspan key = { NULL, 0 };
            ws(j);
            if (obj) {
                if (jstring(j, NULL, &key) != 0)
                    return -1;
                ws(j);
                if (j->p >= j->end || *j->p != ':')
                    return fail(j, "expected ':'");
                j->p++;
            }
            if (jpush(j, v, &cap) != 0)
                return -1;
            if (obj)
                v->key[v->n - 1] = key;
            if (jvalue(j, &v->kid[v->n - 1], depth + 1) != 0)
                return -1;
            ws(j);
            if (j->p < j->end && *j->p == ',') {
                j->p++;
                continue;
            }
            if (j->p < j->end && *j->p == close) {
                j->p++;
                return 0;
            }
            return fail(j, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    case '"':
        v->type = J_STR;
        return jstring(j, &v->s, NULL);
    case 't':
    case 'f':
        v->type = J_BOOL;
        if (lit(j, "true"))
            v->u = 1;
        else if (!lit(j, "false"))
            return fail(j, "bad literal");
        return 0;
    case 'n':
        v->type = J_NULL;
        return lit(j, "null") ? 0 : fail(j, "bad literal");
    default:
        return jnumber(j, v);
    }
}

static const struct jv *jget(const struct jv *o, const char *key)
{
    if (!o || o->type != J_OBJ)
        return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < o->n; i++)
        if (o->key[i].n == n && !memcmp(o->key[i].p, key, n))
            return &o->kid[i];
    return NULL;
}

/* Reading fields: a missing or null field is 0 (the schema's optional
 * figures); a field of the wrong type is an error. */
struct jread {
    const char *bad;      /* the first field of the wrong type */
};

static uint64_t ju(struct jread *r, const struct jv *o, const char *key)
{
    const struct jv *v = jget(o, key);
    if (!v || v->type == J_NULL)
        return 0;
    if (v->type == J_BOOL)
        return v->u;
    if (v->type != J_NUM || !v->isint) {
        if (!r->bad)
            r->bad = key;
        return 0;
    }
    return v->u;
}

static void js(struct jread *r, const struct jv *o, const char *key, char *dst, size_t cap)
{
    const struct jv *v = jget(o, key);
    if (!v || v->type == J_NULL) {
        dst[0] = '\0';
        return;
    }
    if (v->type != J_STR) {
        if (!r->bad)
            r->bad = key;
        dst[0] = '\0';
        return;
    }
    dump_clean_text(dst, cap, v->s, strlen(v->s));
}

static void jbe(struct jread *r, const struct jv *o, int id, uint64_t be[6])
{
    for (unsigned i = 0; i < 6; i++) {
        const char *n = dump_be_field(id, i);
        be[i] = *n ? ju(r, o, n) : 0;
    }
}

static void jcounts(struct jread *r, const struct jv *o, struct dump_class *k)
{
    k->allocs = ju(r, o, "allocs");
    k->frees = ju(r, o, "frees");
    k->reallocs = ju(r, o, "reallocs");
    k->req_bytes = ju(r, o, "requested_bytes");
    k->live_count = ju(r, o, "live_count");
    k->live_req = ju(r, o, "live_bytes");
    k->live_req_err = ju(r, o, "live_bytes_stderr");
    k->live_usable = ju(r, o, "live_usable_bytes");
}

/* A histogram: an array of {le_ns, <what>}, each added to its bucket. */
static void jhist_as(struct jread *r, const struct jv *a, const char *what,
                     uint64_t out[LIFEBUCKET_COUNT])
{
    if (!a || a->type == J_NULL)
        return;
    if (a->type != J_ARR) {
        if (!r->bad)
            r->bad = "a histogram";
        return;
    }
    for (size_t i = 0; i < a->n; i++) {
        const struct jv *le = jget(&a->kid[i], "le_ns");
        unsigned b = LIFEBUCKET_LAST;
        if (le && le->type == J_NUM) {
            /* The bucket whose bound this is. */
            for (b = 0; b < LIFEBUCKET_LAST && lifebucket_max_ns(b) < le->u; b++)
                ;
        }
        out[b] += ju(r, &a->kid[i], what);
    }
}

static void jhist(struct jread *r, const struct jv *a, uint64_t out[LIFEBUCKET_COUNT])
{
    jhist_as(r, a, "count", out);
}

static int hexval(char c);

/* A string field, malloc'ed (NULL when missing or null). */
static char *jdup(struct jread *r, const struct jv *o, const char *key)
{
    const struct jv *v = jget(o, key);
    if (!v || v->type == J_NULL)
        return NULL;
    if (v->type != J_STR) {
        if (!r->bad)
            r->bad = key;
        return NULL;
    }
    return strdup(v->s);
}

/* call_stacks: objects, stacks and their (named) frames. */
static int jstacks(struct jread *r, const struct jv *cs, struct dump *d)
{
    const struct jv *objs = jget(cs, "objects"), *st = jget(cs, "stacks");
    if (!cs || cs->type != J_OBJ)
        return 0;
    d->stack_depth = (uint32_t)ju(r, cs, "depth");
    if (d->stack_depth > SEG_STACK_DEPTH_MAX)
        d->stack_depth = SEG_STACK_DEPTH_MAX;
    d->no_unwinder = !ju(r, cs, "unwinder");
    d->stacks_stopped = (int)ju(r, cs, "stopped");
    d->symbolized = (int)ju(r, cs, "symbolized");
    d->stacks_used = ju(r, cs, "stored");
    d->stacks_dropped = ju(r, cs, "dropped");
    d->stacks_failed = ju(r, cs, "failed");
    d->objs_dropped = ju(r, cs, "objects_dropped");
    d->ages_at_ns = ju(r, cs, "ages_at_ns");
    d->nostack_live_count = ju(r, cs, "no_stack_live_count");
    d->nostack_live_req = ju(r, cs, "no_stack_live_bytes");
    d->fast_threads = ju(r, cs, "libunwind_threads");
    d->fast_moves = ju(r, cs, "libunwind_moves");
    if (objs && objs->type == J_ARR && objs->n) {
        size_t n = objs->n > 65536 ? 65536 : objs->n;
        if (!(d->objs = calloc(n, sizeof *d->objs)))
            return ENOMEM;
        for (size_t i = 0; i < n; i++) {
            const struct jv *o = &objs->kid[i];
            struct dump_obj *ob = &d->objs[d->nobjs++];
            char hex[2 * sizeof ob->build_id + 1];
            js(r, o, "path", ob->path, sizeof ob->path);
            ob->bias = ju(r, o, "bias");
            ob->lo = ju(r, o, "lo");
            ob->hi = ju(r, o, "hi");
            ob->flags = ju(r, o, "main") ? SEG_OBJ_MAIN : 0;
            js(r, o, "build_id", hex, sizeof hex);
            for (size_t k = 0; hex[2 * k] && hex[2 * k + 1] && k < sizeof ob->build_id; k++) {
                int hi = hexval(hex[2 * k]), lo = hexval(hex[2 * k + 1]);
                if (hi < 0 || lo < 0)
                    break;
                ob->build_id[k] = (uint8_t)(hi << 4 | lo);
                ob->build_id_len = (uint32_t)k + 1;
            }
        }
    }
    if (!st || st->type != J_ARR || !st->n)
        return 0;
    size_t ns = st->n > 65536 ? 65536 : st->n, nf = 0;
    for (size_t i = 0; i < ns; i++) {
        const struct jv *fr = jget(&st->kid[i], "frames");
        if (fr && fr->type == J_ARR)
            nf += fr->n > SEG_STACK_DEPTH_MAX ? SEG_STACK_DEPTH_MAX : fr->n;
    }
    if (!(d->stacks = calloc(ns, sizeof *d->stacks)) ||
        (nf && !(d->frames = calloc(nf, sizeof *d->frames))))
        return ENOMEM;
    for (size_t i = 0; i < ns; i++) {
        const struct jv *o = &st->kid[i], *fr = jget(o, "frames");
        struct dump_stack *s = &d->stacks[d->nstacks++];
        s->id = (uint32_t)ju(r, o, "id");
        s->allocs = ju(r, o, "allocs");
        s->req_bytes = ju(r, o, "requested_bytes");
        s->frees = ju(r, o, "frees");
        s->live_count = ju(r, o, "live_count");
        s->live_req = ju(r, o, "live_bytes");
        s->live_usable = ju(r, o, "live_usable_bytes");
        jhist_as(r, jget(o, "lifetime_hist"), "count", s->life);
        jhist_as(r, jget(o, "age_hist"), "count", s->age_count);
        jhist_as(r, jget(o, "age_bytes_hist"), "bytes", s->age_req);
        s->frame0 = d->nframes;
        if (!fr || fr->type != J_ARR)
            continue;
        for (size_t k = 0; k < fr->n && k < SEG_STACK_DEPTH_MAX && d->nframes < nf; k++) {
            const struct jv *e = &fr->kid[k], *ob = jget(e, "object");
            struct dump_frame *f = &d->frames[d->nframes++];
            f->addr = ju(r, e, "addr");
            f->obj = ob && ob->type == J_NUM && ob->isint && ob->u < d->nobjs ? (int)ob->u : -1;
            f->obj_off = ju(r, e, "offset");
            f->func = jdup(r, e, "function");
            f->func_off = ju(r, e, "function_offset");
            f->note = jdup(r, e, "note");
            s->depth++;
        }
    }
    return 0;
}

int dump_from_json(struct dump *d, const char *text, size_t len, char *why, size_t whylen)
{
    struct jp j = { text, text + len, NULL, NULL, 0 };
    struct jv root;
    struct jread r = { NULL };
    const struct jv *v, *a;
    char state[16], sampling_mode[16];
    int rc = DX_OK;

    memset(d, 0, sizeof *d);
    memset(&root, 0, sizeof root);
    if (jvalue(&j, &root, 0) == 0) {
        ws(&j);
        if (j.p != j.end)
            fail(&j, "trailing text after the JSON value");
    }
    if (j.err) {
        snprintf(why, whylen, "not a shimdump JSON snapshot: %s at byte %zu", j.err,
                 (size_t)(j.at - text));
        jfree(&root);
        return DX_CORRUPT;
    }
    v = jget(&root, "format_version");
    if (root.type != J_OBJ || !v || v->type != J_NUM) {
        snprintf(why, whylen, "not a shimdump JSON snapshot: no format_version");
        jfree(&root);
        return DX_CORRUPT;
    }
    if (!v->isint || v->u != DUMP_JSON_VERSION) {
        snprintf(why, whylen, "JSON format_version %llu; this shimdump reads version %d",
                 v->isint ? (unsigned long long)v->u : 0ull, DUMP_JSON_VERSION);
        jfree(&root);
        return DX_VERSION;
    }
    d->json_version = (int)v->u;
    d->saved = 1;
    d->pid = (uint32_t)ju(&r, &root, "pid");
    d->uid = (uint32_t)ju(&r, &root, "uid");
    js(&r, &root, "comm", d->comm, sizeof d->comm);
    js(&r, &root, "state", state, sizeof state);
    d->state = state_parse(state);
    js(&r, &root, "backend", d->backend, sizeof d->backend);
    js(&r, &root, "backend_version", d->backend_version, sizeof d->backend_version);
    js(&r, &root, "config", d->config, sizeof d->config);
    d->backend_id = !strcmp(d->backend, "jemalloc") ? SEG_BACKEND_JEMALLOC
                  : !strcmp(d->backend, "tcmalloc") ? SEG_BACKEND_TCMALLOC : SEG_BACKEND_GLIBC;
    d->start_ns = ju(&r, &root, "started_ns");
    d->heartbeat_ns = ju(&r, &root, "heartbeat_ns");
    d->snap_ns = ju(&r, &root, "snapshot_ns");
    d->interval_ms = (uint32_t)ju(&r, &root, "interval_ms");
    d->threads_seen = ju(&r, &root, "threads_seen");
    v = jget(&root, "sampling");
    d->sample = (uint32_t)ju(&r, v, "sample");
    js(&r, v, "live_bytes", sampling_mode, sizeof sampling_mode);
    d->exact = !strcmp(sampling_mode, "exact");
    d->dropped = ju(&r, v, "tracked_dropped");
    d->inherited = (int)ju(&r, v, "inherited");
    d->copy = (int)ju(&r, v, "copy");
    d->copy_stale = (int)ju(&r, v, "copy_stale");
    d->copy_ns = ju(&r, v, "copy_ns");
    d->consistent = (int)ju(&r, v, "consistent");
    d->counts_ok = (int)ju(&r, v, "counts_ok");
    d->peak_rss = ju(&r, &root, "peak_rss_bytes");
    d->peak_rss_ns = ju(&r, &root, "peak_rss_ns");

    a = jget(&root, "size_classes");
    if (a && a->type == J_ARR) {
        for (size_t i = 0; i < a->n; i++) {
            const struct jv *o = &a->kid[i];
            uint64_t c = ju(&r, o, "class");
            if (c >= SIZECLASS_COUNT) {
                if (!r.bad)
                    r.bad = "class";
                continue;
            }
            struct dump_class *k = &d->cls[c];
            jcounts(&r, o, k);
            memset(k->life, 0, sizeof k->life);
            memset(k->age, 0, sizeof k->age);
            jhist(&r, jget(o, "lifetime_hist"), k->life);
            jhist(&r, jget(o, "age_hist"), k->age);
        }
    } else if (a && a->type != J_NULL && !r.bad) {
        r.bad = "size_classes";
    }
    jcounts(&r, jget(&root, "totals"), &d->total);
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++)
        for (unsigned b = 0; b < LIFEBUCKET_COUNT; b++) {
            d->total.life[b] += d->cls[c].life[b];
            d->total.age[b] += d->cls[c].age[b];
        }

    if (jstacks(&r, jget(&root, "call_stacks"), d) != 0) {
        snprintf(why, whylen, "out of memory");
        dump_free(d);
        jfree(&root);
        return DX_SYS;
    }

    a = jget(&root, "series");
    if (a && a->type == J_ARR && a->n) {
        size_t n = a->n > 86400 ? 86400 : a->n;
        if (!(d->series = calloc(n, sizeof *d->series))) {
            snprintf(why, whylen, "out of memory");
            dump_free(d);
            jfree(&root);
            return DX_SYS;
        }
        for (size_t i = a->n - n; i < a->n; i++) {
            const struct jv *o = &a->kid[i];
            struct dump_sample *s = &d->series[d->nseries++];
            s->t_ns = ju(&r, o, "t");
            s->live_count = ju(&r, o, "live_count");
            s->live_req = ju(&r, o, "live_bytes");
            s->live_usable = ju(&r, o, "live_usable_bytes");
            s->allocs = ju(&r, o, "allocs");
            s->frees = ju(&r, o, "frees");
            s->req_bytes = ju(&r, o, "requested_bytes");
            s->rss = ju(&r, o, "rss_bytes");
            s->rss_anon = ju(&r, o, "rss_anon_bytes");
            s->rss_huge = ju(&r, o, "rss_huge_bytes");
            s->vsz = ju(&r, o, "vsz_bytes");
            jbe(&r, jget(o, "backend_stats"), d->backend_id, s->be);
        }
    } else if (a && a->type != J_ARR && a->type != J_NULL && !r.bad) {
        r.bad = "series";
    }
    if (r.bad) {
        snprintf(why, whylen, "corrupt JSON snapshot: field \"%s\" has the wrong type", r.bad);
        dump_free(d);
        rc = DX_CORRUPT;
    }
    jfree(&root);
    return rc;
}
