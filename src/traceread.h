/* traceread: a trace file (trace.h) read through a descriptor, trusting
 * nothing: its header, an index of every chunk by thread built from the
 * chunk heads alone, the trailer's totals checked against that index;
 * then any chunk's events on demand. Used by the tools, not the preload:
 * it allocates. */
#ifndef MALLOCSHIM_TRACEREAD_H
#define MALLOCSHIM_TRACEREAD_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

/* Where one chunk's frame lies. */
struct trace_ref {
    uint64_t off;              /* of the frame (after the chunk's head) */
    uint64_t seq;
    uint32_t count;
    uint32_t csize;
};

/* One recorded thread: its chunks in the order of its events. */
struct trace_thread {
    uint32_t tid;
    uint32_t nchunks;
    uint64_t events;
    struct trace_ref *chunks;
    uint32_t cap;
};

struct trace_file {
    int fd;
    uint64_t size;
    struct trace_header hdr;
    struct trace_trailer trl;      /* zero when cut */
    int cut;                       /* no trailer: the whole chunks before the end only */
    uint64_t cut_bytes;            /* bytes after the last whole chunk, when cut */
    uint32_t nthreads;
    struct trace_thread *threads;  /* in the order of their first chunks */
    uint64_t nchunks, nevents;
    uint32_t *tid_hash;            /* open addressing: thread index + 1, 0 empty */
    void *dctx;                    /* ZSTD_DCtx */
    uint8_t *frame;                /* one frame, read */
    size_t frame_cap;
    uint8_t *planes;               /* one chunk's byte planes (format 3), read */
};

/* Reads and checks the header, the chunk heads and the trailer of the
 * trace open at fd (read with pread; the caller keeps fd open until
 * trace_close and closes it after). A file that ends before its trailer
 * (a capture whose process died, a file cut short) is read up to its last
 * whole chunk, with f->cut set. Returns 0, or as trace_check_header,
 * trace_check_chunk and trace_check_trailer do: EPROTO (not a trace),
 * ENOTSUP (another version: *version_out), ENODATA (cut in its header), EBADMSG
 * (corrupt), E2BIG (more than TRACE_THREADS_MAX threads), ENOMEM, or the
 * errno of a failed read; why says it in one phrase. On failure nothing
 * needs closing. */
int trace_open(struct trace_file *f, int fd, uint32_t *version_out, char *why, size_t whylen);

/* Reads chunk r of f into out[0..r->count) and checks every event.
 * Returns 0, ENODATA when the file shrank, EBADMSG, ENOMEM or the errno
 * of a failed read (why set). */
int trace_read_chunk(struct trace_file *f, const struct trace_ref *r, struct trace_event *out,
                     char *why, size_t whylen);

/* Frees what trace_open allocated (not the descriptor). */
void trace_close(struct trace_file *f);

#endif
