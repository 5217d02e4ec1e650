/* backend_tcmalloc: gperftools' tcmalloc, dlopen'ed with RTLD_LOCAL so that
 * nothing it exports (malloc, operator new, mmap, sbrk) enters the global
 * scope; it is reached only through its tc_* entry points. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "backend.h"
#include "fmt.h"
#include "log.h"

#ifdef HAVE_TCMALLOC

static int (*tc_get_property)(const char *, size_t *);
static size_t (*tc_nallocx_fn)(size_t, int);

static size_t tc_usable_for(size_t n)
{
    return tc_nallocx_fn(n, 0);
}
static int (*tc_set_property)(const char *, size_t);
static void (*tc_release)(void);
static const char *(*tc_version_fn)(int *, int *, const char **);

/* Filled from the library by backend_tcmalloc_start, read-only after. */
static struct backend_ops tc_ops = { .name = "tcmalloc", .id = SEG_BACKEND_TCMALLOC };

/* The direct call of tcmalloc's usable size (usable_of): the object that
 * MallocExtension::instance() returns and its class's GetAllocatedSize,
 * taken only where the object is of that class (its vtable pointer is
 * TCMallocImplementation's: the Itanium ABI's vtable symbol plus two
 * words), so that the call is the one the virtual call would make, and
 * where it answers as tc_malloc_size over a range of blocks: Debian may
 * update the library under us. */
static const char *tc_direct(void *h, char *why, size_t len)
{
    void *(*instance)(void) = (void *(*)(void))dlsym(h, "_ZN15MallocExtension8instanceEv");
    size_t (*get)(const void *, const void *) =
        (size_t (*)(const void *, const void *))dlsym(h, "_ZN22TCMallocImplementation16GetAllocatedSizeEPKv");
    char *vtable = dlsym(h, "_ZTV22TCMallocImplementation");
    if (!instance || !get || !vtable) {
        fmt_buf(why, len, "it has no TCMallocImplementation::GetAllocatedSize");
        return NULL;
    }
    void *self = instance();
    if (!self || *(void **)self != vtable + 2 * sizeof(void *)) {
        fmt_buf(why, len, "its MallocExtension is not its TCMallocImplementation");
        return NULL;
    }
    for (size_t i = 0; i < BACKEND_PROBES; i++) {
        size_t n = backend_probe_size(i);
        if (n == 0)
            continue;
        void *p = (i & 1) && i < 96 ? tc_ops.aligned(64, n) : tc_ops.malloc(n);
        if (!p)
            continue;
        size_t want = tc_ops.usable(p), got = get(self, p);
        tc_ops.free(p);
        if (got != want) {
            fmt_buf(why, len, "a block of %zu bytes reads %zu by GetAllocatedSize, %zu by "
                    "tc_malloc_size", n, got, want);
            return NULL;
        }
    }
    tc_ops.usable_of = get;
    return self;
}

/* malloc_usable_size by the direct call, where tc_direct set it. */
static size_t tc_usable_direct(void *p)
{
    return tc_ops.usable_of(tc_ops.usable_self, p);
}

static unsigned long long tc_prop(const char *name)
{
    size_t v = 0;
    if (!tc_get_property || !tc_get_property(name, &v))
        return 0;
    return v;
}

/* mallinfo2 in tcmalloc's terms: arena = generic.heap_size, uordblks =
 * generic.current_allocated_bytes, fordblks = tcmalloc.pageheap_free_bytes,
 * hblkhd = tcmalloc.pageheap_unmapped_bytes. */
static struct mallinfo2 tc_mallinfo2(void)
{
    struct mallinfo2 m;
    memset(&m, 0, sizeof m);
    m.arena = tc_prop("generic.heap_size");
    m.uordblks = tc_prop("generic.current_allocated_bytes");
    m.fordblks = tc_prop("tcmalloc.pageheap_free_bytes");
    m.hblkhd = tc_prop("tcmalloc.pageheap_unmapped_bytes");
    return m;
}

static void tc_snapshot(struct seg_backend_stats *out, int full)
{
    (void)full;
    out->a = tc_prop("generic.current_allocated_bytes");
    out->b = tc_prop("generic.heap_size");
    out->c = tc_prop("tcmalloc.pageheap_free_bytes");
    out->d = tc_prop("tcmalloc.pageheap_unmapped_bytes");
    out->e = out->f = 0;
}

/* generic.current_allocated_bytes. */
static uint64_t tc_in_use(const struct seg_backend_stats *s)
{
    return s->a;
}

static int tc_trim(size_t pad)
{
    tc_release();
    return 1;
}

static void tc_version(char *buf, size_t len)
{
    const char *v = tc_version_fn ? tc_version_fn(NULL, NULL, NULL) : NULL;
    fmt_buf(buf, len, "%s", v ? v : "?");
}

static int tc_info(int options, FILE *fp)
{
    static const char *const names[] = {
        "generic.current_allocated_bytes", "generic.heap_size",
        "tcmalloc.pageheap_free_bytes", "tcmalloc.pageheap_unmapped_bytes",
    };
    unsigned long long v[4];
    char version[64];

    for (int i = 0; i < 4; i++)
        v[i] = tc_prop(names[i]);
    tc_version(version, sizeof version);
    return backend_info_xml(fp, options, "tcmalloc", version, names, v, 4);
}

struct sym {
    const char *name;
    void **slot;
    int optional;
};

int backend_tcmalloc_start(const struct conf *c, const struct backend_ops **ops,
                           char *err, size_t errlen)
{
    const char *lib = c->tcmalloc_lib[0] ? c->tcmalloc_lib : TCMALLOC_SONAME;
    const struct sym syms[] = {
        { "tc_malloc", (void **)&tc_ops.malloc, 0 },
        { "tc_free", (void **)&tc_ops.free, 0 },
        { "tc_free_sized", (void **)&tc_ops.free_sized, 0 },
        { "tc_calloc", (void **)&tc_ops.calloc, 0 },
        { "tc_realloc", (void **)&tc_ops.realloc, 0 },
        { "tc_memalign", (void **)&tc_ops.aligned, 0 },
        { "tc_malloc_size", (void **)&tc_ops.usable, 0 },
        { "tc_mallopt", (void **)&tc_ops.mallopt, 0 },
        { "tc_malloc_stats", (void **)&tc_ops.stats, 0 },
        { "tc_version", (void **)&tc_version_fn, 0 },
        { "tc_nallocx", (void **)&tc_nallocx_fn, 1 },
        { "MallocExtension_GetNumericProperty", (void **)&tc_get_property, 0 },
        { "MallocExtension_SetNumericProperty", (void **)&tc_set_property, 0 },
        { "MallocExtension_ReleaseFreeMemory", (void **)&tc_release, 0 },
    };
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

    if (!h) {
        const char *why = dlerror();
        fmt_buf(err, errlen, "cannot load %s: %s", lib, why ? why : "unknown error");
        return ENOENT;
    }
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].slot = dlsym(h, syms[i].name);
        if (!*syms[i].slot && !syms[i].optional) {
            fmt_buf(err, errlen, "%s has no %s; is it gperftools' tcmalloc?", lib, syms[i].name);
            /* Not dlclose'd: its constructors ran, and may have left blocks
             * or thread-exit hooks that point into it. */
            return ENOENT;
        }
    }
    tc_ops.mallinfo2 = tc_mallinfo2;
    tc_ops.trim = tc_trim;
    tc_ops.info = tc_info;
    tc_ops.version = tc_version;
    tc_ops.snapshot = tc_snapshot;
    tc_ops.in_use = tc_in_use;
    tc_ops.usable_for = tc_nallocx_fn ? tc_usable_for : NULL;
    tc_ops.usable_live = tc_ops.usable;
    char why[160];
    tc_ops.usable_self = tc_direct(h, why, sizeof why);
    if (tc_ops.usable_self)
        tc_ops.usable = tc_ops.usable_live = tc_usable_direct;   /* malloc_usable_size too */
    else
        log_msg("tcmalloc's usable size is asked of tc_malloc_size for each freed block (%s)", why);

    for (unsigned i = 0; i < c->n_tc_props; i++)
        if (!tc_set_property(c->tc_props[i].name, (size_t)c->tc_props[i].value))
            log_msg("tcmalloc rejected %s:%lld (ignored)", c->tc_props[i].name,
                    c->tc_props[i].value);
    *ops = &tc_ops;
    return 0;
}

#else /* !HAVE_TCMALLOC */

int backend_tcmalloc_start(const struct conf *c, const struct backend_ops **ops,
                           char *err, size_t errlen)
{
    fmt_buf(err, errlen, "tcmalloc is not built into this libmallocshim.so "
                         "(configured --without-tcmalloc, or libgoogle-perftools-dev was missing)");
    return ENOTSUP;
}

#endif
