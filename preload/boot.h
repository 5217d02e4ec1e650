/* boot: the static buffer that serves allocations made while a backend is
 * being set up (dlopen, dlsym, TLS, constructors of its dependencies). */
#ifndef MALLOCSHIM_BOOT_H
#define MALLOCSHIM_BOOT_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

#define BOOT_SIZE (1u << 20)

/* The buffer. Blocks are carved from it by an atomic bump pointer and never
 * reused, so a block is zero when handed out and free() of one is a no-op.
 * Synchronization: boot_top is advanced with a CAS; a block's header is
 * written only by the thread that won that range. */
extern unsigned char boot_buf[BOOT_SIZE];

/* True when p points into the buffer. One subtraction and one compare: this
 * runs on every free(), so it must stay that cheap. */
static inline int boot_owns(const void *p)
{
    return (uintptr_t)p - (uintptr_t)boot_buf < BOOT_SIZE;
}

/* Returns a zeroed block of `size` bytes aligned to `align` (a power of two;
 * at least 16 is used), or NULL with errno = ENOMEM when the buffer is
 * exhausted, which is said once on stderr. Lock-free; never calls malloc. */
void *boot_alloc(size_t size, size_t align);

/* The size that was asked of boot_alloc for p. Precondition: boot_owns(p). */
size_t boot_size(const void *p);

/* Bytes of the buffer used so far, headers and padding included. */
size_t boot_used(void);

#pragma GCC visibility pop

#endif
