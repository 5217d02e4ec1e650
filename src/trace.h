/* trace: the on-disk format of an allocation trace (every malloc-family and
 * C++ new/delete call of a process over a capture), its writer and the
 * checks a reader makes. The one place that defines the format.
 *
 * A trace file is, in this order:
 *   struct trace_header    at offset 0: who was captured, when, and the
 *                          STARTING HEAP: per size class, the blocks live
 *                          when the capture began (a capture starts in the
 *                          middle of a process's life; a full cache is
 *                          full before anyone looks);
 *   chunks, each           struct trace_chunk, then `csize` bytes: one
 *                          zstd frame (content size in its header, content
 *                          checksum on) that decompresses to exactly
 *                          `count` struct trace_event of one thread, as
 *                          byte planes (format 3, below);
 *   struct trace_trailer   the totals (chunks, events written, events
 *                          dropped), which end the file.
 * A file without its trailer is truncated: the capture did not finish or
 * the file was cut. Nothing follows the trailer.
 *
 * Writer protocol (the capture side, inside the preload). Threads record
 * their events into their own fixed-size buffers; one writer thread turns
 * each full (or, at the end, partial) buffer into one chunk and appends it
 * with trace_writer_chunk. So the writer never allocates: the compressor
 * lives in a workspace the caller provides (trace_writer_workspace), and
 * every record has a fixed size. Rules that make a trace replayable:
 * - A thread's chunks appear in the file in the order of its events, and
 *   chunk `seq` numbers count 0, 1, 2... over the file. A reader merging
 *   the threads holds one chunk of each at once (at most 1 GiB in all,
 *   tools/replay/replayplan.c): a few thousand events a chunk (4096: 160 KiB)
 *   keeps that small.
 * - t_ns is CLOCK_MONOTONIC minus the header's start_mono_ns, read by the
 *   calling thread: before the allocator is called, for a free; after it
 *   returned, for an allocation and for a realloc. A block is freed only
 *   after its allocation in time, and its address given again only after
 *   its free, so events sorted by time pair each free with its allocation.
 *   A realloc is the one call that both frees and allocates: stamped after
 *   its call (so that the block it returns is never listed before the
 *   free that let it go), its old block may be given to another thread,
 *   and even freed by it, before the realloc's own time. So readers pair:
 *   a free with the NEWEST live block at its address. A realloc also
 *   carries when its call began (its align and reserved bytes: the call's
 *   length, trace_dur_encode, rounded down, so never before the call
 *   began), and readers take its old block at that time, the OLDEST live
 *   block at that address then, and make its new one at t_ns: each block
 *   is then taken while it is live and made after its address was let go.
 *   (The rounding, under 1/2048 of a call's length, errs only when the
 *   allocator lets the old block go, and another thread gets it, within
 *   that sliver of the call's start; realloc lets it go at the end.) The
 *   order assumes the clock is consistent across threads: the TSC mapping
 *   (preload/clock.c) is, up to its fallback to clock_gettime.
 *   (Format 1 stamped a realloc before its call, and paired every free
 *   with the OLDEST block: wrong when, while the realloc waited, another
 *   thread both got and freed the address it then returned. Readers still
 *   read format 1 that way.)
 * - The starting heap is taken at the same instant as start_mono_ns
 *   (exactly, from the segment's counters: live count and live usable
 *   bytes per class). A free of a block allocated before the capture
 *   carries the block's usable size, and so its class.
 *
 * - Byte planes (format 3): a chunk's frame holds its events transposed,
 *   byte b of event i at b * count + i: 40 planes of `count` bytes. Alike
 *   bytes then lie together (an address's high bytes, a time's, a size's
 *   barely change from one call to the next), which zstd compresses
 *   smaller and much faster: on 3000 chunks of a bcsim capture, 46 ns
 *   and 6.97 bytes an event at level 1 where the events as they are took
 *   76 ns and 7.63 bytes, and 34 ns and 8.05 bytes at level -3 (the
 *   capture's), transposing (7 ns) included.
 *   (Formats 1 and 2 held the events as they are; readers still read them
 *   so.)
 *
 * Readers trust nothing: trace_check_header, trace_check_chunk,
 * trace_check_trailer and trace_decode_chunk bound every count, size and
 * offset before using it (src/traceread.c reads whole files with them).
 *
 * - Real RSS (format 4): the header's rss_start and hwm_start and the
 *   trailer's rss_peak and rss_end say what the process really held over
 *   the capture, so that a replay can be compared with it (shimreplay's
 *   calibration). Format 4 is format 3's layout with these fields where
 *   reserved zeros were; it is a new version so that a reader of format
 *   3 refuses it by name rather than read a calibration it cannot show.
 *
 * All integers are little-endian and fixed-width. Bump TRACE_VERSION, and
 * say so in NEWS, on every incompatible change. */
#ifndef MALLOCSHIM_TRACE_H
#define MALLOCSHIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "sizeclass.h"

#define TRACE_MAGIC         0x314543415254534dULL   /* "MSTRACE1" */
#define TRACE_VERSION       4u
#define TRACE_VERSION_MIN   1u                      /* the oldest a reader reads */
#define TRACE_CHUNK_MAGIC   0x4354534du             /* "MSTC" */
#define TRACE_TRAILER_MAGIC 0x4554534du             /* "MSTE" */

/* Limits that readers enforce (a file beyond them is refused). */
#define TRACE_CHUNK_EVENTS_MAX (1u << 16)   /* events in one chunk */
#define TRACE_THREADS_MAX      4096u        /* distinct threads in a file */
#define TRACE_START_BLOCKS_MAX (1ull << 30) /* blocks of the starting heap, all classes */
#define TRACE_ALIGN_LOG2_MAX   40u          /* alignments up to 1 TiB */

/* The most events a trace file holds per byte, by default, for a reader
 * whose work or output grows with the events (shimreplay, which lifts it
 * with --max-events): a bound on what a file's bytes can claim. zstd
 * shrinks a chunk of alike events almost to nothing (65536 of them to 115
 * bytes: 1.31 G events in 3.6 MB), and the checksums (FNV-1a) stop no one
 * from writing one. A capture cannot be that alike: every event carries its
 * own time, and captures take 5.8 (db_bench) to 7.8 (bcsim) bytes an event
 * (bench/results/capture-2026-12-02.txt), mktrace's 7 to 11. 8 an event
 * per byte, 1/8 byte an event, is 46 times denser than the densest. */
#define TRACE_EVENTS_PER_BYTE_MAX 8u

/* The recorded call. Values are part of the format. */
enum trace_op {
    TRACE_OP_MALLOC = 1,
    TRACE_OP_CALLOC = 2,           /* aux = element count, size = element size */
    TRACE_OP_REALLOC = 3,          /* also reallocarray (size = the product) */
    TRACE_OP_FREE = 4,
    TRACE_OP_MEMALIGN = 5,         /* align = log2 of the alignment (0..) */
    TRACE_OP_ALIGNED_ALLOC = 6,
    TRACE_OP_POSIX_MEMALIGN = 7,   /* align >= 3 */
    TRACE_OP_VALLOC = 8,
    TRACE_OP_PVALLOC = 9,
    TRACE_OP_NEW = 10,             /* operator new(size_t) */
    TRACE_OP_NEW_ARRAY = 11,       /* operator new[] */
    TRACE_OP_NEW_ALIGNED = 12,     /* operator new(size_t, align_val_t) */
    TRACE_OP_NEW_ARRAY_ALIGNED = 13,
    TRACE_OP_DELETE = 14,          /* operator delete(void *) */
    TRACE_OP_DELETE_ARRAY = 15,
    TRACE_OP_DELETE_SIZED = 16,    /* size = the size given */
    TRACE_OP_DELETE_ARRAY_SIZED = 17,
    TRACE_OP_DELETE_ALIGNED = 18,  /* align = log2 of the alignment given */
    TRACE_OP_DELETE_ARRAY_ALIGNED = 19,
    TRACE_OP_DELETE_SIZED_ALIGNED = 20,
    TRACE_OP_DELETE_ARRAY_SIZED_ALIGNED = 21,
    TRACE_OP_COUNT = 22            /* one past the last */
};

/* What an op does to the heap. */
enum trace_op_kind { TRACE_KIND_ALLOC = 1, TRACE_KIND_FREE = 2, TRACE_KIND_REALLOC = 3 };

enum trace_ev_flags {
    TRACE_EVF_NOTHROW = 1u << 0,   /* the std::nothrow_t variant of new or delete */
    TRACE_EVF_ALL = TRACE_EVF_NOTHROW
};

/* One call. Which fields an op uses (the others are 0):
 *   all:        t_ns, op, flags
 *   allocation: id = the block returned (0: the call failed), size = the
 *               size asked for, usable = its usable size (saturated at
 *               UINT32_MAX, which keeps the size class: every block above
 *               64 MiB is in the last class), align for the aligned ops
 *   calloc:     as an allocation, aux = the element count, size = the
 *               element size
 *   free:       id = the block freed (0: free(NULL)), usable = its usable
 *               size; size for the sized deletes, align for the aligned
 *   realloc:    aux = the block passed (0: realloc(NULL, n), an
 *               allocation), id = the block returned (0: failed, or freed
 *               by realloc(p, 0) when size is 0), size = the new size,
 *               usable = the usable size of the block passed, align |
 *               reserved << 8 = trace_dur_encode(the call's length)
 *               (format 1: 0)
 * Ids are the blocks' addresses, or any value that no two blocks live at
 * the same time share (0 never names a block). */
struct trace_event {
    uint64_t t_ns;             /* since the capture started (see above) */
    uint64_t id;
    uint64_t aux;
    uint64_t size;
    uint32_t usable;
    uint8_t op;                /* enum trace_op */
    uint8_t flags;             /* enum trace_ev_flags */
    uint8_t align;             /* log2 of the alignment, aligned ops only */
    uint8_t reserved;
};

/* A length of time in 16 bits, rounded down: exact below 2048 ns, then to
 * 11 significant bits (under 1/2048 off), up to 2^42 ns (73 minutes); more
 * is that. */
static inline uint16_t trace_dur_encode(uint64_t ns)
{
    if (ns < 2048)
        return (uint16_t)ns;
    unsigned e = 63u - (unsigned)__builtin_clzll(ns) - 10u;   /* ns >> (e - 1) in [2^11, 2^12) */
    if (e > 31)
        return 0xffff;
    return (uint16_t)((e << 11) | ((ns >> (e - 1)) & 0x7ff));
}

static inline uint64_t trace_dur_decode(uint16_t v)
{
    unsigned e = v >> 11, m = v & 0x7ff;
    return e ? (uint64_t)(0x800 | m) << (e - 1) : m;
}

/* When a realloc's call began (see t_ns above; 0 at most). */
static inline uint64_t trace_realloc_start(const struct trace_event *e)
{
    uint64_t d = trace_dur_decode((uint16_t)(e->align | (unsigned)e->reserved << 8));
    return e->t_ns > d ? e->t_ns - d : 0;
}

/* The blocks of one size class live when the capture began. */
struct trace_class {
    uint64_t live_count;
    uint64_t live_usable;      /* their usable bytes, summed */
};

enum trace_flags {
    TRACE_F_START_EXACT = 1u << 0,   /* the starting heap is exact (from the
                                        segment's counters); without it the
                                        starting heap is empty or estimated */
    TRACE_F_START_FREE = 1u << 1,    /* start_free holds the allocator's own
                                        count (a file from before the field
                                        has 0 there and no flag) */
    TRACE_F_FROM_START = 1u << 2,    /* format 4: captured from the shim's start
                                        (capture_start): no life before it but
                                        what the starting heap holds */
    TRACE_F_RSS = 1u << 3,           /* format 4: rss_start and hwm_start hold the
                                        process's own figures, and the trailer's
                                        rss_peak and rss_end are known where
                                        they are not 0 */
};

#define TRACE_COMM_MAX         64
#define TRACE_BACKEND_NAME_MAX 32
#define TRACE_CONFIG_MAX       256

struct trace_header {
    uint64_t magic;            /* TRACE_MAGIC */
    uint32_t version;          /* TRACE_VERSION */
    uint32_t header_size;      /* sizeof(struct trace_header) */
    uint32_t event_size;       /* sizeof(struct trace_event) */
    uint32_t nclasses;         /* SIZECLASS_COUNT */
    uint32_t chunk_events_max; /* no chunk holds more (<= TRACE_CHUNK_EVENTS_MAX) */
    uint32_t pid;
    uint32_t page_size;
    uint32_t flags;            /* enum trace_flags; readers ignore bits they do not know */
    uint32_t backend;          /* enum seg_backend_id of the captured process */
    uint32_t reserved32;
    uint64_t start_ns;         /* CLOCK_REALTIME when the capture began */
    uint64_t start_mono_ns;    /* CLOCK_MONOTONIC at the same instant */
    char comm[TRACE_COMM_MAX];                 /* NUL-terminated */
    char backend_name[TRACE_BACKEND_NAME_MAX]; /* NUL-terminated */
    char config[TRACE_CONFIG_MAX];             /* the shim's config, MALLOCSHIM_CONF syntax */
    /* With TRACE_F_START_FREE: the bytes the allocator held free, besides
     * the live blocks, when the capture began, by its own count (glibc:
     * mallinfo2's fordblks, the free chunks of every arena, its top chunk
     * among them). A replay under the same config leaves that much free
     * among its starting blocks (shimreplay(1)): glibc's holes stay where
     * they are. */
    uint64_t start_free;
    /* With TRACE_F_RSS (format 4): the process's VmRSS and VmHWM (bytes,
     * /proc/self/status) when the capture began. hwm_start is the peak of
     * the life before the capture: above the trailer's rss_peak, that life
     * held more than the capture ever did. */
    uint64_t rss_start;
    uint64_t hwm_start;
    uint64_t reserved[5];
    struct trace_class start[SIZECLASS_COUNT]; /* the starting heap */
    uint64_t check;            /* trace_sum64 of every byte before it */
};

/* One chunk's head; `csize` bytes of zstd frame follow it. */
struct trace_chunk {
    uint32_t magic;            /* TRACE_CHUNK_MAGIC */
    uint32_t tid;              /* the thread (its kernel tid) */
    uint32_t count;            /* events, 1..chunk_events_max */
    uint32_t csize;            /* bytes of the frame */
    uint64_t seq;              /* the chunk's number in the file, from 0 */
    uint64_t check;            /* trace_sum64 of the 24 bytes before */
};

/* The end of the file. */
struct trace_trailer {
    uint32_t magic;            /* TRACE_TRAILER_MAGIC */
    uint32_t threads;          /* threads that recorded an event */
    uint64_t chunks;           /* chunks written */
    uint64_t events;           /* events written: the sum of the chunks' counts */
    uint64_t dropped;          /* events the capture lost (a thread's buffer
                                  was full): not in the file */
    uint64_t end_ns;           /* the capture's length, in t_ns terms */
    /* With the header's TRACE_F_RSS (format 4; 0: not known): the process's
     * peak RSS over the capture and its VmRSS at the end, in bytes. The
     * peak is VmHWM at the end where that rose above the header's
     * hwm_start (then exact: the kernel's), else the highest VmRSS the
     * writer read (every 100 ms, a lower bound): so rss_peak >
     * hwm_start says it is exact. */
    uint64_t rss_peak;
    uint64_t rss_end;
    uint64_t check;            /* trace_sum64 of the 56 bytes before */
};

_Static_assert(sizeof(struct trace_event) == 40, "trace_event layout");
_Static_assert(sizeof(struct trace_class) == 16, "trace_class layout");
_Static_assert(offsetof(struct trace_header, start_ns) == 48, "trace_header layout");
_Static_assert(offsetof(struct trace_header, start) == 480, "trace_header layout");
_Static_assert(sizeof(struct trace_header) == 480 + 16 * SIZECLASS_COUNT + 8, "trace_header layout");
_Static_assert(sizeof(struct trace_chunk) == 32, "trace_chunk layout");
_Static_assert(sizeof(struct trace_trailer) == 64, "trace_trailer layout");

/* What op does to the heap (enum trace_op_kind), or 0 for a value that is
 * no op. */
int trace_op_kind(unsigned op);

/* The op's name ("malloc", "delete[] sized aligned"), or "?" */
const char *trace_op_name(unsigned op);

/* Whether the op takes an alignment (memalign, aligned_alloc,
 * posix_memalign, aligned new and delete). */
int trace_op_aligned(unsigned op);

/* FNV-1a, 64 bits, of n bytes: the checksum of headers, chunk heads and
 * trailers. */
uint64_t trace_sum64(const void *p, size_t n);

/* ---- Writing (no allocation, no stdio: usable inside the preload) ---- */

/* A writer of one file. Used by one thread at a time. */
struct trace_writer {
    int fd;
    int level;                 /* zstd level */
    uint32_t chunk_events_max;
    uint32_t threads;          /* set by the caller before trace_writer_end, if known */
    uint64_t rss_peak, rss_end;  /* the trailer's, set by the caller before trace_writer_end */
    uint64_t off;              /* bytes written so far */
    uint64_t chunks, events;
    void *cctx;                /* a ZSTD_CCtx inside the workspace */
    uint8_t *out;              /* the frame buffer inside the workspace */
    uint8_t *planes;           /* a chunk's byte planes, inside the workspace */
    size_t out_cap;
};

/* Makes the compressor's functions ready: in the preload, loads
 * libzstd.so.1 on its own (see trace.c); elsewhere, the linked one.
 * Returns 0, or ENOENT with why set. Idempotent; trace_writer_workspace
 * calls it. */
int trace_writer_load(char *why, size_t whylen);

/* The workspace (bytes, 8-byte aligned) that a writer of chunks of up to
 * chunk_events events at zstd level `level` needs: the compressor, one
 * chunk's byte planes and one frame's buffer. 0 when the arguments are out
 * of range (chunk_events 1..TRACE_CHUNK_EVENTS_MAX, level
 * TRACE_LEVEL_MIN..TRACE_LEVEL_MAX), or when the compressor cannot be
 * loaded. */
/* What shimreplay --all does with a trace by default, for the tools that
 * point to it (shimdump's capture): the configs it replays (glibc, glibc
 * arenas:1, 2 and 4, jemalloc, tcmalloc: those the build has), how many
 * times each, and the longest trace (seconds) it replays at its own pace,
 * each replay then lasting as long as the trace. */
#define TRACE_REPLAY_ALL_CONFIGS 6
#define TRACE_REPLAY_ALL_REPEAT  3
#define TRACE_REPLAY_PACE_MAX_S  300

#define TRACE_LEVEL_MIN (-7)   /* zstd's negative levels: faster, larger */
#define TRACE_LEVEL_MAX 19
size_t trace_writer_workspace(uint32_t chunk_events, int level);

/* Starts a trace on fd (a file open for writing, written from offset 0
 * with pwrite): fills h's magic, version, sizes, chunk_events_max and
 * check, and writes it. The caller has set the rest of *h (pid, times,
 * names, flags, the starting heap). ws holds trace_writer_workspace bytes
 * and must stay until trace_writer_end. Returns 0, EINVAL for bad
 * arguments, or the errno of a failed write. */
int trace_writer_begin(struct trace_writer *w, int fd, struct trace_header *h,
                       uint32_t chunk_events, int level, void *ws, size_t ws_len);

/* Appends one chunk: n events (1..chunk_events) of thread tid, in order.
 * Returns 0, EINVAL, EIO when the compressor fails, or the errno of a
 * failed write (the file is then unusable: no trailer will follow). */
int trace_writer_chunk(struct trace_writer *w, uint32_t tid, const struct trace_event *ev,
                       uint32_t n);

/* Writes the trailer: the totals so far, `dropped` events lost and the
 * capture's length end_ns. Returns 0 or the errno of a failed write. The
 * caller closes fd. */
int trace_writer_end(struct trace_writer *w, uint64_t dropped, uint64_t end_ns);

/* ---- Checking what a reader read ---- */

/* Checks a header read from a file of file_size bytes (len bytes of it at
 * p, len >= sizeof(struct trace_header) or the file is shorter) and copies
 * it to *out. Returns 0; EPROTO when the file is no trace (magic); ENOTSUP
 * for another format version (*version_out set); ENODATA when the file
 * ends inside the header; EBADMSG for an inconsistent header (a size,
 * count or checksum that is wrong, a starting heap over the limits). why
 * gets one phrase without the file's name. */
int trace_check_header(const void *p, size_t len, uint64_t file_size, struct trace_header *out,
                       uint32_t *version_out, char *why, size_t whylen);

/* Checks a chunk head (32 bytes at p) found at offset off of a file of
 * file_size bytes whose header is h, where chunk number `seq` is due.
 * Returns 0, ENODATA when its frame runs past the end of the file, or
 * EBADMSG (why set). */
int trace_check_chunk(const void *p, const struct trace_header *h, uint64_t off,
                      uint64_t file_size, uint64_t seq, struct trace_chunk *out, char *why,
                      size_t whylen);

/* Checks a trailer (64 bytes at p) against what the reader counted.
 * Returns 0 or EBADMSG (why set). */
int trace_check_trailer(const void *p, uint64_t chunks, uint64_t events, uint32_t threads,
                        struct trace_trailer *out, char *why, size_t whylen);

/* Checks one event as enum trace_op's rules and struct trace_event's
 * table say. Returns 0 or EBADMSG (why set). */
int trace_check_event(const struct trace_event *e, char *why, size_t whylen);

/* Decompresses the frame of chunk c (csize bytes at frame) of a file of
 * format `version` with dctx (a ZSTD_DCtx) into out[0..c->count) and checks
 * every event. From format 3, the frame holds byte planes: decompressed
 * into planes (c->count events' room), then put back in order. Returns 0
 * or EBADMSG (why set). */
int trace_decode_chunk(void *dctx, uint32_t version, const struct trace_chunk *c,
                       const void *frame, void *planes, struct trace_event *out, char *why,
                       size_t whylen);

/* The byte planes of events ev[0..n) into planes (n events' bytes), and
 * back: format 3's chunk content. */
void trace_planes_of(const struct trace_event *ev, uint32_t n, uint8_t *planes);
void trace_events_of(const uint8_t *planes, uint32_t n, struct trace_event *ev);

#endif
