/* record: counts every allocation into the shared-memory segment (seg.h),
 * tracks a sample of them for lifetimes, and keeps the time series. It sits
 * on the dispatch path as a table of operations that wraps the backend's,
 * and knows nothing of dispatch itself: the one thing it needs of it, a way
 * to change the active table, is given to record_start. Its files share
 * rec.h. */
#ifndef MALLOCSHIM_RECORD_H
#define MALLOCSHIM_RECORD_H

#include "backend.h"
#include "conf.h"

#pragma GCC visibility push(hidden)

/* Creates the segment for this process and returns, in *ops, the recording
 * table that wraps `backend`. Called once by the initializing thread, before
 * the first block is handed out. Returns 0, or an errno value after one line
 * on stderr; then the caller keeps `backend` and nothing is recorded.
 * `forward` (not NULL) makes the tables it is given (the C entry points',
 * the C++ operators') the active ones: record
 * calls it in a fork child that cannot have a segment of its own (with
 * `backend`: plain forwarding), from the child's fork handler, so it must
 * not allocate or take a lock; and to swap a capture's table in and out
 * (capture.h). */
int record_start(const struct conf *c, const struct backend_ops *backend,
                 void (*forward)(const struct backend_ops *table, const struct backend_ops *cxx),
                 const struct backend_ops **ops);

/* The segment's path (named at the first tracked allocation). */
const char *record_path(void);

/* The call-stack frames kept per tracked block for config c: `stacks`,
 * except that with sample:1 and no stacks key given it is 0 (unwinding
 * every allocation is slow; asked for by name only). */
long record_stack_depth(const struct conf *c);

#pragma GCC visibility pop

#endif
