/* testutil: assertions for the programs that the shell tests run under the
 * shim. A failed check prints where and why, and the program exits 1. */
#ifndef MALLOCSHIM_TESTUTIL_H
#define MALLOCSHIM_TESTUTIL_H

#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tu_failures;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            tu_failures++;                                                       \
        }                                                                        \
    } while (0)

/* The backend serving this process, as the shim says; "none" without it. */
static inline const char *tu_backend(void)
{
    const char *(*fn)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "mallocshim_backend");
    return fn ? fn() : "none";
}

static inline int tu_finish(const char *what)
{
    if (tu_failures) {
        fprintf(stderr, "%s: %d check(s) failed under %s\n", what, tu_failures, tu_backend());
        return 1;
    }
    return 0;
}

/* Fills and verifies a pattern that depends on the block and the offset. */
static inline void tu_fill(void *p, size_t n, unsigned seed)
{
    unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        c[i] = (unsigned char)(seed * 131 + i * 7);
}

static inline int tu_intact(const void *p, size_t n, unsigned seed)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != (unsigned char)(seed * 131 + i * 7))
            return 0;
    return 1;
}

#endif
