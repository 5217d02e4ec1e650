/* dumpmap: a segment file mapped read-only (or a JSON file read whole) that
 * shimdump reads again and again: for --watch, --events and one-shot views.
 * Reads are guarded against SIGBUS, so a file truncated under us gives an
 * error, not a crash. */
#ifndef MALLOCSHIM_DUMPMAP_H
#define MALLOCSHIM_DUMPMAP_H

#include "dump.h"

struct dump_map {
    const void *base;          /* the mapping, or NULL for a JSON file */
    uint64_t size;
    char *json;                /* the JSON text, NUL-terminated, or NULL */
    size_t json_len;
    char label[512];           /* the path, for messages and dump.source */
};

/* One event of the ring, with its number. */
struct dump_event {
    uint64_t num;
    struct seg_event ev;
};

/* Maps the file open at fd (a segment) or reads it (JSON: it starts with
 * '{' or a blank). The descriptor may be closed afterwards. Returns a DX_*
 * code with why[] set on failure; on success dump_map_close must follow. */
int dump_map_fd(struct dump_map *m, int fd, const char *label, char *why, size_t whylen);

/* Reads a dump from the mapping (see dump_from_image and dump_from_json).
 * Returns a DX_* code with why[] set on failure. */
int dump_map_read(const struct dump_map *m, struct dump *d, int state, char *why, size_t whylen);

/* Copies into out[0..max) the complete events numbered from `from` on, in
 * order, and sets *next to the number after the last one examined (the
 * ring's head when everything fit). Events not written yet are skipped, and
 * numbers older than the ring's capacity are overwritten. Returns how many
 * were copied, or -1 when the mapping is not a valid segment (or shrank). */
int dump_map_events(const struct dump_map *m, uint64_t from, uint64_t *next,
                    struct dump_event *out, size_t max);

/* Copies the segment's header (as it is now) into *out, and with
 * events_head non-NULL also validates it and reads the event ring's head.
 * Returns 0, or -1 when there is no segment mapped, it is too small, it is
 * invalid (with events_head) or it shrank under the read. */
int dump_map_header(const struct dump_map *m, struct seg_header *out, uint64_t *events_head);

/* Unmaps and frees; the map may be reused. */
void dump_map_close(struct dump_map *m);

#endif
