/* log: the one diagnostics channel of the preload, built on write(2). */
#ifndef MALLOCSHIM_LOG_H
#define MALLOCSHIM_LOG_H

/* Writes "mallocshim: <message>\n" to stderr with a single write(2), so that
 * lines from several processes or threads do not interleave. Messages longer
 * than 480 bytes are truncated. Never allocates and never uses stdio. A call
 * made while the same thread is already logging (a re-entrant call) is
 * dropped. */
void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* As log_msg, but writes the text as given: no prefix and no newline. */
void log_raw(const char *s, unsigned long n);

#endif
