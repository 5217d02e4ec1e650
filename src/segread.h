/* segread: consistent reads of a live segment: the per-class totals summed
 * over every thread's slot, and the estimate of live requested bytes. Used
 * by the preload's sampler thread and by the tools. */
#ifndef MALLOCSHIM_SEGREAD_H
#define MALLOCSHIM_SEGREAD_H

#include "seg.h"

/* Every function here takes the mapping `base` and `h`, a private copy of
 * its header that seg_validate accepted: sizes and offsets come from the
 * copy only, so a writer that changes the file cannot move a read outside
 * the mapping. */

/* Sums each class's counters over the slots, the counter slots, the
 * overflow slot and the retired total: a few classes at a time, first what
 * frees add, over all of them, then what allocations add (each a double
 * collect per slot and class, the retired seq around the whole, as seg.h
 * describes). Every free
 * in the sum is then of a block whose allocation is in it: a class's live
 * blocks (allocations less frees) are real blocks of that class, and its
 * live usable bytes fit its sizes, whatever threads free each other's
 * blocks meanwhile. Returns 0 for a consistent sum, or EAGAIN when a writer
 * kept a slot busy past the retry limit (a thread stopped mid-update, or a
 * dead process): the sum is then as close as could be read. Never blocks,
 * never allocates. */
int seg_sum(const void *base, const struct seg_header *h, struct seg_counters out[SIZECLASS_COUNT]);

/* Sums each class's counters and its tracked figures over the slots, as
 * seg_sum does, each side of a slot's two read together (one double
 * collect over both), so that with sample:1 a live block's request is in
 * trk where its usable size is in sum (but for a thread between the two
 * counts). Returns 0 or EAGAIN as seg_sum does. Never blocks, never
 * allocates. */
int seg_sum_classes(const void *base, const struct seg_header *h,
                    struct seg_counters sum[SIZECLASS_COUNT], struct seg_tracked trk[SIZECLASS_COUNT]);

/* Live requested bytes of a class from its sums: the tracked live
 * requested bytes when `exact`, else the class's live usable bytes (exact)
 * times the ratio of requested to usable bytes of its tracked live blocks,
 * weighted (seg.h, "Weights"), or, when none of them is tracked, of all its
 * allocations; at most its live usable bytes, exact or not. Pure; safe on
 * any values. */
uint64_t seg_live_req(const struct seg_counters *sum, const struct seg_tracked *t, int exact);

/* The standard error, in bytes, of a class's estimate `est` of its live
 * requested bytes (seg_live_req, not exact), a ratio estimator over the
 * tracked live blocks, each of requested size r, usable size u and weight
 * w: n of them, wu = sum w u, a = sum w (w - 1) r^2, b = sum w (w - 1) r u,
 * c = sum w (w - 1) u^2 (the variance of a Poisson sample's weighted sum).
 * With n < 2, the gap from est to the class's live usable bytes, its upper
 * bound. Pure; never fails. */
double seg_req_stderr(uint64_t live_usable, uint64_t est, double n, double wu, double a, double b,
                      double c);

/* Whether a segment's live requested bytes are exact: sample:1, not a fork
 * child's inherited counts, and no tracked block dropped (read from the
 * live header at base, with h the validated copy). */
int seg_req_exact(const void *base, const struct seg_header *h);

/* Reads a seqlock-guarded region of n bytes at src into dst. Returns 0, or
 * EAGAIN after the retry limit (dst then holds the last attempt). */
int seg_read_locked(const uint64_t *seq, const void *src, void *dst, size_t n);

#endif
