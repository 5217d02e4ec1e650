/* backend: the table of operations that each allocator backend provides, and
 * the entry points of the three backends. The only place that names them. */
#ifndef MALLOCSHIM_BACKEND_H
#define MALLOCSHIM_BACKEND_H

#include <malloc.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf.h"
#include "seg.h"

#pragma GCC visibility push(hidden)

/* What the dispatcher calls. Every pointer is set. The shim checks arguments
 * (overflow, alignment) before calling, so that all backends behave alike:
 *   aligned:    align is a power of two >= sizeof(void *);
 *   free_sized: p != NULL and size is what was asked when p was allocated;
 *   usable:     p != NULL and p came from this backend.
 * Synchronization: each table is filled by the initializing thread before it
 * is published (dispatch.c) and is read-only after that. */
struct backend_ops {
    const char *name;
    void *(*malloc)(size_t size);
    void (*free)(void *p);
    void (*free_sized)(void *p, size_t size);
    void *(*calloc)(size_t n, size_t size);
    void *(*realloc)(void *p, size_t size);
    void *(*aligned)(size_t align, size_t size);
    size_t (*usable)(void *p);
    /* The usable size that malloc(size) or calloc gives, from the size alone
     * (jemalloc's size-class tables or nallocx, tcmalloc's tc_nallocx), or
     * NULL where the backend cannot say without the block. Saves the
     * recorder a lookup. */
    size_t (*usable_for)(size_t size);
    /* What `usable` answers for p, a live block of this backend, by the
     * cheapest means it has (glibc: the chunk header, checked against
     * malloc_usable_size at start); the recorder calls it on every free.
     * Set for every backend (to `usable` where there is nothing cheaper). */
    size_t (*usable_live)(void *p);
    /* Where the backend has it: what usable_live answers, as a method of
     * an object of the backend's, usable_of(usable_self, p), one call
     * where usable_live makes three (tcmalloc: its GetAllocatedSize,
     * without tc_malloc_size, MallocExtension::instance() and the virtual
     * call); NULL otherwise. */
    size_t (*usable_of)(const void *self, const void *p);
    const void *usable_self;
    int (*mallopt)(int param, int value);
    struct mallinfo2 (*mallinfo2)(void);
    int (*trim)(size_t pad);
    void (*stats)(void);
    int (*info)(int options, FILE *fp);
    /* Writes the backend's version ("2.36", "5.3.0-0-g…") into buf. */
    void (*version)(char *buf, size_t len);
    /* Fills the backend's own statistics a..f, as seg.h's
     * seg_backend_stats describes for each backend (not t_ns and live_lo,
     * the sampler's). `full` 0 lets a backend keep a figure that costs a
     * second walk and can change only when a thread comes (glibc's arena
     * count) from its last full snapshot. Called by the sampler thread
     * only. */
    void (*snapshot)(struct seg_backend_stats *out, int full);
    /* Where the backend's in-use figure can be read torn (tcmalloc's):
     * that figure of a snapshot, which holds every live block at its
     * usable size at least when whole (seg.h, struct seg_backend_stats,
     * live_lo), so that the sampler can take a torn one again; NULL
     * elsewhere (sampler.c, BE_TAKES). */
    uint64_t (*in_use)(const struct seg_backend_stats *s);
    int id;   /* enum seg_backend_id */
};

/* Each backend's start: applies the backend's part of *c and, on success,
 * returns 0 and sets *ops. Otherwise returns an errno value and writes one
 * line of explanation into err (ENOTSUP when it is not built in). Called once,
 * by the initializing thread, while re-entrant allocations are served from
 * the bootstrap buffer. backend_glibc_start never fails. */
int backend_glibc_start(const struct conf *c, const struct backend_ops **ops,
                        char *err, size_t errlen);
int backend_jemalloc_start(const struct conf *c, const struct backend_ops **ops,
                           char *err, size_t errlen);
int backend_tcmalloc_start(const struct conf *c, const struct backend_ops **ops,
                           char *err, size_t errlen);

/* malloc_usable_size of a live block of glibc's, from its chunk header: the
 * size word before the block holds the chunk's size with three flag bits;
 * the block may use all of it but the header, and, unless the chunk is
 * mmapped (bit 1), the next chunk's prev_size word too. That is glibc's own
 * musable() for a chunk in use, without the call, the NULL test and the
 * in-use check that only a freed block needs. Valid only where glibc's
 * backend set usable_live to glibc_usable_chunk, which it does after
 * checking that this answers as libc does (the header layout is glibc's, not
 * its ABI, and memory tagging changes it). Inline so that the recorder can
 * take it without a call (record.c). */
static inline size_t glibc_usable_inline(const void *p)
{
    size_t head = ((const size_t *)p)[-1];
    return (head & ~(size_t)7) - sizeof(size_t) - ((head & 2) << 2);  /* 8 more if mmapped */
}
size_t glibc_usable_chunk(void *p);

#ifdef HAVE_JEMALLOC
/* malloc_usable_size of a live block of the embedded jemalloc (5.3), from
 * its radix tree, as its own isalloc reads a block's size class: the global
 * tree (arena_emap_global's rtree) has 2^18 roots, by bits 30-47 of the
 * address, each a leaf of 2^18 words, by bits 12-29; a word holds the size
 * class in its top 16 bits, and the class's usable size is in
 * sz_index2size_tab. Both names are jemalloc's internal ones, in the
 * archive linked into this library; the layout (JE_ROOT_OFF, the bits,
 * JE_NSIZES) is jemalloc's build's, not its API: the backend checks at
 * start that this answers as malloc_usable_size does, reading the leaves
 * through a pipe so that a layout not as expected cannot fault, and sets
 * usable_live to je_usable_tree only then. For a block of jemalloc's only:
 * an address in no leaf gives JE_NSIZES (the caller asks the call), one in
 * a leaf but in no block (never written: 0) gives class 0. je_class_inline
 * gives the class itself, for a table of the caller's by class. */
extern char je_arena_emap_global[];
extern const size_t je_sz_index2size_tab[];
#define JE_ROOT_OFF 0x78
#define JE_NSIZES 232u
/* The size class of live block p: JE_NSIZES or more where its leaf is missing
 * or cleared. */
static inline unsigned je_class_inline(const void *p)
{
    uintptr_t k = (uintptr_t)p;
    const uint64_t *const *root = (const uint64_t *const *)(je_arena_emap_global + JE_ROOT_OFF);
    const uint64_t *leaf = __atomic_load_n(&root[(k >> 30) & 0x3ffff], __ATOMIC_ACQUIRE);
    if (__builtin_expect(leaf == NULL, 0))
        return JE_NSIZES;
    return (unsigned)(__atomic_load_n(&leaf[(k >> 12) & 0x3ffff], __ATOMIC_RELAXED) >> 48);
}

static inline size_t je_usable_inline(const void *p)
{
    unsigned c = je_class_inline(p);
    return c < JE_NSIZES ? je_sz_index2size_tab[c] : 0;
}
size_t je_usable_tree(void *p);
#endif

/* The i-th request size of a backend's start-up check of a fast usable-size
 * lookup against malloc_usable_size: 4 B to 760 B, 12 B apart (a request
 * in every small class of jemalloc's and tcmalloc's, which are 16 B apart or
 * more there), then to 16 KiB by 512 B, then 32 KiB to 268 KiB; 0 past the
 * last (BACKEND_PROBES). */
#define BACKEND_PROBES 104
size_t backend_probe_size(size_t i);

/* Writes a malloc_info(3)-style XML document with the given numbers, for
 * backends that have no malloc_info of their own. Returns 0, or EINVAL
 * when options != 0, as glibc does. */
int backend_info_xml(FILE *fp, int options, const char *backend, const char *version,
                     const char *const *names, const unsigned long long *values, size_t n);

#pragma GCC visibility pop

#endif
