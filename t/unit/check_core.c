/* Unit tests of src/: the formatter and the config parser and loader. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "fmt.h"
#include "seg.h"
#include "segread.h"
#include "sizeclass.h"
#include "trace.h"

/* ---- fmt ---- */

/* fmt_basic passes NULL for %s on purpose. */
#pragma GCC diagnostic ignored "-Wformat-overflow"

START_TEST(fmt_basic)
{
    char b[64];
    ck_assert_uint_eq(fmt_buf(b, sizeof b, "%s=%d,%u,%ld,%zu,%x,%%,%c", "k", -42, 7u, -1L,
                              (size_t)123456789012ULL, 255u, 'z'), strlen(b));
    ck_assert_str_eq(b, "k=-42,7,-1,123456789012,ff,%,z");
    fmt_buf(b, sizeof b, "%lld %llu", (long long)-9223372036854775807LL - 1, 18446744073709551615ULL);
    ck_assert_str_eq(b, "-9223372036854775808 18446744073709551615");
    fmt_buf(b, sizeof b, "%s", (const char *)NULL);
    ck_assert_str_eq(b, "(null)");
}
END_TEST

START_TEST(fmt_truncates)
{
    char b[8];
    size_t n = fmt_buf(b, sizeof b, "%s", "abcdefghijkl");
    ck_assert_uint_eq(n, 7);
    ck_assert_str_eq(b, "abcdefg");
    ck_assert_uint_eq(fmt_buf(b, 1, "xyz"), 0);
    ck_assert_str_eq(b, "");
}
END_TEST

/* ---- conf ---- */

struct warns {
    int n;
    char last[512];
};

static void collect(void *ctx, const char *msg)
{
    struct warns *w = ctx;
    w->n++;
    snprintf(w->last, sizeof w->last, "%s", msg);
}

static int parse(struct conf *c, const char *s, struct warns *w)
{
    memset(w, 0, sizeof *w);
    return conf_parse(c, s, strlen(s), "TEST", collect, w);
}

START_TEST(conf_defaults_are_glibc)
{
    struct conf c;
    conf_defaults(&c);
    ck_assert_int_eq(c.backend, CONF_BACKEND_GLIBC);
    ck_assert_int_eq(c.arenas, 0);
    ck_assert_int_eq(c.trim_threshold, CONF_UNSET);
    ck_assert_int_eq(c.verbose, 0);
    ck_assert_int_eq(c.record, 1);
    ck_assert_int_eq(c.sample, 256);
    ck_assert_str_eq(c.shm_dir, "/dev/shm");
    ck_assert_int_eq(c.unwind_threads, 16);
    ck_assert_str_eq(c.jemalloc_conf, "");
    ck_assert_uint_eq(c.set_mask, 0);
}
END_TEST

START_TEST(conf_pairs)
{
    struct conf c;
    struct warns w;
    conf_defaults(&c);
    ck_assert_int_eq(parse(&c, "backend:jemalloc,arenas:4, verbose = on ,trim_threshold:128k,"
                               "mmap_threshold=1M,top_pad:0,arena_test:8", &w), 0);
    ck_assert_int_eq(c.backend, CONF_BACKEND_JEMALLOC);
    ck_assert_int_eq(c.arenas, 4);
    ck_assert_int_eq(c.verbose, 1);
    ck_assert_int_eq(c.trim_threshold, 128 * 1024);
    ck_assert_int_eq(c.mmap_threshold, 1024 * 1024);
    ck_assert_int_eq(c.top_pad, 0);
    ck_assert_int_eq(c.arena_test, 8);
    ck_assert_int_eq(w.n, 0);
    ck_assert_int_eq(parse(&c, "unwind_threads:0", &w), 0);
    ck_assert_int_eq(c.unwind_threads, 0);
    ck_assert_int_eq(parse(&c, "unwind_threads:1024", &w), 0);
    ck_assert_int_eq(c.unwind_threads, 1024);
}
END_TEST

START_TEST(conf_file_syntax)
{
    struct conf c;
    struct warns w;
    const char *text =
        "# mallocshim.conf\n"
        "\n"
        "backend = tcmalloc   # trailing comment\n"
        "  arenas:2\r\n"
        "tcmalloc.max_total_thread_cache_bytes = 64m\n"
        "verbose: yes";                       /* no final newline */
    conf_defaults(&c);
    ck_assert_int_eq(parse(&c, text, &w), 0);
    ck_assert_int_eq(c.backend, CONF_BACKEND_TCMALLOC);
    ck_assert_int_eq(c.arenas, 2);
    ck_assert_int_eq(c.verbose, 1);
    ck_assert_uint_eq(c.n_tc_props, 1);
    ck_assert_str_eq(c.tc_props[0].name, "tcmalloc.max_total_thread_cache_bytes");
    ck_assert_int_eq(c.tc_props[0].value, 64LL << 20);
}
END_TEST

START_TEST(conf_bad_input_keeps_defaults)
{
    struct conf c;
    struct warns w;
    conf_defaults(&c);
    ck_assert_int_eq(parse(&c, "nosuchkey:1", &w), 1);
    ck_assert_ptr_nonnull(strstr(w.last, "unknown key 'nosuchkey'"));
    ck_assert_int_eq(parse(&c, "backend:ptmalloc", &w), 1);
    ck_assert_ptr_nonnull(strstr(w.last, "unknown backend 'ptmalloc'"));
    ck_assert_int_eq(c.backend, CONF_BACKEND_GLIBC);
    ck_assert_int_eq(parse(&c, "arenas:-1", &w), 1);
    ck_assert_int_eq(parse(&c, "arenas:4097", &w), 1);
    ck_assert_int_eq(parse(&c, "arenas:4x", &w), 1);
    ck_assert_int_eq(parse(&c, "arenas:", &w), 1);
    ck_assert_int_eq(parse(&c, "arenas:99999999999999999999999", &w), 1);
    ck_assert_int_eq(parse(&c, "trim_threshold:1t", &w), 1);
    ck_assert_int_eq(parse(&c, "mmap_threshold:64m", &w), 1);
    ck_assert_int_eq(parse(&c, "shm_dir:relative/dir", &w), 1);
    ck_assert_int_eq(parse(&c, "sample:0", &w), 1);
    ck_assert_int_eq(parse(&c, "interval_ms:5", &w), 1);
    ck_assert_int_eq(parse(&c, "series:10", &w), 1);
    ck_assert_int_eq(parse(&c, "slots:0", &w), 1);
    ck_assert_int_eq(parse(&c, "unwind_threads:1025", &w), 1);
    ck_assert_int_eq(parse(&c, "unwind_threads:-1", &w), 1);
    ck_assert_int_eq(c.unwind_threads, 16);
    ck_assert_int_eq(parse(&c, "seed:-1", &w), 1);
    ck_assert_int_eq(parse(&c, "seed:9223372036854775808", &w), 1);
    ck_assert_int_eq(c.seed, 0);
    ck_assert_int_eq(parse(&c, "verbose:maybe", &w), 1);
    ck_assert_ptr_nonnull(strstr(w.last, "bad value 'maybe' for 'verbose'"));
    ck_assert_int_eq(parse(&c, "justakey", &w), 1);
    ck_assert_ptr_nonnull(strstr(w.last, "not a key:value pair"));
    ck_assert_int_eq(c.arenas, 0);
    ck_assert_int_eq(c.trim_threshold, CONF_UNSET);
    ck_assert_int_eq(c.mmap_threshold, CONF_UNSET);
    ck_assert_int_eq(c.verbose, 0);
    ck_assert_uint_eq(c.set_mask, 0);
    ck_assert_int_eq(parse(&c, "seed:9223372036854775807", &w), 0);
    ck_assert_int_eq(c.seed, 9223372036854775807L);
    c.seed = 0;
    c.set_mask = 0;
    /* history: off, or up to three STEPxPOINTS with steps increasing */
    {
        static const char *const bad[] = { "history:", "history:10", "history:10x", "history:x5",
            "history:1x100", "history:10x1", "history:10x1048577", "history:10x100/10x100",
            "history:20x100/10x100", "history:2x2/3x2/4x2/5x2", "history:10x100/",
            "history:/10x100", "history:10x100 60x100", "history:1000001x2", "history:on" };
        char text[SEG_CONFIG_MAX];
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            ck_assert_int_eq(parse(&c, bad[i], &w), 1);
            ck_assert_ptr_nonnull(strstr(w.last, "bad value"));
            ck_assert_uint_eq(c.history_n, 2);
            ck_assert_uint_eq(c.history_step[1], 60);
        }
        ck_assert_uint_eq(c.set_mask, 0);
        ck_assert_int_eq(parse(&c, "history:2x2/3x1048576/1000000x7", &w), 0);
        ck_assert_uint_eq(c.history_n, 3);
        ck_assert_uint_eq(c.history_points[1], 1048576);
        ck_assert_uint_eq(c.history_step[2], 1000000);
        conf_format(&c, text, sizeof text);
        ck_assert_str_eq(text, "backend:glibc,history:2x2/3x1048576/1000000x7");
        ck_assert_int_eq(parse(&c, "history:off", &w), 0);
        ck_assert_uint_eq(c.history_n, 0);
        conf_format(&c, text, sizeof text);
        ck_assert_str_eq(text, "backend:glibc,history:off");
        conf_defaults(&c);
        conf_format(&c, text, sizeof text);
        ck_assert_str_eq(text, "backend:glibc");
        ck_assert_uint_eq(c.history_n, 2);
        ck_assert_uint_eq(c.history_step[0] * c.history_points[0], 86400);
    }
    /* Several problems: one line each, good pairs still applied. */
    ck_assert_int_eq(parse(&c, "a:1,arenas:3,b:2", &w), 2);
    ck_assert_int_eq(w.n, 2);
    ck_assert_int_eq(c.arenas, 3);
}
END_TEST

START_TEST(conf_line_numbers_and_control_chars)
{
    struct conf c;
    struct warns w;
    conf_defaults(&c);
    ck_assert_int_eq(parse(&c, "arenas:1\n\nbogus\x01:2\n", &w), 1);
    ck_assert_str_eq(w.last, "TEST:3: unknown key 'bogus?' (ignored)");
}
END_TEST

START_TEST(conf_jemalloc_passthrough)
{
    struct conf c;
    struct warns w;
    char big[700];
    conf_defaults(&c);
    ck_assert_int_eq(parse(&c, "jemalloc.narenas:3,jemalloc.dirty_decay_ms:1000", &w), 0);
    ck_assert_str_eq(c.jemalloc_conf, "narenas:3,dirty_decay_ms:1000");
    ck_assert_int_eq(parse(&c, "jemalloc.bad name:1", &w), 1);
    ck_assert_int_eq(parse(&c, "jemalloc.x:has space", &w), 1);
    ck_assert_int_eq(parse(&c, "jemalloc.:1", &w), 1);
    ck_assert_str_eq(c.jemalloc_conf, "narenas:3,dirty_decay_ms:1000");
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big, "jemalloc.x:", 11);
    ck_assert_int_eq(parse(&c, big, &w), 1);
    ck_assert_ptr_nonnull(strstr(w.last, "too many jemalloc options"));
}
END_TEST

START_TEST(conf_tcmalloc_props)
{
    struct conf c;
    struct warns w;
    char s[64];
    conf_defaults(&c);
    ck_assert_int_eq(parse(&c, "tcmalloc.a:1,tcmalloc.a:2", &w), 0);
    ck_assert_uint_eq(c.n_tc_props, 1);
    ck_assert_int_eq(c.tc_props[0].value, 2);
    ck_assert_int_eq(parse(&c, "tcmalloc.b:-5", &w), 1);
    for (int i = 0; i < CONF_TC_PROPS_MAX; i++) {
        snprintf(s, sizeof s, "tcmalloc.p%d:%d", i, i);
        parse(&c, s, &w);
    }
    ck_assert_uint_eq(c.n_tc_props, CONF_TC_PROPS_MAX);
    ck_assert_int_eq(w.n, 1);
    ck_assert_ptr_nonnull(strstr(w.last, "too many tcmalloc properties"));
}
END_TEST

START_TEST(conf_format_roundtrip)
{
    struct conf c, d;
    struct warns w;
    char text[1024], again[1024];
    conf_defaults(&c);
    parse(&c, "backend:jemalloc,arenas:4,verbose:1,jemalloc.dirty_decay_ms:5,"
              "tcmalloc.x:7,tcmalloc_lib:/opt/libtc.so", &w);
    conf_format(&c, text, sizeof text);
    ck_assert_str_eq(text, "backend:jemalloc,arenas:4,verbose:1,tcmalloc_lib:/opt/libtc.so,"
                           "jemalloc.dirty_decay_ms:5,tcmalloc.x:7");
    conf_defaults(&d);
    ck_assert_int_eq(parse(&d, text, &w), 0);
    conf_format(&d, again, sizeof again);
    ck_assert_str_eq(text, again);
    conf_format(&d, again, 10);
    ck_assert_str_eq(again, "backend:j");

    /* name: second, ahead of every key a long config could cut off;
     * only what a label may hold unescaped */
    conf_defaults(&c);
    ck_assert_int_eq(parse(&c, "arenas:2,name:db-main_1.x", &w), 0);
    ck_assert_str_eq(c.name, "db-main_1.x");
    conf_format(&c, text, sizeof text);
    ck_assert_str_eq(text, "backend:glibc,name:db-main_1.x,arenas:2");
    conf_defaults(&d);
    ck_assert_int_eq(parse(&d, text, &w), 0);
    ck_assert_str_eq(d.name, "db-main_1.x");
    ck_assert_int_eq(parse(&d, "name:a\"b", &w), 1);
    ck_assert_ptr_nonnull(strstr(w.last, "bad value for 'name'"));
    ck_assert_int_eq(parse(&d, "name:", &w), 1);
    ck_assert_int_eq(parse(&d, "name:0123456789012345678901234567890123456789012345678", &w), 1);
    ck_assert_str_eq(d.name, "db-main_1.x");
}
END_TEST

static char tmpfile_path[64];

static const char *write_tmp(const char *text)
{
    int fd;
    strcpy(tmpfile_path, "/tmp/mallocshim-conf-XXXXXX");
    fd = mkstemp(tmpfile_path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return tmpfile_path;
}

START_TEST(conf_load_env_wins_over_file)
{
    struct conf c;
    struct warns w = { 0 };
    const char *f = write_tmp("backend=jemalloc\narenas=2\nverbose=1\n");
    ck_assert_int_eq(conf_load(&c, "arenas:8", f, "/nonexistent", 0, collect, &w), 0);
    ck_assert_int_eq(c.backend, CONF_BACKEND_JEMALLOC);
    ck_assert_int_eq(c.arenas, 8);
    ck_assert_int_eq(c.verbose, 1);
    /* The default file is used when MALLOCSHIM_CONF_FILE is unset. */
    ck_assert_int_eq(conf_load(&c, NULL, NULL, f, 0, collect, &w), 0);
    ck_assert_int_eq(c.arenas, 2);
    unlink(f);
}
END_TEST

START_TEST(conf_load_missing_files)
{
    struct conf c;
    struct warns w = { 0 };
    /* A missing default file is normal; a missing named file is a problem. */
    ck_assert_int_eq(conf_load(&c, NULL, NULL, "/nonexistent/mallocshim.conf", 0, collect, &w), 0);
    ck_assert_int_eq(conf_load(&c, NULL, "/nonexistent/x.conf", NULL, 0, collect, &w), 1);
    ck_assert_str_eq(w.last, "/nonexistent/x.conf: cannot open config file: No such file or directory");
    ck_assert_int_eq(c.backend, CONF_BACKEND_GLIBC);
}
END_TEST

START_TEST(conf_load_secure_ignores_env)
{
    struct conf c;
    struct warns w = { 0 };
    const char *f = write_tmp("arenas=2\n");
    const char *g = strdup(f);
    f = write_tmp("arenas=3\n");
    ck_assert_int_eq(conf_load(&c, "backend:jemalloc", g, f, 1, collect, &w), 1);
    ck_assert_ptr_nonnull(strstr(w.last, "ignored"));
    ck_assert_int_eq(c.backend, CONF_BACKEND_GLIBC);
    ck_assert_int_eq(c.arenas, 3);   /* the default file still applies */
    unlink(f);
    unlink(g);
    free((void *)g);
}
END_TEST

START_TEST(conf_load_line_numbers_and_size_limit)
{
    struct conf c;
    struct warns w = { 0 };
    const char *f = write_tmp("verbose=1\nfrobnicate=2\n");
    char *big = malloc(CONF_FILE_MAX + 2);
    char want[128];
    ck_assert_int_eq(conf_load(&c, NULL, f, NULL, 0, collect, &w), 1);
    snprintf(want, sizeof want, "%s:2: unknown key 'frobnicate' (ignored)", f);
    ck_assert_str_eq(w.last, want);
    unlink(f);
    memset(big, '#', CONF_FILE_MAX + 1);
    big[CONF_FILE_MAX + 1] = '\0';
    f = write_tmp(big);
    ck_assert_int_eq(conf_load(&c, NULL, f, NULL, 0, collect, &w), 1);
    ck_assert_ptr_nonnull(strstr(w.last, "larger than"));
    unlink(f);
    free(big);
}
END_TEST

START_TEST(conf_backend_names)
{
    int b = -1;
    ck_assert_int_eq(conf_backend_parse("tcmalloc", 8, &b), 0);
    ck_assert_int_eq(b, CONF_BACKEND_TCMALLOC);
    ck_assert_int_ne(conf_backend_parse("tcmallocx", 9, &b), 0);
    ck_assert_int_ne(conf_backend_parse("tcmall", 6, &b), 0);
    ck_assert_str_eq(conf_backend_name(CONF_BACKEND_JEMALLOC), "jemalloc");
    ck_assert_str_eq(conf_backend_name(42), "?");
}
END_TEST

/* ---- sizeclass ---- */

START_TEST(sizeclass_table)
{
    /* Every size maps into the class whose bounds hold it, bounds are
     * contiguous, and the documented landmarks hold. */
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        ck_assert_uint_eq(sizeclass_of(sizeclass_min(c)), c);
        ck_assert_uint_eq(sizeclass_of(sizeclass_max(c) == SIZE_MAX ? SIZE_MAX : sizeclass_max(c)), c);
        if (c + 1 < SIZECLASS_COUNT)
            ck_assert_uint_eq(sizeclass_min(c + 1), sizeclass_max(c) + 1);
    }
    for (size_t n = 0; n < 300000; n += (n < 4096 ? 1 : 97)) {
        unsigned c = sizeclass_of(n);
        ck_assert(n >= sizeclass_min(c) && n <= sizeclass_max(c));
    }
    ck_assert_uint_eq(sizeclass_of(0), 0);
    ck_assert_uint_eq(sizeclass_of(16), 0);
    ck_assert_uint_eq(sizeclass_of(17), 1);
    ck_assert_uint_eq(sizeclass_of(128), 7);
    ck_assert_uint_eq(sizeclass_of(129), 8);
    ck_assert_uint_eq(sizeclass_max(8), 160);
    ck_assert_uint_eq(sizeclass_max(11), 256);
    /* RocksDB's decompressed blocks share one class, apart from 8-9 KiB. */
    ck_assert_uint_eq(sizeclass_of(16032), sizeclass_of(16384));
    ck_assert_uint_eq(sizeclass_min(sizeclass_of(16032)), 14337);
    ck_assert_uint_ne(sizeclass_of(9000), sizeclass_of(16032));
    ck_assert_uint_eq(sizeclass_max(SIZECLASS_LAST - 1), (size_t)64 << 20);
    /* the recorder finds the class of 8 to 64 KiB by 16-byte granules
     * (preload/record.c, koff_by16): no class there begins inside one */
    for (unsigned c = 1; c < SIZECLASS_LAST && sizeclass_min(c) <= 65536; c++)
        if (sizeclass_min(c) > 8192)
            ck_assert_uint_eq((sizeclass_min(c) - 1) % 16, 0);
    ck_assert_uint_eq(sizeclass_of(((size_t)64 << 20) + 1), SIZECLASS_LAST);
    ck_assert_uint_eq(sizeclass_of(SIZE_MAX), SIZECLASS_LAST);
}
END_TEST

START_TEST(lifebucket_table)
{
    ck_assert_uint_eq(lifebucket_of(0), 0);
    ck_assert_uint_eq(lifebucket_of(1000), 0);
    ck_assert_uint_eq(lifebucket_of(1001), 1);
    ck_assert_uint_eq(lifebucket_of(4000), 1);
    ck_assert_uint_eq(lifebucket_of(4001), 2);
    ck_assert_uint_eq(lifebucket_max_ns(5), 1024000);          /* 1.024 ms */
    ck_assert_uint_eq(lifebucket_of(30000000), 8);             /* 30 ms in (16.4, 65.5] ms */
    ck_assert_uint_eq(lifebucket_of(86400ull * 1000000000), 19); /* a day is under 3.2 days */
    ck_assert_uint_eq(lifebucket_of(UINT64_MAX), LIFEBUCKET_LAST);
    for (unsigned b = 0; b < LIFEBUCKET_LAST; b++) {
        ck_assert_uint_eq(lifebucket_of(lifebucket_max_ns(b)), b);
        ck_assert_uint_eq(lifebucket_of(lifebucket_max_ns(b) + 1), b + 1);
    }
}
END_TEST

START_TEST(seg_layout_and_validate)
{
    static struct seg_header h;
    struct seg_geometry g;
    uint32_t v;
    seg_default_geometry(&g);
    g.stack_depth = 16;   /* the default stacks:16 */
    ck_assert_int_eq(seg_layout(&h, &g), 0);
    h.magic = SEG_MAGIC;
    h.version = SEG_VERSION;
    h.sample = 1;
    /* the documented bound, besides the counter slots: one page per thread
     * beyond the slots, used only while such a thread lives (sparse) */
    ck_assert_uint_le(h.total_size - (uint64_t)h.ncslots * 4096, 17u << 20);
    ck_assert_uint_eq(h.ncslots + h.nslots, 4096);
    ck_assert_uint_eq(h.off_cslots % 4096, 0);
    /* the history after the counter slots: a day of 10 s points and a week
     * of 1 min points at the default interval */
    ck_assert_uint_eq(h.off_cslots + (uint64_t)h.ncslots * 4096, h.off_history);
    ck_assert_uint_eq(h.ntiers, 2);
    ck_assert_uint_eq((uint64_t)h.tier_step[0] * h.tier_cap[0], 86400);
    ck_assert_uint_eq((uint64_t)h.tier_step[1] * h.tier_cap[1], 7 * 86400);
    ck_assert_uint_eq(seg_tier_off(&h, 1), h.off_history + 64 + 8640ull * sizeof(struct seg_point));
    ck_assert_uint_eq((seg_tier_off(&h, 2) + 4095) & ~4095ull, h.total_size);
    {
        /* tiers: at most SEG_TIERS_MAX, steps from 2 and increasing, caps
         * 2..2^20; a header naming a step beyond its tiers is refused */
        static struct seg_header t;
        struct seg_geometry b = g;
        b.ntiers = SEG_TIERS_MAX + 1;
        ck_assert_int_eq(seg_layout(&t, &b), EINVAL);
        b = g;
        b.tier_step[1] = b.tier_step[0];
        ck_assert_int_eq(seg_layout(&t, &b), EINVAL);
        b = g;
        b.tier_step[0] = 1;
        ck_assert_int_eq(seg_layout(&t, &b), EINVAL);
        b = g;
        b.tier_cap[1] = SEG_TIER_POINTS_MAX + 1;
        ck_assert_int_eq(seg_layout(&t, &b), EINVAL);
        b = g;
        b.ntiers = 0;
        ck_assert_int_eq(seg_layout(&t, &b), 0);
        ck_assert_uint_lt(t.total_size, h.total_size);
        t = h;
        t.tier_step[2] = 100;
        ck_assert_int_eq(seg_validate(&t, t.total_size, &v), EINVAL);
        t = h;
        t.tier_cap[0] += 1000;   /* the points would run past the file */
        ck_assert_int_eq(seg_validate(&t, t.total_size, &v), EINVAL);
    }
    ck_assert_uint_eq(h.off_slots % 64, 0);
    ck_assert_uint_eq(h.off_filter % 64, 0);
    ck_assert_int_eq(seg_validate(&h, h.total_size, &v), 0);
    ck_assert_int_eq(seg_validate(&h, h.total_size - 1, &v), EINVAL);   /* truncated */
    h.off_track += 64;
    ck_assert_int_eq(seg_validate(&h, h.total_size, &v), EINVAL);       /* moved region */
    h.off_track -= 64;
    h.nslots = 0;
    ck_assert_int_eq(seg_validate(&h, h.total_size, &v), EINVAL);
    h.nslots = g.nslots;
    h.off_cslots += 4096;
    ck_assert_int_eq(seg_validate(&h, h.total_size, &v), EINVAL);       /* moved counter slots */
    h.off_cslots -= 4096;
    h.version = 99;
    ck_assert_int_eq(seg_validate(&h, h.total_size, &v), EPROTO);
    ck_assert_uint_eq(v, 99);
    h.version = SEG_VERSION;
    h.magic = 0;
    ck_assert_int_eq(seg_validate(&h, h.total_size, &v), EPROTO);
    ck_assert_int_eq(seg_validate(&h, 8, &v), EPROTO);
}
END_TEST

/* The estimate of a class's live requested bytes from its exact counters
 * and its tracked blocks' weighted sums: live usable bytes times the
 * tracked live blocks' ratio of requested to usable bytes. */
START_TEST(seg_live_req_estimate)
{
    struct seg_counters k;
    struct seg_tracked t;

    memset(&k, 0, sizeof k);
    memset(&t, 0, sizeof t);
    /* 1000 allocated, 400 freed: 600 live of 128 usable bytes. */
    k.allocs = 1000;
    k.frees = 400;
    k.req_bytes = 1000 * 110;
    k.usable_alloc = 1000 * 128;
    k.usable_free = 400 * 128;
    ck_assert_uint_eq(seg_live_req(&k, &t, 0), 600 * 110);   /* none tracked: all's ratio */
    /* 5 tracked, 1 freed, each of weight 2.5: weighted bytes */
    t.allocs = 5;
    t.frees = 1;
    t.req_alloc = 5 * 250;
    t.req_free = 250;
    t.usable_alloc = 5 * 320;
    t.usable_free = 320;
    ck_assert_uint_eq(seg_live_req(&k, &t, 0), 600 * 100);   /* the tracked live ratio */
    t.req_alloc = 4 * 100;
    t.req_free = 0;
    ck_assert_uint_eq(seg_live_req(&k, &t, 1), 4 * 100);     /* exact: the tracked sum */
    t.req_alloc = 5 * 500;
    t.req_free = 500;
    ck_assert_uint_eq(seg_live_req(&k, &t, 0), 600 * 128);   /* never above live usable */
    k.frees = 1000;
    k.usable_free = 1000 * 128;
    ck_assert_uint_eq(seg_live_req(&k, &t, 0), 0);           /* nothing live */
    /* Huge values do not overflow: live usable * ratio in 128 bits. */
    k.allocs = UINT64_MAX;
    k.frees = 1;
    k.req_bytes = UINT64_MAX;
    k.usable_alloc = UINT64_MAX;
    k.usable_free = 0;
    memset(&t, 0, sizeof t);
    ck_assert_uint_eq(seg_live_req(&k, &t, 0), UINT64_MAX);
}
END_TEST

/* The estimate's standard error: a ratio estimator over a Poisson sample. */
START_TEST(seg_req_stderr_formula)
{
    /* 4 tracked blocks of 128 usable bytes, weight 25 each, requests 10,
     * 20, 30, 40: R = 25/128 of live usable 12800 (est 2500); z = r - R u =
     * -15, -5, 5, 15; sum w (w - 1) z^2 = 600 * 500. */
    double w = 25, ww = w * (w - 1), u = 128;
    double a = ww * (100 + 400 + 900 + 1600), b = ww * u * 100, c = ww * u * u * 4;
    double want = 12800.0 / (w * u * 4) * sqrt(ww * 500);
    ck_assert_double_eq_tol(seg_req_stderr(12800, 2500, 4, w * u * 4, a, b, c), want, 1e-6);
    /* Weight 1 (every block tracked): no sampling error. */
    ck_assert_double_eq(seg_req_stderr(512, 100, 4, 512, 0, 0, 0), 0);
    /* All alike: none either (z = 0). */
    ck_assert_double_eq_tol(seg_req_stderr(12800, 10000, 4, w * u * 4, ww * 4 * 100 * 100,
                                           ww * 4 * 100 * u, ww * 4 * u * u), 0, 1e-6);
    /* Fewer than two tracked: the gap to live usable bytes, the bound. */
    ck_assert_double_eq(seg_req_stderr(1600, 1000, 1, 128, 0, 0, 0), 600);
    ck_assert_double_eq(seg_req_stderr(1000, 1200, 0, 0, 0, 0, 0), 0);
    ck_assert_double_eq(seg_req_stderr(0, 0, 5, 10, 100, 0, 0), 0);
    /* Rounding that leaves a variance a hair below 0 gives 0, not NaN. */
    double big = 1e12;
    ck_assert(seg_req_stderr(UINT64_MAX, 0, 3, big, 3 * big * big, 0, 0) >= 0);
}
END_TEST

/* seg_track_p: 1/N for the smallest blocks, a coin of 1/N or a Poisson
 * process over the bytes for the rest, 1 far above G; every block with
 * sample:1. */
START_TEST(seg_track_p_shape)
{
    ck_assert_double_eq(seg_track_p(1, 1 << 20, 100), 1.0);
    ck_assert_double_eq_tol(seg_track_p(256, 1 << 20, 0), 1.0 / 256, 1e-12);
    ck_assert_double_eq_tol(seg_track_p(256, 1 << 20, 1000), 1 - 255.0 / 256 * exp(-1000 / 1048576.0), 1e-12);
    ck_assert(seg_track_p(256, 1 << 20, 8u << 20) > 0.9996);
    /* sample_bytes 0: sizes do not count */
    ck_assert_double_eq_tol(seg_track_p(256, 0, 8u << 20), 1.0 / 256, 1e-8);   /* u / 2^52 */
    ck_assert_double_eq_tol(seg_track_p(2, 0, 1000), 0.5, 1e-9);
    /* grows with the size */
    for (uint64_t u = 1; u < (1ull << 40); u *= 3)
        ck_assert(seg_track_p(256, 1 << 20, u) <= seg_track_p(256, 1 << 20, u * 3));
    /* the fixed-point weights round the same at allocation and free */
    ck_assert_uint_eq(seg_w_count(1.0f), SEG_W_ONE);
    ck_assert_uint_eq(seg_w_bytes(2.5f, 100), 250);
    ck_assert(seg_track_weight(0) == 1.0f);   /* a weight never below 1 */
}
END_TEST

/* A realloc's length in a trace (trace.h): exact below 2048 ns, else
 * rounded down by less than 1/2048, monotonic, saturating at 2^42 ns. */
START_TEST(trace_duration_encoding)
{
    uint64_t prev = 0;
    for (uint64_t ns = 0; ns < 2048; ns++)
        ck_assert_uint_eq(trace_dur_decode(trace_dur_encode(ns)), ns);
    for (uint64_t ns = 1; ns < (1ull << 42); ns += ns / 7 + 1) {
        uint64_t d = trace_dur_decode(trace_dur_encode(ns));
        ck_assert(d <= ns && ns - d <= ns / 2048);
        ck_assert(d >= prev);
        prev = d;
    }
    for (uint64_t v = 1; v <= 0xffff; v++)   /* every code decodes above the one before */
        ck_assert(trace_dur_decode((uint16_t)v) > trace_dur_decode((uint16_t)(v - 1)));
    ck_assert_uint_eq(trace_dur_encode(UINT64_MAX), 0xffff);
    ck_assert(trace_dur_decode(0xffff) < (1ull << 42));
}
END_TEST

#ifdef HAVE_ZSTD
/* Format 3's byte planes: byte b of event i at b * n + i, for every n
 * (the 8-event blocks and the rest), and back to the same events. */
START_TEST(trace_byte_planes)
{
    static struct trace_event ev[1024], back[1024];
    static uint8_t planes[sizeof ev];
    uint64_t x = 0x9E3779B97F4A7C15ull;
    uint8_t *raw = (uint8_t *)ev;
    for (size_t i = 0; i < sizeof ev; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        raw[i] = (uint8_t)x;
    }
    const uint32_t ns[] = { 1, 2, 7, 8, 9, 15, 16, 17, 63, 1000, 1023, 1024 };
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        uint32_t n = ns[k];
        memset(planes, 0xee, sizeof planes);
        trace_planes_of(ev, n, planes);
        for (uint32_t i = 0; i < n; i++)
            for (size_t b = 0; b < sizeof *ev; b++)
                ck_assert_uint_eq(planes[b * n + i], raw[i * sizeof *ev + b]);
        if (n < 1024)
            ck_assert_uint_eq(planes[n * sizeof *ev], 0xee);   /* nothing past n events */
        memset(back, 0, sizeof back);
        trace_events_of(planes, n, back);
        ck_assert_int_eq(memcmp(back, ev, n * sizeof *ev), 0);
    }
}
END_TEST
#endif

static Suite *core_suite(void)
{
    Suite *s = suite_create("core");
    TCase *f = tcase_create("fmt");
    TCase *c = tcase_create("conf");
    tcase_add_test(f, fmt_basic);
    tcase_add_test(f, fmt_truncates);
    tcase_add_test(c, conf_defaults_are_glibc);
    tcase_add_test(c, conf_pairs);
    tcase_add_test(c, conf_file_syntax);
    tcase_add_test(c, conf_bad_input_keeps_defaults);
    tcase_add_test(c, conf_line_numbers_and_control_chars);
    tcase_add_test(c, conf_jemalloc_passthrough);
    tcase_add_test(c, conf_tcmalloc_props);
    tcase_add_test(c, conf_format_roundtrip);
    tcase_add_test(c, conf_load_env_wins_over_file);
    tcase_add_test(c, conf_load_missing_files);
    tcase_add_test(c, conf_load_secure_ignores_env);
    tcase_add_test(c, conf_load_line_numbers_and_size_limit);
    tcase_add_test(c, conf_backend_names);
    TCase *z = tcase_create("sizeclass");
    tcase_add_test(z, sizeclass_table);
    tcase_add_test(z, lifebucket_table);
    tcase_add_test(z, seg_layout_and_validate);
    tcase_add_test(z, seg_live_req_estimate);
    tcase_add_test(z, seg_req_stderr_formula);
    tcase_add_test(z, seg_track_p_shape);
    tcase_add_test(z, trace_duration_encoding);
#ifdef HAVE_ZSTD
    tcase_add_test(z, trace_byte_planes);
#endif
    suite_add_tcase(s, f);
    suite_add_tcase(s, c);
    suite_add_tcase(s, z);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(core_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
