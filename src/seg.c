/* seg: layout and validation of the shared-memory segment (see seg.h). */
#include "config.h"

#include "seg.h"

#include <errno.h>
#include <math.h>
#include <string.h>

static uint64_t align64(uint64_t v)
{
    return (v + 63) & ~(uint64_t)63;
}

void seg_default_geometry(struct seg_geometry *g)
{
    g->nslots = SEG_SLOTS_DEFAULT;
    g->ncslots = SEG_CSLOTS_DEFAULT;
    g->series_cap = SEG_SERIES_DEFAULT;
    g->events_cap = SEG_EVENTS_DEFAULT;
    g->track_cap = SEG_TRACK_DEFAULT;
    g->filter_bits = SEG_FILTER_BITS;
    g->stack_depth = 0;
    g->stacks_cap = SEG_STACKS_DEFAULT;
    g->objs_cap = SEG_OBJS_DEFAULT;
    g->ntiers = 2;
    g->tier_step[0] = SEG_TIER1_STEP_DEFAULT;
    g->tier_cap[0] = SEG_TIER1_POINTS_DEFAULT;
    g->tier_step[1] = SEG_TIER2_STEP_DEFAULT;
    g->tier_cap[1] = SEG_TIER2_POINTS_DEFAULT;
    g->tier_step[2] = g->tier_cap[2] = 0;
}

uint64_t seg_tier_off(const struct seg_header *h, unsigned t)
{
    uint64_t off = h->off_history + sizeof(struct seg_history);
    for (unsigned i = 0; i < t && i < SEG_TIERS_MAX; i++)
        off += (uint64_t)h->tier_cap[i] * sizeof(struct seg_point);
    return off;
}

static int tiers_ok(const struct seg_geometry *g)
{
    if (g->ntiers > SEG_TIERS_MAX)
        return 0;
    for (unsigned t = 0; t < g->ntiers; t++)
        if (g->tier_step[t] < 2 || g->tier_step[t] > SEG_TIER_STEP_MAX || g->tier_cap[t] < 2 ||
            g->tier_cap[t] > SEG_TIER_POINTS_MAX ||
            (t > 0 && g->tier_step[t] <= g->tier_step[t - 1]))
            return 0;
    return 1;
}

int seg_layout(struct seg_header *h, const struct seg_geometry *g)
{
    uint64_t off = align64(sizeof(struct seg_header));

    if (g->nslots < 1 || g->nslots > 65536 || g->ncslots > 65536 || g->series_cap < 1 || g->series_cap > (1u << 24) ||
        g->events_cap < 1 || g->events_cap > (1u << 24) || g->track_cap < 64 ||
        g->track_cap > (1u << 26) || g->filter_bits < 8 || g->filter_bits > 28 ||
        g->stack_depth > SEG_STACK_DEPTH_MAX || !tiers_ok(g))
        return EINVAL;
    if (g->stack_depth &&
        (g->stacks_cap < 1 || g->stacks_cap > (1u << 20) || g->objs_cap < 1 || g->objs_cap > 65536))
        return EINVAL;
    h->header_size = sizeof(struct seg_header);
    h->nclasses = SIZECLASS_COUNT;
    h->nbuckets = LIFEBUCKET_COUNT;
    h->nslots = g->nslots;
    h->series_cap = g->series_cap;
    h->events_cap = g->events_cap;
    h->track_cap = g->track_cap;
    h->filter_bits = g->filter_bits;
    h->stack_depth = g->stack_depth;
    h->stacks_cap = g->stack_depth ? g->stacks_cap : 0;
    h->objs_cap = g->stack_depth ? g->objs_cap : 0;
    h->stack_stride = g->stack_depth ? (uint32_t)seg_stack_stride(g->stack_depth) : 0;
    h->off_slots = off;
    off = align64(off + (uint64_t)g->nslots * sizeof(struct seg_slot));
    h->off_overflow = off;
    off = align64(off + sizeof(struct seg_slot));
    h->off_retired = off;
    off = align64(off + sizeof(struct seg_slot));
    h->off_ages = off;
    off = align64(off + sizeof(struct seg_ages));
    h->off_series = off;
    off = align64(off + sizeof(struct seg_series) + (uint64_t)g->series_cap * sizeof(struct seg_sample));
    h->off_events = off;
    off = align64(off + sizeof(struct seg_events) + (uint64_t)g->events_cap * sizeof(struct seg_event));
    h->off_track = off;
    off = align64(off + (uint64_t)g->track_cap * sizeof(struct seg_track));
    h->off_filter = off;
    off = align64(off + ((uint64_t)1 << g->filter_bits));
    h->off_stacks = off;
    if (h->stack_depth)
        off = align64(off + sizeof(struct seg_stacks) + (uint64_t)h->stacks_cap * h->stack_stride);
    h->off_objs = off;
    if (h->stack_depth)
        off = align64(off + sizeof(struct seg_objs) + (uint64_t)h->objs_cap * sizeof(struct seg_obj));
    h->ncslots = g->ncslots;
    h->off_cstate = h->off_cslots = 0;
    if (g->ncslots) {
        h->off_cstate = off;
        off = align64(off + (uint64_t)g->ncslots * sizeof(struct seg_cstate));
        off = (off + 4095) & ~(uint64_t)4095;
        h->off_cslots = off;
        off += (uint64_t)g->ncslots * sizeof(struct seg_cslot);
    }
    h->ntiers = g->ntiers;
    memset(h->tier_step, 0, sizeof h->tier_step);
    memset(h->tier_cap, 0, sizeof h->tier_cap);
    for (unsigned t = 0; t < g->ntiers; t++) {
        h->tier_step[t] = g->tier_step[t];
        h->tier_cap[t] = g->tier_cap[t];
    }
    h->off_history = align64(off);
    off = seg_tier_off(h, g->ntiers);
    h->total_size = (off + 4095) & ~(uint64_t)4095;
    return h->total_size < (1ull << 30) ? 0 : EINVAL;
}

static int inside(uint64_t off, uint64_t len, uint64_t size)
{
    return off <= size && len <= size - off;
}

int seg_validate(const struct seg_header *h, uint64_t file_size, uint32_t *version_out)
{
    struct seg_header want;
    struct seg_geometry g;

    if (version_out)
        *version_out = 0;
    if (file_size < 16 || h->magic != SEG_MAGIC)
        return EPROTO;
    if (version_out)
        *version_out = h->version;
    if (h->version != SEG_VERSION)
        return EPROTO;
    if (file_size < sizeof(struct seg_header) || h->header_size != sizeof(struct seg_header) ||
        h->nclasses != SIZECLASS_COUNT || h->nbuckets != LIFEBUCKET_COUNT)
        return EINVAL;
    /* Recompute the layout from the geometry: offsets must match exactly,
     * so nothing in the header can point anywhere else. */
    memset(&want, 0, sizeof want);
    g.nslots = h->nslots;
    g.ncslots = h->ncslots;
    g.series_cap = h->series_cap;
    g.events_cap = h->events_cap;
    g.track_cap = h->track_cap;
    g.filter_bits = h->filter_bits;
    g.stack_depth = h->stack_depth;
    g.stacks_cap = h->stacks_cap;
    g.objs_cap = h->objs_cap;
    g.ntiers = h->ntiers;
    for (unsigned t = 0; t < SEG_TIERS_MAX; t++) {
        g.tier_step[t] = h->tier_step[t];
        g.tier_cap[t] = h->tier_cap[t];
        if (t >= h->ntiers && (h->tier_step[t] || h->tier_cap[t]))
            return EINVAL;
    }
    if (seg_layout(&want, &g) != 0)
        return EINVAL;
    if (want.off_slots != h->off_slots || want.off_overflow != h->off_overflow ||
        want.off_retired != h->off_retired ||
        want.off_ages != h->off_ages || want.off_series != h->off_series ||
        want.off_events != h->off_events || want.off_track != h->off_track ||
        want.off_filter != h->off_filter || want.off_stacks != h->off_stacks ||
        want.off_objs != h->off_objs || want.stacks_cap != h->stacks_cap ||
        want.off_cstate != h->off_cstate || want.off_cslots != h->off_cslots ||
        want.objs_cap != h->objs_cap || want.stack_stride != h->stack_stride ||
        want.off_history != h->off_history || want.total_size != h->total_size)
        return EINVAL;
    if (!inside(0, h->total_size, file_size))
        return EINVAL;
    if (h->sample < 1 || h->backend > SEG_BACKEND_TCMALLOC)
        return EINVAL;
    return 0;
}

double seg_track_p(uint32_t sample, uint64_t sample_bytes, uint64_t usable)
{
    if (sample <= 1)
        return 1.0;
    double p = -expm1(log1p(-1.0 / sample) - (double)usable / seg_gap(sample_bytes));
    return p > 0 ? (p < 1 ? p : 1.0) : 1e-30;
}
