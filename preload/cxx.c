/* cxx: the whole C++ operator new/delete family (plain, nothrow, sized,
 * aligned, array), written in C under their Itanium-ABI names. Defining all
 * of them keeps any backend's own operator new from bypassing the shim. */
#include "config.h"

#include <dlfcn.h>
#include <stdlib.h>

#include "dispatch.h"
#include "log.h"

#define SHIM_EXPORT __attribute__((visibility("default")))

/* The mangled names have no C prototypes to declare. */
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

typedef void (*new_handler_fn)(void);

/* libstdc++ is loaded in any process that calls these; look up its pieces
 * only when an allocation fails. Synchronization: relaxed atomics; a racing
 * thread stores the same value. */
static new_handler_fn (*get_new_handler)(void);
static void (*throw_bad_alloc)(void);

static void *lookup(void **slot, const char *name)
{
    void *fn = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if (!fn) {
        fn = dlsym(RTLD_DEFAULT, name);
        __atomic_store_n(slot, fn, __ATOMIC_RELAXED);
    }
    return fn;
}

/* The out-of-memory path of a throwing operator new: call the new-handler
 * until it gives up, then throw std::bad_alloc, as [new.delete.single]
 * requires. The nothrow forms return NULL without calling the handler: a
 * handler's exception could not be caught here, in C. */
__attribute__((noinline, cold))
static void *new_failed(size_t n, size_t align)
{
    for (;;) {
        new_handler_fn (*get)(void) = (new_handler_fn (*)(void))
            lookup((void **)&get_new_handler, "_ZSt15get_new_handlerv");
        new_handler_fn h = get ? get() : NULL;
        void *p;
        if (!h)
            break;
        h();
        p = align ? dispatch_aligned(align, n) : dispatch_malloc(n);
        if (p)
            return p;
    }
    void (*thr)(void) = (void (*)(void))lookup((void **)&throw_bad_alloc, "_ZSt17__throw_bad_allocv");
    if (thr)
        thr();
    log_msg("operator new(%zu) failed and std::bad_alloc cannot be thrown "
            "(libstdc++ not found); aborting", n);
    abort();
}

static inline void *new_impl(size_t n)
{
    void *p = dispatch_malloc(n);
    return likely(p != NULL) ? p : new_failed(n, 0);
}

static inline void *new_aligned_impl(size_t n, size_t align)
{
    void *p = dispatch_aligned(align, n);
    return likely(p != NULL) ? p : new_failed(n, align);
}

/* operator new(size_t), new[](size_t) */
SHIM_EXPORT void *_Znwm(size_t n) { return new_impl(n); }
SHIM_EXPORT void *_Znam(size_t n) { return new_impl(n); }

/* operator new(size_t, const std::nothrow_t &), and new[] */
SHIM_EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt) { return dispatch_malloc(n); }
SHIM_EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *nt) { return dispatch_malloc(n); }

/* operator new(size_t, std::align_val_t), and new[] */
SHIM_EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t al) { return new_aligned_impl(n, al); }
SHIM_EXPORT void *_ZnamSt11align_val_t(size_t n, size_t al) { return new_aligned_impl(n, al); }

/* operator new(size_t, std::align_val_t, const std::nothrow_t &), and new[] */
SHIM_EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt)
{
    return dispatch_aligned(al, n);
}
SHIM_EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt)
{
    return dispatch_aligned(al, n);
}

/* operator delete(void *), delete[], and their nothrow forms */
SHIM_EXPORT void _ZdlPv(void *p) { dispatch_free(p); }
SHIM_EXPORT void _ZdaPv(void *p) { dispatch_free(p); }
SHIM_EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *nt) { dispatch_free(p); }
SHIM_EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *nt) { dispatch_free(p); }

/* operator delete(void *, size_t), delete[]: sized */
SHIM_EXPORT void _ZdlPvm(void *p, size_t n) { dispatch_free_sized(p, n); }
SHIM_EXPORT void _ZdaPvm(void *p, size_t n) { dispatch_free_sized(p, n); }

/* Aligned deletes: every backend's free() takes its aligned blocks, and a
 * plain free is what the backends' own operators do for most of them. */
SHIM_EXPORT void _ZdlPvSt11align_val_t(void *p, size_t al) { dispatch_free(p); }
SHIM_EXPORT void _ZdaPvSt11align_val_t(void *p, size_t al) { dispatch_free(p); }
SHIM_EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt) { dispatch_free(p); }
SHIM_EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt) { dispatch_free(p); }
SHIM_EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t al) { dispatch_free(p); }
SHIM_EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t al) { dispatch_free(p); }
