/* tracecat: prints a trace file's header figures and every event, one
 * line each, for the tests (t/cli/capture.sh):
 *   start CLASS LIVE_COUNT LIVE_USABLE     per class with blocks
 *   trailer EVENTS DROPPED THREADS END_NS
 *   ev TID OP SIZE AUX ID USABLE ALIGN T_NS in each thread's order (OP:
 *   enum trace_op's number; AUX and ID in hex),
 *   threads in the order of their first chunks.
 * Exit 0, or 1 with the reader's reason on stderr. */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "traceread.h"

int main(int argc, char **argv)
{
    struct trace_file f;
    char why[256];
    uint32_t version;

    if (argc != 2) {
        fprintf(stderr, "usage: tracecat FILE\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
    if (fd < 0 || trace_open(&f, fd, &version, why, sizeof why) != 0) {
        fprintf(stderr, "tracecat: %s: %s\n", argv[1], fd < 0 ? "cannot open" : why);
        return 1;
    }
    if (f.cut) {
        /* shimreplay reads it; a test that reads a capture wants it whole */
        fprintf(stderr, "tracecat: %s: no trailer (cut after %" PRIu64 " chunks)\n", argv[1], f.nchunks);
        return 1;
    }
    printf("header pid %u flags %u backend %u comm %s\n", f.hdr.pid, f.hdr.flags, f.hdr.backend,
           f.hdr.comm);
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++)
        if (f.hdr.start[c].live_count)
            printf("start %u %" PRIu64 " %" PRIu64 "\n", c, f.hdr.start[c].live_count,
                   f.hdr.start[c].live_usable);
    printf("trailer %" PRIu64 " %" PRIu64 " %u %" PRIu64 "\n", f.trl.events, f.trl.dropped,
           f.trl.threads, f.trl.end_ns);
    struct trace_event *ev = malloc(sizeof *ev * f.hdr.chunk_events_max);
    if (!ev)
        return 1;
    for (uint32_t i = 0; i < f.nthreads; i++) {
        const struct trace_thread *t = &f.threads[i];
        for (uint32_t k = 0; k < t->nchunks; k++) {
            if (trace_read_chunk(&f, &t->chunks[k], ev, why, sizeof why) != 0) {
                fprintf(stderr, "tracecat: %s: %s\n", argv[1], why);
                return 1;
            }
            for (uint32_t j = 0; j < t->chunks[k].count; j++)   /* a realloc: its length */
                printf("ev %u %u %" PRIu64 " %" PRIx64 " %" PRIx64 " %u %" PRIu64 " %" PRIu64 "\n",
                       t->tid, (unsigned)ev[j].op, ev[j].size, ev[j].aux, ev[j].id, ev[j].usable,
                       ev[j].op == TRACE_OP_REALLOC ? ev[j].t_ns - trace_realloc_start(&ev[j])
                                                    : (uint64_t)ev[j].align,
                       ev[j].t_ns);
        }
    }
    free(ev);
    trace_close(&f);
    close(fd);
    return 0;
}
