/* backend_glibc: glibc's malloc through its own entry points (__libc_malloc
 * and friends), with the arena count and tuning knobs applied at start. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <malloc.h>
#include <string.h>

#include "backend.h"
#include "fmt.h"
#include "log.h"

/* glibc exports __libc_malloc and friends (GLIBC_2.2.5) to reach its own
 * allocator whoever else defines malloc. They are looked up in libc.so.6
 * itself: a plain reference would bind to the first definition in the
 * process, and gperftools exports unversioned copies of them, which the
 * loader accepts for a versioned reference when tcmalloc is preloaded or
 * linked in as well. These are the link-time bindings, used only if that
 * lookup fails. */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern int __libc_mallopt(int, int);

static void (*libc_free)(void *) = __libc_free;
static int (*libc_mallopt)(int, int) = __libc_mallopt;

static void glibc_free_sized(void *p, size_t n)
{
    libc_free(p);
}

/* Functions with no __libc_ alias, looked up in libc.so.6 itself: dlsym on
 * RTLD_NEXT could find another preloaded allocator's copy first. */
static size_t (*libc_usable)(void *);
static struct mallinfo2 (*libc_mallinfo2)(void);
static int (*libc_trim)(size_t);
static void (*libc_stats)(void);
static int (*libc_info)(int, FILE *);

/* Only when libc's malloc_usable_size was not found; otherwise the table
 * points at libc's own, with no hop on this hot path. */
static size_t usable_unknown(void *p)
{
    return 0;
}

/* glibc_usable_inline (backend.h) as a function, for usable_live. Used only
 * after glibc_chunk_ok says that it answers as libc does; the recorder knows
 * it by its address and takes the inline form instead. */
size_t glibc_usable_chunk(void *p)
{
    return glibc_usable_inline(p);
}

static struct mallinfo2 glibc_mallinfo2(void)
{
    struct mallinfo2 m;
    if (libc_mallinfo2)
        return libc_mallinfo2();
    memset(&m, 0, sizeof m);
    return m;
}

static int glibc_trim(size_t pad)
{
    return libc_trim ? libc_trim(pad) : 0;
}

static void glibc_stats(void)
{
    if (libc_stats)
        libc_stats();
}

static int glibc_info(int options, FILE *fp)
{
    if (libc_info)
        return libc_info(options, fp);
    return ENOSYS;
}

/* Counts "<heap nr=" in malloc_info's XML as it streams by, through a
 * cookie FILE: no buffer for the whole document. */
struct heap_counter {
    unsigned long heaps;
    unsigned matched;   /* bytes of the pattern matched so far */
};

static ssize_t count_heaps(void *cookie, const char *buf, size_t n)
{
    static const char pat[] = "<heap nr=";
    struct heap_counter *hc = cookie;
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == pat[hc->matched]) {
            if (++hc->matched == sizeof pat - 1) {
                hc->heaps++;
                hc->matched = 0;
            }
        } else {
            hc->matched = buf[i] == pat[0];
        }
    }
    return (ssize_t)n;
}

/* The arena count of the last full snapshot (sampler thread only). */
static uint64_t arenas_counted;

static void glibc_snapshot(struct seg_backend_stats *out, int full)
{
    struct mallinfo2 m = glibc_mallinfo2();
    struct heap_counter hc = { 0, 0 };
    cookie_io_functions_t io = { .write = count_heaps };
    FILE *f;

    out->a = m.arena;
    out->b = m.hblkhd;
    out->c = m.fordblks;
    out->d = m.keepcost;
    out->e = m.uordblks;
    if (full && libc_info && (f = fopencookie(&hc, "w", io)) != NULL) {
        libc_info(0, f);
        fclose(f);
        arenas_counted = hc.heaps;
    }
    out->f = arenas_counted;
}

static void glibc_version(char *buf, size_t len)
{
    fmt_buf(buf, len, "%s", gnu_get_libc_version());
}

static struct backend_ops glibc_ops = {
    .name = "glibc",
    .malloc = __libc_malloc,
    .free = __libc_free,
    .free_sized = glibc_free_sized,
    .calloc = __libc_calloc,
    .realloc = __libc_realloc,
    .aligned = __libc_memalign,
    .usable = usable_unknown,
    .usable_live = usable_unknown,
    .mallopt = __libc_mallopt,
    .mallinfo2 = glibc_mallinfo2,
    .trim = glibc_trim,
    .stats = glibc_stats,
    .info = glibc_info,
    .version = glibc_version,
    .snapshot = glibc_snapshot,
    .id = SEG_BACKEND_GLIBC,
};

/* Whether glibc_usable_chunk agrees with libc's malloc_usable_size on
 * blocks of several sizes and alignments, heap and mmapped: the header
 * layout is glibc's, not its ABI, and memory tagging changes it. The
 * mmapped block is above 32 MiB, so that freeing it does not move glibc's
 * dynamic mmap threshold. */
static int glibc_chunk_ok(void)
{
    static const size_t sizes[] = { 0, 1, 8, 24, 25, 40, 100, 129, 1000, 4096, 10000, 70000,
                                    (size_t)33 << 20 };
    int ok = 1;
    for (size_t i = 0; ok && i < sizeof sizes / sizeof sizes[0]; i++) {
        void *p = glibc_ops.malloc(sizes[i]);
        void *q = glibc_ops.aligned(i % 2 ? 64 : 4096, sizes[i]);
        /* A pointer with a tag in its top byte (memory tagging) may not be
         * read below its block: then the chunk header is not ours to read. */
        ok = p && q && ((uintptr_t)p >> 56) == 0 && ((uintptr_t)q >> 56) == 0 &&
             glibc_usable_chunk(p) == libc_usable(p) && glibc_usable_chunk(q) == libc_usable(q);
        libc_free(p);
        libc_free(q);
    }
    return ok;
}

/* A symbol of libc.so.6 itself: dlvsym on libc's own handle searches libc
 * first, whatever else the process has loaded. */
static void *libc_sym(void *h, const char *name, const char *version)
{
    void *f = h ? dlvsym(h, name, version) : NULL;
    if (!f && h)
        f = dlsym(h, name);
    return f;
}

static void set_knob(int param, const char *name, long value)
{
    if (value == CONF_UNSET)
        return;
    if (value > INT_MAX || libc_mallopt(param, (int)value) != 1)
        log_msg("glibc rejected %s:%ld (ignored)", name, value);
}

int backend_glibc_start(const struct conf *c, const struct backend_ops **ops,
                        char *err, size_t errlen)
{
    void *h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    void *f;

    if ((f = libc_sym(h, "__libc_malloc", "GLIBC_2.2.5")))
        glibc_ops.malloc = (void *(*)(size_t))f;
    if ((f = libc_sym(h, "__libc_free", "GLIBC_2.2.5")))
        glibc_ops.free = libc_free = (void (*)(void *))f;
    if ((f = libc_sym(h, "__libc_calloc", "GLIBC_2.2.5")))
        glibc_ops.calloc = (void *(*)(size_t, size_t))f;
    if ((f = libc_sym(h, "__libc_realloc", "GLIBC_2.2.5")))
        glibc_ops.realloc = (void *(*)(void *, size_t))f;
    if ((f = libc_sym(h, "__libc_memalign", "GLIBC_2.2.5")))
        glibc_ops.aligned = (void *(*)(size_t, size_t))f;
    if ((f = libc_sym(h, "__libc_mallopt", "GLIBC_2.2.5")))
        glibc_ops.mallopt = libc_mallopt = (int (*)(int, int))f;
    libc_usable = (size_t (*)(void *))libc_sym(h, "malloc_usable_size", "GLIBC_2.2.5");
    libc_mallinfo2 = (struct mallinfo2 (*)(void))libc_sym(h, "mallinfo2", "GLIBC_2.33");
    libc_trim = (int (*)(size_t))libc_sym(h, "malloc_trim", "GLIBC_2.2.5");
    libc_stats = (void (*)(void))libc_sym(h, "malloc_stats", "GLIBC_2.2.5");
    libc_info = (int (*)(int, FILE *))libc_sym(h, "malloc_info", "GLIBC_2.10");
    if (libc_usable)
        glibc_ops.usable = glibc_ops.usable_live = libc_usable;
    else
        log_msg("glibc's malloc_usable_size not found; it will answer 0");

    if (c->backend == CONF_BACKEND_GLIBC) {
        /* Before any thread exists, so M_ARENA_MAX bounds every arena. */
        set_knob(M_ARENA_MAX, "arenas", c->arenas > 0 ? c->arenas : CONF_UNSET);
        set_knob(M_ARENA_TEST, "arena_test", c->arena_test);
        set_knob(M_TRIM_THRESHOLD, "trim_threshold", c->trim_threshold);
        set_knob(M_MMAP_THRESHOLD, "mmap_threshold", c->mmap_threshold);
        set_knob(M_TOP_PAD, "top_pad", c->top_pad);
    }
    /* Only the recorder needs the cheap form; spare other processes the
     * test blocks. */
    if (libc_usable && c->record && glibc_chunk_ok())
        glibc_ops.usable_live = glibc_usable_chunk;
    *ops = &glibc_ops;
    return 0;
}
