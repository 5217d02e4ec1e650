/* mallocshim.h: the small public API of libmallocshim.so, for programs that
 * want to know, at run time, whether and how the shim serves them. Look the
 * functions up with dlsym(RTLD_DEFAULT, ...) to stay loadable without it. */
#ifndef MALLOCSHIM_H
#define MALLOCSHIM_H

#ifdef __cplusplus
extern "C" {
#endif

/* The name of the backend serving allocations: "glibc", "jemalloc" or
 * "tcmalloc". Starts the backend if nothing has yet. Never NULL. */
const char *mallocshim_backend(void);

/* The version of libmallocshim.so, such as "0.1.0". Never NULL. */
const char *mallocshim_version(void);

#ifdef __cplusplus
}
#endif

#endif
