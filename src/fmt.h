/* fmt: a tiny snprintf for code that must not touch stdio or malloc
 * (the preload's init and error paths). */
#ifndef MALLOCSHIM_FMT_H
#define MALLOCSHIM_FMT_H

#include <stdarg.h>
#include <stddef.h>

/* Formats into buf[len], always NUL-terminated when len > 0, truncating as
 * needed. Supports %s %c %d %u %ld %lu %lld %llu %zu %x %lx %p and %%; no
 * width or precision. Returns the number of bytes written, without the NUL.
 * Never allocates, never calls stdio, async-signal-safe. */
size_t fmt_buf(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* As fmt_buf, with a va_list. */
size_t fmt_vbuf(char *buf, size_t len, const char *fmt, va_list ap);

#endif
