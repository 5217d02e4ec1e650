/* figmem: RSS class by class (figures.h, fig_memory): the kernel's three
 * classes, each split into what it holds, the last part the class's rest. */
#include "config.h"

#include "figures.h"

#include <stdio.h>
#include <string.h>

#include "figfmt.h"

const char *const fig_mem_class_name[FMC_COUNT] = { "anonymous", "file-backed", "shared" };
const char *const fig_mem_class_key[FMC_COUNT] = { "anon", "file", "shmem" };

/* A virtual size is remarked when it is at least this, and this many
 * times RSS: address space reserved, not memory. */
#define VSZ_HUGE (64ull << 30)
#define VSZ_HUGE_RATIO 16

static void part(struct fig_mem *m, enum fig_mem_part_id id, const char *key, const char *name,
                 enum fig_mem_class cls, uint64_t v, int exact)
{
    m->part[id].key = key;
    m->part[id].name = name;
    m->part[id].cls = cls;
    m->part[id].v = v;
    m->part[id].exact = exact;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* a + b, at most UINT64_MAX: a snapshot's figures may be anything */
static uint64_t sat(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

/* Takes up to *need off *v; returns what it took. */
static void take(uint64_t *v, uint64_t *need)
{
    uint64_t t = min64(*v, *need);
    *v -= t;
    *need -= t;
}

/* Why it is not known, in words that depend only on what a JSON snapshot
 * keeps (the state), so that a snapshot reads back as it was written. */
static void why_not(const struct dump *d, struct fig_mem *m)
{
    if (d->state == DS_DEAD || d->state == DS_EXITED)
        snprintf(m->why, sizeof m->why, "not known: the process is gone, and only a running "
                 "process's /proc tells it");
    else
        snprintf(m->why, sizeof m->why, "not known: only a running process's /proc tells it, to "
                 "its user or root (a file, or a snapshot saved without it, has none)");
}

static void vsz_note(const struct dump *d, struct fig_mem *m)
{
    const struct dump_sample *s = dump_last(d);
    uint64_t vsz = m->have ? d->mem.vsz : s ? s->vsz : 0, rss = m->have ? m->rss : s ? s->rss : 0;
    char a[24], b[24], c[24];
    m->vsz = vsz;
    m->vsz_note[0] = '\0';
    if (vsz < VSZ_HUGE || vsz / VSZ_HUGE_RATIO < rss)
        return;
    int n = snprintf(m->vsz_note, sizeof m->vsz_note, "virtual size %s against %s RSS: address "
                     "space reserved, which costs no memory until it is touched",
                     figfmt_bytes(a, sizeof a, vsz), figfmt_bytes(b, sizeof b, rss));
    if (m->have && d->mem.largest_vsz >= vsz / 2 && n > 0 && (size_t)n < sizeof m->vsz_note)
        snprintf(m->vsz_note + n, sizeof m->vsz_note - (size_t)n, "; %s of it is one %smapping "
                 "with %s resident (a reservation such as InnoDB's)",
                 figfmt_bytes(c, sizeof c, d->mem.largest_vsz),
                 d->mem.largest_noaccess ? "no-access " : "",
                 figfmt_bytes(a, sizeof a, d->mem.largest_rss));
}

void fig_memory(const struct dump *d, struct fig_mem *m)
{
    const struct dump_mem *k = &d->mem;
    struct fig_alloc a;
    char x[24], y[24];

    memset(m, 0, sizeof *m);
    if (!k->have) {
        why_not(d, m);
        vsz_note(d, m);
        return;
    }
    m->have = 1;
    m->t_ns = k->t_ns;
    m->read_ns = k->read_ns;
    m->cls[FMC_ANON] = k->rss_anon;
    m->cls[FMC_FILE] = k->rss_file;
    m->cls[FMC_SHMEM] = k->rss_shmem;
    /* VmRSS is the three counters' sum (the JSON reader holds a snapshot
     * to it) */
    m->rss = sat(sat(k->rss_anon, k->rss_file), k->rss_shmem);

    /* Anonymous. The allocator lives in [heap] and anonymous mappings; how
     * much of them is its own only its count can tell. */
    fig_alloc_of(d, dump_last(d), &a);
    uint64_t room = sat(k->brk, k->anon_maps);
    uint64_t heap = a.have ? min64(a.footprint, room) : k->brk;
    uint64_t stacks = sat(k->main_stack, k->thread_stacks), files = k->anon_in_files;
    uint64_t sum = sat(sat(heap, stacks), files), need = sum > k->rss_anon ? sum - k->rss_anon : 0;
    take(&heap, &need);
    take(&files, &need);
    take(&stacks, &need);
    m->alloc_holds = a.have ? a.footprint : 0;
    part(m, FM_HEAP, "alloc_heap", "the allocator's heap", FMC_ANON, heap, 0);
    if (a.have)
        snprintf(m->part[FM_HEAP].how, sizeof m->part[FM_HEAP].how, "attributed: what the "
                 "allocator says it holds (%s, %s), within [heap] and the anonymous mappings "
                 "(%s)", a.fp_name, figfmt_bytes(x, sizeof x, a.footprint),
                 figfmt_bytes(y, sizeof y, room));
    else
        snprintf(m->part[FM_HEAP].how, sizeof m->part[FM_HEAP].how, "[heap] alone: the "
                 "allocator has no figures yet");
    part(m, FM_STACKS, "thread_stacks", "thread stacks", FMC_ANON, stacks, 0);
    snprintf(m->part[FM_STACKS].how, sizeof m->part[FM_STACKS].how, "by layout: [stack] and %llu "
             "read-write mapping%s above a no-access guard, as glibc makes a thread's stack (%llu "
             "thread%s)", (unsigned long long)k->nstacks, k->nstacks == 1 ? "" : "s",
             (unsigned long long)k->threads, k->threads == 1 ? "" : "s");
    part(m, FM_ANON_FILES, "written_file_pages", "written pages of mapped files", FMC_ANON, files, 1);
    snprintf(m->part[FM_ANON_FILES].how, sizeof m->part[FM_ANON_FILES].how, "the kernel's "
             "Anonymous of private file mappings: the programs' data, copied on write");
    sum = sat(sat(heap, stacks), files);
    part(m, FM_ANON_OTHER, "anon_other", "other anonymous", FMC_ANON,
         sum < k->rss_anon ? k->rss_anon - sum : 0, 0);
    snprintf(m->part[FM_ANON_OTHER].how, sizeof m->part[FM_ANON_OTHER].how, "the rest of the "
             "kernel's RssAnon: the program's own mmap (a buffer pool), the allocator's beyond "
             "its count");

    /* File-backed */
    uint64_t code = min64(k->file_code, k->rss_file);
    part(m, FM_CODE, "program_libraries", "the program and its libraries", FMC_FILE, code, 1);
    snprintf(m->part[FM_CODE].how, sizeof m->part[FM_CODE].how, "from smaps: files that have an "
             "executable mapping");
    part(m, FM_FILE_OTHER, "file_other", "other files", FMC_FILE, k->rss_file - code, 0);
    snprintf(m->part[FM_FILE_OTHER].how, sizeof m->part[FM_FILE_OTHER].how, "the rest of the "
             "kernel's RssFile: data files the process maps");

    /* Shared */
    uint64_t shim = min64(k->shim_seg, k->rss_shmem);
    part(m, FM_SHIM, "shim_segment", "the shim's own segment", FMC_SHMEM, shim, 1);
    snprintf(m->part[FM_SHIM].how, sizeof m->part[FM_SHIM].how, "from smaps: the memfd "
             "\"mallocshim\" that shimdump reads");
    part(m, FM_SHMEM_OTHER, "shmem_other", "other shared memory", FMC_SHMEM, k->rss_shmem - shim, 0);
    snprintf(m->part[FM_SHMEM_OTHER].how, sizeof m->part[FM_SHMEM_OTHER].how, "the rest of the "
             "kernel's RssShmem: tmpfs files, System V and shared anonymous mappings");
    vsz_note(d, m);
}
