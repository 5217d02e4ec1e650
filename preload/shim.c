/* shim: the interposed C entry points of the malloc family. Each checks its
 * arguments the same way for every backend, then takes the dispatch path. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attr.h"
#include "dispatch.h"
#include "mallocshim.h"


SHIM_EXPORT void *malloc(size_t n)
{
    return dispatch_malloc(n);
}

SHIM_EXPORT void free(void *p)
{
    dispatch_free(p);
}

SHIM_EXPORT void *calloc(size_t n, size_t size)
{
    size_t total;
    if (unlikely(__builtin_mul_overflow(n, size, &total))) {
        errno = ENOMEM;
        return NULL;
    }
    return dispatch()->calloc(n, size);
}

/* A bootstrap block moves to the backend; its old copy is never reused. */
static void *realloc_from_boot(void *p, size_t n)
{
    size_t old = boot_size(p);
    void *q;

    if (n == 0)
        return NULL;
    q = dispatch_malloc(n);
    if (q)
        memcpy(q, p, old < n ? old : n);
    return q;
}

/* Shared by realloc and reallocarray without a trip through the PLT. */
static inline void *realloc_impl(void *p, size_t n)
{
    if (unlikely(boot_owns(p)))
        return realloc_from_boot(p, n);
    return dispatch()->realloc(p, n);
}

SHIM_EXPORT void *realloc(void *p, size_t n)
{
    return realloc_impl(p, n);
}

SHIM_EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
    size_t total;
    if (unlikely(__builtin_mul_overflow(n, size, &total))) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc_impl(p, total);
}

SHIM_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    int saved = errno;
    void *p;

    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    p = dispatch_aligned(align, n);
    errno = saved;
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

/* glibc 2.36 serves aligned_alloc and memalign alike: an alignment that is
 * not a power of two is rounded up to the next one, and one too large for
 * that is EINVAL. Programs on this glibc rely on it, so every backend gets
 * the same. */
static inline void *memalign_impl(size_t align, size_t n)
{
    if (align & (align - 1)) {
        if (align > SIZE_MAX / 2 + 1) {
            errno = EINVAL;
            return NULL;
        }
        size_t a = 1;
        while (a < align)
            a <<= 1;
        align = a;
    }
    return dispatch_aligned(align ? align : 1, n);
}

SHIM_EXPORT void *memalign(size_t align, size_t n)
{
    return memalign_impl(align, n);
}

SHIM_EXPORT void *aligned_alloc(size_t align, size_t n)
{
    return memalign_impl(align, n);
}

SHIM_EXPORT void *valloc(size_t n)
{
    dispatch_init();
    return dispatch_aligned(dispatch_pagesize, n);
}

SHIM_EXPORT void *pvalloc(size_t n)
{
    size_t ps, rounded;

    dispatch_init();
    ps = dispatch_pagesize;
    if (n > SIZE_MAX - (ps - 1)) {
        errno = ENOMEM;
        return NULL;
    }
    rounded = (n + ps - 1) & ~(ps - 1);
    return dispatch_aligned(ps, rounded ? rounded : ps);
}

SHIM_EXPORT size_t malloc_usable_size(void *p)
{
    if (p == NULL)
        return 0;
    if (unlikely(boot_owns(p)))
        return boot_size(p);
    return dispatch()->usable(p);
}

SHIM_EXPORT int mallopt(int param, int value)
{
    return dispatch()->mallopt(param, value);
}

SHIM_EXPORT struct mallinfo2 mallinfo2(void)
{
    return dispatch()->mallinfo2();
}

static int clamp_int(size_t v)
{
    return v > INT_MAX ? INT_MAX : (int)v;
}

/* The old interface, with int fields; kept because programs still call it. */
SHIM_EXPORT struct mallinfo mallinfo(void)
{
    struct mallinfo2 m2 = dispatch()->mallinfo2();
    struct mallinfo m = {
        .arena = clamp_int(m2.arena),
        .ordblks = clamp_int(m2.ordblks),
        .smblks = clamp_int(m2.smblks),
        .hblks = clamp_int(m2.hblks),
        .hblkhd = clamp_int(m2.hblkhd),
        .usmblks = clamp_int(m2.usmblks),
        .fsmblks = clamp_int(m2.fsmblks),
        .uordblks = clamp_int(m2.uordblks),
        .fordblks = clamp_int(m2.fordblks),
        .keepcost = clamp_int(m2.keepcost),
    };
    return m;
}

SHIM_EXPORT int malloc_trim(size_t pad)
{
    return dispatch()->trim(pad);
}

SHIM_EXPORT void malloc_stats(void)
{
    dispatch()->stats();
}

SHIM_EXPORT int malloc_info(int options, FILE *fp)
{
    return dispatch()->info(options, fp);
}

SHIM_EXPORT const char *mallocshim_backend(void)
{
    dispatch_init();
    return dispatch()->name;
}

SHIM_EXPORT const char *mallocshim_version(void)
{
    return PACKAGE_VERSION;
}
