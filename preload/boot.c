/* boot: the static buffer that serves allocations made while a backend is
 * being set up. */
#include "config.h"

#include "boot.h"

#include <errno.h>

#include "log.h"

#define BOOT_HDR 16   /* the size is stored in the last 8 bytes before a block */

unsigned char boot_buf[BOOT_SIZE] __attribute__((aligned(4096)));

/* Synchronization: atomic, advanced by CAS (acq_rel); never goes back. */
static size_t boot_top;
/* Synchronization: atomic exchange, so that only one thread says it. */
static int boot_warned;

void *boot_alloc(size_t size, size_t align)
{
    size_t top = __atomic_load_n(&boot_top, __ATOMIC_ACQUIRE);
    size_t start, end;

    if (align < BOOT_HDR)
        align = BOOT_HDR;
    do {
        /* Align the address, not the offset: the buffer itself is only
         * page-aligned. */
        uintptr_t base = (uintptr_t)boot_buf;
        start = (size_t)(((base + top + BOOT_HDR + align - 1) & ~(uintptr_t)(align - 1)) - base);
        if (align > BOOT_SIZE || size > BOOT_SIZE || start > BOOT_SIZE - size) {
            if (!__atomic_exchange_n(&boot_warned, 1, __ATOMIC_RELAXED))
                log_msg("bootstrap buffer (%u bytes) exhausted by a request of %zu bytes "
                        "made while the backend was starting", BOOT_SIZE, size);
            errno = ENOMEM;
            return NULL;
        }
        end = (start + size + 15) & ~(size_t)15;
        if (end > BOOT_SIZE)
            end = BOOT_SIZE;
    } while (!__atomic_compare_exchange_n(&boot_top, &top, end, 1, __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE));
    ((size_t *)(boot_buf + start))[-1] = size;
    return boot_buf + start;
}

size_t boot_size(const void *p)
{
    return ((const size_t *)p)[-1];
}

size_t boot_used(void)
{
    return __atomic_load_n(&boot_top, __ATOMIC_RELAXED);
}
