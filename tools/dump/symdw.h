/* symdw: the source file and line of an address, from the DWARF of an ELF
 * file that sym.c opened and checked (libdw). It opens no file itself, and
 * keeps libdw from opening any: see symdw_altlink. */
#ifndef MALLOCSHIM_SYMDW_H
#define MALLOCSHIM_SYMDW_H

#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

/* Per file, at most SYMDW_MAX_UNITS compilation units are read (libdw keeps
 * a few hundred bytes for each) and at most SYMDW_MAX_RANGES of their
 * address ranges kept (each function is one with -ffunction-sections; 24
 * bytes each). Addresses in the units or ranges left out get no line. */
#define SYMDW_MAX_UNITS (1u << 20)
#define SYMDW_MAX_RANGES (1u << 20)

struct symdw;

/* Opens the DWARF of e, an ELF file read with ELF_C_READ (not mapped: a
 * file truncated under us must not raise SIGBUS), which libdw reads in full
 * here, inflating its compressed sections: the caller bounds their size
 * first. e must outlive the result and is not ended by symdw_close.
 * *lines_left is the budget of line-program bytes (.debug_line) that may
 * still be read, which symdw_line lowers and the caller may share between
 * files; it must outlive the result too. Returns 0 and *out, ENOENT when e
 * has no DWARF libdw can read, or ENOMEM. Before any line is looked up the
 * caller must call symdw_altlink, and symdw_setalt when it says so. */
int symdw_open(Elf *e, uint64_t *lines_left, struct symdw **out);

/* The supplementary file that w's .gnu_debugaltlink names (dwz): returns 0
 * when it names none, else the length of the build id the file must have,
 * with *name (as written, NUL-terminated) and *id pointing into w's data.
 * When it names one, the caller must give it with symdw_setalt or close w:
 * libdw would otherwise open that name itself at the first reference into
 * it, with none of sym.c's checks (a device, a FIFO). */
size_t symdw_altlink(struct symdw *w, const char **name, const uint8_t **id);

/* Gives w the supplementary file that symdw_altlink named, read from alt
 * (which the caller checked: its build id is the one asked for). alt must
 * outlive w. Returns 0, or ENOENT when alt has no DWARF or names a
 * supplementary file of its own (then close w). */
int symdw_setalt(struct symdw *w, Elf *alt);

/* The file and line of vaddr (an ELF virtual address of the file; a return
 * address minus 1, as for sym_lookup): 0 with *file and *line set; ENOENT
 * when no line table covers it (a line 0, the compiler's "no line", is
 * ENOENT too); E2BIG when the unit that covers it has a line program larger
 * than what is left of *lines_left (the unit is not read, now or later).
 * *file is the name the compiler recorded joined to its directory and, when
 * that is relative, to the compilation directory; it is valid until the
 * next symdw_line on w or symdw_close. The first call reads the address
 * ranges of the compilation units; a unit's line table is read at its first
 * lookup, and its line program's bytes taken from *lines_left then. */
int symdw_line(struct symdw *w, uint64_t vaddr, const char **file, uint32_t *line);

/* Ends w's DWARF and its supplementary file's (not their Elf). w may be NULL. */
void symdw_close(struct symdw *w);

#endif
