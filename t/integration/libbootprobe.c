/* libbootprobe: a stand-in for libtcmalloc_minimal.so.4 (loaded with
 * tcmalloc_lib:) whose constructor allocates while the shim is starting it,
 * so that those blocks come from the shim's bootstrap buffer; bootcheck then
 * frees, grows and measures them. Its tc_* functions forward to glibc. This
 * is a fixture for the bootstrap path only: tcmalloc itself is tested
 * everywhere else. */
#include "config.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

/* The exported surface the shim looks up. */
void *tc_malloc(size_t n);
void tc_free(void *p);
void tc_free_sized(void *p, size_t n);
void *tc_calloc(size_t n, size_t s);
void *tc_realloc(void *p, size_t n);
void *tc_memalign(size_t a, size_t n);
size_t tc_malloc_size(void *p);
int tc_mallopt(int a, int b);
void tc_malloc_stats(void);
const char *tc_version(int *a, int *b, const char **c);
int MallocExtension_GetNumericProperty(const char *name, size_t *v);
int MallocExtension_SetNumericProperty(const char *name, size_t v);
void MallocExtension_ReleaseFreeMemory(void);
int bootprobe_results(size_t *early_usable, int *calloc_zeroed, int *aligned_ok,
                      int *realloc_ok);
char *bootprobe_early(void);
void *bootprobe_aligned(void);

void *tc_malloc(size_t n) { return __libc_malloc(n); }
void tc_free(void *p) { __libc_free(p); }
void tc_free_sized(void *p, size_t n) { __libc_free(p); }
void *tc_calloc(size_t n, size_t s) { return __libc_calloc(n, s); }
void *tc_realloc(void *p, size_t n) { return __libc_realloc(p, n); }
void *tc_memalign(size_t a, size_t n) { return __libc_memalign(a, n); }
/* glibc's own malloc_usable_size: the global one is the shim's, which
 * would call back here. */
static size_t (*libc_usable)(void *);

size_t tc_malloc_size(void *p)
{
    return libc_usable(p);
}
int tc_mallopt(int a, int b) { return 1; }
void tc_malloc_stats(void) {}
const char *tc_version(int *a, int *b, const char **c) { return "bootprobe"; }
int MallocExtension_GetNumericProperty(const char *name, size_t *v) { return 0; }
int MallocExtension_SetNumericProperty(const char *name, size_t v) { return 0; }
void MallocExtension_ReleaseFreeMemory(void) {}

static char *early;
static void *aligned;
static size_t early_usable;
static int calloc_zeroed, aligned_ok, realloc_ok;

/* Runs inside the shim's dlopen of this library, before the shim has a
 * backend: every call here is served by the bootstrap buffer. */
__attribute__((constructor)) static void probe_init(void)
{
    unsigned char *z;
    char *q;

    /* Resolved here, while the shim serves this constructor from its buffer:
     * resolving it on first use would allocate inside tc_malloc_size. */
    libc_usable = (size_t (*)(void *))dlsym(dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD),
                                            "malloc_usable_size");

    early = malloc(300);
    memset(early, 'b', 300);
    early_usable = malloc_usable_size(early);
    z = calloc(100, 10);
    calloc_zeroed = 1;
    for (int i = 0; i < 1000; i++)
        calloc_zeroed &= z[i] == 0;
    free(z);
    aligned_ok = posix_memalign(&aligned, 4096, 100) == 0 && (uintptr_t)aligned % 4096 == 0;
    /* Growing a buffer block while no backend exists: a new buffer block
     * with the old contents. */
    q = malloc(8);
    memcpy(q, "1234567", 8);
    q = realloc(q, 4000);
    realloc_ok = q != NULL && memcmp(q, "1234567", 8) == 0 && malloc_usable_size(q) == 4000;
    free(q);
}

int bootprobe_results(size_t *u, int *c, int *a, int *r)
{
    *u = early_usable;
    *c = calloc_zeroed;
    *a = aligned_ok;
    *r = realloc_ok;
    return 0;
}

char *bootprobe_early(void) { return early; }
void *bootprobe_aligned(void) { return aligned; }
