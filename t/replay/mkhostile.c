/* mkhostile: writes a trace (src/trace.h) that is well formed, every
 * checksum right, yet claims far more than its bytes hold: what anyone can
 * craft, since the checksums are FNV-1a. For t/cli/tracehostile.sh.
 * Usage:
 *   mkhostile events N OUT
 *       N events of one thread, all alike (free(NULL) at time 0), in chunks
 *       of 65536: one frame, compressed once and written again under each
 *       chunk's head, so that 1.31 G events take 3.6 MB;
 *   mkhostile orphans N OUT
 *       as events, each a free of a block the trace never made (16 usable
 *       bytes): each becomes two ops of the plan, its free and, in the
 *       prelude, the block it frees, so the plan takes twice what
 *       plan_size_estimate says;
 *   mkhostile aligned N OUT
 *       N (1..65536) blocks of 16 bytes aligned to 1 TiB (memalign), which
 *       a capture got and a replay's allocator refuses (under ulimit -v, or
 *       on any host with less than 1 TiB to map): 16 live bytes each, so
 *       the replay passes every check before it starts;
 *   mkhostile start CLASS COUNT BYTES OUT
 *       no events, and a starting heap of COUNT blocks of BYTES usable
 *       bytes in all, in size class CLASS;
 *   mkhostile late OUT
 *       a malloc of 16 bytes at time 0 and its free 10,000 s later, under a
 *       trailer that says the capture lasted 0 s.
 * Exit 0, 1 on a failed write, 2 on bad arguments. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"

#define CHUNK TRACE_CHUNK_EVENTS_MAX

static void die(const char *what, int e)
{
    fprintf(stderr, "mkhostile: %s: %s\n", what, strerror(e));
    exit(1);
}

static int pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
    while (n > 0) {
        ssize_t k = pwrite(fd, p, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k < 0 ? errno : EIO;
        p = (const char *)p + k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: mkhostile events N OUT\n"
                    "       mkhostile orphans N OUT\n"
                    "       mkhostile aligned N OUT\n"
                    "       mkhostile start CLASS COUNT BYTES OUT\n"
                    "       mkhostile late OUT\n");
    return 2;
}

int main(int argc, char **argv)
{
    static struct trace_event ev[CHUNK];
    struct trace_writer w;
    struct trace_header h;
    uint64_t events = 0, id = 0;
    int aligned = 0, late = 0;
    size_t wslen;
    void *ws;
    const char *out;
    int fd, rc;

    memset(&h, 0, sizeof h);
    if (argc == 4 && (!strcmp(argv[1], "events") || !strcmp(argv[1], "orphans"))) {
        events = strtoull(argv[2], NULL, 10);
        id = !strcmp(argv[1], "orphans") ? 0x1000 : 0;
        out = argv[3];
    } else if (argc == 4 && !strcmp(argv[1], "aligned")) {
        events = strtoull(argv[2], NULL, 10);
        if (!events || events > CHUNK)
            return usage();
        aligned = 1;
        out = argv[3];
    } else if (argc == 3 && !strcmp(argv[1], "late")) {
        late = 1;
        out = argv[2];
    } else if (argc == 6 && !strcmp(argv[1], "start")) {
        unsigned long c = strtoul(argv[2], NULL, 10);
        if (c >= SIZECLASS_COUNT)
            return usage();
        h.start[c].live_count = strtoull(argv[3], NULL, 10);
        h.start[c].live_usable = strtoull(argv[4], NULL, 10);
        h.flags = TRACE_F_START_EXACT;
        out = argv[5];
    } else {
        return usage();
    }
    h.pid = 4242;
    h.page_size = 4096;
    snprintf(h.comm, sizeof h.comm, "mkhostile");
    snprintf(h.backend_name, sizeof h.backend_name, "glibc");
    snprintf(h.config, sizeof h.config, "backend:glibc");

    wslen = trace_writer_workspace(CHUNK, 1);
    if (!wslen || !(ws = aligned_alloc(64, (wslen + 63) & ~(size_t)63)))
        die("the writer's workspace", ENOMEM);
    fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die(out, errno);
    if ((rc = trace_writer_begin(&w, fd, &h, CHUNK, 1, ws, wslen)) != 0)
        die("writing the header", rc);
    for (uint32_t i = 0; i < CHUNK; i++) {
        ev[i].op = TRACE_OP_FREE;
        ev[i].id = id;
        ev[i].usable = id ? 16 : 0;
        if (aligned) {
            ev[i].op = TRACE_OP_MEMALIGN;
            ev[i].id = (uint64_t)(i + 1) << TRACE_ALIGN_LOG2_MAX;
            ev[i].size = ev[i].usable = 16;
            ev[i].align = TRACE_ALIGN_LOG2_MAX;
        }
    }
    if (late) {
        memset(ev, 0, 2 * sizeof ev[0]);
        ev[0].op = TRACE_OP_MALLOC;
        ev[0].id = 0x10000;
        ev[0].size = ev[0].usable = 16;
        ev[1].op = TRACE_OP_FREE;
        ev[1].id = 0x10000;
        ev[1].usable = 16;
        ev[1].t_ns = 10000ull * 1000000000ull;
        if ((rc = trace_writer_chunk(&w, 1, ev, 2)) != 0)
            die("writing a chunk", rc);
        w.threads = 1;
    }
    if (events) {
        /* The first whole chunk through the writer, then its frame again
         * under a head of the right number and checksum. */
        uint64_t first = w.off, len;
        struct trace_chunk c;
        uint8_t *frame;
        uint32_t n = events < CHUNK ? (uint32_t)events : CHUNK;
        if ((rc = trace_writer_chunk(&w, 1, ev, n)) != 0)
            die("writing a chunk", rc);
        len = w.off - first;
        if (!(frame = malloc(len)) || pread(fd, frame, len, (off_t)first) != (ssize_t)len)
            die("reading the chunk back", errno ? errno : EIO);
        memcpy(&c, frame, sizeof c);
        while (w.events + CHUNK <= events) {
            c.seq = w.chunks;
            c.check = trace_sum64(&c, offsetof(struct trace_chunk, check));
            memcpy(frame, &c, sizeof c);
            if ((rc = pwrite_all(fd, frame, len, w.off)) != 0)
                die(out, rc);
            w.off += len;
            w.chunks++;
            w.events += CHUNK;
        }
        if (events > w.events && (rc = trace_writer_chunk(&w, 1, ev, (uint32_t)(events - w.events))) != 0)
            die("writing a chunk", rc);
        free(frame);
        w.threads = 1;
    }
    if ((rc = trace_writer_end(&w, 0, 1)) != 0)
        die("writing the trailer", rc);
    if (close(fd) != 0)
        die(out, errno);
    free(ws);
    return 0;
}
