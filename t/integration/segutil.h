/* segutil: for the recording tests, this process's own segment, mapped
 * read-only and validated, and per-class sums read the way shimdump will. */
#ifndef MALLOCSHIM_SEGUTIL_H
#define MALLOCSHIM_SEGUTIL_H

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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
    /* Named by the sampler's first pass, up to 200 ms after the first
     * tracked allocation (longer on a loaded machine). */
    for (int waited = 0; waited < 30000 && access(path, F_OK) != 0; waited += 10)
        usleep(10000);
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

/* Maps process pid's live segment (seg.h, "Two files"), found among its
 * descriptors by name, read-only: it exists from the shim's start, before
 * the copy has a name. Allocates nothing. NULL (and a message) if none. */
static inline const struct seg_header *su_open_live(int pid)
{
    char dir[64], path[128], link[64];
    char buf[4096];
    struct stat st;
    void *m = NULL;
    snprintf(dir, sizeof dir, "/proc/%d/fd", pid);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    long n;
    while (dfd >= 0 && !m && (n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n && !m;) {
            const char *name = buf + off + 19;   /* struct linux_dirent64's d_name */
            unsigned short reclen = *(const unsigned short *)(buf + off + 16);
            off += reclen;
            snprintf(path, sizeof path, "%s/%s", dir, name);
            ssize_t l = readlink(path, link, sizeof link - 1);
            if (l <= 0)
                continue;
            link[l] = '\0';
            if (strcmp(link, "/memfd:mallocshim (deleted)") != 0)
                continue;
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd >= 0 && fstat(fd, &st) == 0) {
                m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
                if (m == MAP_FAILED)
                    m = NULL;
            }
            if (fd >= 0)
                close(fd);
        }
    }
    if (dfd >= 0)
        close(dfd);
    if (!m)
        fprintf(stderr, "segutil: no live segment among the descriptors of pid %d\n", pid);
    else
        memcpy(&su_hdr, m, sizeof su_hdr);
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
    CHECK(seg_sum_classes(h, &g, s->c, s->t) == 0);
}

#endif
