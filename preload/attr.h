/* attr: the compiler attributes the preload's files share: what the shim
 * exports (everything else is hidden, -fvisibility=hidden and the version
 * script), and branch hints for the hot path. */
#ifndef MALLOCSHIM_ATTR_H
#define MALLOCSHIM_ATTR_H

/* An entry point the shim exports: the malloc family, the C++ operators,
 * the wrapped libc calls and the mallocshim_ API (preload/exports.map and
 * t/cli/exports.sh pin the list). */
#define SHIM_EXPORT __attribute__((visibility("default")))

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#endif
