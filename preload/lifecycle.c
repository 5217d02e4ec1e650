/* lifecycle: record's start (record_start, record.h), and what fork and
 * exit do to the segment: a fork child gets a segment of its own, exit
 * removes the copy's name. */
#include "config.h"

#include "record.h"
#include "rec.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "capture.h"
#include "debug.h"
#include "fmt.h"
#include "log.h"
#include "seg.h"
#include "stack.h"

/* ---- State ---- */

/* Declared, with their rules, in rec.h. */
const struct backend_ops *be;
struct seg_header geo;
uint64_t realtime_offset;
struct seg_header *seg;
struct seg_slot *slots, *overflow, *retired;
struct seg_cslot *cslots;
struct seg_cstate *cstates;
struct seg_ages *ages;
struct seg_series *series;
struct seg_sample *samples;
struct seg_history *history;
struct seg_point *tier_points[SEG_TIERS_MAX];
struct seg_events *events;
struct seg_event *evs;
struct seg_track *table;
uint8_t *filter;
uint32_t track_mask;
uint64_t ev_mask;
long sample_n;
uint64_t sample_bytes;
long sample_cost_b;
int track_on = 1, stacks_on = 1;
uint32_t settings_gen;
uint64_t sample_seed;
char seg_path[CONF_PATH_MAX + 32];
int with_stacks;
/* Switches the process to plain forwarding to the backend (record_start's
 * `forward`), for a fork child that cannot have a segment of its own. Set
 * by record_start, read-only after. */
static void (*to_plain)(const struct backend_ops *table, const struct backend_ops *cxx);

/* ---- fork and exit ---- */

static void fork_prepare(void)
{
    stack_fork_prepare();
    pthread_mutex_lock(&sampler_mu);
    spin_lock(&fold_lock);
}

static void fork_parent(void)
{
    spin_unlock(&fold_lock);
    pthread_mutex_unlock(&sampler_mu);
    stack_fork_done(0);
}

/* Counts e's block in the filter (the child's rebuild). */
static void filter_add(struct seg_track *e, void *arg)
{
    (void)arg;
    filter_inc((const void *)(uintptr_t)e->addr);
}

/* The child gets its own live segment, a copy of the parent's as of the
 * fork (its heap is a copy too), over the same address so that every
 * pointer stays good, and its own copy file, named when it first tracks a
 * block. The parent's threads may still write the parent's segment while
 * it is copied, so the child's counts are marked approximate (inherited),
 * and its filter is rebuilt from its table so the two agree. The slots of
 * the parent's other threads, which the child does not have, fold into
 * retired. If no copy file can be made, the child records all the same
 * (shimdump reads it through /proc); if not even a live segment can be
 * had, it stops recording: never into the parent's. */
static void fork_child_segment(void)
{
    struct seg_slot *mine = rt.slot;
    size_t size = geo.total_size;
    int fd = -1, named = 0, err = ENOENT, parent_copy = seg_fd;
    int parent_live = same_live(live_fd) ? live_fd : -1;
    int new_live;
    struct stat st;

    spin_unlock(&fold_lock);
    pthread_mutex_init(&sampler_mu, NULL);
    pthread_mutex_init(&copy_mu, NULL);
    sampler_state = S_NONE;
    rt.tid = 0;
    seg_fd = -1;
    published = -1;
    copy_seq = copy_ns = copy_start = 0;
    copy_err = copy_cut = copy_done = 0;
    /* The parent's copy, known by identity: ours is made below. */
    int parent_copy_ok = same_file(parent_copy);

    void *m = live_create(size, &new_live, parent_live);
    if (m == MAP_FAILED || mremap(m, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, seg) == MAP_FAILED) {
        /* Nothing of its own: stop recording in this child, and let
         * nothing of it (a thread's exit folds its slot) write the
         * parent's segment: zero pages of its own over the range. */
        if (m != MAP_FAILED)
            munmap(m, size);
        if (new_live >= 0)
            close(new_live);
        mmap(seg, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (parent_live >= 0)
            close(parent_live);
        if (parent_copy_ok)
            close(parent_copy);
        seg_path[0] = '\0';
        log_msg("fork child %d: no memory for its segment; recording stops", (int)getpid());
        to_plain(be, be);
        stack_detach();
        return;
    }
    if (parent_live >= 0)
        close(parent_live);   /* the parent's; never one of the program's */
    live_set(new_live);

    if (seg_path[0] && parent_copy_ok) {
        /* seg_path is "<dir>/mallocshim.<pid>": the same with our pid. */
        char *slash = strrchr(seg_path, '/'), *dot = strrchr(seg_path, '.');
        char dir[sizeof seg_path];
        size_t dl = slash && slash != seg_path ? (size_t)(slash - seg_path) : 1;
        memcpy(dir, seg_path, dl);
        dir[dl] = '\0';
        fmt_buf(dot + 1, sizeof seg_path - (size_t)(dot + 1 - seg_path), "%u", (unsigned)getpid());
        fd = create_segment(dir, seg_path, &named);
        err = fd < 0 ? errno : ftruncate(fd, (off_t)size) != 0 || fstat(fd, &st) != 0 ? errno : 0;
        if (err == 0) {
            seg_fd = fd;
            seg_dev = st.st_dev;
            seg_ino = st.st_ino;
            flock(fd, LOCK_SH);
            published = named;
        } else if (fd >= 0) {
            close(fd);
            if (named)
                unlink(seg_path);
        }
    }
    if (parent_copy_ok)
        close(parent_copy);   /* the parent's file (checked before ours replaced its identity) */
    if (seg_fd < 0) {
        if (seg_path[0])
            log_msg("fork child %d: cannot create %s: %s; recording goes on, and `shimdump %d` "
                    "reads the process itself", (int)getpid(), seg_path, strerrordesc_np(err),
                    (int)getpid());
        seg_path[0] = '\0';
    }
    seg->pid = (uint32_t)getpid();
    seg->start_ns = clock_ns(CLOCK_REALTIME);
    seg->start_mono_ns = clock_ns(CLOCK_MONOTONIC);
    seg->heartbeat_ns = 0;
    seg->flags |= SEG_F_INHERITED;
    seg->live_fd = live_fd;
    /* The copy was made while the parent's threads went on writing: a
     * seqlock caught mid-write holds an odd sequence, which our own first
     * write would turn even while writing and odd after, for good (every
     * reader would then wait on it). Even again; what it guards is as
     * approximate as the rest of an inherited segment. */
    retired->seq &= ~(uint64_t)1;
    ages->seq &= ~(uint64_t)1;
    /* The sampling settings as this child holds them: its globals were
     * copied whole at the fork (under sampler_mu, which settings_apply
     * takes), while the header was copied after, maybe as the parent
     * changed its own. */
    seg->settings_seq &= ~(uint32_t)1;
    seg->sample = (uint32_t)sample_n;
    seg->sample_bytes = sample_bytes;
    seg->flags = (seg->flags & ~(uint32_t)(SEG_F_TRACK_OFF | SEG_F_STACKS_OFF)) |
                 (track_on ? 0 : SEG_F_TRACK_OFF) | (stacks_on ? 0 : SEG_F_STACKS_OFF);
    /* A ring's writer can have been part-way through only the entry at
     * its head (or the one after, had it stored head meanwhile): those
     * two, not every entry, whose pages would all become the child's. */
    for (uint64_t k = 0; k < 2; k++) {
        samples[(series->head + k) % geo.series_cap].seq &= ~(uint64_t)1;
        for (unsigned t = 0; t < geo.ntiers; t++)
            tier_points[t][(history->heads[t] + k) % geo.tier_cap[t]].last.seq &= ~(uint64_t)1;
    }
    /* The peak RSS is the child's own, from its first pass (as its peak
     * of live bytes), and no point of its history holds a sample of its
     * parent's: each tier's point under way at the fork, or that the
     * parent's sampler began while the copy was made, is left behind as
     * the parent's, and the child's first pass begins a point of its own.
     * The copy is made in address order while the parent's sampler goes on:
     * the series' peak, low in the segment, could be copied before a higher
     * RSS reached the history, at its end (shimdump's check then found a
     * point of the parent's above the peak, for the child's whole life). */
    series->peak_rss = series->peak_rss_ns = 0;
    for (unsigned t = 0; t < geo.ntiers; t++) {
        uint64_t n = history->heads[t];
        for (uint64_t k = 0; k < geo.tier_cap[t]; k++, n++) {
            const struct seg_point *e = &tier_points[t][n % geo.tier_cap[t]];
            if (e->number != n || e->samples == 0)
                break;
        }
        history->heads[t] = n;
    }
    /* Every counter slot, not only below cslots_high: a thread may have
     * claimed one and not yet raised it when the parent forked. And the
     * count of slots in use anew, for the same reason. */
    for (uint32_t i = 0; i < geo.nslots; i++)
        if (&slots[i] != mine && slots[i].state == SEG_SLOT_LIVE)
            fold_locked((uint64_t *)slots[i].cls, SLOT_WORDS, &slots[i].state);
    for (uint32_t i = 0; i < geo.ncslots; i++)
        if (i + 1 != rt.cslot && cstates[i].state == SEG_SLOT_LIVE)
            fold_locked((uint64_t *)cslots[i].cls, CSLOT_WORDS, &cstates[i].state);
    seg->slots_in_use = (mine != NULL && mine->state == SEG_SLOT_LIVE) ||
                        (rt.cslot != 0 && cstates[rt.cslot - 1].state == SEG_SLOT_LIVE);
    if (published == 1)
        copy_refresh(COPY_NOW);   /* created under its name (no O_TMPFILE): complete it now */
    if (hot.filter == filter_all)
        return;
    /* Every entry that an insert may have written, not only resident
     * pages: an entry the filter missed would never be untracked. Not the
     * rest: reading them would make all of the table's pages the child's. */
    memset(filter, 0, (size_t)1 << geo.filter_bits);
    for (uint32_t i = 0, end = table_written_end(); i < end; i++)
        if (table[i].addr > 1)
            filter_add(&table[i], NULL);
}

/* The child's own segment first; then stacks may be taken again (into it,
 * not the parent's). */
static void fork_child(void)
{
    capture_fork_child();   /* first: the segment's own may go to plain forwarding */
    fork_child_segment();
    stack_fork_done(1);
}

/* At normal exit the file goes, if the name is still ours (same inode: a
 * process in another pid namespace sharing the directory may use the name
 * too). A process that has switched to another user since start may not be
 * allowed to remove it; the FINISHED flag then says it exited. */
__attribute__((destructor)) static void record_exit(void)
{
    struct stat st;
    if (!seg || seg->pid != (uint32_t)getpid())
        return;
    capture_exit();   /* a capture under way gets its trailer */
    __atomic_fetch_or(&seg->flags, SEG_F_FINISHED, __ATOMIC_RELAXED);
    /* Under copy_mu, so that no name is given (publish) nor rewrite made
     * after this; unless the lock is not had in 2 s. */
    if (copy_lock(COPY_FINAL) != 0)
        return;
    if (published == 1 && same_file(seg_fd) &&
        !(lstat(seg_path, &st) == 0 && st.st_ino == seg_ino && st.st_dev == seg_dev &&
          unlink(seg_path) == 0))
        copy_write(COPY_FINAL);   /* the file stays: as of now, saying the process exited */
    copy_done = 1;
    pthread_mutex_unlock(&copy_mu);
}

/* ---- Start ---- */

static void fill_header(const struct conf *c, const struct seg_geometry *g)
{
    char text[SEG_CONFIG_MAX];
    seg->version = SEG_VERSION;
    seg_layout(seg, g);
    seg->pid = (uint32_t)getpid();
    seg->uid = (uint32_t)getuid();
    seg->start_ns = clock_ns(CLOCK_REALTIME);
    seg->start_mono_ns = clock_ns(CLOCK_MONOTONIC);
    realtime_offset = seg->start_ns - seg->start_mono_ns;
    seg->backend = (uint32_t)be->id;
    seg->sample = (uint32_t)c->sample;
    seg->sample_bytes = (uint64_t)c->sample_bytes;
    seg->interval_ms = (uint32_t)c->interval_ms;
    seg->flags = c->sample == 1 && c->track ? SEG_F_EXACT_REQ : 0;
    if (read_proc("/proc/self/comm", text, sizeof seg->comm)) {
        char *nl = strchr(text, '\n');
        if (nl)
            *nl = '\0';
        fmt_buf(seg->comm, sizeof seg->comm, "%s", text);
    }
    fmt_buf(seg->backend_name, sizeof seg->backend_name, "%s", be->name);
    be->version(seg->backend_version, sizeof seg->backend_version);
    conf_format(c, seg->config, sizeof seg->config);
}

static void map_regions(void)
{
    char *b = (char *)seg;
    geo = *seg;
    slots = (struct seg_slot *)(b + geo.off_slots);
    overflow = (struct seg_slot *)(b + geo.off_overflow);
    retired = (struct seg_slot *)(b + geo.off_retired);
    cstates = (struct seg_cstate *)(b + geo.off_cstate);
    cslots = (struct seg_cslot *)(b + geo.off_cslots);
    ages = (struct seg_ages *)(b + geo.off_ages);
    series = (struct seg_series *)(b + geo.off_series);
    samples = (struct seg_sample *)(series + 1);
    history = (struct seg_history *)(b + geo.off_history);
    for (unsigned t = 0; t < geo.ntiers; t++)
        tier_points[t] = (struct seg_point *)(b + seg_tier_off(&geo, t));
    events = (struct seg_events *)(b + geo.off_events);
    evs = (struct seg_event *)(events + 1);
    table = (struct seg_track *)(b + geo.off_track);
    filter = (uint8_t *)(b + geo.off_filter);
    track_mask = geo.track_cap - 1;
    ev_mask = (geo.events_cap & (geo.events_cap - 1)) == 0 ? geo.events_cap - 1 : 0;
    /* track_mask indexes the table; track.c counts its live entries in
     * groups sized for the default; filter_idx hashes to SEG_FILTER_BITS */
    SHIM_ASSERT(geo.track_cap != 0 && (geo.track_cap & track_mask) == 0 &&
                geo.track_cap <= SEG_TRACK_DEFAULT);
    SHIM_ASSERT(geo.filter_bits == SEG_FILTER_BITS);
}

const char *record_path(void)
{
    return seg_path;
}

long record_stack_depth(const struct conf *c)
{
    if (!(c->set_mask & (1u << CONF_K_STACKS)) && c->sample == 1)
        return 0;   /* unwinding every allocation: only when asked for */
    return c->stacks;
}

int record_start(const struct conf *c, const struct backend_ops *backend,
                 void (*forward)(const struct backend_ops *table, const struct backend_ops *cxx),
                 const struct backend_ops **ops)
{
    struct seg_geometry g;
    struct seg_header probe;
    void *map;
    int fd, lfd, err, named;
    struct stat st;

    if (!c->record)
        return ENOTSUP;
    seg_default_geometry(&g);
    g.series_cap = (uint32_t)c->series;
    g.nslots = (uint32_t)c->slots;
    g.ncslots = (uint32_t)c->counter_slots;
    g.stack_depth = (uint32_t)record_stack_depth(c);
    _Static_assert(CONF_HISTORY_MAX == SEG_TIERS_MAX, "the history key's tiers are the segment's");
    g.ntiers = c->history_n;
    for (unsigned t = 0; t < c->history_n; t++) {
        g.tier_step[t] = c->history_step[t];
        g.tier_cap[t] = c->history_points[t];
    }
    /* filter_idx (rec.h) hashes to SEG_FILTER_BITS bits, the default's;
     * nothing sets another */
    _Static_assert(SEG_FILTER_BITS <= 32, "filter_idx hashes to 32 bits");
    memset(&probe, 0, sizeof probe);
    if (seg_layout(&probe, &g) != 0)
        return EINVAL;
    fmt_buf(seg_path, sizeof seg_path, "%s/mallocshim.%u", c->shm_dir, (unsigned)getpid());
    map = live_create(probe.total_size, &lfd, -1);
    if (map == MAP_FAILED) {
        err = errno;
        log_msg("cannot map %llu bytes for the segment: %s; recording is off",
                (unsigned long long)probe.total_size, strerrordesc_np(err));
        seg_path[0] = '\0';
        return err;
    }
    if ((err = pthread_key_create(&slot_key, slot_exit)) != 0) {
        log_msg("cannot create a thread key: %s; recording is off", strerrordesc_np(err));
        munmap(map, probe.total_size);
        if (lfd >= 0)
            close(lfd);
        seg_path[0] = '\0';
        return err;
    }
    /* The copy (seg.h): sparse, its size fixed now, its pages written only
     * by copy_refresh. A setuid program's stays its effective user's:
     * handing a file that the process writes to the invoking user would let
     * that user steer a privileged process. */
    shm_dir_check(c->shm_dir);
    fd = create_segment(c->shm_dir, seg_path, &named);
    if (fd >= 0 && ftruncate(fd, (off_t)probe.total_size) == 0 && fstat(fd, &st) == 0) {
        seg_fd = fd;
        seg_dev = st.st_dev;
        seg_ino = st.st_ino;
        published = named;
        flock(fd, LOCK_SH);   /* "alive": see remove_stale */
        /* An earlier image of this pid (exec) that never named its file left
         * nothing; one that did, left this name: clear it now. */
        if (!named)
            remove_stale(seg_path);
    } else {
        err = errno;
        if (fd >= 0) {
            close(fd);
            if (named)
                unlink(seg_path);
        }
        log_msg("cannot create %s: %s; recording goes on, and `shimdump %d` reads the process "
                "itself", seg_path, strerrordesc_np(err), (int)getpid());
        seg_path[0] = '\0';
        published = -1;
    }
    be = backend;
    to_plain = forward;
    seg = map;
    live_set(lfd);
    fill_header(c, &g);
    seg->live_fd = live_fd;
    map_regions();
    if (geo.stack_depth) {
        with_stacks = stack_start(seg, &geo, (unsigned)c->unwind_threads) == 0;
        if (!with_stacks)
            seg->flags |= SEG_F_NO_UNWINDER;
    }
    sample_n = c->sample;
    sample_seed = (uint64_t)c->seed;
    tsc_start();
    sample_bytes = (uint64_t)c->sample_bytes;
    sample_cost_b = cost_b_of(sample_n, sample_bytes);
    track_on = c->track;
    if (!track_on)
        seg->flags |= SEG_F_TRACK_OFF | SEG_F_TRACK_WAS_OFF;
    sampler_init(c->interval_ms);
    pthread_atfork(fork_prepare, fork_parent, fork_child);

    const struct backend_ops *rec = rec_ops_init(backend);
    const struct backend_ops *first = capture_init(c, rec, forward);   /* capture_start's, or rec */

    /* The header is complete: make it findable. */
    __atomic_store_n(&seg->magic, SEG_MAGIC, __ATOMIC_RELEASE);
    if (geteuid() == 0)
        publish();   /* see publish(): root may become someone else first */
    else if (published == 1)
        copy_refresh(COPY_NOW);   /* created under its name (no O_TMPFILE): complete it now */
    *ops = first;
    return 0;
}
