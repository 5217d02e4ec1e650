/* debug: SHIM_ASSERT, the recorder's internal assertions. They are compiled
 * in a build configured with --enable-debug (MALLOCSHIM_DEBUG, config.h)
 * and are nothing at all in any other build. */
#ifndef MALLOCSHIM_DEBUG_H
#define MALLOCSHIM_DEBUG_H

#ifdef MALLOCSHIM_DEBUG

#include <stdlib.h>

#include "attr.h"
#include "log.h"

#define DEBUG_STR_(x) #x
#define DEBUG_STR(x) DEBUG_STR_(x)
/* The whole line, made at compile time: nothing is formatted at run time.
 * `text` is the condition as written (stringified by SHIM_ASSERT, before
 * its macros are expanded). */
#define DEBUG_LINE(text) \
    "mallocshim: assertion failed: " text " (" __FILE__ ":" DEBUG_STR(__LINE__) ")\n"

/* Writes the n bytes of `line` to stderr and aborts. Safe inside malloc:
 * log_raw is write(2) alone (no stdio, no allocation, no lock). */
__attribute__((noreturn, cold)) static inline void debug_fail(const char *line, unsigned long n)
{
    log_raw(line, n);
    abort();
}

/* In a debug build: when cond is false, one line
 * "mallocshim: assertion failed: <cond> (<file>:<line>)" on stderr, then
 * abort(). In any other build, cond is not evaluated and no code is made
 * (sizeof only type-checks it, and counts its variables as used), so it
 * must have no side effect the program relies on. */
#define SHIM_ASSERT(cond)                                                \
    do {                                                                 \
        if (unlikely(!(cond)))                                           \
            debug_fail(DEBUG_LINE(#cond), sizeof DEBUG_LINE(#cond) - 1); \
    } while (0)

#else

#define SHIM_ASSERT(cond) ((void)sizeof(!(cond)))

#endif

#endif
