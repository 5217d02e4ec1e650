/* capctl: how `shimdump --capture` asks a running process for a capture of
 * its allocation calls, and hears how it goes. Shared by the preload
 * (preload/capture.c) and shimdump.
 *
 * The process listens, once its sampler thread runs, on an AF_UNIX
 * SOCK_SEQPACKET socket in the abstract namespace named CAPCTL_NAME with its
 * pid (nothing in the file system, gone with the process; anyone may bind
 * an abstract name first). shimdump connects, checks that the listener is
 * the process it named by what the kernel vouches for (SO_PEERCRED's uid
 * root's or the process's owner's, and SO_PEERPIDFD's process alive as
 * that pid where the kernel has it: tools/cli/capreq.c), and only then
 * sends one CAPCTL_START message with the trace file's
 * descriptor attached (SCM_RIGHTS): shimdump creates the file, mode 0600,
 * as the user who asked, so the process never opens a path. The process
 * checks by SO_PEERCRED that the asker is its owner (its effective user)
 * or root, and answers CAPCTL_REFUSED (text says why) or CAPCTL_STARTED;
 * then CAPCTL_PROGRESS about twice a second, and CAPCTL_DONE once the
 * trailer is written. shimdump may send CAPCTL_STOP, or close the
 * connection, to end the capture early: the file is finished all the same.
 *
 * shimdump --set sends CAPCTL_SET instead, with the settings to change in
 * `text` (sample, sample_bytes, track, stacks, as in the config), under the
 * same checks both ways; the process answers CAPCTL_SET_DONE with the
 * settings in force in `text` (err EALREADY where they held already), or
 * CAPCTL_REFUSED with its reason, and closes. A process whose library
 * predates CAPCTL_SET refuses it as a request it does not understand.
 *
 * Messages are whole struct capctl_msg, every field fixed-width. */
#ifndef MALLOCSHIM_CAPCTL_H
#define MALLOCSHIM_CAPCTL_H

#include <stdint.h>

#define CAPCTL_MAGIC   0x4c54434du   /* "MCTL" */
#define CAPCTL_VERSION 1u
/* The abstract socket's name, after its leading NUL byte. */
#define CAPCTL_NAME    "mallocshim.capture.%u"

#define CAPCTL_SECONDS_MAX 86400u   /* a day */

enum capctl_kind {
    CAPCTL_START = 1,      /* shimdump: seconds, max_bytes (0: the config's); the fd attached */
    CAPCTL_STOP = 2,       /* shimdump: end it now */
    CAPCTL_STARTED = 3,    /* the process: the figures of the start */
    CAPCTL_PROGRESS = 4,   /* the process: the figures so far */
    CAPCTL_DONE = 5,       /* the process: the totals; `end` says why it ended */
    CAPCTL_REFUSED = 6,    /* the process: err and text say why */
    CAPCTL_SET = 7,        /* shimdump --set: text holds "key:value,..." */
    CAPCTL_SET_DONE = 8,   /* the process: text holds the settings now in force */
};

/* Why a capture ended. */
enum capctl_end {
    CAPCTL_END_TIME = 1,   /* its seconds were up */
    CAPCTL_END_SIZE = 2,   /* the file reached max_bytes */
    CAPCTL_END_ASKED = 3,  /* CAPCTL_STOP, or the asker went away */
    CAPCTL_END_EXIT = 4,   /* the process was exiting */
    CAPCTL_END_ERROR = 5,  /* a write failed: err */
};

struct capctl_msg {
    uint32_t magic;            /* CAPCTL_MAGIC */
    uint32_t version;          /* CAPCTL_VERSION */
    uint32_t kind;             /* enum capctl_kind */
    uint32_t end;              /* enum capctl_end (CAPCTL_DONE) */
    int32_t err;               /* an errno value, 0 for none */
    uint32_t seconds;          /* asked for (1..CAPCTL_SECONDS_MAX) */
    uint64_t max_bytes;        /* the size limit in force */
    uint64_t events;           /* written to the file so far */
    uint64_t dropped;          /* lost: not in the file */
    uint64_t bytes;            /* the file's size so far */
    uint64_t elapsed_ns;       /* since the capture began */
    uint64_t start_blocks;     /* blocks of the starting heap */
    uint64_t start_bytes;      /* their usable bytes */
    uint32_t threads;          /* threads that recorded an event */
    uint32_t reserved;
    char text[160];            /* NUL-terminated: why refused, or what failed */
};

_Static_assert(sizeof(struct capctl_msg) == 248, "capctl_msg layout");

#endif
