/* figfmt: the one way shimdump writes an amount: bytes, counts, durations,
 * times of day, lifetime buckets and size classes. The terminal view and
 * the page share it; where they differ (the page has room for words and
 * Unicode), a style says which. */
#ifndef MALLOCSHIM_FIGFMT_H
#define MALLOCSHIM_FIGFMT_H

#include <stddef.h>
#include <stdint.h>

/* The two styles: terse for a terminal column ("12m05s", "<=4.2s",
 * "<=16 B"), words for the page ("12 min 5 s", "4.2 s", "≤16 B"). */
enum figfmt_style { FF_TERSE = 0, FF_WORDS = 1 };

/* Every function writes at most cap bytes (cap > 0) to dst, always
 * terminated, and returns dst. */

/* Bytes with three significant digits: "512 B", "16.0 KiB", "1.02 GiB". */
char *figfmt_bytes(char *dst, size_t cap, uint64_t v);

/* A count, plain below 10,000, else three significant digits: "1234",
 * "12.3K", "4.56M". Negative or NaN counts as 0. */
char *figfmt_count(char *dst, size_t cap, double v);

/* A duration of ns nanoseconds: terse "850ms", "42s", "12m05s", "3h20m",
 * "2d04h"; words "850 ms", "42 s", "12 min 5 s", "3 h 20 min", "2 d 4 h". */
char *figfmt_dur(char *dst, size_t cap, uint64_t ns, enum figfmt_style st);

/* s seconds since a start, to the second: "42 s", "12:05", "3:20:05",
 * "6 d 03:20:05". */
char *figfmt_elapsed(char *dst, size_t cap, double s);

/* CLOCK_REALTIME ns as a time of day, "23:29:43": local time when local
 * is set (a terminal beside the process), else UTC (a page is read
 * elsewhere); "-" for 0. */
char *figfmt_hms(char *dst, size_t cap, uint64_t ns, int local);

/* CLOCK_REALTIME ns as "2026-12-01 23:29:43 UTC"; "-" for 0. */
char *figfmt_utc(char *dst, size_t cap, uint64_t ns);

/* The upper bound of lifetime bucket b (b < 0: "-"): terse "<=4.2s",
 * ">3.2d" for the last; words "4.2 s", "> 3.2 d" (the page writes its own
 * "≤" where it needs one). */
char *figfmt_bucket(char *dst, size_t cap, int b, enum figfmt_style st);

/* An upper bound of a duration that is not a bucket's own (a bucket's
 * bound clamped to the uptime), rounded up to the digits shown: terse
 * "<=4.5m", words "4.5 min" (the page writes its own "≤"). */
char *figfmt_le(char *dst, size_t cap, uint64_t ns, enum figfmt_style st);

/* A standard error err of an estimate v as a share of it: "+/-0.3%" (words
 * "±0.3%"), "+/-12%"; one that rounds to nothing "+/-<0.1%", never
 * "0.0%"; "" where there is none (err or v 0). */
char *figfmt_err(char *dst, size_t cap, double err, double v, enum figfmt_style st);

/* Size class c's label: "<=16 B" (words: "≤16 B"), "17-32 B", "8-10K",
 * ">64.0 MiB". */
char *figfmt_class(char *dst, size_t cap, unsigned c, enum figfmt_style st);

#endif
