/* replayrun: the replay process. shimreplay starts it with
 * libmallocshim.so preloaded on the chosen backend (record:off), so that
 * the allocator under test serves every call it replays; it runs a plan
 * (replayplan.h) with one thread per recorded thread and measures. Its own
 * memory (the plan's blocks as it reads them, the slots) is mmap'ed, not
 * allocated, so that the heap holds only what the trace made. */
#ifndef MALLOCSHIM_REPLAYRUN_H
#define MALLOCSHIM_REPLAYRUN_H

#include <stdint.h>

#include "replayplan.h"

enum replay_touch {
    REPLAY_TOUCH_NONE = 0,     /* write nothing into the blocks */
    REPLAY_TOUCH_FIRST = 1,    /* write the first REPLAY_TOUCH_BYTES bytes of each */
    REPLAY_TOUCH_ALL = 2,      /* write every page of each */
};
#define REPLAY_TOUCH_BYTES 64

struct replay_opts {
    int touch;                 /* enum replay_touch */
    unsigned stall_s;          /* give up after this long without an op done (or
                                  a thread waiting for its time, with pace) */
    int pace;                  /* each main op waits for its time in the trace,
                                  counted from the first thread's start */
    int report_fd;             /* progress and the result go here, as lines */
    const char *backend;       /* the backend the shim must be serving */
    uint64_t start_free;       /* bytes to leave free among the starting heap's
                                  blocks (the trace's start_free, under the
                                  captured config; 0: none) */
};

/* The result line's fields (see replay_run). */
struct replay_result {
    uint64_t ops;              /* main ops done */
    uint64_t ns;               /* from the first thread's start to the last one's end */
    uint64_t peak_rss;         /* VmHWM, bytes */
    uint64_t end_rss;          /* resident bytes when the replay is done, every
                                  block live at the end still held */
    uint64_t base_rss;         /* resident bytes before the first op */
    uint64_t failed;           /* allocations the replay's allocator refused */
    uint64_t blocked;          /* ops that had to wait for another thread */
    uint64_t lost;             /* frees and reallocs that found their slot empty:
                                  after an allocation the allocator refused (see
                                  failed), never else */
    uint64_t clobbered;        /* blocks made into a slot that held one: never */
    uint64_t spaced;           /* free space left among the starting heap's blocks
                                  (its spacers' chunk bytes; see start_free) */
};

/* Runs the plan open at plan_fd. Writes "progress DONE TOTAL" lines and,
 * at the end, one "result KEY=VALUE..." line (the fields of struct
 * replay_result) to o->report_fd. Returns an exit code (enum dump_exit):
 * DX_OK, or DX_SYS after one line on stderr (the shim is not loaded or
 * serves another backend, the plan cannot be read, no op was done for
 * o->stall_s seconds). For the test suite, SHIMREPLAY_TEST_HANG=T:N makes
 * thread T stop before its main op N, as if its allocator hung. */
int replay_run(int plan_fd, const struct replay_opts *o);

/* The least memory a replay of a plan with figures *st takes, in bytes:
 * its live bytes at the peak (allocators keep more: rounding, headers,
 * free space) and a pointer for each of its slots. */
uint64_t replay_memory_need(const struct plan_stats *st);

/* Parses a result line into *r. Returns 0, or EINVAL when it is none. */
int replay_parse_result(const char *line, struct replay_result *r, char *backend, unsigned backend_len);

#endif
