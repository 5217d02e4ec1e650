/* serve: shimdump --serve, a small read-only HTTP server (GNU
 * libmicrohttpd) of what --prometheus, --json, --html and --pprof print, for
 * Prometheus and the profilers that scrape pprof endpoints. */
#ifndef MALLOCSHIM_SERVE_H
#define MALLOCSHIM_SERVE_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "dump.h"
#include "html.h"

/* The address --serve listens on when it is given none: loopback only. The
 * port is "MALL" on a phone's keypad, outside the 9100-9999 range that
 * Prometheus's exporters have used up. */
#define SERVE_HOST_DEFAULT "127.0.0.1"
#define SERVE_PORT_DEFAULT 6255

/* What the server reads with: shimdump.c's readers, so that it believes
 * exactly the files and processes shimdump does. */
struct serve_ops {
    /* Reads the segment of the process whose pid the string `pid` (digits
     * only) gives into *d, by the rules of `shimdump PID`, naming the frames
     * of its call stacks when `frames`. Returns DX_OK, else a DX code, the
     * reason said through shimdump_err. */
    int (*load)(const char *pid, int frames, struct dump *d);
    /* Reads the segment of every running process this user can read in the
     * segment directory, as `shimdump --prometheus` does: *d is a malloc'ed
     * array of *n dumps (each to dump_free, then the array to free; NULL when
     * *n is 0). What it skipped for a reason the reader may not know goes to
     * `notes`, a line each, each line after `pre`. Returns DX_OK, else a DX
     * code, said through shimdump_err. */
    int (*load_all)(FILE *notes, const char *pre, struct dump **d, size_t *n);
    struct html_opts html;   /* /report's page; now_ns is set per page */
};

/* NULL in a build with --serve; else why it has none, one line to follow
 * "--serve: " ("not built in: ..."). */
const char *serve_missing(void);

/* Serves, until *stop becomes nonzero (a signal), on addr: "HOST:PORT",
 * "HOST", ":PORT", "[IPV6]:PORT" or NULL, HOST a numeric address
 * (SERVE_HOST_DEFAULT when left out) and PORT 0 to 65535 (SERVE_PORT_DEFAULT;
 * 0: one the kernel picks). A HOST other than loopback is refused unless
 * `remote`. Says on stderr where it listens (the port the kernel picked
 * included) once it does. Returns DX_OK once stopped; DX_USAGE for a bad or
 * refused address; DX_SYS when it cannot listen (said through
 * shimdump_err). */
int serve_run(const char *addr, int remote, const struct serve_ops *ops,
              volatile sig_atomic_t *stop);

/* Where shimdump_err writes: f, or stderr when f is NULL (shimdump.c). The
 * server gives each request's errors to its client this way. */
void shimdump_err_to(FILE *f);

#endif
