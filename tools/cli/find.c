/* find: where a process's segment is, and which files at a segment's name
 * to believe: the process itself through /proc (the kernel vouches for its
 * descriptors), a copy by name only when its owner and header fit. */
#include "config.h"

#include "find.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

ssize_t find_slurp(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t got = 0;
    if (fd < 0)
        return -1;
    while (got < cap - 1) {
        ssize_t n = read(fd, buf + got, cap - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            close(fd);
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

uint64_t find_proc_start_s(uint32_t pid)
{
    static uint64_t btime;
    char path[64], buf[4096], *p;
    if (!btime && find_slurp("/proc/stat", buf, sizeof buf) > 0 && (p = strstr(buf, "\nbtime ")))
        btime = strtoull(p + 7, NULL, 10);
    snprintf(path, sizeof path, "/proc/%u/stat", pid);
    if (!btime || find_slurp(path, buf, sizeof buf) <= 0 || !(p = strrchr(buf, ')')))
        return 0;
    /* Fields after the command: state is field 3, starttime field 22. */
    for (int field = 2; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    if (!p)
        return 0;
    return btime + strtoull(p + 1, NULL, 10) / (uint64_t)sysconf(_SC_CLK_TCK);
}

int find_proc_state(uint32_t pid, uint64_t start_ns)
{
    if (pid == 0 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
        return DS_DEAD;
    uint64_t st = find_proc_start_s(pid);
    if (st && st > start_ns / 1000000000ull + 2)
        return DS_DEAD;   /* the pid came round again */
    return DS_ALIVE;
}

int find_proc_exists(long pid)
{
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

int find_proc_uids(long pid, uid_t uids[4])
{
    char path[64], buf[4096], *p;
    unsigned long v[4];
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    if (find_slurp(path, buf, sizeof buf) <= 0 || !(p = strstr(buf, "\nUid:")) ||
        sscanf(p + 5, "%lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3]) != 4)
        return -1;
    for (int i = 0; i < 4; i++)
        uids[i] = (uid_t)v[i];
    return 0;
}

int find_owner_fits(uid_t owner, long pid)
{
    uid_t u[4];
    if (owner == 0)
        return 1;
    if (find_proc_uids(pid, u) != 0)
        return 0;
    return owner == u[0] || owner == u[1] || owner == u[2];
}

static const char *file_kind(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISDIR(m) ? "a directory" : S_ISSOCK(m) ? "a socket"
         : S_ISCHR(m) || S_ISBLK(m) ? "a device" : S_ISLNK(m) ? "a symbolic link" : "not a regular file";
}

int find_named(const char *path, long pid, struct find_file *f)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    /* Looked at before it is opened: a FIFO or a device at the name is
     * never opened at all. */
    if (lstat(path, &f->st) != 0) {
        f->err = errno;
        return FIND_NONE;
    }
    if (!S_ISREG(f->st.st_mode)) {
        snprintf(f->why, sizeof f->why, "%s, not a segment", file_kind(f->st.st_mode));
        return FIND_FOREIGN;
    }
    f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY);
    if (f->fd < 0) {
        f->err = errno;
        return FIND_NONE;
    }
    if (fstat(f->fd, &f->st) != 0) {
        f->err = errno;
        find_file_close(f);
        return FIND_NONE;
    }
    if (!S_ISREG(f->st.st_mode)) {
        snprintf(f->why, sizeof f->why, "%s, not a segment", file_kind(f->st.st_mode));
        goto foreign;
    }
    if (pread(f->fd, &f->h, sizeof f->h, 0) != (ssize_t)sizeof f->h || f->h.magic != SEG_MAGIC) {
        snprintf(f->why, sizeof f->why, "not a segment (no segment header)");
        goto foreign;
    }
    if (pid > 0 && f->h.pid != (uint32_t)pid) {
        snprintf(f->why, sizeof f->why, "its header names pid %u", f->h.pid);
        goto foreign;
    }
    /* The shim makes the copy as the process's user, whom the header
     * names: a file of one user that claims another's process is made up. */
    if (f->st.st_uid != 0 && f->st.st_uid != f->h.uid) {
        snprintf(f->why, sizeof f->why, "owned by uid %u but naming a process of uid %u",
                 (unsigned)f->st.st_uid, f->h.uid);
        goto foreign;
    }
    return FIND_OK;
foreign:
    close(f->fd);
    f->fd = -1;
    return FIND_FOREIGN;
}

void find_file_close(struct find_file *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}

/* find_live_map for one descriptor, path /proc/<pid>/fd/<n>: only the
 * memory file the shim names "mallocshim", and only with a live segment's
 * header of pid in it. */
static int live_map_one(const char *path, uint32_t pid, uint64_t start_ns, struct dump_map *m,
                        const char *label)
{
    char link[64], why[256];
    struct dump_map lm;
    struct seg_header h;
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n <= 0)
        return errno == EACCES || errno == EPERM ? DX_PERM : DX_NOTFOUND;
    link[n] = '\0';
    if (strcmp(link, "/memfd:mallocshim (deleted)") != 0)
        return DX_NOTFOUND;   /* a number the program reused, or not ours at all */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return errno == EACCES || errno == EPERM ? DX_PERM : DX_NOTFOUND;
    int rc = dump_map_fd(&lm, fd, label, why, sizeof why);
    close(fd);
    if (rc != DX_OK)
        return rc;
    if (!lm.base || dump_map_header(&lm, &h, NULL) != 0 || h.magic != SEG_MAGIC ||
        h.pid != pid || (start_ns && h.start_ns != start_ns) || (h.flags & SEG_F_COPY)) {
        dump_map_close(&lm);
        return DX_NOTFOUND;
    }
    *m = lm;
    return DX_OK;
}

int find_live_map(uint32_t pid, int live_fd, uint64_t start_ns, struct dump_map *m,
                    const char *label)
{
    char path[320];
    if (live_fd >= 0) {
        snprintf(path, sizeof path, "/proc/%u/fd/%d", pid, live_fd);
        int rc = live_map_one(path, pid, start_ns, m, label);
        if (rc == DX_OK || rc == DX_PERM)
            return rc;
    }
    char dir[64];
    struct dirent *e;
    int rc = DX_NOTFOUND;
    snprintf(dir, sizeof dir, "/proc/%u/fd", pid);
    DIR *dp = opendir(dir);
    if (!dp)
        return errno == EACCES || errno == EPERM ? DX_PERM : DX_NOTFOUND;
    while (rc != DX_OK && (e = readdir(dp)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        rc = live_map_one(path, pid, start_ns, m, label);
    }
    closedir(dp);
    return rc == DX_OK ? DX_OK : DX_NOTFOUND;
}

void find_settle_dead_copy(struct dump_map *m, int fd)
{
    struct seg_header h;
    if (!m->base || dump_map_header(m, &h, NULL) != 0 || !(h.flags & SEG_F_COPY) ||
        find_proc_state(h.pid, h.start_ns) == DS_ALIVE)
        return;
    char *buf = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        return;
    off_t off = 0;
    while ((uint64_t)off < m->size) {
        off_t d = lseek(fd, off, SEEK_DATA), e;
        if (d < 0)
            break;
        e = lseek(fd, d, SEEK_HOLE);
        if (e < 0 || (uint64_t)e > m->size)
            e = (off_t)m->size;
        while (d < e) {
            ssize_t r = pread(fd, buf + d, (size_t)(e - d), d);
            if (r <= 0)
                break;
            d += r;
        }
        off = e;
    }
    munmap((void *)m->base, m->size);
    m->base = buf;
}

void find_prefer_live(struct dump_map *m)
{
    struct seg_header h;
    struct dump_map lm;
    if (m->base && dump_map_header(m, &h, NULL) == 0 && (h.flags & SEG_F_COPY) &&
        find_proc_state(h.pid, h.start_ns) == DS_ALIVE &&
        find_live_map(h.pid, h.live_fd, h.start_ns, &lm, m->label) == DX_OK) {
        dump_map_close(m);
        *m = lm;
    }
}
