/* find: where a process's segment is, and which files at a segment's name
 * to believe. A live process is read through /proc/<pid>/fd, whose
 * descriptors the kernel vouches for; a file found by name is believed only
 * where its owner and its header fit (see "What another user on the host
 * can do" in the README). */
#ifndef MALLOCSHIM_FIND_H
#define MALLOCSHIM_FIND_H

#include <sys/stat.h>
#include <sys/types.h>

#include "dumpmap.h"
#include "seg.h"

/* Reads a /proc file, up to cap - 1 bytes, NUL-terminated; returns its
 * length or -1. */
ssize_t find_slurp(const char *path, char *buf, size_t cap);

/* When process pid started, in CLOCK_REALTIME seconds; 0 if unknown. */
uint64_t find_proc_start_s(uint32_t pid);

/* DS_ALIVE when process pid runs and did not start after a segment made at
 * start_ns (a later process that reused the pid); else DS_DEAD. */
int find_proc_state(uint32_t pid, uint64_t start_ns);

/* Whether pid names a process (ours or another user's). */
int find_proc_exists(long pid);

/* The real, effective, saved and file-system uids of process pid, from
 * /proc; 0, or -1 when it cannot be read. */
int find_proc_uids(long pid, uid_t uids[4]);

/* Whether a file owned by `owner` may stand for process pid: root's, or
 * one of the process's real, effective or saved uid (mariadbd's copy is
 * root's, made before it became mysql). 0 when the process cannot be read. */
int find_owner_fits(uid_t owner, long pid);

enum find_kind {
    FIND_NONE,      /* nothing at the name, or it cannot be opened: err */
    FIND_OK,        /* a regular file with a segment header of pid, made by
                       root or by the user that its header names */
    FIND_FOREIGN    /* something else: why[] says what */
};

/* A file at a segment's name. */
struct find_file {
    int fd;                 /* open read-only with FIND_OK, else -1 */
    struct stat st;         /* lstat's (FIND_FOREIGN) or fstat's (FIND_OK) */
    struct seg_header h;    /* its header, with FIND_OK */
    int err;                /* errno, with FIND_NONE */
    char why[160];          /* with FIND_FOREIGN */
};

/* Looks at path, the name of pid's segment (pid 0: any pid): never follows
 * a link, never opens what is not a regular file, and never blocks.
 * Returns an enum find_kind; with FIND_OK, find_file_close must follow. */
int find_named(const char *path, long pid, struct find_file *f);

void find_file_close(struct find_file *f);

/* The live segment of process pid (seg.h, "Two files"): its memory file,
 * opened through /proc/<pid>/fd/<live_fd> (a hint, -1 for none), else
 * found among the process's descriptors by its name. Maps it into *m and
 * returns DX_OK when it is the live segment of (pid, start_ns) (start_ns 0:
 * any start); else DX_PERM or DX_NOTFOUND, and *m is untouched. */
int find_live_map(uint32_t pid, int live_fd, uint64_t start_ns, struct dump_map *m,
                  const char *label);

/* Where *m maps the copy of a process that no longer runs, reads it whole
 * into private memory instead (pread of its data ranges: a hole of a
 * mapped tmpfs file on a full file system faults). fd is the file mapped. */
void find_settle_dead_copy(struct dump_map *m, int fd);

/* Where *m maps a copy whose process still runs, maps that process's live
 * segment in its place when it can be read; else leaves the copy. */
void find_prefer_live(struct dump_map *m);

#endif
