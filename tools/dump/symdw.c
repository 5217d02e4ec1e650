/* symdw: source lines from DWARF with libdw (see symdw.h). Compilation
 * units are found by address from a sorted table of their ranges, built
 * once per file; libdw then reads the unit's line table, once its line
 * program fits the budget. */
#include "config.h"

#include "symdw.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ranges tried, going back from the nearest one below an address, for one
 * that covers it and has a line there (overlapping units: code a linker
 * discarded keeps ranges at the address it was given). */
#define WALK_MAX 16

/* One address range of a compilation unit. */
struct range {
    uint64_t lo, hi;           /* [lo, hi), lo < hi */
    Dwarf_Off die;             /* the unit's DIE */
    uint32_t unit;             /* the unit's index in symdw.unit */
};

/* A unit's line table. */
enum { U_NEW, U_READ, U_OVER };

struct symdw {
    Dwarf *dw;
    Dwarf *alt;                /* the supplementary file's, or NULL */
    uint64_t *lines_left;      /* the caller's budget of line-program bytes */
    const Elf_Data *lines;     /* .debug_line as libdw reads it (inflated), or NULL */
    int msb;                   /* the file is big-endian */
    int built;                 /* ranges read (or tried) */
    struct range *r;           /* sorted by lo; NULL when nr is 0 */
    size_t nr;
    uint8_t *unit;             /* per unit with ranges: U_NEW, U_READ or U_OVER */
    size_t nunits;
    char path[4096];           /* the last file given, when it had to be joined */
};

/* e's .debug_line (or GNU's .zdebug_line), which dwarf_begin_elf has
 * inflated in place, or NULL. */
static const Elf_Data *line_section(Elf *e)
{
    size_t shstrndx;
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;
    const char *name;
    if (elf_getshdrstrndx(e, &shstrndx) != 0)
        return NULL;
    while ((scn = elf_nextscn(e, scn)) != NULL)
        if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
            (name = elf_strptr(e, shstrndx, sh.sh_name)) &&
            (strcmp(name, ".debug_line") == 0 || strcmp(name, ".zdebug_line") == 0))
            return elf_getdata(scn, NULL);
    return NULL;
}

int symdw_open(Elf *e, uint64_t *lines_left, struct symdw **out)
{
    struct symdw *w;
    GElf_Ehdr eh;
    Dwarf *dw = dwarf_begin_elf(e, DWARF_C_READ, NULL);
    if (!dw)
        return ENOENT;
    if (!(w = calloc(1, sizeof *w))) {
        dwarf_end(dw);
        return ENOMEM;
    }
    w->dw = dw;
    w->lines_left = lines_left;
    w->lines = line_section(e);
    w->msb = gelf_getehdr(e, &eh) && eh.e_ident[EI_DATA] == ELFDATA2MSB;
    *out = w;
    return 0;
}

size_t symdw_altlink(struct symdw *w, const char **name, const uint8_t **id)
{
    const void *bid;
    /* libdw's own search (dwarf_getalt) starts only when this is above 0. */
    ssize_t n = dwelf_dwarf_gnu_debugaltlink(w->dw, name, &bid);
    if (n <= 0)
        return 0;
    *id = bid;
    return (size_t)n;
}

int symdw_setalt(struct symdw *w, Elf *alt)
{
    const char *name;
    const uint8_t *id;
    Dwarf *a = dwarf_begin_elf(alt, DWARF_C_READ, NULL);
    if (!a)
        return ENOENT;
    struct symdw probe = { .dw = a };
    if (symdw_altlink(&probe, &name, &id) > 0) {   /* a chain: not dwz's */
        dwarf_end(a);
        return ENOENT;
    }
    dwarf_setalt(w->dw, a);
    w->alt = a;
    return 0;
}

static int range_cmp(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return (x->hi > y->hi) - (x->hi < y->hi);
}

/* Appends a range to w->r, growing it; 0, or ENOMEM. */
static int add_range(struct symdw *w, size_t *cap, const struct range *r)
{
    if (w->nr == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        if (nc > SYMDW_MAX_RANGES)
            nc = SYMDW_MAX_RANGES;
        struct range *g = realloc(w->r, nc * sizeof *g);
        if (!g)
            return ENOMEM;
        w->r = g;
        *cap = nc;
    }
    w->r[w->nr++] = *r;
    return 0;
}

/* Reads the ranges of at most SYMDW_MAX_UNITS compile and skeleton units
 * into w->r, sorted. Not .debug_aranges: compilers leave it out (clang) or
 * incomplete, and elfutils itself stopped trusting it (0.192). Units are
 * walked without their split parts (subdie NULL), so no .dwo file is
 * opened. */
static void build_ranges(struct symdw *w)
{
    Dwarf_CU *cu = NULL;
    Dwarf_Half version;
    uint8_t type;
    Dwarf_Die cudie;
    size_t cap = 0, seen = 0;

    w->built = 1;
    while (seen < SYMDW_MAX_UNITS && w->nr < SYMDW_MAX_RANGES &&
           dwarf_get_units(w->dw, cu, &cu, &version, &type, &cudie, NULL) == 0) {
        seen++;
        if (type != DW_UT_compile && type != DW_UT_skeleton)
            continue;
        struct range r = { .die = dwarf_dieoffset(&cudie), .unit = (uint32_t)w->nunits };
        Dwarf_Addr base;
        ptrdiff_t off = 0;
        size_t had = w->nr;
        while (w->nr < SYMDW_MAX_RANGES && (off = dwarf_ranges(&cudie, off, &base, &r.lo, &r.hi)) > 0) {
            /* 0: where GNU ld puts code it discarded */
            if (r.lo == 0 || r.lo >= r.hi)
                continue;
            if (add_range(w, &cap, &r) != 0)
                goto done;
        }
        if (w->nr > had)
            w->nunits++;
    }
done:
    if (w->nr && !(w->unit = calloc(w->nunits + 1, 1))) {
        free(w->r);
        w->r = NULL;
        w->nr = 0;
    }
    if (w->nr)
        qsort(w->r, w->nr, sizeof *w->r, range_cmp);
}

/* n bytes at p, in the file's byte order. */
static uint64_t get_uint(const struct symdw *w, const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * (w->msb ? n - 1 - i : i));
    return v;
}

/* The bytes of the line program of unit cudie: what libdw reads to build its
 * line table (at least 1, so that every unit counts; 0 when it has none). A
 * length past the section counts up to the section's end, where libdw
 * stops. */
static uint64_t program_bytes(const struct symdw *w, Dwarf_Die *cudie)
{
    Dwarf_Attribute a;
    Dwarf_Word off;
    if (!dwarf_attr(cudie, DW_AT_stmt_list, &a) || dwarf_formudata(&a, &off) != 0)
        return 0;
    if (!w->lines || !w->lines->d_buf || off >= w->lines->d_size)
        return 1;
    const unsigned char *p = (const unsigned char *)w->lines->d_buf + off;
    uint64_t room = w->lines->d_size - off, len;
    if (room < 4)
        return room;
    len = get_uint(w, p, 4);
    if (len == 0xffffffffu)    /* 64-bit DWARF */
        len = room >= 12 ? get_uint(w, p + 4, 8) + 12 : room;
    else
        len += 4;
    return len > room || len < 4 ? room : len;
}

/* src as an absolute path where the unit's compilation directory (the
 * line table's directory 0) is absolute: libdw joins a name to its own
 * directory only, which GCC's DWARF 5 gives relative to the compilation
 * directory ("t/integration" for t/integration/sites.cc). Else src. */
static const char *full_path(struct symdw *w, Dwarf_Die *cudie, const char *src)
{
    Dwarf_Files *files;
    const char *const *dirs;
    size_t nfiles, ndirs;
    if (src[0] == '/' || dwarf_getsrcfiles(cudie, &files, &nfiles) != 0 ||
        dwarf_getsrcdirs(files, &dirs, &ndirs) != 0 || ndirs == 0 || !dirs[0] ||
        dirs[0][0] != '/')
        return src;
    while (src[0] == '.' && src[1] == '/')
        src += 2;
    size_t dl = strlen(dirs[0]);
    while (dl > 1 && dirs[0][dl - 1] == '/')
        dl--;
    int n = snprintf(w->path, sizeof w->path, "%.*s/%s", (int)dl, dirs[0], src);
    return n > 0 && (size_t)n < sizeof w->path ? w->path : src;
}

int symdw_line(struct symdw *w, uint64_t vaddr, const char **file, uint32_t *line)
{
    int over = 0;
    if (!w->built)
        build_ranges(w);
    size_t lo = 0, hi = w->nr;
    while (lo < hi) {                  /* first i with r[i].lo > vaddr */
        size_t mid = lo + (hi - lo) / 2;
        if (w->r[mid].lo <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo, steps = 0; i-- > 0 && steps < WALK_MAX; steps++) {
        const struct range *r = &w->r[i];
        uint8_t *u = &w->unit[r->unit];
        Dwarf_Die cudie;
        Dwarf_Line *l;
        int n;
        const char *src;
        if (vaddr >= r->hi || !dwarf_offdie(w->dw, r->die, &cudie))
            continue;
        if (*u == U_NEW) {
            uint64_t cost = program_bytes(w, &cudie);
            *u = cost <= *w->lines_left ? U_READ : U_OVER;
            if (*u == U_READ)
                *w->lines_left -= cost;
        }
        if (*u == U_OVER) {
            over = 1;
            continue;
        }
        if (!(l = dwarf_getsrc_die(&cudie, vaddr)) || dwarf_lineno(l, &n) != 0 || n <= 0 ||
            !(src = dwarf_linesrc(l, NULL, NULL)) || !*src)
            continue;
        *file = full_path(w, &cudie, src);
        *line = (uint32_t)n;
        return 0;
    }
    return over ? E2BIG : ENOENT;
}

void symdw_close(struct symdw *w)
{
    if (!w)
        return;
    /* The main file's first: it refers into the supplementary one. */
    dwarf_end(w->dw);
    if (w->alt)
        dwarf_end(w->alt);
    free(w->r);
    free(w->unit);
    free(w);
}
