/* stack: the call stacks of tracked allocations (libgcc's unwinder and
 * libunwind, both loaded privately),
 * stored once each in the segment's stack table, and the list of mapped
 * objects that a reader needs to name their frames. */
#ifndef MALLOCSHIM_STACK_H
#define MALLOCSHIM_STACK_H

#include <stddef.h>
#include <stdint.h>

#include "seg.h"

#pragma GCC visibility push(hidden)

/* Loads the unwinder and lists the objects mapped now. `seg` is the
 * segment, `geo` the writer's private copy of its header (stack_depth > 0).
 * Called once, by the initializing thread, before any other function here.
 * Returns 0, or an errno value after one line on stderr; stack_capture then
 * records no stacks (every block gets stack 0). */
int stack_start(struct seg_header *seg, const struct seg_header *geo, unsigned unwind_threads);

/* The call stack of the allocation being tracked, as an id for
 * seg_track.stack: 1 + its index in the stack table, or 0 when none was
 * taken (stacks off, the unwinder re-entered or failed, on an alternate
 * signal stack, a fork under way, the table full: each counted in struct
 * seg_stacks). Counts the allocation and its `req` bytes on that stack.
 * Waits for no other thread of the shim's, though libunwind may take the
 * loader's lock (dl_iterate_phdr) and its own; any allocation it makes
 * (its thread-local data) re-enters malloc, which then tracks without a
 * stack. w: the block's weight (seg.h, "Weights"). */
uint32_t stack_capture(size_t req, float w);

/* Counts the free of a tracked block of stack `id` (0: nothing to do)
 * whose life fell in lifetime bucket `bucket` (LIFEBUCKET_COUNT: a free
 * whose lifetime is not known), of weight w. */
void stack_free(uint32_t id, unsigned bucket, float w);

/* Appends the objects mapped since the last call to the segment's list.
 * Called by the sampler thread only (and by stack_start). */
void stack_refresh_objects(void);

/* Descriptors lo..hi (inclusive) are about to be closed or replaced by
 * the program (guard.c's wrappers): if either end of libunwind's pipe is
 * among them, stacks stop for good (one line on stderr, at the next
 * allocation that would have taken one), and this waits up to 100 ms for
 * the captures under way in other threads. Nothing in a vfork child.
 * Returns 1 when the caller must not close lo after all: libunwind itself
 * closing what is no longer its pipe (closed by a raw system call and
 * reused); else 0. Cheap when the pipe is not among them. */
int stack_fds_closing(unsigned lo, unsigned hi);

/* Checks that libunwind's pipe is still open under its numbers, for closes
 * that bypassed libc; stops stacks as above (the line at once) when not.
 * Sampler thread, once per interval_ms. */
void stack_check_fds(void);

/* The calling thread's alternate signal stack is now [sp, sp+size), or
 * none (disable != 0): no stack is taken while running on it, where the
 * unwinder could run off its end. Async-signal-safe. */
void stack_altstack_set(const void *sp, size_t size, int disable);

/* The calling thread is exiting (its key destructor): it gives back its
 * place on libunwind, if it has one. */
void stack_thread_exit(void);

/* The program registers unwind tables of its own (guard.c's wrappers of
 * __register_frame and its kin): libgcc's unwinder would then take a mutex
 * and allocate under it, so every later stack is taken with libunwind. */
void stack_frames_registered(void);

/* This process's segment is not its own (a fork child that could not make
 * one): take no stacks and touch nothing of the segment from now on. */
void stack_detach(void);

/* Around fork: prepare waits (up to 100 ms) until no thread is inside the
 * unwinder, whose locks a child could otherwise inherit held, and keeps new
 * captures out until stack_fork_done (child: 1 in the child, 0 in the
 * parent). A child forked while a capture did not drain takes no stacks. */
void stack_fork_prepare(void);
void stack_fork_done(int child);

#pragma GCC visibility pop

#endif
