/* trace: the trace format's op table, its writer (no allocation, no stdio)
 * and the checks that readers make (see trace.h). */
#include "config.h"

#include "trace.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define ZSTD_STATIC_LINKING_ONLY   /* ZSTD_initStaticCCtx: a compressor in our memory */
#include <zstd.h>

#include "fmt.h"

static int bad(char *why, size_t whylen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- The op table ---- */

static const struct {
    const char *name;
    unsigned char kind;        /* enum trace_op_kind */
    unsigned char aligned;     /* takes an alignment */
    unsigned char cxx;         /* new or delete: may carry TRACE_EVF_NOTHROW */
    unsigned char sized;       /* a sized delete: size is the size given */
} ops[TRACE_OP_COUNT] = {
    [TRACE_OP_MALLOC] = { "malloc", TRACE_KIND_ALLOC, 0, 0, 0 },
    [TRACE_OP_CALLOC] = { "calloc", TRACE_KIND_ALLOC, 0, 0, 0 },
    [TRACE_OP_REALLOC] = { "realloc", TRACE_KIND_REALLOC, 0, 0, 0 },
    [TRACE_OP_FREE] = { "free", TRACE_KIND_FREE, 0, 0, 0 },
    [TRACE_OP_MEMALIGN] = { "memalign", TRACE_KIND_ALLOC, 1, 0, 0 },
    [TRACE_OP_ALIGNED_ALLOC] = { "aligned_alloc", TRACE_KIND_ALLOC, 1, 0, 0 },
    [TRACE_OP_POSIX_MEMALIGN] = { "posix_memalign", TRACE_KIND_ALLOC, 1, 0, 0 },
    [TRACE_OP_VALLOC] = { "valloc", TRACE_KIND_ALLOC, 0, 0, 0 },
    [TRACE_OP_PVALLOC] = { "pvalloc", TRACE_KIND_ALLOC, 0, 0, 0 },
    [TRACE_OP_NEW] = { "new", TRACE_KIND_ALLOC, 0, 1, 0 },
    [TRACE_OP_NEW_ARRAY] = { "new[]", TRACE_KIND_ALLOC, 0, 1, 0 },
    [TRACE_OP_NEW_ALIGNED] = { "new aligned", TRACE_KIND_ALLOC, 1, 1, 0 },
    [TRACE_OP_NEW_ARRAY_ALIGNED] = { "new[] aligned", TRACE_KIND_ALLOC, 1, 1, 0 },
    [TRACE_OP_DELETE] = { "delete", TRACE_KIND_FREE, 0, 1, 0 },
    [TRACE_OP_DELETE_ARRAY] = { "delete[]", TRACE_KIND_FREE, 0, 1, 0 },
    [TRACE_OP_DELETE_SIZED] = { "delete sized", TRACE_KIND_FREE, 0, 1, 1 },
    [TRACE_OP_DELETE_ARRAY_SIZED] = { "delete[] sized", TRACE_KIND_FREE, 0, 1, 1 },
    [TRACE_OP_DELETE_ALIGNED] = { "delete aligned", TRACE_KIND_FREE, 1, 1, 0 },
    [TRACE_OP_DELETE_ARRAY_ALIGNED] = { "delete[] aligned", TRACE_KIND_FREE, 1, 1, 0 },
    [TRACE_OP_DELETE_SIZED_ALIGNED] = { "delete sized aligned", TRACE_KIND_FREE, 1, 1, 1 },
    [TRACE_OP_DELETE_ARRAY_SIZED_ALIGNED] = { "delete[] sized aligned", TRACE_KIND_FREE, 1, 1, 1 },
};

int trace_op_kind(unsigned op)
{
    return op < TRACE_OP_COUNT ? ops[op].kind : 0;
}

const char *trace_op_name(unsigned op)
{
    return op < TRACE_OP_COUNT && ops[op].name ? ops[op].name : "?";
}

int trace_op_aligned(unsigned op)
{
    return op < TRACE_OP_COUNT && ops[op].aligned;
}

uint64_t trace_sum64(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* ---- Byte planes (format 3) ---- */

#define EV_BYTES sizeof(struct trace_event)
_Static_assert(EV_BYTES % 8 == 0, "an event is whole 8-byte words");

/* The 8 x 8 bytes at in (rows in_stride apart) transposed into out (rows
 * out_stride apart): out row b holds byte b of each in row. Its own
 * inverse. */
static inline void transpose8(const uint8_t *in, size_t in_stride, uint8_t *out, size_t out_stride)
{
#if defined(__SSE2__)
    __m128i a[8], b[4], c[4], d[4];
    for (int k = 0; k < 8; k++)
        a[k] = _mm_loadl_epi64((const __m128i *)(const void *)(in + k * in_stride));
    for (int k = 0; k < 4; k++)
        b[k] = _mm_unpacklo_epi8(a[2 * k], a[2 * k + 1]);
    c[0] = _mm_unpacklo_epi16(b[0], b[1]);
    c[1] = _mm_unpackhi_epi16(b[0], b[1]);
    c[2] = _mm_unpacklo_epi16(b[2], b[3]);
    c[3] = _mm_unpackhi_epi16(b[2], b[3]);
    d[0] = _mm_unpacklo_epi32(c[0], c[2]);
    d[1] = _mm_unpackhi_epi32(c[0], c[2]);
    d[2] = _mm_unpacklo_epi32(c[1], c[3]);
    d[3] = _mm_unpackhi_epi32(c[1], c[3]);
    for (int k = 0; k < 4; k++) {
        _mm_storel_epi64((__m128i *)(void *)(out + (2 * k) * out_stride), d[k]);
        _mm_storel_epi64((__m128i *)(void *)(out + (2 * k + 1) * out_stride), _mm_srli_si128(d[k], 8));
    }
#else
    for (size_t r = 0; r < 8; r++)
        for (size_t b = 0; b < 8; b++)
            out[b * out_stride + r] = in[r * in_stride + b];
#endif
}

/* n events' bytes between events (rows of EV_BYTES bytes) and byte planes
 * (rows of n bytes): events to planes when to_planes, else back. */
static void planes_move(const uint8_t *from, uint8_t *to, uint32_t n, int to_planes)
{
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t w = 0; w < EV_BYTES; w += 8) {
            size_t ev = i * EV_BYTES + w, pl = w * n + i;
            if (to_planes)
                transpose8(from + ev, EV_BYTES, to + pl, n);
            else
                transpose8(from + pl, n, to + ev, EV_BYTES);
        }
    for (; i < n; i++)
        for (size_t b = 0; b < EV_BYTES; b++) {
            size_t ev = i * EV_BYTES + b, pl = b * n + i;
            to[to_planes ? pl : ev] = from[to_planes ? ev : pl];
        }
}

void trace_planes_of(const struct trace_event *ev, uint32_t n, uint8_t *planes)
{
    planes_move((const uint8_t *)ev, planes, n, 1);
}

void trace_events_of(const uint8_t *planes, uint32_t n, struct trace_event *ev)
{
    planes_move(planes, (uint8_t *)ev, n, 0);
}

/* ---- Writing ---- */

/* The compressor's functions the writer calls. The tools link libzstd;
 * the preload (TRACE_ZSTD_DLOPEN) has no link to it and loads it at its
 * first capture, RTLD_LOCAL | RTLD_DEEPBIND: a process may carry another
 * zstd of its own (RocksDB links one in, and a program linked -rdynamic
 * exports it), whose ZSTD_initStaticCCtx and friends (ZSTD_STATIC_LINKING_
 * ONLY: no stable ABI) must never serve our calls, nor theirs ours. With a
 * static context these functions allocate nothing. */
static struct {
    size_t (*estimate)(int);
    ZSTD_CCtx *(*init_static)(void *, size_t);
    unsigned (*is_error)(size_t);
    size_t (*set_parameter)(ZSTD_CCtx *, ZSTD_cParameter, int);
    size_t (*compress2)(ZSTD_CCtx *, void *, size_t, const void *, size_t);
    size_t (*bound)(size_t);
} zf;

#ifdef TRACE_ZSTD_DLOPEN
#include <dlfcn.h>

int trace_writer_load(char *why, size_t whylen)
{
    static const char *const names[] = {
        "ZSTD_estimateCCtxSize", "ZSTD_initStaticCCtx", "ZSTD_isError",
        "ZSTD_CCtx_setParameter", "ZSTD_compress2", "ZSTD_compressBound",
    };
    void *fn[sizeof names / sizeof names[0]];
    if (__atomic_load_n(&zf.bound, __ATOMIC_ACQUIRE))
        return 0;
    void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h)
        return bad(why, whylen, ENOENT, "cannot load libzstd.so.1: %s", dlerror());
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!(fn[i] = dlsym(h, names[i])))
            return bad(why, whylen, ENOENT, "libzstd.so.1 lacks %s", names[i]);
    zf.estimate = (size_t (*)(int))fn[0];
    zf.init_static = (ZSTD_CCtx * (*)(void *, size_t)) fn[1];
    zf.is_error = (unsigned (*)(size_t))fn[2];
    zf.set_parameter = (size_t (*)(ZSTD_CCtx *, ZSTD_cParameter, int))fn[3];
    zf.compress2 = (size_t (*)(ZSTD_CCtx *, void *, size_t, const void *, size_t))fn[4];
    __atomic_store_n(&zf.bound, (size_t (*)(size_t))fn[5], __ATOMIC_RELEASE);
    return 0;   /* the library stays loaded: the functions are kept */
}
#else
int trace_writer_load(char *why, size_t whylen)
{
    (void)why;
    (void)whylen;
    zf.estimate = ZSTD_estimateCCtxSize;
    zf.init_static = ZSTD_initStaticCCtx;
    zf.is_error = ZSTD_isError;
    zf.set_parameter = ZSTD_CCtx_setParameter;
    zf.compress2 = ZSTD_compress2;
    __atomic_store_n(&zf.bound, ZSTD_compressBound, __ATOMIC_RELEASE);
    return 0;
}
#endif

static size_t cctx_size(int level)
{
    return (zf.estimate(level) + 63) & ~(size_t)63;
}

size_t trace_writer_workspace(uint32_t chunk_events, int level)
{
    if (chunk_events < 1 || chunk_events > TRACE_CHUNK_EVENTS_MAX || level < TRACE_LEVEL_MIN ||
        level > TRACE_LEVEL_MAX || trace_writer_load(NULL, 0) != 0)
        return 0;
    size_t est = zf.estimate(level);
    if (zf.is_error(est) || est == 0)
        return 0;   /* no estimate: a zstd without this level */
    size_t cs = cctx_size(level);
    return cs + (size_t)chunk_events * EV_BYTES + zf.bound((size_t)chunk_events * EV_BYTES);
}

/* Writes iov[0..n) at offset off, whole: retries short writes and EINTR. */
static int pwritev_all(int fd, struct iovec *iov, int n, uint64_t off)
{
    while (n > 0) {
        ssize_t k = pwritev(fd, iov, n, (off_t)off);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (k == 0)
            return EIO;
        off += (uint64_t)k;
        while (n > 0 && (size_t)k >= iov->iov_len) {
            k -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + k;
            iov->iov_len -= (size_t)k;
        }
    }
    return 0;
}

int trace_writer_begin(struct trace_writer *w, int fd, struct trace_header *h,
                       uint32_t chunk_events, int level, void *ws, size_t ws_len)
{
    size_t need = trace_writer_workspace(chunk_events, level);
    size_t cs;
    ZSTD_CCtx *cctx;
    struct iovec iov;
    int rc;

    if (!need || ws_len < need || ((uintptr_t)ws & 7) || fd < 0)
        return EINVAL;
    cs = cctx_size(level);
    cctx = zf.init_static(ws, cs);
    if (!cctx || zf.is_error(zf.set_parameter(cctx, ZSTD_c_compressionLevel, level)) ||
        zf.is_error(zf.set_parameter(cctx, ZSTD_c_checksumFlag, 1)) ||
        zf.is_error(zf.set_parameter(cctx, ZSTD_c_contentSizeFlag, 1)))
        return EINVAL;
    memset(w, 0, sizeof *w);
    w->fd = fd;
    w->level = level;
    w->chunk_events_max = chunk_events;
    w->cctx = cctx;
    w->planes = (uint8_t *)ws + cs;
    w->out = w->planes + (size_t)chunk_events * EV_BYTES;
    w->out_cap = ws_len - cs - (size_t)chunk_events * EV_BYTES;

    h->magic = TRACE_MAGIC;
    h->version = TRACE_VERSION;
    h->header_size = sizeof *h;
    h->event_size = sizeof(struct trace_event);
    h->nclasses = SIZECLASS_COUNT;
    h->chunk_events_max = chunk_events;
    h->comm[sizeof h->comm - 1] = '\0';
    h->backend_name[sizeof h->backend_name - 1] = '\0';
    h->config[sizeof h->config - 1] = '\0';
    h->check = trace_sum64(h, offsetof(struct trace_header, check));
    iov.iov_base = h;
    iov.iov_len = sizeof *h;
    if ((rc = pwritev_all(fd, &iov, 1, 0)) != 0)
        return rc;
    w->off = sizeof *h;
    return 0;
}

int trace_writer_chunk(struct trace_writer *w, uint32_t tid, const struct trace_event *ev,
                       uint32_t n)
{
    struct trace_chunk c;
    struct iovec iov[2];
    size_t csize;
    int rc;

    if (n < 1 || n > w->chunk_events_max || !ev)
        return EINVAL;
    trace_planes_of(ev, n, w->planes);
    csize = zf.compress2(w->cctx, w->out, w->out_cap, w->planes, (size_t)n * sizeof *ev);
    if (zf.is_error(csize) || csize > UINT32_MAX)
        return EIO;
    c.magic = TRACE_CHUNK_MAGIC;
    c.tid = tid;
    c.count = n;
    c.csize = (uint32_t)csize;
    c.seq = w->chunks;
    c.check = trace_sum64(&c, offsetof(struct trace_chunk, check));
    iov[0].iov_base = &c;
    iov[0].iov_len = sizeof c;
    iov[1].iov_base = w->out;
    iov[1].iov_len = csize;
    if ((rc = pwritev_all(w->fd, iov, 2, w->off)) != 0)
        return rc;
    w->off += sizeof c + csize;
    w->chunks++;
    w->events += n;
    return 0;
}

int trace_writer_end(struct trace_writer *w, uint64_t dropped, uint64_t end_ns)
{
    struct trace_trailer t;
    struct iovec iov;
    int rc;

    memset(&t, 0, sizeof t);
    t.magic = TRACE_TRAILER_MAGIC;
    t.threads = w->threads;
    t.chunks = w->chunks;
    t.events = w->events;
    t.dropped = dropped;
    t.end_ns = end_ns;
    t.rss_peak = w->rss_peak;
    t.rss_end = w->rss_end;
    t.check = trace_sum64(&t, offsetof(struct trace_trailer, check));
    iov.iov_base = &t;
    iov.iov_len = sizeof t;
    if ((rc = pwritev_all(w->fd, &iov, 1, w->off)) != 0)
        return rc;
    w->off += sizeof t;
    return 0;
}

/* ---- Checking ---- */

/* (bad() is shared; the rest is the readers', which the preload, with no
 * link to libzstd, does not build.) */

static int bad(char *why, size_t whylen, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (why && whylen)
        fmt_vbuf(why, whylen, fmt, ap);
    va_end(ap);
    return rc;
}

#ifndef TRACE_ZSTD_DLOPEN
static int terminated(const char *s, size_t n)
{
    return memchr(s, '\0', n) != NULL;
}

int trace_check_header(const void *p, size_t len, uint64_t file_size, struct trace_header *out,
                       uint32_t *version_out, char *why, size_t whylen)
{
    const unsigned char *b = p;
    const uint64_t magic = TRACE_MAGIC;
    uint64_t blocks = 0;
    uint32_t v;

    if (len > file_size)
        len = (size_t)file_size;
    if (len < 8) {
        /* A file shorter than the magic: the beginning of a trace, cut, or
         * something else. */
        if (len > 0 && memcmp(b, &magic, len) == 0)
            return bad(why, whylen, ENODATA, "truncated: the file ends inside the header (%zu bytes)", len);
        return bad(why, whylen, EPROTO, "not a mallocshim trace (%s)", len ? "bad magic number" : "empty file");
    }
    if (memcmp(b, &magic, 8) != 0)
        return bad(why, whylen, EPROTO, "not a mallocshim trace (bad magic number)");
    if (len < 12)
        return bad(why, whylen, ENODATA, "truncated: the file ends inside the header (%zu bytes)", len);
    memcpy(&v, b + offsetof(struct trace_header, version), sizeof v);
    if (version_out)
        *version_out = v;
    if (v < TRACE_VERSION_MIN || v > TRACE_VERSION)
        return bad(why, whylen, ENOTSUP, "trace format %u, this shimreplay reads formats %u to %u", v,
                   TRACE_VERSION_MIN, TRACE_VERSION);
    if (len < sizeof *out)
        return bad(why, whylen, ENODATA, "truncated: the file ends inside the header (%zu bytes)", len);
    memcpy(out, b, sizeof *out);
    if (out->header_size != sizeof *out || out->event_size != sizeof(struct trace_event) ||
        out->nclasses != SIZECLASS_COUNT)
        return bad(why, whylen, EBADMSG, "corrupt header: sizes %u/%u/%u, expected %zu/%zu/%u",
                   out->header_size, out->event_size, out->nclasses, sizeof *out,
                   sizeof(struct trace_event), SIZECLASS_COUNT);
    if (out->check != trace_sum64(out, offsetof(struct trace_header, check)))
        return bad(why, whylen, EBADMSG, "corrupt header: checksum mismatch");
    if (out->chunk_events_max < 1 || out->chunk_events_max > TRACE_CHUNK_EVENTS_MAX)
        return bad(why, whylen, EBADMSG, "corrupt header: %u events per chunk", out->chunk_events_max);
    if (out->page_size < 1024 || out->page_size > (1u << 30) || (out->page_size & (out->page_size - 1)))
        return bad(why, whylen, EBADMSG, "corrupt header: page size %u", out->page_size);
    if (!terminated(out->comm, sizeof out->comm) ||
        !terminated(out->backend_name, sizeof out->backend_name) ||
        !terminated(out->config, sizeof out->config))
        return bad(why, whylen, EBADMSG, "corrupt header: a name without its end");
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        const struct trace_class *k = &out->start[c];
        if (k->live_count > TRACE_START_BLOCKS_MAX || k->live_usable > (1ull << 50) ||
            (blocks += k->live_count) > TRACE_START_BLOCKS_MAX)
            return bad(why, whylen, EBADMSG,
                       "corrupt header: a starting heap of more than %llu blocks or 1 PiB",
                       (unsigned long long)TRACE_START_BLOCKS_MAX);
    }
    if (out->start_free > (1ull << 50))
        return bad(why, whylen, EBADMSG, "corrupt header: %llu bytes free at the start",
                   (unsigned long long)out->start_free);
    return 0;
}

int trace_check_chunk(const void *p, const struct trace_header *h, uint64_t off,
                      uint64_t file_size, uint64_t seq, struct trace_chunk *out, char *why,
                      size_t whylen)
{
    memcpy(out, p, sizeof *out);
    if (out->magic != TRACE_CHUNK_MAGIC)
        return bad(why, whylen, EBADMSG, "corrupt: no chunk at offset %llu", (unsigned long long)off);
    if (out->check != trace_sum64(out, offsetof(struct trace_chunk, check)))
        return bad(why, whylen, EBADMSG, "corrupt: chunk %llu (offset %llu): checksum mismatch",
                   (unsigned long long)seq, (unsigned long long)off);
    if (out->seq != seq)
        return bad(why, whylen, EBADMSG, "corrupt: chunk %llu where chunk %llu is due (offset %llu)",
                   (unsigned long long)out->seq, (unsigned long long)seq, (unsigned long long)off);
    if (out->count < 1 || out->count > h->chunk_events_max)
        return bad(why, whylen, EBADMSG, "corrupt: chunk %llu holds %u events (at most %u)",
                   (unsigned long long)seq, out->count, h->chunk_events_max);
    if (out->csize < ZSTD_FRAMEHEADERSIZE_MIN(ZSTD_f_zstd1) ||
        out->csize > ZSTD_compressBound((size_t)out->count * sizeof(struct trace_event)))
        return bad(why, whylen, EBADMSG, "corrupt: chunk %llu has a frame of %u bytes for %u events",
                   (unsigned long long)seq, out->csize, out->count);
    if (off > file_size || file_size - off < sizeof *out + (uint64_t)out->csize)
        return bad(why, whylen, ENODATA, "truncated: the file ends inside chunk %llu (offset %llu)",
                   (unsigned long long)seq, (unsigned long long)off);
    return 0;
}

int trace_check_trailer(const void *p, uint64_t chunks, uint64_t events, uint32_t threads,
                        struct trace_trailer *out, char *why, size_t whylen)
{
    memcpy(out, p, sizeof *out);
    if (out->magic != TRACE_TRAILER_MAGIC ||
        out->check != trace_sum64(out, offsetof(struct trace_trailer, check)))
        return bad(why, whylen, EBADMSG, "corrupt trailer");
    if (out->chunks != chunks || out->events != events || out->threads != threads)
        return bad(why, whylen, EBADMSG,
                   "corrupt: the trailer counts %llu chunks, %llu events, %u threads; the file "
                   "holds %llu, %llu, %u",
                   (unsigned long long)out->chunks, (unsigned long long)out->events, out->threads,
                   (unsigned long long)chunks, (unsigned long long)events, threads);
    return 0;
}

int trace_check_event(const struct trace_event *e, char *why, size_t whylen)
{
    unsigned op = e->op;
    int kind = trace_op_kind(op);

    if (!kind)
        return bad(why, whylen, EBADMSG, "an event of unknown op %u", op);
    if ((e->flags & ~TRACE_EVF_ALL) || ((e->flags & TRACE_EVF_NOTHROW) && !ops[op].cxx) ||
        (e->reserved && kind != TRACE_KIND_REALLOC))
        return bad(why, whylen, EBADMSG, "a %s event with flags 0x%x", ops[op].name, e->flags);
    if (ops[op].aligned) {
        if (e->align > TRACE_ALIGN_LOG2_MAX || (op == TRACE_OP_POSIX_MEMALIGN && e->align < 3))
            return bad(why, whylen, EBADMSG, "a %s event with alignment 2^%u", ops[op].name, e->align);
    } else if (e->align && kind != TRACE_KIND_REALLOC) {   /* a realloc's: its length */
        return bad(why, whylen, EBADMSG, "a %s event with an alignment", ops[op].name);
    }
    if (e->aux && op != TRACE_OP_CALLOC && op != TRACE_OP_REALLOC)
        return bad(why, whylen, EBADMSG, "a %s event with an old block or count", ops[op].name);
    if (kind == TRACE_KIND_FREE && e->size && !ops[op].sized)
        return bad(why, whylen, EBADMSG, "a %s event with a size", ops[op].name);
    if (kind != TRACE_KIND_REALLOC && !e->id && e->usable)
        return bad(why, whylen, EBADMSG, "a %s event of no block with a usable size", ops[op].name);
    return 0;
}

int trace_decode_chunk(void *dctx, uint32_t version, const struct trace_chunk *c,
                       const void *frame, void *planes, struct trace_event *out, char *why,
                       size_t whylen)
{
    size_t want = (size_t)c->count * sizeof *out;
    unsigned long long content = ZSTD_getFrameContentSize(frame, c->csize);
    size_t got;
    char ewhy[160];

    if (content != want)
        return bad(why, whylen, EBADMSG, "corrupt: chunk %llu's frame %s",
                   (unsigned long long)c->seq,
                   content == ZSTD_CONTENTSIZE_ERROR ? "is not a zstd frame"
                   : content == ZSTD_CONTENTSIZE_UNKNOWN ? "does not give its size"
                                                         : "holds another number of events");
    if (ZSTD_findFrameCompressedSize(frame, c->csize) != c->csize)
        return bad(why, whylen, EBADMSG, "corrupt: chunk %llu's frame is not %u bytes",
                   (unsigned long long)c->seq, c->csize);
    got = ZSTD_decompressDCtx(dctx, version >= 3 ? planes : (void *)out, want, frame, c->csize);
    if (ZSTD_isError(got) || got != want)
        return bad(why, whylen, EBADMSG, "corrupt: chunk %llu: %s", (unsigned long long)c->seq,
                   ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short frame");
    if (version >= 3)
        trace_events_of(planes, c->count, out);
    for (uint32_t i = 0; i < c->count; i++)
        if (trace_check_event(&out[i], ewhy, sizeof ewhy) != 0)
            return bad(why, whylen, EBADMSG, "corrupt: chunk %llu, event %u: %s",
                       (unsigned long long)c->seq, i, ewhy);
    return 0;
}
#endif /* TRACE_ZSTD_DLOPEN */
