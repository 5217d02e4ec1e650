/* fuzz_dump: the fuzz target of shimdump's parsers. Whatever the input, a
 * segment image or a JSON snapshot must give an error code or a dump that
 * every view renders: never a crash, a hang or a read out of bounds.
 * The first byte picks the mode:
 *   0: the input is a raw segment image (the header's checks);
 *   1: a valid header of small geometry, made from the next bytes, with the
 *      rest of the input laid over the body (counters, rings, ages: what
 *      a hostile or torn segment can hold behind a good header);
 *   2: a JSON snapshot.
 * Built with libFuzzer (clang -fsanitize=fuzzer) and, without it, by
 * driver.c, which feeds it random and mutated inputs for a bounded time. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "dumpmap.h"
#include "prom.h"
#include "view.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink(void)
{
    static FILE *f;
    if (!f)
        f = fopen("/dev/null", "w");
    return f;
}

/* d as JSON, in a malloc'ed buffer (NULL when out of memory). */
static char *to_json(const struct dump *d, size_t *len)
{
    char *buf = NULL;
    FILE *mem = open_memstream(&buf, len);
    if (!mem)
        return NULL;
    dump_write_json(mem, d);
    if (fclose(mem) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* What shimdump writes it must read, and read back the same:
 * JSON(d) == JSON(read(JSON(d))), byte for byte. */
static void round_trip(const struct dump *d)
{
    struct dump back;
    char why[256];
    size_t la, lb;
    char *a = to_json(d, &la), *b;

    if (!a)
        return;
    if (dump_from_json(&back, a, la, why, sizeof why) != DX_OK) {
        fprintf(stderr, "fuzz_dump: shimdump cannot read its own JSON: %s\n", why);
        abort();
    }
    if ((b = to_json(&back, &lb)) != NULL) {
        if (la != lb || memcmp(a, b, la) != 0) {
            size_t i = 0, line = 1;
            for (; i < la && i < lb && a[i] == b[i]; i++)
                line += a[i] == '\n';
            fprintf(stderr, "fuzz_dump: JSON read back differs from line %zu:\n%.200s\n"
                            "---- read back:\n%.200s\n", line, a + i, b + i);
            abort();
        }
        free(b);
    }
    dump_free(&back);
    free(a);
}

/* Renders every view, and the JSON round trip. */
static void render(struct dump *d)
{
    struct view_opts o;
    const struct dump *one = d;

    memset(&o, 0, sizeof o);
    o.utf8 = 1;
    o.width = 100;
    view_main(sink(), d, &o);
    o.all = 1;
    o.utf8 = 0;
    o.color = 1;
    o.prev = d;
    view_main(sink(), d, &o);
    view_diff(sink(), d, d, &o);
    view_list_row(sink(), d, &o);
    prom_write(sink(), &one, 1);
    o.top = 64;
    o.frames = 64;
    o.long_bucket = 3;
    view_stacks(sink(), d, &o);
    round_trip(d);
}

static void image(const uint8_t *p, size_t n)
{
    /* A copy, 8-byte aligned as a mapping is. */
    uint64_t *buf = malloc(n + 8);
    struct dump d;
    char why[256];
    struct dump_map m;
    struct dump_event ev[64];
    uint64_t next;

    if (!buf)
        return;
    memcpy(buf, p, n);
    if (dump_from_image(&d, buf, n, DS_UNKNOWN, why, sizeof why) == DX_OK) {
        render(&d);
        dump_free(&d);
    }
    memset(&m, 0, sizeof m);
    m.base = buf;
    m.size = n;
    for (uint64_t from = 0; from < 200; from += 50)
        dump_map_events(&m, from, &next, ev, 64);
    free(buf);
}

static void structured(const uint8_t *p, size_t n)
{
    struct seg_header h;
    struct seg_geometry g;
    uint8_t *buf;

    if (n < 8)
        return;
    memset(&h, 0, sizeof h);
    g.nslots = 1 + p[0] % 4;
    g.ncslots = p[1] % 3;
    g.series_cap = 1 + p[1] % 8;
    g.events_cap = 1 + p[2] % 8;
    g.track_cap = 64;
    g.filter_bits = 8;
    /* stacks in half the inputs: 1..4 frames, 8 entries, 2 objects */
    g.stack_depth = p[0] & 0x80 ? 1 + p[1] % 4 : 0;
    g.stacks_cap = 8;
    g.objs_cap = 2;
    if (seg_layout(&h, &g) != 0)
        return;
    h.magic = SEG_MAGIC;
    h.version = SEG_VERSION;
    h.backend = p[3] % 3;
    snprintf(h.backend_name, sizeof h.backend_name, "%s",
             h.backend == 0 ? "glibc" : h.backend == 1 ? "jemalloc" : "tcmalloc");
    h.sample = 1 + p[4] % 4;
    h.flags = p[5];
    h.pid = 1;
    h.cslots_high = p[2] % 4;   /* may exceed ncslots */
    memcpy(h.comm, "fuzz", 5);
    p += 6;
    n -= 6;
    if (!(buf = calloc(1, h.total_size)))
        return;
    memcpy(buf, &h, sizeof h);
    /* The rest of the input over the body, wrapping round. */
    size_t body = h.total_size - sizeof h;
    for (size_t i = 0; i < n; i++)
        buf[sizeof h + (i * 8 + i / body) % body] ^= p[i];
    image(buf, h.total_size);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct dump d;
    char why[256];

    if (size < 1)
        return 0;
    switch (data[0] % 3) {
    case 0:
        image(data + 1, size - 1);
        break;
    case 1:
        structured(data + 1, size - 1);
        break;
    default:
        if (dump_from_json(&d, (const char *)data + 1, size - 1, why, sizeof why) == DX_OK) {
            render(&d);
            dump_free(&d);
        }
        break;
    }
    return 0;
}
