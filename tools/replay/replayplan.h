/* replayplan: a trace turned into what each replay thread does, in a file
 * that the replay process reads as it goes (its memory stays the
 * allocator's). Built once per trace, replayed under every config.
 *
 * The plan of a thread is its prelude (its share of the starting heap:
 * PLAN_START and PLAN_START_RUN), then its main ops, one per event of the
 * thread that is replayed, in the thread's order. A block is named by a
 * slot (an index into the replay's array of pointers), not by its
 * address. A main op may wait for another thread's main op (dep_thread,
 * dep_index): a free or realloc of a block that another thread allocated
 * waits for that allocation.
 *
 * How events become ops. Every thread's events are merged in the order of
 * (t_ns, thread, position), a t_ns that goes back within a thread being
 * taken as the one before it, a realloc stepped twice: at its start, where
 * it takes its old block, and at its t_ns, where it makes its new one. In
 * that order a free pairs with the newest live block of its id and a
 * realloc's old block with the oldest (format 1: a realloc in one step,
 * every free with the oldest; trace.h says why). So every wait is
 * for an op earlier in that one order, which each thread's own order
 * follows: the waits can form no cycle, and the replay cannot deadlock.
 * A free whose id names no live block frees a block of the starting heap
 * of the class of its usable size (that block is then allocated, at that
 * size, in the freeing thread's prelude), or, when the class has none
 * left, an "orphan" made in the prelude the same way. The blocks of the
 * starting heap that nothing frees are dealt out to all threads' preludes
 * by class, each class's remaining usable bytes shared evenly between its
 * remaining blocks (within the class's bounds). A slot is reused only by
 * the thread that freed it, so reuse needs no wait. Events of calls that
 * failed at capture are not replayed, and neither is a realloc that
 * failed (its block stays live).
 *
 * Live bytes are counted in that same order, allocator-independent and
 * exact: the bytes asked for by the live blocks, the starting heap's at
 * the sizes its blocks are made with. */
#ifndef MALLOCSHIM_REPLAYPLAN_H
#define MALLOCSHIM_REPLAYPLAN_H

#include <stddef.h>
#include <stdint.h>

#include "traceread.h"

#define PLAN_MAGIC     0x324e414c5053534dULL   /* "MSSPLAN2" */
#define PLAN_NONE      UINT32_MAX              /* no slot, no thread */
#define PLAN_BLOCK_OPS 2048u                   /* ops per block of the file */

/* The op kinds: enum trace_op's calls (1..TRACE_OP_COUNT - 1), and: */
enum plan_kind {
    PLAN_START = 32,           /* a block of the starting heap: malloc(size) into slot */
    PLAN_START_RUN = 33,       /* n blocks of malloc(size) into slot, slot + 1, ... */
};

/* One op. A free names its slot; a realloc its old slot, and its result
 * goes to `slot` (the same one, or PLAN_NONE when realloc(p, 0) frees).
 * Sizes and alignments of frees are those the block was made with (a
 * sized or aligned delete of a block not made sized or aligned is
 * replayed unsized or unaligned). */
struct plan_op {
    uint64_t size;             /* bytes; calloc: the element size */
    uint64_t n;                /* calloc: elements; PLAN_START_RUN: blocks */
    uint64_t dep_index;        /* wait until thread dep_thread has done main op dep_index */
    uint64_t t_ns;             /* a main op's time in the trace, since the capture's start
                                  (in the merged order: never going back within a thread);
                                  0 in a prelude */
    uint32_t dep_thread;       /* PLAN_NONE: no wait */
    uint32_t slot;
    uint32_t old_slot;
    uint8_t kind;              /* enum trace_op or enum plan_kind */
    uint8_t align;             /* log2 */
    uint8_t flags;             /* enum trace_ev_flags */
    uint8_t reserved;
};

/* What the plan holds: exact figures, the same under every allocator. */
struct plan_stats {
    uint64_t events;           /* in the trace */
    uint64_t chunks;
    uint64_t dropped;          /* lost at capture (the trailer's count) */
    uint64_t duration_ns;      /* the capture's length (a cut trace: its last call's time) */
    uint64_t last_ns;          /* the last call's time, as the plan has it: what a paced
                                  replay waits for, whatever the trailer claims */
    uint64_t ops;              /* main ops: events replayed */
    uint64_t failed;           /* events of calls that failed at capture: not replayed */
    uint64_t cross;            /* main ops that wait for another thread */
    uint64_t start_blocks;     /* the starting heap (the header's counts) */
    uint64_t start_bytes;      /* its bytes, as the replay makes its blocks */
    uint64_t start_freed;      /* starting-heap blocks freed during the trace */
    uint64_t orphans;          /* frees of unknown blocks beyond the starting heap */
    uint64_t orphan_bytes;
    uint64_t peak_live;        /* the most live bytes (see above) */
    uint64_t end_live;         /* live bytes at the end */
    uint64_t slots;
    uint64_t clamped;          /* events whose t_ns went back within their thread */
    uint32_t threads;          /* replay threads (at least 1) */
    uint32_t reserved;
    uint64_t spaced_bytes;     /* the preludes' bytes in blocks below PLAN_SPACED_MAX */
};

/* The blocks of the starting heap that a replay may leave free space
 * beside (replayrun.c's spacers): those whose chunk is below glibc's
 * smallest mmap threshold (128 KiB), which it serves from its arenas. A
 * spacer of a larger block would be mapped and unmapped, leave no hole,
 * and raise glibc's dynamic mmap threshold for the rest of the replay.
 * glibc compares the chunk, the request with its 8-byte header rounded up
 * to 16 (x86-64), not the request. */
#define PLAN_SPACED_MAX (128u * 1024)
static inline int plan_spaced(uint64_t size)
{
    return size && ((size + 23) & ~(uint64_t)15) < PLAN_SPACED_MAX;
}

/* The file: this header at offset 0, blocks of ops anywhere after it,
 * the thread table at threads_off and the block table at blocks_off.
 * Thread t's blocks are entries first_block .. first_block + nblocks - 1
 * of the block table, in the order to replay them: its prelude first. */
struct plan_header {
    uint64_t magic;
    uint64_t size;             /* of the file */
    uint64_t nslots;
    uint64_t nblocks;
    uint64_t threads_off;      /* struct plan_thread[stats.threads] */
    uint64_t blocks_off;       /* struct plan_block[nblocks] */
    struct plan_stats stats;
};

struct plan_thread {
    uint32_t tid;              /* the recorded thread's */
    uint32_t reserved;
    uint64_t prelude_ops;
    uint64_t main_ops;
    uint64_t first_block;
    uint64_t nblocks;
};

struct plan_block {
    uint64_t off;              /* of its first op */
    uint32_t nops;             /* 1..PLAN_BLOCK_OPS */
    uint32_t prelude;          /* 1: prelude ops, 0: main ops */
};

_Static_assert(sizeof(struct plan_op) == 48, "plan_op layout");

/* Called now and then while plan_build reads the trace: events done of
 * total. */
typedef void (*plan_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/* Builds the plan of trace f into out_fd (an empty file, written with
 * pwrite; -1: no file, *st only) and fills *st. Returns 0; EBADMSG or
 * ENODATA when a chunk is corrupt or the file shrank (as
 * trace_read_chunk); E2BIG when the trace needs more than 2^32 - 1 slots;
 * ENOMEM; or the errno of a failed write (why set). Its time, and the
 * plan's size, grow with f->nevents: the caller bounds them first
 * (trace.h's TRACE_EVENTS_PER_BYTE_MAX, plan_size_estimate). */
int plan_build(struct trace_file *f, int out_fd, struct plan_stats *st, plan_progress_fn progress,
               void *ctx, char *why, size_t whylen);

/* As plan_build, and ENOSPC, before writing a byte past it, when the plan
 * would take more than max_bytes: the file never grows beyond what the
 * caller found room for. */
int plan_build_within(struct trace_file *f, int out_fd, uint64_t max_bytes, struct plan_stats *st,
                      plan_progress_fn progress, void *ctx, char *why, size_t whylen);

/* The bytes of f's plan when each event becomes one op and no free needs
 * a block of its own in a prelude: 48 bytes an event and the tables.
 * About what a capture's plan takes; a trace whose frees mostly free
 * blocks it never made (each then made in a prelude) takes up to twice
 * that, which plan_build_within's max_bytes bounds. */
uint64_t plan_size_estimate(const struct trace_file *f);

/* Checks a plan's header and tables read from a file of file_size bytes:
 * that every table and block lies inside it, the counts add up, and each
 * thread's ops are whole blocks. threads and blocks are the tables as
 * read. Returns 0 or EBADMSG. */
int plan_check(const struct plan_header *h, uint64_t file_size, const struct plan_thread *threads,
               const struct plan_block *blocks);

#endif
