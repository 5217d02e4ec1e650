/* dispatch: chooses the backend once, on the first allocation, and serves the
 * allocations made meanwhile from the bootstrap buffer. */
#include "config.h"

#include "dispatch.h"
#include "guard.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "conf.h"
#include "log.h"
#include "record.h"

#ifndef SYSCONFDIR
#error "SYSCONFDIR must be defined by the build"
#endif

enum { ST_UNINIT, ST_BUSY, ST_READY };

/* Synchronization: atomic. UNINIT -> BUSY by one CAS winner, BUSY -> READY
 * (release) once that thread has published dispatch_ops. Nobody ever waits on
 * it: while it is BUSY, every allocation, re-entrant or from another thread,
 * is served from the bootstrap buffer, so init cannot deadlock. */
static int state = ST_UNINIT;

/* Written by the initializing thread before state becomes READY; read-only
 * after. */
static struct conf conf;
size_t dispatch_pagesize = 4096;

static const struct backend_ops boot_ops;
const struct backend_ops *dispatch_ops = &boot_ops;
const struct backend_ops *dispatch_cxx_ops = &boot_ops;

/* record's way to change the active tables (the C entry points', the C++
 * operators'), stored as init stores them: back to plain forwarding (the
 * backend's table) for a fork child that cannot have a segment of its
 * own, where it runs in the child's fork handler and must not allocate or
 * lock; and a capture's tables in and out (capture.h), from the sampler
 * thread. */
static void set_table(const struct backend_ops *table, const struct backend_ops *cxx)
{
    __atomic_store_n(&dispatch_ops, table, __ATOMIC_RELEASE);
    __atomic_store_n(&dispatch_cxx_ops, cxx, __ATOMIC_RELEASE);
}

static void warn_line(void *ctx, const char *msg)
{
    log_msg("%s", msg);
}

static int start_backend(int id, const struct backend_ops **ops, char *err, size_t len)
{
    switch (id) {
    case CONF_BACKEND_JEMALLOC: return backend_jemalloc_start(&conf, ops, err, len);
    case CONF_BACKEND_TCMALLOC: return backend_tcmalloc_start(&conf, ops, err, len);
    default: return backend_glibc_start(&conf, ops, err, len);
    }
}

/* Another malloc in the process (a second LD_PRELOAD entry, as two
 * malloc-lib lines give, or a program linked with tcmalloc or jemalloc) is
 * harmless for malloc and free, which the shim takes, but its own entry
 * points bypass the shim: say so once. */
static void warn_other_allocators(void)
{
    static const char *const probes[] = { "tc_malloc", "mallctl", "mallocx", "mi_malloc" };
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        if (dlsym(RTLD_DEFAULT, probes[i])) {
            log_msg("another allocator is loaded in this process (it defines %s); the shim "
                    "serves malloc, free and operator new, but direct calls to it bypass the shim",
                    probes[i]);
            return;
        }
    }
}

int dispatch_init(void)
{
    int st = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    const struct backend_ops *ops = NULL;
    char err[256];
    int saved_errno = errno;

    if (likely(st == ST_READY))
        return 0;
    if (st == ST_BUSY || !__atomic_compare_exchange_n(&state, &st, ST_BUSY, 0,
                                                      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return st == ST_READY ? 0 : EBUSY;

    long ps = sysconf(_SC_PAGESIZE);
    if (ps > 0)
        dispatch_pagesize = (size_t)ps;

    guard_init();
    const char *replaced = cxx_init();
    conf_load(&conf, getenv("MALLOCSHIM_CONF"), getenv("MALLOCSHIM_CONF_FILE"),
              SYSCONFDIR "/mallocshim.conf", getauxval(AT_SECURE) != 0, warn_line, NULL);

    err[0] = '\0';
    if (start_backend(conf.backend, &ops, err, sizeof err) != 0) {
        log_msg("backend %s unavailable: %s; using glibc", conf_backend_name(conf.backend), err);
        conf.backend = CONF_BACKEND_GLIBC;
        backend_glibc_start(&conf, &ops, err, sizeof err);
    }
    const char *segment = "none";
    if (!conf.record && conf.capture_start[0])
        log_msg("capture_start is ignored: record is off (a capture needs the recorder)");
    if (conf.record) {
        const struct backend_ops *rec;
        if (record_start(&conf, ops, set_table, &rec) == 0) {
            ops = rec;
            segment = record_path();
        }
    }
    warn_other_allocators();
    __atomic_store_n(&dispatch_cxx_ops, ops, __ATOMIC_RELEASE);
    __atomic_store_n(&dispatch_ops, ops, __ATOMIC_RELEASE);
    __atomic_store_n(&state, ST_READY, __ATOMIC_RELEASE);

    if (conf.verbose) {
        char version[128], text[768];
        ops->version(version, sizeof version);
        conf_format(&conf, text, sizeof text);
        log_msg("pid %d: backend %s %s; config %s; segment %s; bootstrap used %zu bytes",
                (int)getpid(), ops->name, version, text, segment, boot_used());
        if (replaced)
            log_msg("pid %d: the program defines %s: C++ operators go through libstdc++'s, "
                    "which call its replacements", (int)getpid(), replaced);
    }
    errno = saved_errno;
    return 0;
}

/* Starts the backend as soon as the shim is loaded, so that the choice (and
 * the verbose line) does not wait for a first malloc. Allocations made by
 * constructors that run earlier start it themselves. */
__attribute__((constructor)) static void dispatch_ctor(void)
{
    dispatch_init();
}

/* ---- The bootstrap table: start the backend, or serve from the buffer ---- */

static const struct backend_ops *ready(void)
{
    return dispatch_init() == 0 ? dispatch() : NULL;
}

static void *boot_malloc(size_t n)
{
    const struct backend_ops *o = ready();
    return o ? o->malloc(n) : boot_alloc(n, 16);
}

static void boot_free(void *p)
{
    /* The entry points keep buffer blocks away from here; any other pointer
     * can only have come from a backend, which is then serving. */
    const struct backend_ops *o = ready();
    if (o)
        o->free(p);
}

static void boot_free_sized(void *p, size_t n)
{
    const struct backend_ops *o = ready();
    if (o)
        o->free_sized(p, n);
}

static void *boot_calloc(size_t n, size_t size)
{
    const struct backend_ops *o = ready();
    return o ? o->calloc(n, size) : boot_alloc(n * size, 16);  /* the caller checked n * size */
}

static void *boot_realloc(void *p, size_t n)
{
    const struct backend_ops *o = ready();
    if (o)
        return o->realloc(p, n);
    if (p == NULL)
        return boot_alloc(n, 16);
    errno = ENOMEM;
    return NULL;
}

static void *boot_aligned(size_t align, size_t n)
{
    const struct backend_ops *o = ready();
    return o ? o->aligned(align, n) : boot_alloc(n, align);
}

static size_t boot_usable(void *p)
{
    const struct backend_ops *o = ready();
    return o ? o->usable(p) : 0;
}

static int boot_mallopt(int param, int value)
{
    const struct backend_ops *o = ready();
    return o ? o->mallopt(param, value) : 0;
}

static struct mallinfo2 boot_mallinfo2(void)
{
    const struct backend_ops *o = ready();
    struct mallinfo2 mi;
    if (o)
        return o->mallinfo2();
    memset(&mi, 0, sizeof mi);
    return mi;
}

static int boot_trim(size_t pad)
{
    const struct backend_ops *o = ready();
    return o ? o->trim(pad) : 0;
}

static void boot_stats(void)
{
    const struct backend_ops *o = ready();
    if (o)
        o->stats();
}

static int boot_info(int options, FILE *fp)
{
    const struct backend_ops *o = ready();
    if (o)
        return o->info(options, fp);
    return EBUSY;
}

static void boot_version(char *buf, size_t len)
{
    if (len)
        buf[0] = '\0';
}

static void boot_snapshot(struct seg_backend_stats *out, int full)
{
    (void)full;
    memset(out, 0, sizeof *out);
}

static const struct backend_ops boot_ops = {
    .name = "bootstrap",
    .malloc = boot_malloc,
    .free = boot_free,
    .free_sized = boot_free_sized,
    .calloc = boot_calloc,
    .realloc = boot_realloc,
    .aligned = boot_aligned,
    .usable = boot_usable,
    .mallopt = boot_mallopt,
    .mallinfo2 = boot_mallinfo2,
    .trim = boot_trim,
    .stats = boot_stats,
    .info = boot_info,
    .version = boot_version,
    .snapshot = boot_snapshot,
};
