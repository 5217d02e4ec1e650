/* dispatch: the one path every allocation takes, from an interposed entry
 * point to the backend chosen at start. Inline, so that the C entry points
 * (shim.c) and the C++ ones (cxx.c) share it at no cost. */
#ifndef MALLOCSHIM_DISPATCH_H
#define MALLOCSHIM_DISPATCH_H

#include <stddef.h>

#include "attr.h"
#include "backend.h"
#include "boot.h"

#pragma GCC visibility push(hidden)

/* The active table. It starts as the bootstrap table, whose functions start
 * the backend on first use, and is switched once to the backend's table.
 * Synchronization: stored once with release by the initializing thread,
 * loaded with acquire (a plain load on x86-64) by every call. */
extern const struct backend_ops *dispatch_ops;
/* The C++ operators' table: the same as dispatch_ops, but while a capture
 * runs (capture.h), when it is one whose wrappers record new and delete
 * by their names. Stored and loaded the same way. */
extern const struct backend_ops *dispatch_cxx_ops;

static inline const struct backend_ops *dispatch(void)
{
    return __atomic_load_n(&dispatch_ops, __ATOMIC_ACQUIRE);
}

static inline const struct backend_ops *dispatch_cxx(void)
{
    return __atomic_load_n(&dispatch_cxx_ops, __ATOMIC_ACQUIRE);
}

/* Starts the backend if nobody has; idempotent. Returns 0 when a backend is
 * serving, EBUSY while another thread (or this one, re-entrantly) is still
 * starting it. */
int dispatch_init(void);

/* The system page size, known after init (4096 before). */
extern size_t dispatch_pagesize;

static inline void *dispatch_malloc(size_t n)
{
    return dispatch()->malloc(n);
}

/* Finds out whether the program replaces C++'s operator new or delete
 * (cxx.c); returns the first such operator's symbol, or NULL. */
const char *cxx_init(void);

/* The frees and the aligned allocation, through table t (dispatch() or
 * dispatch_cxx()). */
static inline void dispatch_free_in(const struct backend_ops *t, void *p)
{
    if (unlikely(boot_owns(p)))
        return;
    t->free(p);
}

static inline void dispatch_free(void *p)
{
    dispatch_free_in(dispatch(), p);
}

static inline void dispatch_free_sized_in(const struct backend_ops *t, void *p, size_t n)
{
    if (unlikely(p == NULL || boot_owns(p)))
        return;
    t->free_sized(p, n);
}

/* Precondition: align is a power of two. */
static inline void *dispatch_aligned_in(const struct backend_ops *t, size_t align, size_t n)
{
    if (align < sizeof(void *))
        align = sizeof(void *);
    return t->aligned(align, n);
}

static inline void *dispatch_aligned(size_t align, size_t n)
{
    return dispatch_aligned_in(dispatch(), align, n);
}

#pragma GCC visibility pop

#endif
