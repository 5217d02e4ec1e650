/* sym: names addresses from the ELF symbol tables of a process's objects (see
 * sym.h). Each object's table is read once, at its first lookup, into a
 * sorted array of function symbols with their names copied; no file stays
 * open for them. With libdw, the one object whose lines were looked up last
 * keeps its DWARF open (symdw.c), and every file libdw reads is one that
 * this file opened and checked. */
#include "config.h"

#include "sym.h"
#ifdef HAVE_LIBDW
#include "symdw.h"
#endif

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

/* Debian's detached debug files, named by build id (the -dbg and -dbgsym
 * packages): <first byte in hex>/<the other bytes in hex>.debug. */
#define DEBUG_DIR "/usr/lib/debug/.build-id/"

/* Sized symbols tried, going back from the nearest one, for one that covers
 * an address (nested or overlapping symbols). Bounds a lookup's time when a
 * corrupt table has a symbol of huge size. */
#define WALK_MAX 256

/* One kept function symbol.
 * Invariants: end >= value; in the sorted table, maxend == the largest end of
 * this entry and of every entry before it. */
struct ent {
    uint64_t value;            /* ELF vaddr */
    uint64_t end;              /* value + st_size, saturated; == value when the size is 0 */
    uint64_t maxend;
    uint32_t name;             /* offset of its NUL-terminated name in the object's pool */
    uint32_t rank;             /* among symbols at one value, the lowest is kept */
};

enum obj_state { OBJ_NEW, OBJ_READY, OBJ_FAILED };

/* An object's DWARF: LINES_OPEN while it is the context's open one,
 * LINES_SHUT once another object's took its place (opened again when
 * needed), LINES_NONE when it has none that may be read (lines_note). */
enum lines_state { LINES_NEW, LINES_OPEN, LINES_SHUT, LINES_NONE };

struct obj {
    char *path;
    uint64_t bias, lo, hi;
    uint8_t build_id[SYM_MAX_BUILD_ID];
    size_t build_id_len;
    enum obj_state state;
    int err;                   /* OBJ_FAILED for lack of memory: ENOMEM, else 0 */
    enum sym_source source;    /* OBJ_READY: where ents came from */
    const char *note;          /* OBJ_FAILED: why; a string literal or errbuf */
    char errbuf[96];
    struct ent *ents;          /* sorted by value, one per value */
    size_t nents;
    char *pool;                /* the names of ents */
    char **dem;                /* NULL, or per entry: NULL (not tried yet), a malloc'ed
                                * demangled name, or the pool's name (kept as is) */
    enum lines_state lines;
    const char *lines_note;    /* LINES_NONE: why; a string literal */
};

/* An ELF file open for libdw: its descriptor stays open while libdw may read. */
struct elf_file {
    int fd;                    /* -1 when closed */
    Elf *e;
};

typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

struct sym_ctx {
    struct obj *objs;
    size_t n;
    size_t *order;             /* indices of the objects with lo < hi, sorted by lo */
    uint64_t *maxhi;           /* maxhi[k] == the largest hi of order[0..k] */
    size_t norder;
    char *root;                /* NULL or the prefix tried first */
    int dem_tried;             /* libstdc++ was looked for */
    void *dem_dl;
    demangle_fn dem_fn;        /* __cxa_demangle, or NULL */
#ifdef HAVE_LIBDW
    /* The DWARF of one object at a time (dw_obj, in state LINES_OPEN), from
     * dw_main and, for dwz's supplementary file, dw_alt. Invariant:
     * dw != NULL == (dw_obj != NULL) == (dw_main.e != NULL). */
    struct obj *dw_obj;
    struct symdw *dw;
    struct elf_file dw_main, dw_alt;
    uint64_t dw_read;          /* debug section bytes read in all (<= SYM_MAX_DWARF_READ) */
    uint64_t dw_lines_left;    /* line-program bytes that may still be read (symdw.h) */
#endif
};

/* ---- libelf ---- */

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static int elf_usable;         /* Synchronization: written once under elf_once */

static void elf_init(void)
{
    elf_usable = elf_version(EV_CURRENT) != EV_NONE;
}

/* ---- Files ---- */

/* Opens one candidate path read-only: 0 and *fd, or an errno value; ENOEXEC
 * for anything but a regular file. It is stat'ed before the open so that a
 * device (a hostile segment could name /dev/watchdog) is never opened, and
 * O_NONBLOCK keeps a FIFO from blocking if one is swapped in between. */
static int open_one(const char *path, int *fd)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno;
    if (!S_ISREG(st.st_mode))
        return ENOEXEC;
    int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (f < 0)
        return errno;
    if (fstat(f, &st) != 0) {
        int e = errno;
        close(f);
        return e;
    }
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return ENOEXEC;
    }
    *fd = f;
    return 0;
}

/* Opens root + path, then path. Returns 0 and *fd, or the errno of the try
 * that got furthest (ENOENT only when both are missing). */
static int open_file(const char *root, const char *path, int *fd)
{
    int err = ENOENT;
    if (root && *root) {
        char buf[PATH_MAX];
        int n = snprintf(buf, sizeof buf, "%s%s", root, path);
        if (n < 0 || (size_t)n >= sizeof buf)
            err = ENAMETOOLONG;
        else if ((err = open_one(buf, fd)) == 0)
            return 0;
    }
    int e = open_one(path, fd);
    if (e == 0)
        return 0;
    return e == ENOENT || e == ENOTDIR ? err : e;
}

/* ---- Build ids ---- */

/* Looks for NT_GNU_BUILD_ID in one block of notes. Returns its length (it is
 * copied to id, up to cap bytes), or 0 when the block has none. */
static size_t note_build_id(Elf_Data *d, uint8_t *id, size_t cap)
{
    size_t off = 0, next, name_off, desc_off;
    GElf_Nhdr nh;
    if (!d || !d->d_buf)
        return 0;
    /* gelf_getnote checks every offset and size against d_size. */
    while ((next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
        const char *name = (const char *)d->d_buf + name_off;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
            nh.n_descsz > 0) {
            memcpy(id, (const char *)d->d_buf + desc_off, nh.n_descsz < cap ? nh.n_descsz : cap);
            return nh.n_descsz;
        }
        off = next;
    }
    return 0;
}

/* The file's GNU build id: its length (copied to id up to cap bytes), or 0
 * when it has none. Note sections first: a debug file keeps them, while its
 * PT_NOTEs may point at nothing; then PT_NOTEs, for a file without sections. */
static size_t file_build_id(Elf *e, uint8_t *id, size_t cap)
{
    size_t len, nph, i;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn)) != NULL) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || (sh.sh_flags & SHF_COMPRESSED))
            continue;
        if ((len = note_build_id(elf_getdata(scn, NULL), id, cap)) > 0)
            return len;
    }
    if (elf_getphdrnum(e, &nph) != 0)
        return 0;
    for (i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE || ph.p_filesz == 0)
            continue;
        Elf_Data *d = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz,
                                           ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
        if ((len = note_build_id(d, id, cap)) > 0)
            return len;
    }
    return 0;
}

/* 1 when the file's build id is want[len]. */
static int id_matches(Elf *e, const uint8_t *want, size_t len)
{
    uint8_t id[SYM_MAX_BUILD_ID];
    size_t have = file_build_id(e, id, sizeof id);
    return have == len && len <= sizeof id && memcmp(id, want, len) == 0;
}

/* 1 when the file's build id is the recorded one of o. */
static int build_id_matches(Elf *e, const struct obj *o)
{
    return id_matches(e, o->build_id, o->build_id_len);
}

/* The size of a buffer that holds any debug file's path. */
#define DEBUG_PATH_MAX (sizeof DEBUG_DIR + 2 * SYM_MAX_BUILD_ID + 8)

/* Writes the path of the debug file named by id[len] into path
 * (DEBUG_PATH_MAX bytes): <first byte>/<the others>.debug under DEBUG_DIR.
 * Returns 0, or ENOENT when len is below 2 or above SYM_MAX_BUILD_ID. */
static int debug_path(char *path, const uint8_t *id, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    char *p;
    if (len < 2 || len > SYM_MAX_BUILD_ID)
        return ENOENT;
    p = path + sprintf(path, "%s", DEBUG_DIR);
    for (size_t i = 0; i < len; i++) {
        *p++ = hex[id[i] >> 4];
        *p++ = hex[id[i] & 15];
        if (i == 0)
            *p++ = '/';
    }
    strcpy(p, ".debug");
    return 0;
}

/* ---- Symbol tables ---- */

/* The name of s if it is a function symbol kept in the table (defined,
 * STT_FUNC or STT_GNU_IFUNC, or STT_NOTYPE with a size, and a name that is
 * NUL-terminated inside strtab), with its length; NULL for any other. */
static const char *fn_name(const GElf_Sym *s, const Elf_Data *str, size_t *len)
{
    int type = GELF_ST_TYPE(s->st_info);
    if (type != STT_FUNC && type != STT_GNU_IFUNC && !(type == STT_NOTYPE && s->st_size > 0))
        return NULL;
    if (s->st_shndx == SHN_UNDEF || s->st_name == 0 || s->st_name >= str->d_size)
        return NULL;
    const char *name = (const char *)str->d_buf + s->st_name;
    size_t room = str->d_size - s->st_name;
    size_t n = strnlen(name, room);
    if (n == 0 || n == room)
        return NULL;
    *len = n;
    return name;
}

/* Lower is preferred among aliases at one value: a size, then global over
 * weak over local, FUNC over IFUNC over NOTYPE, fewer leading underscores
 * ("malloc" over "__libc_malloc" and "__GI___libc_malloc"). */
static uint32_t fn_rank(const GElf_Sym *s, const char *name)
{
    int bind = GELF_ST_BIND(s->st_info), type = GELF_ST_TYPE(s->st_info);
    uint32_t r = s->st_size == 0 ? 64 : 0;
    r += (bind == STB_GLOBAL ? 0u : bind == STB_WEAK ? 1u : 2u) * 16;
    r += (type == STT_FUNC ? 0u : type == STT_GNU_IFUNC ? 1u : 2u) * 4;
    for (int u = 0; u < 3 && name[u] == '_'; u++)
        r++;
    return r;
}

static int ent_cmp(const void *a, const void *b, void *pool)
{
    const struct ent *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return strcmp((const char *)pool + x->name, (const char *)pool + y->name);
}

/* Loads the function symbols of the symbol table scn into o (whose ents and
 * pool are empty). Returns 0, ENOENT when it holds none or is unusable, or
 * ENOMEM. At most SYM_MAX_SYMS symbols, and names of at most UINT32_MAX bytes
 * in all, are kept. */
static int load_table(struct obj *o, Elf *e, Elf_Scn *scn)
{
    GElf_Shdr sh, strsh;
    Elf_Scn *strscn;
    Elf_Data *d, *str;
    size_t fsz, nsym, i, len, count = 0, bytes = 0;
    GElf_Sym s;
    const char *name;

    if (!gelf_getshdr(scn, &sh) || (sh.sh_flags & SHF_COMPRESSED) || sh.sh_link == 0)
        return ENOENT;
    if (!(strscn = elf_getscn(e, sh.sh_link)) || !gelf_getshdr(strscn, &strsh) ||
        strsh.sh_type != SHT_STRTAB || (strsh.sh_flags & SHF_COMPRESSED))
        return ENOENT;
    if (!(str = elf_getdata(strscn, NULL)) || !str->d_buf || str->d_size == 0)
        return ENOENT;
    if (!(d = elf_getdata(scn, NULL)) || !d->d_buf || d->d_type != ELF_T_SYM)
        return ENOENT;
    if ((fsz = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT)) == 0)
        return ENOENT;
    nsym = d->d_size / fsz;
    if (nsym > INT_MAX)                /* gelf_getsym takes an int */
        nsym = INT_MAX;

    /* Count first, so that the arrays are allocated once and exactly. */
    for (i = 1; i < nsym && count < SYM_MAX_SYMS; i++) {
        if (!gelf_getsym(d, (int)i, &s) || !(name = fn_name(&s, str, &len)))
            continue;
        if (len + 1 > UINT32_MAX - bytes)
            break;
        count++;
        bytes += len + 1;
    }
    if (count == 0)
        return ENOENT;
    o->ents = malloc(count * sizeof *o->ents);
    o->pool = malloc(bytes);
    if (!o->ents || !o->pool) {
        free(o->ents);
        free(o->pool);
        o->ents = NULL;
        o->pool = NULL;
        return ENOMEM;
    }
    size_t k = 0, at = 0;
    for (i = 1; i < nsym && k < count; i++) {
        if (!gelf_getsym(d, (int)i, &s) || !(name = fn_name(&s, str, &len)))
            continue;
        struct ent *t = &o->ents[k++];
        t->value = s.st_value;
        t->end = s.st_value + s.st_size < s.st_value ? UINT64_MAX : s.st_value + s.st_size;
        t->name = (uint32_t)at;
        t->rank = fn_rank(&s, name);
        memcpy(o->pool + at, name, len + 1);
        at += len + 1;
    }
    qsort_r(o->ents, k, sizeof *o->ents, ent_cmp, o->pool);

    /* One entry per value (the best ranked), then the running maximum of end. */
    size_t w = 0;
    uint64_t maxend = 0;
    for (i = 0; i < k; i++) {
        if (w > 0 && o->ents[w - 1].value == o->ents[i].value)
            continue;
        o->ents[w] = o->ents[i];
        if (o->ents[w].end > maxend)
            maxend = o->ents[w].end;
        o->ents[w].maxend = maxend;
        w++;
    }
    o->nents = w;
    return 0;
}

/* Loads the first table of type (SHT_SYMTAB or SHT_DYNSYM) of e into o:
 * 0, ENOENT (none, or none with a function) or ENOMEM. A NOBITS .dynsym, as
 * in debug files, is not of type SHT_DYNSYM and is skipped. */
static int load_first(struct obj *o, Elf *e, Elf64_Word type)
{
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn)) != NULL) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
            return load_table(o, e, scn);
    }
    return ENOENT;
}

/* NULL, or why e cannot be used: not an ELF executable or shared object. */
static const char *elf_refusal(Elf *e)
{
    GElf_Ehdr eh;
    if (!e)
        return "corrupt ELF file";
    if (elf_kind(e) != ELF_K_ELF)
        return "not an ELF file";
    if (!gelf_getehdr(e, &eh))
        return "corrupt ELF file";
    if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
        return "not an executable or shared object";
    return NULL;
}

/* Tries the debug file named by o's build id: 0 when its .symtab is loaded,
 * ENOMEM, or ENOENT for anything else (missing, another build, no .symtab). */
static int load_debugfile(struct sym_ctx *c, struct obj *o)
{
    char path[DEBUG_PATH_MAX];
    int fd, r = ENOENT;

    if (debug_path(path, o->build_id, o->build_id_len) != 0)
        return ENOENT;
    if (open_file(c->root, path, &fd) != 0)
        return ENOENT;
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    if (!elf_refusal(e) && build_id_matches(e, o))
        r = load_first(o, e, SHT_SYMTAB);
    elf_end(e);
    close(fd);
    return r;
}

static void obj_fail(struct obj *o, const char *note, int err)
{
    o->state = OBJ_FAILED;
    o->note = note;
    o->err = err;
}

/* Reads o's symbols: the debug file, else the object's .symtab, else its
 * .dynsym. Sets o->state (and o->note when it fails). */
static void obj_load(struct sym_ctx *c, struct obj *o)
{
    int fd, r;
    const char *why;

    if (!elf_usable) {
        obj_fail(o, "libelf refused EV_CURRENT", 0);
        return;
    }
    r = load_debugfile(c, o);
    if (r == 0) {
        o->state = OBJ_READY;
        o->source = SYM_DEBUGFILE;
        return;
    }
    if (r == ENOMEM) {
        obj_fail(o, "out of memory", ENOMEM);
        return;
    }
    if (o->path[0] != '/') {           /* "linux-vdso.so.1", or a dlopen("./x.so") */
        obj_fail(o, "not an absolute path", 0);
        return;
    }
    r = open_file(c->root, o->path, &fd);
    if (r != 0) {
        if (r == ENOENT || r == ENOTDIR) {
            obj_fail(o, "object not found", 0);
        } else if (r == ENOEXEC) {
            obj_fail(o, "not a regular file", 0);
        } else {
            char buf[80];
            snprintf(o->errbuf, sizeof o->errbuf, "%s", strerror_r(r, buf, sizeof buf));
            obj_fail(o, o->errbuf, 0);
        }
        return;
    }
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    if ((why = elf_refusal(e)) != NULL) {
        obj_fail(o, why, 0);
    } else if (o->build_id_len > 0 && !build_id_matches(e, o)) {
        obj_fail(o, "build id differs", 0);
    } else if ((r = load_first(o, e, SHT_SYMTAB)) == 0) {
        o->state = OBJ_READY;
        o->source = SYM_SYMTAB;
    } else if (r == ENOENT && (r = load_first(o, e, SHT_DYNSYM)) == 0) {
        o->state = OBJ_READY;
        o->source = SYM_DYNSYM;
    } else {
        obj_fail(o, r == ENOMEM ? "out of memory" : "no symbols", r == ENOMEM ? ENOMEM : 0);
    }
    elf_end(e);
    close(fd);
}

/* ---- Source lines (libdw) ---- */

#ifdef HAVE_LIBDW
static void file_close(struct elf_file *f)
{
    if (f->e)
        elf_end(f->e);
    if (f->fd >= 0)
        close(f->fd);
    f->e = NULL;
    f->fd = -1;
}

/* 1 when libdw reads the section of this name (every DWARF section, plain
 * or in GNU's older .zdebug form, and GDB's index). */
static int is_debug_section(const char *name)
{
    return strncmp(name, ".debug_", 7) == 0 || strncmp(name, ".zdebug_", 8) == 0 ||
           strcmp(name, ".gdb_index") == 0;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

/* The bytes libdw will hold once it opens e: its debug sections as read,
 * plus the inflated size of the compressed ones, which it inflates at
 * once. Above cap, some sum above cap: the compressed sections' headers are
 * read only when the bytes as read fit (reading them reads the section).
 * Sets *sup when e has a .debug_sup (DWARF 5's supplementary file, which
 * is not looked for). */
static uint64_t dwarf_bytes(Elf *e, uint64_t cap, int *sup)
{
    size_t shstrndx;
    uint64_t sum = 0;
    Elf_Scn *scn;
    GElf_Shdr sh;
    const char *name;

    *sup = 0;
    if (elf_getshdrstrndx(e, &shstrndx) != 0)
        return 0;
    for (scn = NULL; (scn = elf_nextscn(e, scn)) != NULL;) {
        if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
            !(name = elf_strptr(e, shstrndx, sh.sh_name)))
            continue;
        if (strcmp(name, ".debug_sup") == 0)
            *sup = 1;
        if (is_debug_section(name))
            sum = add_sat(sum, sh.sh_size);
    }
    if (sum == 0 || sum > cap)
        return sum;
    for (scn = NULL; (scn = elf_nextscn(e, scn)) != NULL;) {
        if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
            !(name = elf_strptr(e, shstrndx, sh.sh_name)) || !is_debug_section(name))
            continue;
        if (sh.sh_flags & SHF_COMPRESSED) {
            GElf_Chdr ch;
            /* an unreadable header: libdw fails on it as well */
            if (gelf_getchdr(scn, &ch))
                sum = add_sat(sum, ch.ch_size);
        } else if (name[1] == 'z') {
            /* "ZLIB", then the inflated size, 8 bytes big-endian */
            Elf_Data *d = elf_rawdata(scn, NULL);
            const unsigned char *b = d ? d->d_buf : NULL;
            if (b && d->d_size >= 12 && memcmp(b, "ZLIB", 4) == 0) {
                uint64_t n = 0;
                for (int i = 4; i < 12; i++)
                    n = n << 8 | b[i];
                sum = add_sat(sum, n);
            }
        }
    }
    return sum;
}

/* Opens path (under c->root first, by sym's rules) as an ELF file whose
 * build id is id[len] (not checked when len is 0), with an executable's or
 * shared object's header unless any_type (dwz's files have none). Returns 0
 * and *f, or ENOENT. */
static int elf_file_open(struct sym_ctx *c, const char *path, const uint8_t *id, size_t len,
                         int any_type, struct elf_file *f)
{
    GElf_Ehdr eh;
    f->e = NULL;
    if (open_file(c->root, path, &f->fd) != 0) {
        f->fd = -1;
        return ENOENT;
    }
    f->e = elf_begin(f->fd, ELF_C_READ, NULL);
    if (!f->e || elf_kind(f->e) != ELF_K_ELF || !gelf_getehdr(f->e, &eh) ||
        (!any_type && elf_refusal(f->e)) || (len > 0 && !id_matches(f->e, id, len))) {
        file_close(f);
        return ENOENT;
    }
    return 0;
}

/* Opens the supplementary file that .gnu_debugaltlink names by name and
 * build id: the debug file of that build id, else the name itself when it
 * is under /usr/lib/debug/ (where Debian's dh_dwz puts them, under .dwz/)
 * and goes nowhere else. 0 and *f, or ENOENT. */
static int alt_open(struct sym_ctx *c, const char *name, const uint8_t *id, size_t len,
                    struct elf_file *f)
{
    char path[DEBUG_PATH_MAX];
    static const char dir[] = "/usr/lib/debug/";
    if (debug_path(path, id, len) == 0 && elf_file_open(c, path, id, len, 1, f) == 0)
        return 0;
    if (len == 0 || strncmp(name, dir, sizeof dir - 1) != 0 || strstr(name, "/../") ||
        strstr(name, "/./") || strstr(name, "//"))
        return ENOENT;
    return elf_file_open(c, name, id, len, 1, f);
}

/* Closes the context's open DWARF, if any; its object can be opened again. */
static void lines_shut(struct sym_ctx *c)
{
    if (!c->dw_obj)
        return;
    symdw_close(c->dw);
    file_close(&c->dw_main);
    file_close(&c->dw_alt);
    c->dw_obj->lines = LINES_SHUT;
    c->dw_obj = NULL;
    c->dw = NULL;
}

/* Makes path's DWARF the context's open one, for o, within the budgets.
 * Returns 0; ENOENT when path is missing, another build's, or has no DWARF
 * (the next candidate is tried); any other value when it has DWARF that is
 * not to be read, with *why set. */
static int lines_try(struct sym_ctx *c, struct obj *o, const char *path, const char **why)
{
    struct elf_file m = { -1, NULL }, a = { -1, NULL };
    struct symdw *w = NULL;
    const char *altname;
    const uint8_t *altid;
    uint64_t bytes, abytes;
    size_t altlen;
    int sup, r;

    if (elf_file_open(c, path, o->build_id, o->build_id_len, 0, &m) != 0)
        return ENOENT;
    r = EFBIG;
    bytes = dwarf_bytes(m.e, SYM_MAX_DWARF_BYTES, &sup);
    if (bytes == 0) {
        r = ENOENT;
        goto fail;
    }
    if (sup) {
        *why = "supplementary debug file (.debug_sup) not supported";
        goto fail;
    }
    if (bytes > SYM_MAX_DWARF_BYTES) {
        *why = "debug information too large";
        goto fail;
    }
    if (bytes > SYM_MAX_DWARF_READ - c->dw_read) {
        *why = "debug information budget spent";
        goto fail;
    }
    c->dw_read += bytes;
    if ((r = symdw_open(m.e, &c->dw_lines_left, &w)) != 0) {
        *why = r == ENOMEM ? "out of memory" : "no debug information";
        goto fail;
    }
    /* dwz: nothing is read from w until its supplementary file is given. */
    if ((altlen = symdw_altlink(w, &altname, &altid)) > 0) {
        r = EFBIG;
        if (alt_open(c, altname, altid, altlen, &a) != 0) {
            *why = "supplementary debug file not found";
            goto fail;
        }
        abytes = dwarf_bytes(a.e, SYM_MAX_DWARF_BYTES - bytes, &sup);
        if (abytes > SYM_MAX_DWARF_BYTES - bytes) {
            *why = "debug information too large";
            goto fail;
        }
        if (sup) {
            *why = "supplementary debug file (.debug_sup) not supported";
            goto fail;
        }
        if (abytes > SYM_MAX_DWARF_READ - c->dw_read) {
            *why = "debug information budget spent";
            goto fail;
        }
        c->dw_read += abytes;
        if (symdw_setalt(w, a.e) != 0) {
            *why = "supplementary debug file unusable";
            goto fail;
        }
    }
    c->dw = w;
    c->dw_main = m;
    c->dw_alt = a;
    c->dw_obj = o;
    o->lines = LINES_OPEN;
    return 0;
fail:
    symdw_close(w);
    file_close(&a);
    file_close(&m);
    return r;
}

/* Opens o's DWARF, closing the context's other one: from the debug file
 * named by its build id, else from the object's own file. */
static void lines_open(struct sym_ctx *c, struct obj *o)
{
    char path[DEBUG_PATH_MAX];
    const char *why = "no debug information";
    int r = ENOENT;

    lines_shut(c);
    if (debug_path(path, o->build_id, o->build_id_len) == 0)
        r = lines_try(c, o, path, &why);
    if (r == ENOENT && o->path[0] == '/')
        r = lines_try(c, o, o->path, &why);
    if (r != 0) {
        o->lines = LINES_NONE;
        o->lines_note = why;
    }
}
#endif

/* Fills out->file and out->line for the address out->obj_off of o, or
 * out->line_note. */
static void lines_lookup(struct sym_ctx *c, struct obj *o, struct sym_result *out)
{
#ifdef HAVE_LIBDW
    if (o->lines == LINES_NEW || o->lines == LINES_SHUT)
        lines_open(c, o);
    if (o->lines == LINES_NONE) {
        out->line_note = o->lines_note;
        return;
    }
    int r = symdw_line(c->dw, out->obj_off, &out->file, &out->line);
    if (r != 0) {
        out->file = NULL;
        out->line = 0;
        out->line_note = r == E2BIG ? "debug information budget spent" : "no line covers the address";
    }
#else
    (void)c;
    (void)o;
    out->line_note = "shimdump built without libdw";
#endif
}

/* ---- Lookup ---- */

/* The object holding addr, or NULL. The nearest lo at or below addr first,
 * then back while an earlier object could still reach past addr. */
static struct obj *find_obj(struct sym_ctx *c, uint64_t addr)
{
    size_t lo = 0, hi = c->norder;
    while (lo < hi) {                  /* first k with objs[order[k]].lo > addr */
        size_t mid = lo + (hi - lo) / 2;
        if (c->objs[c->order[mid]].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = lo; k-- > 0 && c->maxhi[k] > addr;) {
        struct obj *o = &c->objs[c->order[k]];
        if (addr < o->hi)
            return o;
    }
    return NULL;
}

/* The entry naming vaddr, or NULL: the nearest sized symbol that covers it,
 * else the nearest preceding symbol when its size is 0. */
static const struct ent *find_ent(const struct obj *o, uint64_t vaddr)
{
    size_t lo = 0, hi = o->nents;
    while (lo < hi) {                  /* first i with value > vaddr */
        size_t mid = lo + (hi - lo) / 2;
        if (o->ents[mid].value <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const struct ent *near = &o->ents[lo - 1];
    size_t steps = 0;
    for (size_t i = lo; i-- > 0 && o->ents[i].maxend > vaddr && steps < WALK_MAX; steps++)
        if (o->ents[i].end > vaddr)
            return &o->ents[i];
    return near->end == near->value ? near : NULL;
}

/* Demangles raw with __cxa_demangle, keeping a "@VERSION" or "@@VERSION"
 * suffix (a versioned name in a .symtab) out of it. A malloc'ed string, or
 * NULL when raw is not a C++ name or memory ran out. */
static char *demangle(demangle_fn fn, const char *raw)
{
    const char *at = strchr(raw, '@');
    char *base = at ? strndup(raw, (size_t)(at - raw)) : NULL;
    int status = -1;
    char *d;
    if (at && !base)
        return NULL;
    d = fn(base ? base : raw, NULL, NULL, &status);
    free(base);
    if (status != 0 || !d) {
        free(d);
        return NULL;
    }
    if (at) {
        size_t dl = strlen(d), al = strlen(at);
        char *full = realloc(d, dl + al + 1);
        if (!full) {
            free(d);
            return NULL;
        }
        memcpy(full + dl, at, al + 1);
        d = full;
    }
    return d;
}

/* The name of o's entry i, demangled when it is a C++ name and libstdc++'s
 * demangler can be loaded (the first C++ name dlopens it; it is not linked). */
static const char *ent_name(struct sym_ctx *c, struct obj *o, size_t i)
{
    char *raw = o->pool + o->ents[i].name;
    if (raw[0] != '_' || raw[1] != 'Z')
        return raw;
    if (!c->dem_tried) {
        c->dem_tried = 1;
        c->dem_dl = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (c->dem_dl)
            c->dem_fn = (demangle_fn)dlsym(c->dem_dl, "__cxa_demangle");
    }
    if (!c->dem_fn)
        return raw;
    if (!o->dem && !(o->dem = calloc(o->nents, sizeof *o->dem)))
        return raw;
    if (!o->dem[i]) {
        char *d = demangle(c->dem_fn, raw);
        o->dem[i] = d ? d : raw;
    }
    return o->dem[i];
}

int sym_lookup(struct sym_ctx *c, uint64_t addr, struct sym_result *out)
{
    if (!out)
        return EINVAL;
    memset(out, 0, sizeof *out);
    if (!c)
        return EINVAL;
    struct obj *o = find_obj(c, addr);
    if (!o) {
        out->note = "no object holds the address";
        return 0;
    }
    out->obj = o->path;
    out->obj_off = addr - o->bias;
    if (o->state == OBJ_NEW)
        obj_load(c, o);
    lines_lookup(c, o, out);
    if (o->state == OBJ_FAILED) {
        out->note = o->note;
        return o->err;
    }
    const struct ent *t = find_ent(o, out->obj_off);
    if (!t) {
        out->note = "no symbol covers the address";
        return 0;
    }
    out->func = ent_name(c, o, (size_t)(t - o->ents));
    out->func_off = out->obj_off - t->value;
    out->source = o->source;
    return 0;
}

/* ---- Context ---- */

static int order_cmp(const void *a, const void *b, void *objs)
{
    const struct obj *x = (const struct obj *)objs + *(const size_t *)a;
    const struct obj *y = (const struct obj *)objs + *(const size_t *)b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return (x > y) - (x < y);
}

struct sym_ctx *sym_open(const struct sym_obj *objs, size_t n, const char *root)
{
    struct sym_ctx *c;
    size_t i;

    if (n > SYM_MAX_OBJS) {
        errno = E2BIG;
        return NULL;
    }
    if (n > 0 && !objs) {
        errno = EINVAL;
        return NULL;
    }
    for (i = 0; i < n; i++) {
        if (objs[i].build_id_len > SYM_MAX_BUILD_ID || (objs[i].build_id_len && !objs[i].build_id)) {
            errno = EINVAL;
            return NULL;
        }
    }
    pthread_once(&elf_once, elf_init);
    if (!(c = calloc(1, sizeof *c)))
        return NULL;
    c->n = n;
#ifdef HAVE_LIBDW
    c->dw_main.fd = c->dw_alt.fd = -1;
    c->dw_lines_left = SYM_MAX_LINE_BYTES;
#endif
    if ((n > 0 && (!(c->objs = calloc(n, sizeof *c->objs)) || !(c->order = calloc(n, sizeof *c->order)) ||
                   !(c->maxhi = calloc(n, sizeof *c->maxhi)))) ||
        (root && !(c->root = strdup(root))))
        goto nomem;
    for (i = 0; i < n; i++) {
        struct obj *o = &c->objs[i];
        if (!(o->path = strdup(objs[i].path ? objs[i].path : "")))
            goto nomem;
        o->bias = objs[i].bias;
        o->lo = objs[i].lo;
        o->hi = objs[i].hi;
        o->build_id_len = objs[i].build_id_len;
        if (o->build_id_len)
            memcpy(o->build_id, objs[i].build_id, o->build_id_len);
        if (o->lo < o->hi)
            c->order[c->norder++] = i;
    }
    if (c->norder > 0)
        qsort_r(c->order, c->norder, sizeof *c->order, order_cmp, c->objs);
    for (i = 0; i < c->norder; i++) {
        uint64_t h = c->objs[c->order[i]].hi;
        c->maxhi[i] = i > 0 && c->maxhi[i - 1] > h ? c->maxhi[i - 1] : h;
    }
    return c;
nomem:
    sym_close(c);
    errno = ENOMEM;
    return NULL;
}

void sym_close(struct sym_ctx *c)
{
    if (!c)
        return;
    for (size_t i = 0; c->objs && i < c->n; i++) {
        struct obj *o = &c->objs[i];
        for (size_t k = 0; o->dem && k < o->nents; k++)
            if (o->dem[k] != o->pool + o->ents[k].name)
                free(o->dem[k]);
        free(o->dem);
        free(o->ents);
        free(o->pool);
        free(o->path);
    }
#ifdef HAVE_LIBDW
    lines_shut(c);
#endif
    if (c->dem_dl)
        dlclose(c->dem_dl);
    free(c->objs);
    free(c->order);
    free(c->maxhi);
    free(c->root);
    free(c);
}
