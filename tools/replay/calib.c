/* calib: the replay against the real process (calib.h). */
#include "config.h"

#include "calib.h"

#include <stdio.h>
#include <string.h>

#include "trace.h"

void calib_real_of(const struct trace_file *f, struct calib_real *out)
{
    memset(out, 0, sizeof *out);
    int v4 = f->hdr.version >= 4;
    out->from_start = v4 && (f->hdr.flags & TRACE_F_FROM_START);
    out->mid_life = !out->from_start;
    if (!v4 || !(f->hdr.flags & TRACE_F_RSS)) {
        if (v4)
            snprintf(out->why, sizeof out->why, "the trace carries no real RSS (its writer read none)");
        else
            snprintf(out->why, sizeof out->why, "a trace of format %u carries no real RSS",
                     f->hdr.version);
        return;
    }
    out->start_rss = f->hdr.rss_start;
    out->hwm_before = f->hdr.hwm_start;
    if (f->cut) {
        snprintf(out->why, sizeof out->why, "the trace has no trailer, where the real peak is");
        return;
    }
    out->peak = f->trl.rss_peak;
    out->end = f->trl.rss_end;
    if (!out->peak) {
        snprintf(out->why, sizeof out->why, "the capture could not read the real peak");
        return;
    }
    out->known = 1;
    out->peak_exact = out->peak > out->hwm_before;
    out->history_higher = out->mid_life && out->hwm_before > out->peak;
}

int calib_keeps_freed(const char *backend)
{
    return !strcmp(backend, "glibc") || !strcmp(backend, "tcmalloc");
}

static uint64_t shifted(uint64_t real, uint64_t x, uint64_t cap)
{
    if (x >= cap)
        return real + (x - cap);
    return real > cap - x ? real - (cap - x) : 0;
}

void calib_predict(const struct calib_real *real, int cap_ok, uint64_t cap_peak, uint64_t cap_end,
                   const char *backend, int captured, uint64_t peak, uint64_t end,
                   struct calib_pred *out)
{
    memset(out, 0, sizeof *out);
    out->may_hold_more = real->mid_life && !captured && calib_keeps_freed(backend);
    if (!real->known || !cap_ok)
        return;
    out->known = 1;
    out->peak = shifted(real->peak, peak, cap_peak);
    out->end = shifted(real->end, end, cap_end);
    out->error = (double)cap_peak / (double)real->peak - 1.0;
    out->error_bytes = (int64_t)cap_peak - (int64_t)real->peak;
}
