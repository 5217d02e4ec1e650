/* settings: shimdump --set on a running process. The sampler thread applies
 * a request (sample, sample_bytes, track, stacks) to the settings in force
 * and records it in the segment's header; each thread takes the new
 * settings at its next draw (track.c, adopt). */
#include "config.h"

#include "rec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "fmt.h"
#include "seg.h"

/* The first problem conf_parse finds, for the answer. */
struct first_warn {
    char *buf;
    size_t len;
    int n;
};

/* Cuts the end of s from the first `tail` on, keeping `keep` of it. */
static void cut(char *s, const char *tail, const char *keep)
{
    char *t = strstr(s, tail);
    if (t)
        memcpy(t, keep, strlen(keep) + 1);
}

static void keep_first(void *ctx, const char *msg)
{
    struct first_warn *w = ctx;
    if (w->n++ != 0)
        return;
    /* the config's words, less what it does with a bad line at start */
    if (!strncmp(msg, "--set: ", 7))
        msg += 7;
    fmt_buf(w->buf, w->len, "%s", msg);
    cut(w->buf, " (ignored)", "");
    cut(w->buf, "; using the default)", ")");
    cut(w->buf, "; ignored)", ")");
}

/* s[0..n) as a C string in buf[cap], cut to fit. */
static const char *cstr(char *buf, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return buf;
}

static int span_is(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

static const char *trim(const char *s, const char *e, size_t *n)
{
    while (s < e && (*s == ' ' || *s == '\t'))
        s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
        e--;
    *n = (size_t)(e - s);
    return s;
}

void settings_format(char *buf, size_t len)
{
    int stacks = with_stacks && __atomic_load_n(&stacks_on, __ATOMIC_RELAXED);
    fmt_buf(buf, len, "sample:%ld,sample_bytes:%llu,track:%s,stacks:%u", sample_n,
            (unsigned long long)sample_bytes, track_on ? "on" : "off",
            stacks ? geo.stack_depth : 0u);
}

/* Writes the settings in force into the header and its ring of changes,
 * under its seqlock; the process's own settings_gen under its own. */
static void settings_publish(long n, uint64_t sb, int on, int stacks)
{
    struct seg_header *h = seg;
    uint32_t seq = h->settings_seq;

    __atomic_store_n(&settings_gen, settings_gen + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&h->settings_seq, seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);

    __atomic_store_n(&sample_n, n, __ATOMIC_RELAXED);
    __atomic_store_n(&sample_bytes, sb, __ATOMIC_RELAXED);
    __atomic_store_n(&sample_cost_b, cost_b_of(n, sb), __ATOMIC_RELAXED);
    __atomic_store_n(&track_on, on, __ATOMIC_RELAXED);
    __atomic_store_n(&stacks_on, stacks, __ATOMIC_RELAXED);

    uint32_t flags = (on ? 0 : SEG_F_TRACK_OFF | SEG_F_TRACK_WAS_OFF) | (stacks ? 0 : SEG_F_STACKS_OFF);
    __atomic_store_n(&h->sample, (uint32_t)n, __ATOMIC_RELAXED);
    __atomic_store_n(&h->sample_bytes, sb, __ATOMIC_RELAXED);
    __atomic_fetch_and(&h->flags, ~(uint32_t)(SEG_F_TRACK_OFF | SEG_F_STACKS_OFF), __ATOMIC_RELAXED);
    __atomic_fetch_or(&h->flags, flags, __ATOMIC_RELAXED);
    /* Live requested bytes stay exact only while every block is tracked
     * from the start: never again once a block may have been missed. */
    if (n != 1 || !on) {
        __atomic_fetch_and(&h->flags, ~(uint32_t)SEG_F_EXACT_REQ, __ATOMIC_RELAXED);
        geo.flags &= ~(uint32_t)SEG_F_EXACT_REQ;
    }
    uint32_t k = h->settings_n;
    struct seg_change *c = &h->changes[k % SEG_CHANGES_MAX];
    __atomic_store_n(&c->t_ns, clock_ns(CLOCK_REALTIME), __ATOMIC_RELAXED);
    __atomic_store_n(&c->sample_bytes, sb, __ATOMIC_RELAXED);
    __atomic_store_n(&c->sample, (uint32_t)n, __ATOMIC_RELAXED);
    __atomic_store_n(&c->flags, flags & ~(uint32_t)SEG_F_TRACK_WAS_OFF, __ATOMIC_RELAXED);
    __atomic_store_n(&h->settings_n, k + 1, __ATOMIC_RELAXED);

    __atomic_store_n(&h->settings_seq, seq + 2, __ATOMIC_RELEASE);
    __atomic_store_n(&settings_gen, settings_gen + 1, __ATOMIC_RELEASE);
}

int settings_apply(const char *text, char *why, size_t whylen, char *now, size_t nowlen)
{
    long n = sample_n;
    uint64_t sb = sample_bytes;
    int on = track_on;
    int stacks = with_stacks && stacks_on;
    const char *p = text, *end = text + strnlen(text, 4096);
    int err = 0, pairs = 0;

    why[0] = '\0';
    /* The config's syntax, on one line: a newline would make the parser
     * read more pairs than this one sees (and '#' a comment). */
    for (const char *q = text; q < end; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ||
              *q == '_' || *q == ':' || *q == '=' || *q == ',' || *q == '.' || *q == ' ' ||
              *q == '-' || *q == '+')) {
            fmt_buf(why, whylen, "a character other than letters, digits and _:=,.+- (byte %u): "
                    "KEY:VALUE pairs separated by commas", (unsigned)(unsigned char)*q);
            settings_format(now, nowlen);
            return EINVAL;
        }
    while (p < end && !err) {
        const char *e = memchr(p, ',', (size_t)(end - p));
        if (!e)
            e = end;
        size_t len;
        const char *pair = trim(p, e, &len);
        p = e + 1;
        if (len == 0)
            continue;
        pairs++;
        const char *sep = pair;
        while (sep < pair + len && *sep != ':' && *sep != '=')
            sep++;
        size_t kn, vn;
        char kb[40], vb[40];
        const char *key = trim(pair, sep, &kn);
        const char *val = sep < pair + len ? trim(sep + 1, pair + len, &vn) : (vn = 0, sep);
        if (vn == 0) {
            err = EINVAL;
            fmt_buf(why, whylen, "%s: no value (KEY:VALUE)", cstr(kb, sizeof kb, key, kn));
            continue;
        }
        if (span_is(key, kn, "stacks")) {
            long want;
            char *vend;
            if (span_is(val, vn, "off") || span_is(val, vn, "0")) {
                stacks = 0;
                continue;
            }
            if (span_is(val, vn, "on"))
                want = (long)geo.stack_depth;
            else if ((want = strtol(val, &vend, 10)), vend != val + vn)
                want = -1;
            if (!geo.stack_depth) {
                err = ENOTSUP;
                fmt_buf(why, whylen, "it started with stacks:0, so it has no stack table to fill: "
                        "restart it with stacks:%d", CONF_STACKS_DEFAULT);
            } else if (!with_stacks) {
                err = ENOTSUP;
                fmt_buf(why, whylen, "its unwinder could not be used from the start (libunwind): "
                        "it takes no stacks");
            } else if (want != (long)geo.stack_depth) {
                err = EINVAL;
                fmt_buf(why, whylen, "stacks:%s: it keeps %u frames a stack, set at start: "
                        "stacks:on (or %u) or stacks:off (or 0)", cstr(vb, sizeof vb, val, vn),
                        geo.stack_depth, geo.stack_depth);
            } else {
                stacks = 1;
            }
            continue;
        }
        if (!span_is(key, kn, "sample") && !span_is(key, kn, "sample_bytes") &&
            !span_is(key, kn, "track")) {
            /* A key of the config, or none: which, in the answer. */
            struct conf probe;
            struct first_warn w = { why, whylen, 0 };
            conf_defaults(&probe);
            conf_parse(&probe, pair, len, "--set", keep_first, &w);
            err = EINVAL;
            if (w.n == 0)
                fmt_buf(why, whylen, "%s: set at start only (in the config); --set changes "
                        "sample, sample_bytes, track and stacks", cstr(kb, sizeof kb, key, kn));
            continue;
        }
        struct conf t;
        struct first_warn w = { why, whylen, 0 };
        conf_defaults(&t);
        conf_parse(&t, pair, len, "--set", keep_first, &w);
        if (w.n) {
            err = EINVAL;
        } else if (t.set_mask & (t.set_mask - 1)) {
            err = EINVAL;
            fmt_buf(why, whylen, "more than one key in one pair: separate them with commas");
        } else if (t.set_mask & (1u << CONF_K_SAMPLE)) {
            if ((t.sample == 1) != (sample_n == 1)) {
                err = EINVAL;
                fmt_buf(why, whylen, "sample:1 (every block, exact figures) is set at start only: "
                        "%s", sample_n == 1 ? "it started with it; restart it to sample"
                                            : "its tracked table has room for a sample, not for "
                                              "every live block");
            }
            n = t.sample;
        } else if (t.set_mask & (1u << CONF_K_SAMPLE_BYTES)) {
            sb = (uint64_t)t.sample_bytes;
        } else if (t.set_mask & (1u << CONF_K_TRACK)) {
            on = t.track;
        }
    }
    if (!err && pairs == 0) {
        err = EINVAL;
        fmt_buf(why, whylen, "no KEY:VALUE to set");
    }
    if (!err && n == sample_n && sb == sample_bytes && on == track_on &&
        stacks == (with_stacks && stacks_on)) {
        err = EALREADY;
        fmt_buf(why, whylen, "these settings already hold: nothing changed");
    }
    if (!err) {
        pthread_mutex_lock(&sampler_mu);   /* so that a fork child never sees them half written */
        settings_publish(n, sb, on, stacks);
        pthread_mutex_unlock(&sampler_mu);
    }
    settings_format(now, nowlen);
    return err;
}
