/* sym: names the functions at addresses of a (possibly dead) process, from the
 * ELF symbol tables of the objects it had mapped (libelf), and, in a build
 * with libdw, their source file and line from the objects' DWARF. No
 * debugger, no subprocess. */
#ifndef MALLOCSHIM_SYM_H
#define MALLOCSHIM_SYM_H

#include <stddef.h>
#include <stdint.h>

/* Bounds on what one context holds, so that a hostile segment or ELF file
 * cannot make shimdump use unbounded memory: at most SYM_MAX_OBJS objects,
 * build ids of at most SYM_MAX_BUILD_ID bytes, and at most SYM_MAX_SYMS
 * function symbols kept per object (the rest of a larger table is ignored,
 * and its addresses get the nearest kept symbol or none). */
#define SYM_MAX_OBJS 4096
#define SYM_MAX_BUILD_ID 64
#define SYM_MAX_SYMS (4u << 20)

/* Bounds on the DWARF read for lines (libdw reads a file's debug sections
 * whole, and inflates the compressed ones): one object's DWARF is held at a
 * time, and its debug sections (with dwz's supplementary file's, inflated
 * sizes counted) may hold at most SYM_MAX_DWARF_BYTES; an object with more
 * gets no lines. A context reads at most SYM_MAX_DWARF_READ in all (an
 * object opened again counts again), which bounds the time a segment whose
 * objects all name one huge file can cost; objects opened after that get
 * no lines. The line tables libdw builds, about 35 bytes a row (glibc's
 * have a row per 4.5 bytes of line program; a hostile one, a row per
 * byte), come from at most SYM_MAX_LINE_BYTES of line programs in all, a
 * compilation unit's whole or not at all; the units over it give no lines.
 * libdw's own record of each compilation unit (a few hundred bytes) comes
 * on top, for at most SYMDW_MAX_UNITS units a file (symdw.h). */
#define SYM_MAX_DWARF_BYTES (1ull << 30)
#define SYM_MAX_DWARF_READ (4ull << 30)
#define SYM_MAX_LINE_BYTES (32ull << 20)

/* One mapped object, as the segment records it. */
struct sym_obj {
    const char *path;          /* absolute path as mapped; any other (NULL, "linux-vdso.so.1")
                                * is not opened: only a debug file named by its build id is */
    uint64_t bias;             /* dlpi_addr: address = ELF vaddr + bias */
    uint64_t lo, hi;           /* absolute range [lo, hi) of its PT_LOADs */
    const uint8_t *build_id;   /* its NT_GNU_BUILD_ID, as the process saw it */
    size_t build_id_len;       /* 0: unknown, nothing is checked */
};

/* Where a name came from. */
enum sym_source {
    SYM_NONE = 0,              /* no name: see note */
    SYM_SYMTAB,                /* the object's own .symtab */
    SYM_DYNSYM,                /* the object's .dynsym (it was stripped) */
    SYM_DEBUGFILE,             /* .symtab of /usr/lib/debug/.build-id/xx/yyyy.debug */
};

struct sym_result {
    const char *obj;           /* the object's path, or NULL when no object holds the address */
    uint64_t obj_off;          /* address - bias (the ELF vaddr); valid when obj != NULL */
    const char *func;          /* the function (demangled when possible), or NULL */
    uint64_t func_off;         /* vaddr - symbol value; valid when func != NULL */
    enum sym_source source;    /* SYM_NONE when func is NULL */
    const char *note;          /* NULL, or why there is no name: "object not found",
                                * "build id differs", "no symbols", the errno text, ... */
    const char *file;          /* the source file (as the compiler recorded it, joined to
                                * its compilation directory), or NULL */
    uint32_t line;             /* its line, >= 1; 0 when file is NULL */
    const char *line_note;     /* file NULL: why, such as "no debug information",
                                * "debug information too large", "shimdump built without
                                * libdw"; may be NULL when no object holds the address */
};

struct sym_ctx;

/* Makes a symbolizer for the n objects of objs (n may be 0). Copies what it
 * needs: objs and its strings may be freed once this returns. No file is
 * opened here; each object's file is read at the first lookup of an address
 * in it. root is NULL or a path prefix such as "/proc/1234/root", tried before
 * the plain path (a live process in another mount namespace); it is copied too.
 * Returns NULL with errno set: EINVAL (objs NULL with n > 0, or a build id
 * NULL with a length or longer than SYM_MAX_BUILD_ID), E2BIG (n >
 * SYM_MAX_OBJS: the caller may pass the first SYM_MAX_OBJS), ENOMEM.
 * A context is not thread-safe; use one per thread. */
struct sym_ctx *sym_open(const struct sym_obj *objs, size_t n, const char *root);

/* Names the function at addr (as given: pass a return address minus 1, so
 * that a call at the end of a function is not put in the next one). Fills
 * *out, whose strings stay valid until sym_close(c), except out->file: until
 * the next sym_lookup on c. The object's symbols are loaded at its first
 * lookup (so this may read files), then looked up by binary search. A symbol
 * whose [value, value + size) covers the address wins; a preceding symbol of
 * size 0 is used only when it is the nearest one.
 * With libdw, the line comes from the DWARF of the debug file named by the
 * object's build id, else of the object itself (the same files, found by the
 * same rules and build id checks as the symbols; nothing that libdw would
 * look for on its own). Only one object's DWARF is kept open: look addresses
 * up object by object, or each change of object reads a file again.
 * Returns 0 when *out was filled (out->func says whether a name was found),
 * EINVAL when c or out is NULL, ENOMEM when the object's symbols could not be
 * loaded for lack of memory (out is filled without a name; that object is not
 * retried). Never fails for a missing, unreadable or corrupt file: that is in
 * out->note. */
int sym_lookup(struct sym_ctx *c, uint64_t addr, struct sym_result *out);

/* Frees c and every string its results pointed to. c may be NULL. */
void sym_close(struct sym_ctx *c);

#endif
