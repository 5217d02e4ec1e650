/* backend_jemalloc: a private copy of Debian's jemalloc, linked in from its
 * PIC archive with every exported symbol renamed msje_* (preload/je-rename.txt)
 * and its constructor removed, so that it starts only when chosen. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "fmt.h"
#include "log.h"

#ifdef HAVE_JEMALLOC

void *msje_malloc(size_t);
void msje_free(void *);
void msje_sdallocx(void *, size_t, int);
void *msje_calloc(size_t, size_t);
void *msje_realloc(void *, size_t);
void *msje_aligned_alloc(size_t, size_t);
size_t msje_malloc_usable_size(void *);
size_t msje_nallocx(size_t, int);
int msje_mallctl(const char *, void *, size_t *, void *, size_t);
void msje_malloc_stats_print(void (*)(void *, const char *), void *, const char *);

/* jemalloc's calls of secure_getenv and readlink land here (je-rename.txt):
 * MALLOC_CONF and /etc/malloc.conf are meant for a jemalloc of its own, and
 * would silently override the shim's config (or abort the process, with
 * abort_conf). Everything else passes through. */
char *msje_secure_getenv(const char *name);
ssize_t msje_readlink(const char *path, char *buf, size_t len);

char *msje_secure_getenv(const char *name)
{
    if (strcmp(name, "MALLOC_CONF") == 0)
        return NULL;
    return secure_getenv(name);
}

ssize_t msje_readlink(const char *path, char *buf, size_t len)
{
    if (strcmp(path, "/etc/malloc.conf") == 0) {
        errno = ENOENT;
        return -1;
    }
    return readlink(path, buf, len);
}

/* jemalloc reads its compiled-in options from this (weak in its archive;
 * this definition wins). Set once before jemalloc's first call. */
const char *msje_malloc_conf;
static char je_conf[CONF_JEMALLOC_MAX + 32];

/* The usable size of a request of n bytes: what the recorder's tables
 * (record.c's uc_for and ug_for) are filled from at start, and asked on the
 * hot path only above 64 KiB. */
static size_t je_usable_for(size_t n)
{
    return msje_nallocx(n ? n : 1, 0);
}

static void *je_realloc(void *p, size_t n)
{
    void *q = msje_realloc(p, n);
    if (q == NULL && n != 0)
        errno = ENOMEM;   /* jemalloc 5.3 leaves errno alone here */
    return q;
}

/* Above 4 KiB jemalloc's sized free leaves its fast path (its size
 * lookup table ends at SC_LOOKUP_MAXCLASS, 4 KiB here) for the general one,
 * while its free finds the class of any slab block (up to 14 KiB) on the
 * fast path: C++ new + sized delete of 8 KiB, 302.6 instructions by
 * sdallocx, 230.8 by free (callgrind, record:off; bare jemalloc's own
 * operators 291.6). Above the slab sizes neither has a fast path, and free
 * still costs less: 16 KiB, 392.2 against 352.2. The block and what becomes
 * of it are the same. */
static void je_free_sized(void *p, size_t n)
{
    if (n > 4096)
        msje_free(p);
    else
        msje_sdallocx(p, n, 0);
}

static int je_mallopt(int param, int value)
{
    return 1;  /* jemalloc has no mallopt; accept and ignore, as glibc's would */
}

static unsigned long long je_stat(const char *name)
{
    size_t v = 0, len = sizeof v;
    if (msje_mallctl(name, &v, &len, NULL, 0) != 0)
        return 0;
    return v;
}

static void je_refresh(void)
{
    uint64_t epoch = 1;
    size_t len = sizeof epoch;
    msje_mallctl("epoch", &epoch, &len, &epoch, len);
}

/* mallinfo2 in jemalloc's terms: arena = mapped, uordblks = allocated,
 * fordblks = mapped - allocated, hblkhd = retained (virtual, not resident). */
static struct mallinfo2 je_mallinfo2(void)
{
    struct mallinfo2 m;
    memset(&m, 0, sizeof m);
    je_refresh();
    m.arena = je_stat("stats.mapped");
    m.uordblks = je_stat("stats.allocated");
    m.fordblks = m.arena > m.uordblks ? m.arena - m.uordblks : 0;
    m.hblkhd = je_stat("stats.retained");
    return m;
}

static int je_trim(size_t pad)
{
    /* MALLCTL_ARENAS_ALL is 4096 */
    return msje_mallctl("arena.4096.purge", NULL, NULL, NULL, 0) == 0;
}

static void je_stats(void)
{
    msje_malloc_stats_print(NULL, NULL, NULL);
}

static void je_version(char *buf, size_t len)
{
    const char *v = "?";
    size_t sz = sizeof v;
    msje_mallctl("version", &v, &sz, NULL, 0);
    fmt_buf(buf, len, "%s", v);
}

static int je_info(int options, FILE *fp)
{
    static const char *const names[] = { "allocated", "active", "metadata", "resident",
                                         "mapped", "retained" };
    unsigned long long v[6];
    char version[96];
    char name[32];

    je_refresh();
    for (int i = 0; i < 6; i++) {
        fmt_buf(name, sizeof name, "stats.%s", names[i]);
        v[i] = je_stat(name);
    }
    je_version(version, sizeof version);
    return backend_info_xml(fp, options, "jemalloc", version, names, v, 6);
}

static void je_snapshot(struct seg_backend_stats *out, int full)
{
    (void)full;
    je_refresh();
    out->a = je_stat("stats.allocated");
    out->b = je_stat("stats.active");
    out->c = je_stat("stats.resident");
    out->d = je_stat("stats.mapped");
    out->e = je_stat("stats.retained");
    out->f = je_stat("stats.metadata");
}

size_t je_usable_tree(void *p)
{
    size_t u = je_usable_inline(p);
    return u ? u : msje_malloc_usable_size(p);
}

/* Copies the word at addr into *out through a pipe (fd[]): the kernel
 * answers EFAULT, not a fault, where addr is not mapped. write and read
 * on a pipe of our own, which no seccomp filter that lets a program run
 * refuses (process_vm_readv may be refused, or kill the process). */
static int peek(const int fd[2], const void *addr, uint64_t *out)
{
    return write(fd[1], addr, sizeof *out) == (ssize_t)sizeof *out &&
                   read(fd[0], out, sizeof *out) == (ssize_t)sizeof *out
               ? 0
               : -1;
}

/* je_usable_inline of p, the leaf's word read by peek (the root's is in
 * jemalloc's own object, je_arena_emap_global): 0 where the read fails or
 * the tree has no block there. */
static size_t tree_peek(const int fd[2], const void *p)
{
    uintptr_t k = (uintptr_t)p;
    const uint64_t *const *root = (const uint64_t *const *)(je_arena_emap_global + JE_ROOT_OFF);
    const uint64_t *leaf = __atomic_load_n(&root[(k >> 30) & 0x3ffff], __ATOMIC_ACQUIRE);
    uint64_t bits;
    if (k >> 48 || leaf == NULL || peek(fd, &leaf[(k >> 12) & 0x3ffff], &bits) != 0 ||
        (bits & 0xffffffffff80ull) == 0 || bits >> 48 >= JE_NSIZES)
        return 0;
    return je_sz_index2size_tab[bits >> 48];
}

/* A pipe for peek, both ends above descriptor 2 (a daemon may start with
 * 0, 1 or 2 closed). Returns 0, or -1 with errno. */
static int peek_pipe(int fd[2])
{
    if (pipe2(fd, O_CLOEXEC) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        if (fd[i] > 2)
            continue;
        int up = fcntl(fd[i], F_DUPFD_CLOEXEC, 3);
        int e = errno;
        close(fd[i]);
        fd[i] = up;
        if (up < 0) {
            if (i == 1)
                close(fd[0]);
            errno = e;
            return -1;
        }
    }
    return 0;
}

/* Whether je_usable_inline answers as malloc_usable_size for blocks of
 * every kind jemalloc makes: every small class, some larger slab classes,
 * large blocks to 268 KiB (backend_probe_size), and aligned ones. The layout
 * is the archive's, fixed when the shim is built: this guards against a
 * build whose jemalloc differs from the one JE_ROOT_OFF describes, without
 * a fault where it does. Says in why[] what differs. */
static int tree_check(char *why, size_t len)
{
    unsigned nbins = 0, nlextents = 0;
    size_t page = 0, sz = sizeof nbins;
    if (msje_mallctl("arenas.nbins", &nbins, &sz, NULL, 0) != 0 ||
        (sz = sizeof nlextents, msje_mallctl("arenas.nlextents", &nlextents, &sz, NULL, 0)) != 0 ||
        (sz = sizeof page, msje_mallctl("arenas.page", &page, &sz, NULL, 0)) != 0) {
        fmt_buf(why, len, "its size classes cannot be read");
        return 0;
    }
    if (nbins + nlextents != JE_NSIZES || page != 4096) {
        fmt_buf(why, len, "it has %u size classes and %zu-byte pages, not %u and 4096",
                nbins + nlextents, page, JE_NSIZES);
        return 0;
    }
    static const size_t aligns[] = { 64, 4096, 65536, 1u << 20 };
    int fd[2], same = 0, differs = 0;
    if (peek_pipe(fd) != 0) {
        fmt_buf(why, len, "it could not be checked: pipe: %s", strerrordesc_np(errno));
        return 0;
    }
    for (size_t i = 0; i < BACKEND_PROBES + 12; i++) {
        size_t a = 0, n = backend_probe_size(i);
        if (i >= BACKEND_PROBES)
            a = aligns[(i - BACKEND_PROBES) % 4], n = 100 + 4900 * ((i - BACKEND_PROBES) / 4);
        if (n == 0)
            continue;
        void *p = a ? msje_aligned_alloc(a, n) : msje_malloc(n);
        if (p == NULL)
            continue;
        size_t want = msje_malloc_usable_size(p), got = tree_peek(fd, p);
        msje_free(p);
        if (got != want) {
            fmt_buf(why, len, "a block of %zu bytes (aligned to %zu) reads %zu, not %zu", n, a,
                    got, want);
            differs = 1;
            break;
        }
        same++;
    }
    close(fd[0]);
    close(fd[1]);
    if (differs)
        return 0;
    if (same < BACKEND_PROBES / 2) {   /* jemalloc refused most blocks */
        fmt_buf(why, len, "it could not be checked: %d blocks compared", same);
        return 0;
    }
    return 1;
}

static struct backend_ops je_ops = {
    .name = "jemalloc",
    .malloc = msje_malloc,
    .free = msje_free,
    .free_sized = je_free_sized,
    .calloc = msje_calloc,
    .realloc = je_realloc,
    .aligned = msje_aligned_alloc,
    .usable = msje_malloc_usable_size,
    .usable_for = je_usable_for,
    .usable_live = msje_malloc_usable_size,
    .mallopt = je_mallopt,
    .mallinfo2 = je_mallinfo2,
    .trim = je_trim,
    .stats = je_stats,
    .info = je_info,
    .version = je_version,
    .snapshot = je_snapshot,
    .id = SEG_BACKEND_JEMALLOC,
};

/* True when the malloc_conf text already sets `key`. */
static int has_key(const char *text, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = text; *p;) {
        if (strncmp(p, key, kl) == 0 && p[kl] == ':')
            return 1;
        p = strchr(p, ',');
        if (!p)
            break;
        p++;
    }
    return 0;
}

int backend_jemalloc_start(const struct conf *c, const struct backend_ops **ops,
                           char *err, size_t errlen)
{
    const char *v = NULL;
    size_t sz = sizeof v;
    int rc;

    /* The generic arena count maps to narenas unless jemalloc.narenas says
     * otherwise. */
    if (c->arenas > 0 && !has_key(c->jemalloc_conf, "narenas"))
        fmt_buf(je_conf, sizeof je_conf, "narenas:%ld%s%s", c->arenas,
                c->jemalloc_conf[0] ? "," : "", c->jemalloc_conf);
    else
        fmt_buf(je_conf, sizeof je_conf, "%s", c->jemalloc_conf);
    msje_malloc_conf = je_conf[0] ? je_conf : NULL;

    if (getenv("MALLOC_CONF"))
        log_msg("MALLOC_CONF is ignored by the embedded jemalloc; give its options as "
                "jemalloc.NAME:VALUE pairs in the shim's config");

    /* The first mallctl runs jemalloc's initialisation. */
    rc = msje_mallctl("version", &v, &sz, NULL, 0);
    if (rc != 0) {
        fmt_buf(err, errlen, "jemalloc failed to initialise (error %d)", rc);
        return rc;
    }
    char why[160];
    if (tree_check(why, sizeof why))
        je_ops.usable = je_ops.usable_live = je_usable_tree;   /* malloc_usable_size too */
    else
        log_msg("jemalloc's radix tree is not read inline (%s): the usable size of each "
                "freed block is asked of malloc_usable_size", why);
    *ops = &je_ops;
    return 0;
}

#else /* !HAVE_JEMALLOC */

int backend_jemalloc_start(const struct conf *c, const struct backend_ops **ops,
                           char *err, size_t errlen)
{
    fmt_buf(err, errlen, "jemalloc is not built into this libmallocshim.so "
                         "(configured --without-jemalloc, or libjemalloc-dev was missing)");
    return ENOTSUP;
}

#endif
