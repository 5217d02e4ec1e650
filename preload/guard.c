/* guard: the few calls, besides the malloc family, that the shim wraps,
 * because they could pull the ground from under the unwinders it runs
 * inside the program: closing libunwind's descriptors, alternate signal
 * stacks, and unwind tables registered with libgcc (which would make its
 * unwinder allocate under its own mutex). Each tells stack.c first, then
 * passes the call on, unchanged, to the next definition (another preloaded
 * library's, else libc's or libgcc_s's). */
#include "config.h"

#include "guard.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attr.h"
#include "stack.h"


#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* libc's own entry points under their internal names (exported by glibc
 * since 2.2.5), for calls made before guard_init: close stays a
 * cancellation point, as libc's is. */
int __close(int fd);
int __dup2(int oldfd, int newfd);

/* The next definitions. Synchronization: set once by guard_init, before
 * the shim is published as ready; read with relaxed loads (until set, the
 * fallbacks below serve). */
static int (*next_close)(int);
static int (*next_dup2)(int, int);
static int (*next_dup3)(int, int, int);
static int (*next_close_range)(unsigned int, unsigned int, int);
static void (*next_closefrom)(int);
static int (*next_sigaltstack)(const stack_t *, stack_t *);

#define NEXT(f) __atomic_load_n(&next_##f, __ATOMIC_RELAXED)

void guard_init(void)
{
    __atomic_store_n((void **)&next_close, dlsym(RTLD_NEXT, "close"), __ATOMIC_RELAXED);
    __atomic_store_n((void **)&next_dup2, dlsym(RTLD_NEXT, "dup2"), __ATOMIC_RELAXED);
    __atomic_store_n((void **)&next_dup3, dlsym(RTLD_NEXT, "dup3"), __ATOMIC_RELAXED);
    __atomic_store_n((void **)&next_close_range, dlsym(RTLD_NEXT, "close_range"),
                     __ATOMIC_RELAXED);
    __atomic_store_n((void **)&next_closefrom, dlsym(RTLD_NEXT, "closefrom"), __ATOMIC_RELAXED);
    __atomic_store_n((void **)&next_sigaltstack, dlsym(RTLD_NEXT, "sigaltstack"),
                     __ATOMIC_RELAXED);
}

/* A call that fails without closing anything (a bad oldfd, bad flags)
 * still stops stacks if it names libunwind's pipe: erring that way loses
 * stacks, the other way could lose the program's data. */
SHIM_EXPORT int close(int fd)
{
    if (fd >= 0 && stack_fds_closing((unsigned)fd, (unsigned)fd))
        return 0;
    int (*f)(int) = NEXT(close);
    return f ? f(fd) : __close(fd);
}

SHIM_EXPORT int dup2(int oldfd, int newfd)
{
    if (newfd >= 0 && newfd != oldfd)
        stack_fds_closing((unsigned)newfd, (unsigned)newfd);
    int (*f)(int, int) = NEXT(dup2);
    return f ? f(oldfd, newfd) : __dup2(oldfd, newfd);
}

/* The fallbacks of dup3, close_range and sigaltstack are the system calls
 * that glibc's own are. */
SHIM_EXPORT int dup3(int oldfd, int newfd, int flags)
{
    if (newfd >= 0 && newfd != oldfd)
        stack_fds_closing((unsigned)newfd, (unsigned)newfd);
    int (*f)(int, int, int) = NEXT(dup3);
    return f ? f(oldfd, newfd, flags) : (int)syscall(SYS_dup3, oldfd, newfd, flags);
}

SHIM_EXPORT int close_range(unsigned int lo, unsigned int hi, int flags)
{
    if (!(flags & CLOSE_RANGE_CLOEXEC) && lo <= hi)
        stack_fds_closing(lo, hi);
    int (*f)(unsigned int, unsigned int, int) = NEXT(close_range);
    return f ? f(lo, hi, flags) : (int)syscall(SYS_close_range, lo, hi, flags);
}

SHIM_EXPORT void closefrom(int lowfd)
{
    unsigned lo = lowfd < 0 ? 0 : (unsigned)lowfd;
    stack_fds_closing(lo, ~0U);
    void (*f)(int) = NEXT(closefrom);
    if (f) {
        f(lowfd);
        return;
    }
    /* Before guard_init only: close_range, as glibc does first (a kernel
     * without it, before 5.9, leaves the descriptors open here). */
    syscall(SYS_close_range, lo, ~0U, 0);
}

SHIM_EXPORT int sigaltstack(const stack_t *ss, stack_t *old)
{
    stack_t cur;
    int (*f)(const stack_t *, stack_t *) = NEXT(sigaltstack);
    int r = f ? f(ss, old) : (int)syscall(SYS_sigaltstack, ss, old);
    int saved = errno;
    /* What the kernel holds now, whatever r says (a new stack is set before
     * a bad `old` fails the call; ss may be where old points). */
    if (ss != NULL && syscall(SYS_sigaltstack, NULL, &cur) == 0)
        stack_altstack_set(cur.ss_sp, cur.ss_size, (cur.ss_flags & SS_DISABLE) != 0);
    errno = saved;
    return r;
}

/* libgcc_s's registration of unwind tables (JIT compilers, some runtimes):
 * from the first one on, stacks are taken with libunwind only (stack.c).
 * The next definition is looked up at the first call (libgcc_s is loaded
 * late or never by many programs) and kept once found. If libgcc_s is only
 * in a local scope (a library opened with RTLD_LOCAL that needs it),
 * RTLD_NEXT cannot see it, but the same copy is found by name. Without
 * one, the call does nothing, as the caller's weak reference would have. */
enum { RF_FRAME, RF_TABLE, RF_INFO, RF_INFO_TABLE, RF_INFO_BASES, RF_INFO_TABLE_BASES, RF_COUNT };
static const char *const frame_fn_name[RF_COUNT] = {
    "__register_frame", "__register_frame_table", "__register_frame_info",
    "__register_frame_info_table", "__register_frame_info_bases",
    "__register_frame_info_table_bases",
};
/* Synchronization: relaxed atomic; any thread may store the same value. */
static void *frame_fn[RF_COUNT];

static void *next_frame_fn(int i)
{
    void *f = __atomic_load_n(&frame_fn[i], __ATOMIC_RELAXED);
    if (f != NULL)
        return f;
    f = dlsym(RTLD_NEXT, frame_fn_name[i]);
    if (f == NULL) {
        void *h = dlopen("libgcc_s.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
        if (h != NULL)
            f = dlsym(h, frame_fn_name[i]);
    }
    __atomic_store_n(&frame_fn[i], f, __ATOMIC_RELAXED);
    return f;
}

struct object;   /* libgcc's, opaque here */
/* libgcc_s declares these in no installed header */
void __register_frame(void *begin);
void __register_frame_table(void *begin);
void __register_frame_info(const void *begin, struct object *ob);
void __register_frame_info_table(void *begin, struct object *ob);
void __register_frame_info_bases(const void *begin, struct object *ob, void *tbase, void *dbase);
void __register_frame_info_table_bases(void *begin, struct object *ob, void *tbase, void *dbase);

SHIM_EXPORT void __register_frame(void *begin)
{
    stack_frames_registered();
    void (*f)(void *) = next_frame_fn(RF_FRAME);
    if (f)
        f(begin);
}

SHIM_EXPORT void __register_frame_table(void *begin)
{
    stack_frames_registered();
    void (*f)(void *) = next_frame_fn(RF_TABLE);
    if (f)
        f(begin);
}

SHIM_EXPORT void __register_frame_info(const void *begin, struct object *ob)
{
    stack_frames_registered();
    void (*f)(const void *, struct object *) = next_frame_fn(RF_INFO);
    if (f)
        f(begin, ob);
}

SHIM_EXPORT void __register_frame_info_table(void *begin, struct object *ob)
{
    stack_frames_registered();
    void (*f)(void *, struct object *) = next_frame_fn(RF_INFO_TABLE);
    if (f)
        f(begin, ob);
}

SHIM_EXPORT void __register_frame_info_bases(const void *begin, struct object *ob, void *tbase,
                                             void *dbase)
{
    stack_frames_registered();
    void (*f)(const void *, struct object *, void *, void *) = next_frame_fn(RF_INFO_BASES);
    if (f)
        f(begin, ob, tbase, dbase);
}

SHIM_EXPORT void __register_frame_info_table_bases(void *begin, struct object *ob, void *tbase,
                                                   void *dbase)
{
    stack_frames_registered();
    void (*f)(void *, struct object *, void *, void *) = next_frame_fn(RF_INFO_TABLE_BASES);
    if (f)
        f(begin, ob, tbase, dbase);
}
