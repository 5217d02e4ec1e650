/* guard: the libc calls besides the malloc family that the shim wraps for
 * the unwinder's sake (descriptor closes, alternate signal stacks). */
#ifndef MALLOCSHIM_GUARD_H
#define MALLOCSHIM_GUARD_H

#pragma GCC visibility push(hidden)

/* Finds the next definitions of the wrapped calls (another preloaded
 * library's, else libc's), so that the wrappers pass each call on along the
 * chain. Called once, by the initializing thread (dlsym may allocate: the
 * bootstrap buffer serves it). Until then the wrappers call libc directly. */
void guard_init(void);

#pragma GCC visibility pop

#endif
