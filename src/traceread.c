/* traceread: reading a whole trace file, every bound checked (see
 * traceread.h and trace.h). */
#include "config.h"

#include "traceread.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#define TID_HASH_SIZE (2 * TRACE_THREADS_MAX)   /* a power of two, half full at most */

static int fail(char *why, size_t whylen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *why, size_t whylen, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (why && whylen)
        vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return rc;
}

/* Reads n bytes at off, whole. Returns 0, ENODATA at the end of the file,
 * or errno. */
static int pread_all(int fd, void *buf, size_t n, uint64_t off)
{
    while (n > 0) {
        ssize_t k = pread(fd, buf, n, (off_t)off);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (k == 0)
            return ENODATA;
        buf = (char *)buf + k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

static int read_error(char *why, size_t whylen, int rc, const char *what)
{
    if (rc == ENODATA)
        return fail(why, whylen, rc, "truncated: the file ends inside %s", what);
    return fail(why, whylen, rc, "reading %s: %s", what, strerror(rc));
}

/* The thread of tid, added when new. Returns its index, or -1 with errno
 * E2BIG or ENOMEM. */
static long thread_of(struct trace_file *f, uint32_t tid)
{
    uint32_t h = (tid * 2654435761u) & (TID_HASH_SIZE - 1);
    struct trace_thread *t;

    for (;; h = (h + 1) & (TID_HASH_SIZE - 1)) {
        uint32_t v = f->tid_hash[h];
        if (!v)
            break;
        if (f->threads[v - 1].tid == tid)
            return (long)v - 1;
    }
    if (f->nthreads >= TRACE_THREADS_MAX) {
        errno = E2BIG;
        return -1;
    }
    if ((f->nthreads & (f->nthreads - 1)) == 0) {   /* 0, 1, 2, 4...: grow */
        size_t cap = f->nthreads ? 2 * (size_t)f->nthreads : 1;
        t = realloc(f->threads, cap * sizeof *t);
        if (!t)
            return -1;
        f->threads = t;
    }
    t = &f->threads[f->nthreads];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    f->tid_hash[h] = ++f->nthreads;
    return (long)f->nthreads - 1;
}

static int add_chunk(struct trace_file *f, const struct trace_chunk *c, uint64_t frame_off)
{
    long i = thread_of(f, c->tid);
    struct trace_thread *t;

    if (i < 0)
        return errno;
    t = &f->threads[i];
    if (t->nchunks == t->cap) {
        uint32_t cap = t->cap ? 2 * t->cap : 8;
        struct trace_ref *r = realloc(t->chunks, (size_t)cap * sizeof *r);
        if (!r)
            return ENOMEM;
        t->chunks = r;
        t->cap = cap;
    }
    t->chunks[t->nchunks].off = frame_off;
    t->chunks[t->nchunks].seq = c->seq;
    t->chunks[t->nchunks].count = c->count;
    t->chunks[t->nchunks].csize = c->csize;
    t->nchunks++;
    t->events += c->count;
    return 0;
}

int trace_open(struct trace_file *f, int fd, uint32_t *version_out, char *why, size_t whylen)
{
    unsigned char hb[sizeof(struct trace_header)];
    off_t end = lseek(fd, 0, SEEK_END);
    uint64_t off;
    size_t hlen;
    int rc;

    memset(f, 0, sizeof *f);
    f->fd = fd;
    if (end < 0)
        return fail(why, whylen, errno, "cannot seek: %s", strerror(errno));
    f->size = (uint64_t)end;
    hlen = f->size < sizeof hb ? (size_t)f->size : sizeof hb;
    if ((rc = pread_all(fd, hb, hlen, 0)) != 0)
        return read_error(why, whylen, rc, "the header");
    if ((rc = trace_check_header(hb, hlen, f->size, &f->hdr, version_out, why, whylen)) != 0)
        return rc;
    f->tid_hash = calloc(TID_HASH_SIZE, sizeof *f->tid_hash);
    if (!f->tid_hash) {
        rc = fail(why, whylen, ENOMEM, "out of memory");
        goto out;
    }

    /* The chunk heads, one after another, up to the trailer. */
    off = sizeof(struct trace_header);
    for (;;) {
        unsigned char b[sizeof(struct trace_trailer)];
        struct trace_chunk c;
        uint32_t magic;
        if (f->size - off < sizeof magic)
            goto cut;
        if ((rc = pread_all(fd, &magic, sizeof magic, off)) != 0) {
            read_error(why, whylen, rc, "a chunk");
            goto out;
        }
        if (magic == TRACE_TRAILER_MAGIC) {
            if (f->size - off < sizeof(struct trace_trailer))
                goto cut;
            if ((rc = pread_all(fd, b, sizeof(struct trace_trailer), off)) != 0) {
                read_error(why, whylen, rc, "the trailer");
                goto out;
            }
            if ((rc = trace_check_trailer(b, f->nchunks, f->nevents, f->nthreads, &f->trl, why,
                                          whylen)) != 0)
                goto out;
            if (f->size - off != sizeof(struct trace_trailer)) {
                rc = fail(why, whylen, EBADMSG, "corrupt: %llu bytes after the trailer",
                          (unsigned long long)(f->size - off - sizeof(struct trace_trailer)));
                goto out;
            }
            break;
        }
        if (f->size - off < sizeof c)
            goto cut;
        if ((rc = pread_all(fd, b, sizeof c, off)) != 0) {
            read_error(why, whylen, rc, "a chunk");
            goto out;
        }
        if ((rc = trace_check_chunk(b, &f->hdr, off, f->size, f->nchunks, &c, why, whylen)) != 0) {
            if (rc == ENODATA)
                goto cut;   /* its frame runs past the end */
            goto out;
        }
        if ((rc = add_chunk(f, &c, off + sizeof c)) != 0) {
            if (rc == E2BIG)
                fail(why, whylen, rc, "more than %u threads: shimreplay replays at most %u",
                     TRACE_THREADS_MAX, TRACE_THREADS_MAX);
            else
                fail(why, whylen, rc, "out of memory");
            goto out;
        }
        f->nchunks++;
        f->nevents += c.count;
        off += sizeof c + c.csize;
    }
    if (0) {
cut:
        /* No trailer: the capture did not finish (the process died), or
         * the file was cut. Its whole chunks are read; what came after
         * them, and the count of calls dropped, are unknown. */
        f->cut = 1;
        f->cut_bytes = f->size - off;
        memset(&f->trl, 0, sizeof f->trl);
    }

    f->dctx = ZSTD_createDCtx();
    if (!f->dctx || ZSTD_isError(ZSTD_DCtx_setParameter(f->dctx, ZSTD_d_windowLogMax, 23))) {
        rc = fail(why, whylen, ENOMEM, "out of memory");
        goto out;
    }
    return 0;
out:
    trace_close(f);
    return rc;
}

int trace_read_chunk(struct trace_file *f, const struct trace_ref *r, struct trace_event *out,
                     char *why, size_t whylen)
{
    struct trace_chunk c;
    int rc;

    if (r->csize > f->frame_cap) {
        size_t cap = ZSTD_compressBound((size_t)f->hdr.chunk_events_max * sizeof(struct trace_event));
        uint8_t *p;
        if (r->csize > cap)
            return fail(why, whylen, EBADMSG, "corrupt: a frame of %u bytes", r->csize);
        if (!(p = realloc(f->frame, cap)))
            return fail(why, whylen, ENOMEM, "out of memory");
        f->frame = p;
        f->frame_cap = cap;
    }
    if ((rc = pread_all(f->fd, f->frame, r->csize, r->off)) != 0)
        return read_error(why, whylen, rc, "a chunk");
    memset(&c, 0, sizeof c);
    c.count = r->count;
    c.csize = r->csize;
    c.seq = r->seq;
    if (f->hdr.version >= 3 && !f->planes &&
        !(f->planes = malloc((size_t)f->hdr.chunk_events_max * sizeof(struct trace_event))))
        return fail(why, whylen, ENOMEM, "out of memory");
    return trace_decode_chunk(f->dctx, f->hdr.version, &c, f->frame, f->planes, out, why, whylen);
}

void trace_close(struct trace_file *f)
{
    for (uint32_t i = 0; i < f->nthreads; i++)
        free(f->threads[i].chunks);
    free(f->threads);
    free(f->tid_hash);
    free(f->frame);
    free(f->planes);
    ZSTD_freeDCtx(f->dctx);
    f->threads = NULL;
    f->tid_hash = NULL;
    f->frame = NULL;
    f->planes = NULL;
    f->dctx = NULL;
    f->nthreads = 0;
}
