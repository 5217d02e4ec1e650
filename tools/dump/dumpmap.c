/* dumpmap: read-only mappings of segment files (or JSON files read whole),
 * with every read of a mapping guarded against SIGBUS (a file truncated
 * under us). */
#include "config.h"

#include "dump.h"
#include "dumpmap.h"
#include "seg.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The largest JSON file read. */
#define DUMP_JSON_MAX (128u << 20)

static uint64_t ld(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static sigjmp_buf bus_jmp;
static volatile sig_atomic_t bus_armed;

static void on_bus(int sig)
{
    if (bus_armed) {
        bus_armed = 0;
        siglongjmp(bus_jmp, 1);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void bus_install(void)
{
    static int done;
    struct sigaction sa;
    if (done)
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_bus;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
    done = 1;
}

void dump_map_close(struct dump_map *m)
{
    if (m->base)
        munmap((void *)m->base, m->size);
    free(m->json);
    memset(m, 0, sizeof *m);
}

int dump_map_fd(struct dump_map *m, int fd, const char *label, char *why, size_t whylen)
{
    struct stat st;
    char first = 0;

    memset(m, 0, sizeof *m);
    snprintf(m->label, sizeof m->label, "%s", label);
    if (fstat(fd, &st) != 0) {
        dump_why(why, whylen, "%s", strerror(errno));
        return DX_SYS;
    }
    if (!S_ISREG(st.st_mode)) {
        dump_why(why, whylen, "not a regular file");
        return DX_CORRUPT;
    }
    if (st.st_size == 0) {
        dump_why(why, whylen, "empty file");
        return DX_CORRUPT;
    }
    if (pread(fd, &first, 1, 0) != 1) {
        dump_why(why, whylen, "%s", strerror(errno ? errno : EIO));
        return DX_SYS;
    }
    if (first == '{' || first == ' ' || first == '\n' || first == '\t' || first == '\r') {
        size_t got = 0;
        if ((uint64_t)st.st_size > DUMP_JSON_MAX) {
            dump_why(why, whylen, "a %llu-byte file is too large for a JSON snapshot",
                    (unsigned long long)st.st_size);
            return DX_CORRUPT;
        }
        if (!(m->json = malloc((size_t)st.st_size + 1))) {
            dump_why(why, whylen, "out of memory");
            return DX_SYS;
        }
        while (got < (size_t)st.st_size) {
            ssize_t r = pread(fd, m->json + got, (size_t)st.st_size - got, (off_t)got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        m->json[got] = '\0';
        m->json_len = got;
        return DX_OK;
    }
    m->size = (uint64_t)st.st_size;
    m->base = mmap(NULL, m->size, PROT_READ, MAP_SHARED, fd, 0);
    if (m->base == MAP_FAILED) {
        m->base = NULL;
        dump_why(why, whylen, "cannot map it: %s", strerror(errno));
        return DX_SYS;
    }
    return DX_OK;
}

/* Runs fn(arg) with SIGBUS turned into a return of `bus_rc`: a mapped file
 * that shrinks under a read ends that read, not shimdump. The work lives in
 * fn so that nothing of it is clobbered by the longjmp. */
static int guarded(int (*fn)(void *), void *arg, int bus_rc)
{
    int rc;
    bus_install();
    if (sigsetjmp(bus_jmp, 1))
        return bus_rc;
    bus_armed = 1;
    rc = fn(arg);
    bus_armed = 0;
    return rc;
}

struct read_args {
    const struct dump_map *m;
    struct dump *d;
    int state;
    char *why;
    size_t whylen;
};

static int read_image(void *p)
{
    struct read_args *a = p;
    return dump_from_image(a->d, a->m->base, a->m->size, a->state, a->why, a->whylen);
}

int dump_map_read(const struct dump_map *m, struct dump *d, int state, char *why, size_t whylen)
{
    struct read_args a = { m, d, state, why, whylen };
    int rc;
    if (m->json) {
        rc = dump_from_json(d, m->json, m->json_len, why, whylen);
        snprintf(d->source, sizeof d->source, "%s", m->label);
        return rc;
    }
    memset(d, 0, sizeof *d);
    rc = guarded(read_image, &a, -1);
    if (rc == -1) {
        dump_image_abandon();
        dump_free(d);
        dump_why(why, whylen, "truncated segment: the file shrank while it was read (or its file system is full)");
        return DX_CORRUPT;
    }
    snprintf(d->source, sizeof d->source, "%s", m->label);
    return rc;
}

struct events_args {
    const struct dump_map *m;
    uint64_t from, *next;
    struct dump_event *out;
    size_t max;
};

static int read_events(void *p)
{
    struct events_args *a = p;
    const struct dump_map *m = a->m;
    struct seg_header h;
    size_t n = 0;
    uint64_t from = a->from, i;

    memcpy(&h, m->base, sizeof h);
    if (seg_validate(&h, m->size, NULL) != 0)
        return -1;
    const struct seg_events *ev = (const void *)((const char *)m->base + h.off_events);
    const struct seg_event *ring = (const void *)(ev + 1);
    uint64_t head = ld(&ev->head);
    if (head - from > h.events_cap)
        from = head - h.events_cap;   /* older ones are overwritten */
    for (i = from; i != head && n < a->max; i++) {
        const struct seg_event *e = &ring[i % h.events_cap];
        struct seg_event c;
        uint64_t s0 = ld(&e->seq);
        if (s0 != i + 1)
            continue;   /* not written yet, or never, or overwritten */
        c.t_ns = __atomic_load_n(&e->t_ns, __ATOMIC_RELAXED);
        c.addr = __atomic_load_n(&e->addr, __ATOMIC_RELAXED);
        c.size = __atomic_load_n(&e->size, __ATOMIC_RELAXED);
        c.lifetime_ns = __atomic_load_n(&e->lifetime_ns, __ATOMIC_RELAXED);
        c.tid = __atomic_load_n(&e->tid, __ATOMIC_RELAXED);
        c.kind = __atomic_load_n(&e->kind, __ATOMIC_RELAXED);
        c.seq = s0;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) != s0)
            continue;
        a->out[n].num = i;
        a->out[n].ev = c;
        n++;
    }
    *a->next = i;
    return (int)n;
}

struct header_args {
    const struct dump_map *m;
    struct seg_header *out;
    uint64_t *events_head;
};

static int read_header(void *p)
{
    struct header_args *a = p;
    memcpy(a->out, a->m->base, sizeof *a->out);
    if (!a->events_head)
        return 0;
    if (seg_validate(a->out, a->m->size, NULL) != 0)
        return -1;
    const struct seg_events *ev = (const void *)((const char *)a->m->base + a->out->off_events);
    *a->events_head = ld(&ev->head);
    return 0;
}

int dump_map_header(const struct dump_map *m, struct seg_header *out, uint64_t *events_head)
{
    struct header_args a = { m, out, events_head };
    if (!m->base || m->size < sizeof *out)
        return -1;
    return guarded(read_header, &a, -1);
}

int dump_map_events(const struct dump_map *m, uint64_t from, uint64_t *next,
                    struct dump_event *out, size_t max)
{
    struct events_args a = { m, from, next, out, max };
    *next = from;
    if (!m->base || m->size < sizeof(struct seg_header))
        return -1;
    return guarded(read_events, &a, -1);
}
