/* capreq: shimdump --capture, the asking side of src/capctl.h. */
#ifndef MALLOCSHIM_CAPREQ_H
#define MALLOCSHIM_CAPREQ_H

#include <signal.h>

/* Asks process pid for a capture of `seconds` into the file `output` (NULL:
 * mallocshim-<pid>-<date>-<time>.trace in the current directory), created
 * here, mode 0600, never over an existing file; shows its progress on a
 * terminal and its totals at the end. *stop becoming nonzero (a signal)
 * ends the capture early, whole. Returns a DX_* exit status (dump.h). */
int capreq_run(long pid, unsigned seconds, const char *output, volatile sig_atomic_t *stop);

/* Asks process pid to change its sampling settings to `settings`
 * ("key:value,..." of sample, sample_bytes, track and stacks), over the
 * same socket and with the same checks as a capture, and prints the
 * settings in force after. Returns a DX_* exit status. */
int capreq_set(long pid, const char *settings, volatile sig_atomic_t *stop);

/* shimdump's one-line error, "shimdump: <what>" on stderr; returns code
 * (shimdump.c). */
int shimdump_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
