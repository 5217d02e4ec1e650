/* capture: records every call of the malloc family, as the program makes
 * it, into a trace file (src/trace.h) for a number of seconds, when
 * `shimdump --capture` asks (src/capctl.h); or from the shim's start to
 * the size limit or the exit, with `capture_start` (a whole life). Part of
 * record: its state is rec.h's, its writer is the sampler thread.
 *
 * Off, it costs nothing on the calls: while no capture runs, the active
 * tables are record's own. A capture swaps in tables of wrappers (cap_ops
 * for the C entry points, cap_cxx_ops for C++'s operators, which record
 * new and delete by their names)
 * that call record's functions and put one struct trace_event each into
 * the calling thread's own buffers (no lock; a thread waits, at most
 * CAP_WAIT_NS, only when all its buffers are full), and swaps record's back
 * at the end. */
#ifndef MALLOCSHIM_CAPTURE_H
#define MALLOCSHIM_CAPTURE_H

#include <time.h>

#include "backend.h"
#include "conf.h"

#pragma GCC visibility push(hidden)

/* Keeps what a capture needs of the config (`capture`, `capture_max`, the
 * config's text), wraps `rec` (record's table) into cap_ops, and keeps
 * `set_table`, which makes a table the active one (dispatch's). With
 * `capture_start`, starts a capture from here (no time limit, into a new
 * file; one line on stderr where it cannot). Returns the table for
 * record_start to hand out: the capture's, or rec. Called once by
 * record_start. */
const struct backend_ops *capture_init(const struct conf *c, const struct backend_ops *rec,
                  void (*set_table)(const struct backend_ops *table, const struct backend_ops *cxx));

/* The sampler thread, at its start: listens for shimdump (capctl.h),
 * unless the config says capture:off. */
void capture_listen(void);

/* The sampler thread, at each look while no capture runs: answers the
 * requests waiting, and starts a capture for one of them. */
void capture_poll(void);

/* Whether a capture is under way (the sampler then calls capture_tick
 * often, and waits with capture_wait). */
int capture_active(void);

/* The sampler thread, during a capture: writes the buffers that threads
 * have filled, and ends the capture when its time is up, the file has
 * reached its limit, a write failed, or shimdump asked. */
void capture_tick(void);

/* The sampler thread, during a capture: waits until `until` (absolute,
 * CLOCK_MONOTONIC) or a thread's buffer fills. */
void capture_wait(const struct timespec *until);

/* The sampler thread, on its way out: ends a capture under way, whole. */
void capture_end_sampler(void);

/* A thread of the exiting process (record_exit): asks the sampler to end
 * a capture under way, and waits for it 5 s at most. */
void capture_exit(void);

/* The fork child's handler: the parent's capture is not the child's; the
 * record table back, the parent's descriptors closed. */
void capture_fork_child(void);

#pragma GCC visibility pop

#endif
