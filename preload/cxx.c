/* cxx: the whole C++ operator new/delete family (plain, nothrow, sized,
 * aligned, array), written in C under their Itanium-ABI names. Defining all
 * of them keeps any backend's own operator new from bypassing the shim. */
#include "config.h"

#include <dlfcn.h>
#include <stdlib.h>

#include "attr.h"
#include "dispatch.h"
#include "log.h"


/* The mangled names have no C prototypes to declare. */
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

typedef void (*new_handler_fn)(void);

/* A symbol of libstdc++ itself. Through its own handle first: a C++ plugin
 * dlopen'ed RTLD_LOCAL into a C program brings a libstdc++ that the global
 * scope does not show. Only found symbols are cached, since libstdc++ may be
 * loaded later. Synchronization: relaxed atomics; racing threads store the
 * same value. */
static void *cxx_sym(void **slot, const char *name, int global_too)
{
    void *fn = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if (fn)
        return fn;
    void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD);
    if (h) {
        fn = dlsym(h, name);
        dlclose(h);   /* balances the NOLOAD open; libstdc++ stays */
    }
    if (!fn && global_too)
        fn = dlsym(RTLD_DEFAULT, name);
    if (fn)
        __atomic_store_n(slot, fn, __ATOMIC_RELAXED);
    return fn;
}

static void *get_new_handler_fn, *throw_bad_alloc_fn, *lib_nothrow_fn, *lib_nothrow_al_fn;

static new_handler_fn current_new_handler(void)
{
    new_handler_fn (*get)(void) = (new_handler_fn (*)(void))
        cxx_sym(&get_new_handler_fn, "_ZSt15get_new_handlerv", 1);
    return get ? get() : NULL;
}

/* The out-of-memory path of a throwing operator new: call the new-handler
 * until it gives up, then throw std::bad_alloc, as [new.delete.single]
 * requires. */
__attribute__((noinline, cold))
static void *new_failed(size_t n, size_t align)
{
    for (;;) {
        new_handler_fn h = current_new_handler();
        void *p;
        if (!h)
            break;
        h();
        p = align ? dispatch_aligned_in(dispatch_cxx(), align, n) : dispatch_cxx()->malloc(n);
        if (p)
            return p;
    }
    void (*thr)(void) = (void (*)(void))cxx_sym(&throw_bad_alloc_fn, "_ZSt17__throw_bad_allocv", 1);
    if (thr)
        thr();
    log_msg("operator new(%zu) failed and std::bad_alloc cannot be thrown "
            "(libstdc++ not found); aborting", n);
    abort();
}

/* The out-of-memory path of a nothrow operator new. Without a new-handler
 * the answer is NULL. With one, the standard asks for the throwing operator
 * inside a try block, which C cannot write: libstdc++'s own nothrow operator
 * is exactly that, and the operator it calls is this shim's. */
__attribute__((noinline, cold))
static void *nothrow_failed(size_t n, size_t align)
{
    static const char nothrow_name[] = "_ZnwmRKSt9nothrow_t";
    static const char nothrow_al_name[] = "_ZnwmSt11align_val_tRKSt9nothrow_t";

    if (!current_new_handler())
        return NULL;
    /* Never from the global scope: that would find this very function. */
    if (align) {
        void *(*f)(size_t, size_t, const void *) = (void *(*)(size_t, size_t, const void *))
            cxx_sym(&lib_nothrow_al_fn, nothrow_al_name, 0);
        return f ? f(n, align, NULL) : NULL;
    }
    void *(*f)(size_t, const void *) = (void *(*)(size_t, const void *))
        cxx_sym(&lib_nothrow_fn, nothrow_name, 0);
    return f ? f(n, NULL) : NULL;
}

/* Every operator new: align 0 for the plain forms. Inlined with constant
 * align and nothrow, so each entry point keeps one test on its fast path. */
static inline void *new_common(size_t n, size_t align, int nothrow)
{
    void *p = align ? dispatch_aligned_in(dispatch_cxx(), align, n) : dispatch_cxx()->malloc(n);
    if (likely(p != NULL))
        return p;
    return nothrow ? nothrow_failed(n, align) : new_failed(n, align);
}

static inline void *new_impl(size_t n) { return new_common(n, 0, 0); }
static inline void *new_aligned_impl(size_t n, size_t align) { return new_common(n, align, 0); }
static inline void *new_nothrow_impl(size_t n) { return new_common(n, 0, 1); }
static inline void *new_aligned_nothrow_impl(size_t n, size_t align) { return new_common(n, align, 1); }

/* A program may replace operators itself ([replacement.functions]), and
 * then the standard's default forms chain to its replacements: delete(p, n)
 * calls delete(p), new[](n) calls new(n), and so on. This shim's forms do
 * not chain: they serve every call from the backend. So when the program
 * defines one of the eight replaceable base forms itself, each of this
 * shim's operators hands its call to libstdc++'s own form of the same name,
 * which chains as the standard says (and whose base forms call malloc and
 * free, this shim's). Otherwise a block from the program's operator new
 * (say malloc(n + 16), with a header) reached the backend through this
 * shim's sized delete: a corrupt heap. Set once by cxx_init, before main. */
static int program_replaces;

/* Whether the global scope's definition of each base form is this
 * object's; by object (dladdr), since inside this object the address of an
 * exported function may itself resolve to the program's. Returns the first
 * base form the program replaces, or NULL. */
const char *cxx_init(void)
{
    static const char *const base[] = {
        "_Znwm", "_Znam", "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
        "_ZdlPv", "_ZdaPv", "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t",
    };
    Dl_info self, other;
    if (!dladdr((void *)cxx_init, &self))
        return NULL;
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
        void *found = dlsym(RTLD_DEFAULT, base[i]);
        if (found && dladdr(found, &other) && other.dli_fbase != self.dli_fbase) {
            program_replaces = 1;
            return base[i];
        }
    }
    return NULL;
}

/* Defines operator SYM: BODY serves the call, or, when the program
 * replaces operators (and libstdc++ is there to), libstdc++'s own form of
 * the same name does. That case is out of line (SYM_lib, cold), so the
 * operator itself keeps no frame: one load and a branch before BODY. */
#define CXX_NEW(sym, params, args, type, body)                                        \
    __attribute__((noinline, cold)) static void *sym##_lib params                    \
    {                                                                                 \
        static void *slot_;                                                           \
        type f_ = (type)cxx_sym(&slot_, #sym, 0);                                     \
        if (f_ != NULL)                                                               \
            return f_ args;                                                           \
        return body;                                                                  \
    }                                                                                 \
    SHIM_EXPORT void *sym params                                                      \
    {                                                                                 \
        if (unlikely(program_replaces))                                               \
            return sym##_lib args;                                                    \
        return body;                                                                  \
    }
#define CXX_DELETE(sym, params, args, type, body)                                     \
    __attribute__((noinline, cold)) static void sym##_lib params                     \
    {                                                                                 \
        static void *slot_;                                                           \
        type f_ = (type)cxx_sym(&slot_, #sym, 0);                                     \
        if (f_ != NULL)                                                               \
            f_ args;                                                                  \
        else                                                                          \
            body;                                                                     \
    }                                                                                 \
    SHIM_EXPORT void sym params                                                       \
    {                                                                                 \
        if (unlikely(program_replaces))                                               \
            sym##_lib args;                                                           \
        else                                                                          \
            body;                                                                     \
    }

typedef void *(*new_t)(size_t);
typedef void *(*new_nt_t)(size_t, const void *);
typedef void *(*new_al_t)(size_t, size_t);
typedef void *(*new_al_nt_t)(size_t, size_t, const void *);
typedef void (*del_t)(void *);
typedef void (*del_nt_t)(void *, const void *);
typedef void (*del_n_t)(void *, size_t);
typedef void (*del_al_nt_t)(void *, size_t, const void *);
typedef void (*del_n_al_t)(void *, size_t, size_t);

/* operator new(size_t), new[](size_t) */
CXX_NEW(_Znwm, (size_t n), (n), new_t, new_impl(n))
CXX_NEW(_Znam, (size_t n), (n), new_t, new_impl(n))

/* operator new(size_t, const std::nothrow_t &), and new[] */
CXX_NEW(_ZnwmRKSt9nothrow_t, (size_t n, const void *nt), (n, nt), new_nt_t, new_nothrow_impl(n))
CXX_NEW(_ZnamRKSt9nothrow_t, (size_t n, const void *nt), (n, nt), new_nt_t, new_nothrow_impl(n))

/* operator new(size_t, std::align_val_t), and new[] */
CXX_NEW(_ZnwmSt11align_val_t, (size_t n, size_t al), (n, al), new_al_t, new_aligned_impl(n, al))
CXX_NEW(_ZnamSt11align_val_t, (size_t n, size_t al), (n, al), new_al_t, new_aligned_impl(n, al))

/* operator new(size_t, std::align_val_t, const std::nothrow_t &), and new[] */
CXX_NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, (size_t n, size_t al, const void *nt), (n, al, nt),
        new_al_nt_t, new_aligned_nothrow_impl(n, al))
CXX_NEW(_ZnamSt11align_val_tRKSt9nothrow_t, (size_t n, size_t al, const void *nt), (n, al, nt),
        new_al_nt_t, new_aligned_nothrow_impl(n, al))

/* operator delete(void *), delete[], and their nothrow forms */
CXX_DELETE(_ZdlPv, (void *p), (p), del_t, dispatch_free_in(dispatch_cxx(), p))
CXX_DELETE(_ZdaPv, (void *p), (p), del_t, dispatch_free_in(dispatch_cxx(), p))
CXX_DELETE(_ZdlPvRKSt9nothrow_t, (void *p, const void *nt), (p, nt), del_nt_t,
           dispatch_free_in(dispatch_cxx(), p))
CXX_DELETE(_ZdaPvRKSt9nothrow_t, (void *p, const void *nt), (p, nt), del_nt_t,
           dispatch_free_in(dispatch_cxx(), p))

/* operator delete(void *, size_t), delete[]: sized */
CXX_DELETE(_ZdlPvm, (void *p, size_t n), (p, n), del_n_t,
           dispatch_free_sized_in(dispatch_cxx(), p, n))
CXX_DELETE(_ZdaPvm, (void *p, size_t n), (p, n), del_n_t,
           dispatch_free_sized_in(dispatch_cxx(), p, n))

/* Aligned deletes: every backend's free() takes its aligned blocks, and a
 * plain free is what the backends' own operators do for most of them. */
CXX_DELETE(_ZdlPvSt11align_val_t, (void *p, size_t al), (p, al), del_n_t,
           dispatch_free_in(dispatch_cxx(), p))
CXX_DELETE(_ZdaPvSt11align_val_t, (void *p, size_t al), (p, al), del_n_t,
           dispatch_free_in(dispatch_cxx(), p))
CXX_DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t al, const void *nt), (p, al, nt),
           del_al_nt_t, dispatch_free_in(dispatch_cxx(), p))
CXX_DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t al, const void *nt), (p, al, nt),
           del_al_nt_t, dispatch_free_in(dispatch_cxx(), p))
CXX_DELETE(_ZdlPvmSt11align_val_t, (void *p, size_t n, size_t al), (p, n, al), del_n_al_t,
           dispatch_free_in(dispatch_cxx(), p))
CXX_DELETE(_ZdaPvmSt11align_val_t, (void *p, size_t n, size_t al), (p, n, al), del_n_al_t,
           dispatch_free_in(dispatch_cxx(), p))
