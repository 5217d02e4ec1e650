/* segutil: for the recording tests, this process's own segment, mapped
 * read-only and validated, and per-class sums read the way shimdump will. */
#ifndef MALLOCSHIM_SEGUTIL_H
#define MALLOCSHIM_SEGUTIL_H

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "seg.h"
#include "segread.h"
#include "sizeclass.h"
#include "testutil.h"

/* The validated private copy of the last header su_open mapped. */
static struct seg_header su_hdr;

/* Maps <dir>/mallocshim.<pid> read-only; NULL (and a message) on failure. */
static inline const struct seg_header *su_open(const char *dir, int pid)
{
    char path[512];
    struct stat st;
    uint32_t v;
    snprintf(path, sizeof path, "%s/mallocshim.%d", dir, pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "segutil: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return NULL;
    memcpy(&su_hdr, m, sizeof su_hdr);
    if ((su_hdr.flags & SEG_F_COPY) && su_hdr.live_fd >= 0) {
        /* The named file is the copy (seg.h): the live segment instead. */
        snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, su_hdr.live_fd);
        munmap(m, (size_t)st.st_size);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) != 0) {
            fprintf(stderr, "segutil: %s: %s\n", path, strerror(errno));
            return NULL;
        }
        m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        close(fd);
        if (m == MAP_FAILED)
            return NULL;
        memcpy(&su_hdr, m, sizeof su_hdr);
    }
    if (seg_validate(&su_hdr, (uint64_t)st.st_size, &v) != 0) {
        fprintf(stderr, "segutil: %s: not a valid segment (version %u)\n", path, v);
        return NULL;
    }
    return m;
}

struct su_snap {
    struct seg_counters c[SIZECLASS_COUNT];
    struct seg_tracked t[SIZECLASS_COUNT];
};

static inline void su_snap(const struct seg_header *h, struct su_snap *s)
{
    struct seg_header g;
    memcpy(&g, h, sizeof g);
    CHECK(seg_validate(&g, g.total_size, NULL) == 0);
    CHECK(seg_sum(h, &g, s->c) == 0);
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++)
        seg_read_tracked(h, &g, c, &s->t[c]);
}

#endif
