/* calib: shimreplay's calibration: the replay under the captured config
 * against what the process really held over the capture (trace.h, format
 * 4), each config's prediction as the real figure plus its replayed
 * difference, and the limits of a capture taken mid-life. */
#ifndef MALLOCSHIM_CALIB_H
#define MALLOCSHIM_CALIB_H

#include <stdint.h>

#include "traceread.h"

/* What the trace says the process really did. */
struct calib_real {
    int known;                 /* the real peak is in the trace */
    char why[128];             /* when not known: why, one phrase */
    int from_start;            /* captured from the shim's start (capture_start) */
    int mid_life;              /* !from_start */
    uint64_t start_rss, hwm_before, peak, end;   /* bytes; 0 where not known */
    int peak_exact;            /* the peak is the kernel's VmHWM, else sampled */
    int history_higher;        /* mid-life, and hwm_before > peak: the life before held more */
};

/* Fills *out from f's header and trailer: known only for a trace of
 * format 4 or later with TRACE_F_RSS, its trailer present and its peak
 * above 0. Never fails. */
void calib_real_of(const struct trace_file *f, struct calib_real *out);

/* Whether the allocator of `backend` keeps freed memory for long (glibc's
 * arenas, tcmalloc's page heap), so that a life before the capture that
 * held more may leave it holding more than the replay says: glibc and
 * tcmalloc, not jemalloc (its decay gives dirty pages back within
 * seconds). */
int calib_keeps_freed(const char *backend);

/* One config's prediction. */
struct calib_pred {
    int known;                 /* real->known and the captured config replayed */
    uint64_t peak, end;        /* real + (replayed - replayed_captured), 0 at least */
    double error;              /* replayed_captured / real peak - 1: the same for every config */
    int64_t error_bytes;       /* replayed_captured - real peak */
    int may_hold_more;         /* a mid-life capture, a config other than the captured
                                  one, whose allocator keeps freed memory */
};

/* The prediction for a config of `backend` (`captured`: the captured
 * config) whose replay peaked at `peak` and ended at `end`, given the
 * captured config's replay (cap_ok: it ran; cap_peak, cap_end). The
 * captured config's real figures hold its life before the capture; no
 * other config's do: one that keeps freed memory may hold more of that
 * life than the replay shows (may_hold_more), whatever the calibration. */
void calib_predict(const struct calib_real *real, int cap_ok, uint64_t cap_peak, uint64_t cap_end,
                   const char *backend, int captured, uint64_t peak, uint64_t end,
                   struct calib_pred *out);

#endif
