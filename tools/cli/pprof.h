/* pprof: shimdump --pprof, a dump's call stacks as a heap profile in pprof's
 * format (profile.proto, gzip'd) for go tool pprof and the tools that read
 * it. It writes the figures layer's estimates (figures.h) and makes none. */
#ifndef MALLOCSHIM_PPROF_H
#define MALLOCSHIM_PPROF_H

#include <stddef.h>

#include "dump.h"

/* NULL in a build with --pprof; else why it has none, one line to follow
 * "--pprof: " ("not built in: ..."). */
const char *pprof_missing(void);

/* Makes the profile of d's call stacks: a gzip stream in a malloc'ed buffer,
 * *out of *len bytes, which the caller frees. Each stack is a sample of its
 * allocations since the start (alloc_objects, alloc_space) and one sample per
 * age bucket of its live blocks (inuse_objects, inuse_space, labelled with
 * the age, the mean size and its size class); live tracked blocks without a
 * stack are one sample under the frame "[no call stack]". Frames are as d has
 * them: named where dump_symbolize named them, else only their address and
 * object, for pprof to name. Returns 0; EINVAL when d has no call stacks
 * (stack_depth 0); ENOSYS when pprof_missing() is not NULL; ENOMEM. */
int pprof_build(const struct dump *d, unsigned char **out, size_t *len);

#endif
