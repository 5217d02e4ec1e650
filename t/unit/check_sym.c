/* Unit tests of tools/dump/sym.c: names of this process's own functions, C++
 * demangling, build id checks, debug files, and no crash on any file; with
 * libdw, the file and line of a call, from its own DWARF, a debug file or
 * compressed sections, within the bounds, and dwz's supplementary files. */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sym.h"
#ifdef HAVE_LIBDW
#include "symdw.h"
#endif

#ifndef OBJCOPY
#define OBJCOPY "objcopy"
#endif

/* ---- The functions looked up ---- */

int sym_test_exported(int x);

/* Static: in .symtab only. Long enough that +3 is inside it. */
__attribute__((noinline)) static int sym_test_target(int x)
{
    volatile int v = x;
    for (int i = 0; i < 3; i++)
        v = v * 7 + i;
    return v;
}

/* Global, and in .dynsym through -export-dynamic. */
__attribute__((noinline)) int sym_test_exported(int x)
{
    volatile int v = x;
    for (int i = 0; i < 3; i++)
        v = v * 5 + i;
    return v + sym_test_target(x);
}

static uint64_t addr_of(int (*f)(int))
{
    return (uint64_t)(uintptr_t)f;
}

/* ---- This process's objects, as the segment will record them ---- */

struct tobj {
    char path[PATH_MAX];
    uint64_t bias, lo, hi;
    uint8_t id[SYM_MAX_BUILD_ID];
    size_t idlen;
};

static struct tobj tobjs[512];
static size_t ntobjs;

/* The build id in the PT_NOTEs of a loaded object, read from memory. */
static size_t mem_build_id(const struct dl_phdr_info *info, uint8_t *id)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        size_t a = ph->p_align == 8 ? 8 : 4;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const char *name = p + sizeof *nh;
            const char *desc = name + ((nh->n_namesz + a - 1) & ~(a - 1));
            const char *next = desc + ((nh->n_descsz + a - 1) & ~(a - 1));
            if (next > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
                nh->n_descsz <= SYM_MAX_BUILD_ID) {
                memcpy(id, desc, nh->n_descsz);
                return nh->n_descsz;
            }
            p = next;
        }
    }
    return 0;
}

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct tobj *t;
    if (ntobjs == sizeof tobjs / sizeof tobjs[0])
        return 1;
    t = &tobjs[ntobjs];
    memset(t, 0, sizeof *t);
    if (info->dlpi_name && info->dlpi_name[0]) {
        snprintf(t->path, sizeof t->path, "%s", info->dlpi_name);
    } else {
        /* The main program. Through libtool's wrapper or not, this is the
         * real binary (t/unit/.libs/lt-check_sym when there is a wrapper). */
        ssize_t n = readlink("/proc/self/exe", t->path, sizeof t->path - 1);
        if (n <= 0)
            return 0;
        t->path[n] = '\0';
    }
    t->bias = info->dlpi_addr;
    t->lo = UINT64_MAX;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < t->lo)
            t->lo = a;
        if (a + ph->p_memsz > t->hi)
            t->hi = a + ph->p_memsz;
    }
    if (t->lo >= t->hi)
        return 0;
    t->idlen = mem_build_id(info, t->id);
    ntobjs++;
    return 0;
}

/* Fills objs (room for all of tobjs) from a fresh dl_iterate_phdr; returns n. */
static size_t list_objs(struct sym_obj *objs)
{
    ntobjs = 0;
    dl_iterate_phdr(phdr_cb, NULL);
    for (size_t i = 0; i < ntobjs; i++) {
        objs[i].path = tobjs[i].path;
        objs[i].bias = tobjs[i].bias;
        objs[i].lo = tobjs[i].lo;
        objs[i].hi = tobjs[i].hi;
        objs[i].build_id = tobjs[i].id;
        objs[i].build_id_len = tobjs[i].idlen;
    }
    return ntobjs;
}

static const struct tobj *holder(uint64_t addr)
{
    for (size_t i = 0; i < ntobjs; i++)
        if (addr >= tobjs[i].lo && addr < tobjs[i].hi)
            return &tobjs[i];
    return NULL;
}

/* One object made from a tobj, with its path and build id replaced when given. */
static struct sym_obj one_obj(const struct tobj *t, const char *path)
{
    struct sym_obj o = { path ? path : t->path, t->bias, t->lo, t->hi, t->id, t->idlen };
    return o;
}

/* ---- Files ---- */

static char tmpdir[64];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/check_sym.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[PATH_MAX];
    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            rm_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static void write_file(const char *path, const void *buf, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* The whole file, malloc'ed. */
static unsigned char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    ck_assert_int_gt(len, 0);
    rewind(f);
    unsigned char *b = malloc((size_t)len);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

/* A deterministic xorshift, so that a failing case can be replayed. */
static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

/* Looks up a few addresses of an object [lo, lo + span); fails only on a
 * return value or result that breaks the contract. */
static void poke(struct sym_ctx *c, const struct sym_obj *o, uint64_t span)
{
    uint64_t offs[] = { 0, 1, span / 3, span / 2, span - 1, 0x1000 };
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        struct sym_result r;
        if (offs[i] >= span)
            continue;
        ck_assert_int_eq(sym_lookup(c, o->lo + offs[i], &r), 0);
        ck_assert_ptr_nonnull(r.obj);
        ck_assert_str_eq(r.obj, o->path);
        ck_assert(r.func != NULL || r.note != NULL);
        ck_assert(r.func == NULL || r.source != SYM_NONE);
        if (r.func)
            ck_assert_uint_gt(strlen(r.func), 0);
    }
}

/* ---- A hand-made ELF file: exact control over its symbols ---- */

struct fsym {
    const char *name;
    uint64_t value, size;
    int bind, type, shndx;
    int bad_name;              /* st_name beyond the string table */
};

#define SHNDX_TEXT 3

/* The symbols of the hand-made file and what they test. */
static const struct fsym fsyms[] = {
    { "outer", 0x1000, 0x100, STB_GLOBAL, STT_FUNC, SHNDX_TEXT, 0 },
    { "inner", 0x1040, 0x10, STB_LOCAL, STT_FUNC, SHNDX_TEXT, 0 },      /* nested in outer */
    { "label0", 0x2000, 0, STB_LOCAL, STT_FUNC, SHNDX_TEXT, 0 },        /* size 0 */
    { "after", 0x3000, 0x10, STB_GLOBAL, STT_FUNC, SHNDX_TEXT, 0 },
    { "__x", 0x4000, 0x20, STB_LOCAL, STT_FUNC, SHNDX_TEXT, 0 },        /* aliases: x wins */
    { "x_weak", 0x4000, 0x20, STB_WEAK, STT_FUNC, SHNDX_TEXT, 0 },
    { "x", 0x4000, 0x20, STB_GLOBAL, STT_FUNC, SHNDX_TEXT, 0 },
    { "undef", 0x5000, 0x100, STB_GLOBAL, STT_FUNC, SHN_UNDEF, 0 },     /* ignored */
    { "badname", 0x6000, 0x100, STB_GLOBAL, STT_FUNC, SHNDX_TEXT, 1 },  /* ignored */
    { "data", 0x7000, 0x100, STB_GLOBAL, STT_OBJECT, SHNDX_TEXT, 0 },   /* ignored */
    { "ifn", 0x8000, 0x10, STB_GLOBAL, STT_GNU_IFUNC, SHNDX_TEXT, 0 },
    { "nt", 0x9000, 0x10, STB_GLOBAL, STT_NOTYPE, SHNDX_TEXT, 0 },
    { "nt0", 0x9100, 0, STB_GLOBAL, STT_NOTYPE, SHNDX_TEXT, 0 },       /* ignored */
    { "_ZN3foo3barEi", 0xa000, 0x10, STB_GLOBAL, STT_FUNC, SHNDX_TEXT, 0 },
    { "_ZN3foo3bazEv@@V_1", 0xa100, 0x10, STB_GLOBAL, STT_FUNC, SHNDX_TEXT, 0 },
    { "_Znot_cxx", 0xa200, 0x10, STB_GLOBAL, STT_FUNC, SHNDX_TEXT, 0 },
    { "huge", 0xb000, UINT64_MAX, STB_GLOBAL, STT_FUNC, SHNDX_TEXT, 0 }, /* end saturates */
};
#define NFSYMS (sizeof fsyms / sizeof fsyms[0])

static const uint8_t fake_id[20] = { 0xab, 0xcd, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                     11, 12, 13, 14, 15, 16, 17, 0xef };

enum { FE_SECTIONS = 1, FE_NOTE_SECTION = 2, FE_NOTE_PHDR = 4, FE_BAD_LINK = 8 };

/* Writes an ELF64 ET_DYN with fsyms in a table of type symtype (SHT_SYMTAB or
 * SHT_DYNSYM), a NOBITS .text, and the build id id (when idlen > 0) in a note
 * section and/or a PT_NOTE. Without FE_SECTIONS: no section headers at all. */
static void write_elf(const char *path, Elf64_Word symtype, const uint8_t *id, size_t idlen, int flags)
{
    static unsigned char b[16384];
    Elf64_Ehdr *eh = (Elf64_Ehdr *)b;
    size_t at = sizeof *eh, phoff = 0, note = 0, notesz = 0, strtab, strsz, symtab, symsz, shoff;

    memset(b, 0, sizeof b);
    if (flags & FE_NOTE_PHDR) {
        phoff = at;
        at += sizeof(Elf64_Phdr);
    }
    if (idlen) {
        Elf64_Nhdr nh = { 4, (Elf64_Word)idlen, NT_GNU_BUILD_ID };
        note = at;
        memcpy(b + at, &nh, sizeof nh);
        memcpy(b + at + sizeof nh, "GNU", 4);
        memcpy(b + at + sizeof nh + 4, id, idlen);
        notesz = sizeof nh + 4 + ((idlen + 3) & ~(size_t)3);
        at += notesz;
    }
    strtab = at;
    b[at++] = '\0';
    uint32_t names[NFSYMS];
    for (size_t i = 0; i < NFSYMS; i++) {
        names[i] = (uint32_t)(at - strtab);
        memcpy(b + at, fsyms[i].name, strlen(fsyms[i].name) + 1);
        at += strlen(fsyms[i].name) + 1;
    }
    strsz = at - strtab;
    at = (at + 7) & ~(size_t)7;
    symtab = at;
    at += sizeof(Elf64_Sym);                       /* index 0: the null symbol */
    for (size_t i = 0; i < NFSYMS; i++) {
        Elf64_Sym s = { 0 };
        s.st_name = fsyms[i].bad_name ? 0xfffff : names[i];
        s.st_info = (unsigned char)ELF64_ST_INFO(fsyms[i].bind, fsyms[i].type);
        s.st_shndx = (Elf64_Section)fsyms[i].shndx;
        s.st_value = fsyms[i].value;
        s.st_size = fsyms[i].size;
        memcpy(b + at, &s, sizeof s);
        at += sizeof s;
    }
    symsz = at - symtab;
    shoff = at;

    memcpy(eh->e_ident, ELFMAG, SELFMAG);
    eh->e_ident[EI_CLASS] = ELFCLASS64;
    eh->e_ident[EI_DATA] = ELFDATA2LSB;
    eh->e_ident[EI_VERSION] = EV_CURRENT;
    eh->e_type = ET_DYN;
    eh->e_machine = EM_X86_64;
    eh->e_version = EV_CURRENT;
    eh->e_ehsize = sizeof *eh;
    if (flags & FE_NOTE_PHDR) {
        Elf64_Phdr ph = { 0 };
        ph.p_type = PT_NOTE;
        ph.p_offset = note;
        ph.p_vaddr = note;
        ph.p_filesz = ph.p_memsz = notesz;
        ph.p_align = 4;
        memcpy(b + phoff, &ph, sizeof ph);
        eh->e_phoff = phoff;
        eh->e_phentsize = sizeof ph;
        eh->e_phnum = 1;
    }
    if (flags & FE_SECTIONS) {
        Elf64_Shdr sh[5];
        memset(sh, 0, sizeof sh);
        sh[1].sh_type = symtype;
        sh[1].sh_offset = symtab;
        sh[1].sh_size = symsz;
        sh[1].sh_link = (flags & FE_BAD_LINK) ? 99 : 2;
        sh[1].sh_info = 1;
        sh[1].sh_entsize = sizeof(Elf64_Sym);
        sh[1].sh_addralign = 8;
        sh[2].sh_type = SHT_STRTAB;
        sh[2].sh_offset = strtab;
        sh[2].sh_size = strsz;
        sh[2].sh_addralign = 1;
        sh[3].sh_type = SHT_NOBITS;
        sh[3].sh_flags = SHF_ALLOC | SHF_EXECINSTR;
        sh[3].sh_addr = 0x1000;
        sh[3].sh_offset = shoff;
        sh[3].sh_size = 0x100000;
        sh[3].sh_addralign = 16;
        int nsh = 4;
        if (idlen && (flags & FE_NOTE_SECTION)) {
            sh[4].sh_type = SHT_NOTE;
            sh[4].sh_flags = SHF_ALLOC;
            sh[4].sh_addr = note;
            sh[4].sh_offset = note;
            sh[4].sh_size = notesz;
            sh[4].sh_addralign = 4;
            nsh = 5;
        }
        memcpy(b + shoff, sh, nsh * sizeof sh[0]);
        at = shoff + nsh * sizeof sh[0];
        eh->e_shoff = shoff;
        eh->e_shentsize = sizeof sh[0];
        eh->e_shnum = (Elf64_Half)nsh;
    }
    ck_assert_uint_le(at, sizeof b);
    write_file(path, b, at);
}

#define FBIAS 0x100000000ULL
#define FSPAN 0x1000000ULL

static struct sym_obj fake_obj(const char *path, const uint8_t *id, size_t idlen)
{
    struct sym_obj o = { path, FBIAS, FBIAS, FBIAS + FSPAN, id, idlen };
    return o;
}

/* Looks up FBIAS + vaddr: the function's name (NULL when none) and checks
 * the offsets. */
static const char *fake_lookup(struct sym_ctx *c, uint64_t vaddr, uint64_t value, struct sym_result *r)
{
    ck_assert_int_eq(sym_lookup(c, FBIAS + vaddr, r), 0);
    ck_assert_ptr_nonnull(r->obj);
    ck_assert_uint_eq(r->obj_off, vaddr);
    if (r->func)
        ck_assert_uint_eq(r->func_off, vaddr - value);
    return r->func;
}

/* ---- Tests ---- */

START_TEST(static_function_from_symtab)
{
    struct sym_obj objs[512];
    size_t n = list_objs(objs);
    struct sym_result r;
    uint64_t a = addr_of(sym_test_target) + 3;
    const struct tobj *t = holder(a);
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_gt(t->idlen, 0);                /* the toolchain adds one */

    struct sym_ctx *c = sym_open(objs, n, NULL);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(sym_lookup(c, a, &r), 0);
    ck_assert_str_eq(r.obj, t->path);
    ck_assert_uint_eq(r.obj_off, a - t->bias);
    ck_assert_str_eq(r.func, "sym_test_target");
    ck_assert_uint_eq(r.func_off, 3);
    ck_assert_int_eq(r.source, SYM_SYMTAB);
    ck_assert_ptr_null(r.note);

    /* A global one, at its first byte. */
    ck_assert_int_eq(sym_lookup(c, addr_of(sym_test_exported), &r), 0);
    ck_assert_str_eq(r.func, "sym_test_exported");
    ck_assert_uint_eq(r.func_off, 0);

    /* Results stay valid while the context lives, whatever the caller freed. */
    const char *keep = r.func;
    memset(objs, 0, sizeof objs);
    ck_assert_int_eq(sym_lookup(c, a, &r), 0);
    ck_assert_str_eq(keep, "sym_test_exported");
    ck_assert_str_eq(r.func, "sym_test_target");
    sym_close(c);
    ck_assert_int_eq(sym_test_exported(1), sym_test_exported(1));
}
END_TEST

START_TEST(cxx_name_demangled)
{
    void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "dlopen libstdc++.so.6: %s", dlerror());
    void *f = dlsym(h, "_ZSt9terminatev");
    ck_assert_ptr_nonnull(f);
    struct sym_obj objs[512];
    size_t n = list_objs(objs);
    struct sym_result r;
    struct sym_ctx *c = sym_open(objs, n, NULL);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(sym_lookup(c, (uint64_t)(uintptr_t)f, &r), 0);
    ck_assert_ptr_nonnull(r.obj);
    ck_assert_ptr_nonnull(strstr(r.obj, "libstdc++.so.6"));
    ck_assert_str_eq(r.func, "std::terminate()");
    ck_assert_uint_eq(r.func_off, 0);
    ck_assert(r.source == SYM_DYNSYM || r.source == SYM_DEBUGFILE);
    /* The demangled name is made once. */
    const char *first = r.func;
    ck_assert_int_eq(sym_lookup(c, (uint64_t)(uintptr_t)f + 1, &r), 0);
    ck_assert_ptr_eq(r.func, first);
    ck_assert_uint_eq(r.func_off, 1);
    sym_close(c);
    dlclose(h);
}
END_TEST

/* libc from libc6-dbg's debug file when it is installed, else from .dynsym. */
START_TEST(libc_debug_file_or_dynsym)
{
    void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(h);
    void *f = dlsym(h, "qsort");
    ck_assert_ptr_nonnull(f);
    struct sym_obj objs[512];
    size_t n = list_objs(objs);
    const struct tobj *t = holder((uint64_t)(uintptr_t)f);
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_ge(t->idlen, 2);
    char dbg[PATH_MAX], *p = dbg + sprintf(dbg, "/usr/lib/debug/.build-id/");
    for (size_t i = 0; i < t->idlen; i++)
        p += sprintf(p, i == 0 ? "%02x/" : "%02x", t->id[i]);
    strcpy(p, ".debug");
    int have_dbg = access(dbg, R_OK) == 0;

    struct sym_result r;
    struct sym_ctx *c = sym_open(objs, n, NULL);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(sym_lookup(c, (uint64_t)(uintptr_t)f, &r), 0);
    ck_assert_str_eq(r.func, "qsort");             /* over its aliases __GI_qsort etc. */
    ck_assert_uint_eq(r.func_off, 0);
    ck_assert_int_eq(r.source, have_dbg ? SYM_DEBUGFILE : SYM_DYNSYM);
    sym_close(c);
    dlclose(h);
}
END_TEST

START_TEST(build_id_differs)
{
    struct sym_obj objs[512];
    size_t n = list_objs(objs);
    struct sym_result r;
    uint64_t a = addr_of(sym_test_target) + 3;
    const struct tobj *t = holder(a);
    size_t k = (size_t)(t - tobjs);
    uint8_t id[SYM_MAX_BUILD_ID];

    memcpy(id, t->id, t->idlen);
    id[t->idlen - 1] ^= 0x5a;
    objs[k].build_id = id;
    struct sym_ctx *c = sym_open(objs, n, NULL);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(sym_lookup(c, a, &r), 0);
    ck_assert_str_eq(r.obj, t->path);
    ck_assert_uint_eq(r.obj_off, a - t->bias);
    ck_assert_ptr_null(r.func);
    ck_assert_int_eq(r.source, SYM_NONE);
    ck_assert_str_eq(r.note, "build id differs");
    sym_close(c);

    /* A shorter recorded id differs too; an unknown one is not checked. */
    objs[k].build_id_len = t->idlen - 1;
    c = sym_open(objs, n, NULL);
    ck_assert_int_eq(sym_lookup(c, a, &r), 0);
    ck_assert_str_eq(r.note, "build id differs");
    sym_close(c);
    objs[k].build_id_len = 0;
    c = sym_open(objs, n, NULL);
    ck_assert_int_eq(sym_lookup(c, a, &r), 0);
    ck_assert_str_eq(r.func, "sym_test_target");
    sym_close(c);
}
END_TEST

START_TEST(missing_object_and_no_object)
{
    struct sym_obj o[2] = {
        { "/nonexistent/check_sym/libgone.so.1", 0x7e0000000000ULL, 0x7e0000001000ULL,
          0x7e0000009000ULL, NULL, 0 },
        { "/nonexistent/check_sym/libinner.so", 0x7e0000002000ULL, 0x7e0000002000ULL,
          0x7e0000003000ULL, NULL, 0 },
    };
    struct sym_result r;
    struct sym_ctx *c = sym_open(o, 2, NULL);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(sym_lookup(c, 0x7e0000001010ULL, &r), 0);
    ck_assert_str_eq(r.obj, o[0].path);
    ck_assert_uint_eq(r.obj_off, 0x1010);
    ck_assert_ptr_null(r.func);
    ck_assert_str_eq(r.note, "object not found");
    /* Nested ranges: the innermost, and the outer one after it. */
    ck_assert_int_eq(sym_lookup(c, 0x7e0000002800ULL, &r), 0);
    ck_assert_str_eq(r.obj, o[1].path);
    ck_assert_uint_eq(r.obj_off, 0x800);
    ck_assert_int_eq(sym_lookup(c, 0x7e0000005000ULL, &r), 0);
    ck_assert_str_eq(r.obj, o[0].path);
    /* Outside every object; hi is exclusive. */
    uint64_t out[] = { 0, 1, 0x7e0000000fffULL, 0x7e0000009000ULL, UINT64_MAX };
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++) {
        ck_assert_int_eq(sym_lookup(c, out[i], &r), 0);
        ck_assert_ptr_null(r.obj);
        ck_assert_ptr_null(r.func);
        ck_assert_ptr_nonnull(r.note);
    }
    /* The vdso's name, or a relative dlopen: not looked for in our cwd. */
    struct sym_obj vdso = { "linux-vdso.so.1", 0x7f0000000000ULL, 0x7f0000000000ULL,
                            0x7f0000002000ULL, NULL, 0 };
    struct sym_ctx *v = sym_open(&vdso, 1, "/proc/self/root");
    ck_assert_int_eq(sym_lookup(v, 0x7f0000000100ULL, &r), 0);
    ck_assert_str_eq(r.obj, "linux-vdso.so.1");
    ck_assert_str_eq(r.note, "not an absolute path");
    sym_close(v);
    ck_assert_int_eq(sym_lookup(NULL, 1, &r), EINVAL);
    ck_assert_int_eq(sym_lookup(c, 1, NULL), EINVAL);
    sym_close(c);
    sym_close(NULL);

    /* No objects at all; bad arguments. */
    c = sym_open(NULL, 0, NULL);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(sym_lookup(c, 0x1234, &r), 0);
    ck_assert_ptr_null(r.obj);
    sym_close(c);
    errno = 0;
    ck_assert_ptr_null(sym_open(NULL, 1, NULL));
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_ptr_null(sym_open(o, SYM_MAX_OBJS + 1, NULL));
    ck_assert_int_eq(errno, E2BIG);
    uint8_t id[SYM_MAX_BUILD_ID + 1] = { 0 };
    o[0].build_id = id;
    o[0].build_id_len = sizeof id;
    ck_assert_ptr_null(sym_open(o, 1, NULL));
    ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(root_prefix)
{
    struct sym_obj objs[512];
    size_t n = list_objs(objs);
    struct sym_result r;
    uint64_t a = addr_of(sym_test_target) + 3;
    const char *roots[] = { "/proc/self/root", "/nonexistent/check_sym" };
    for (size_t i = 0; i < 2; i++) {
        struct sym_ctx *c = sym_open(objs, n, roots[i]);
        ck_assert_ptr_nonnull(c);
        ck_assert_int_eq(sym_lookup(c, a, &r), 0);
        ck_assert_str_eq(r.func, "sym_test_target");
        sym_close(c);
    }
}
END_TEST

START_TEST(search_rules)
{
    static const Elf64_Word types[] = { SHT_SYMTAB, SHT_DYNSYM };
    char path[128];
    make_tmpdir();
    snprintf(path, sizeof path, "%s/fake.so", tmpdir);
    for (size_t ti = 0; ti < 2; ti++) {
        write_elf(path, types[ti], fake_id, sizeof fake_id, FE_SECTIONS | FE_NOTE_SECTION);
        struct sym_obj o = fake_obj(path, fake_id, sizeof fake_id);
        struct sym_result r;
        struct sym_ctx *c = sym_open(&o, 1, NULL);
        ck_assert_ptr_nonnull(c);
        ck_assert_str_eq(fake_lookup(c, 0x1045, 0x1040, &r), "inner");
        ck_assert_int_eq(r.source, ti == 0 ? SYM_SYMTAB : SYM_DYNSYM);
        ck_assert_str_eq(fake_lookup(c, 0x1000, 0x1000, &r), "outer");
        ck_assert_str_eq(fake_lookup(c, 0x1080, 0x1000, &r), "outer");   /* past inner */
        ck_assert_str_eq(fake_lookup(c, 0x10ff, 0x1000, &r), "outer");
        ck_assert_ptr_null(fake_lookup(c, 0x1100, 0, &r));                /* end exclusive */
        ck_assert_str_eq(r.note, "no symbol covers the address");
        ck_assert_ptr_null(fake_lookup(c, 0x0fff, 0, &r));                /* before all */
        ck_assert_str_eq(fake_lookup(c, 0x2500, 0x2000, &r), "label0");   /* size 0, nearest */
        ck_assert_ptr_null(fake_lookup(c, 0x3020, 0, &r));                /* sized, nearest, short */
        ck_assert_str_eq(fake_lookup(c, 0x4004, 0x4000, &r), "x");
        ck_assert_ptr_null(fake_lookup(c, 0x5010, 0, &r));                /* undefined */
        ck_assert_ptr_null(fake_lookup(c, 0x6010, 0, &r));                /* bad st_name */
        ck_assert_ptr_null(fake_lookup(c, 0x7010, 0, &r));                /* an object */
        ck_assert_str_eq(fake_lookup(c, 0x8001, 0x8000, &r), "ifn");
        ck_assert_str_eq(fake_lookup(c, 0x900f, 0x9000, &r), "nt");
        ck_assert_ptr_null(fake_lookup(c, 0x9100, 0, &r));                /* NOTYPE, size 0 */
        ck_assert_str_eq(fake_lookup(c, 0xa003, 0xa000, &r), "foo::bar(int)");
        ck_assert_str_eq(fake_lookup(c, 0xa100, 0xa100, &r), "foo::baz()@@V_1");
        ck_assert_str_eq(fake_lookup(c, 0xa201, 0xa200, &r), "_Znot_cxx");
        ck_assert_str_eq(fake_lookup(c, FSPAN - 1, 0xb000, &r), "huge");
        sym_close(c);
    }

    /* sh_link out of range: no string table, so no symbols. */
    write_elf(path, SHT_SYMTAB, NULL, 0, FE_SECTIONS | FE_BAD_LINK);
    struct sym_obj o = fake_obj(path, NULL, 0);
    struct sym_result r;
    struct sym_ctx *c = sym_open(&o, 1, NULL);
    ck_assert_ptr_null(fake_lookup(c, 0x1045, 0, &r));
    ck_assert_str_eq(r.note, "no symbols");
    sym_close(c);
    rm_tree(tmpdir);
}
END_TEST

/* The build id from a note section or, without sections, from a PT_NOTE;
 * and the debug file named by the build id, under root. */
START_TEST(build_id_notes_and_debug_file)
{
    char path[128], dbgdir[256], dbg[320];
    uint8_t other[sizeof fake_id];
    struct sym_result r;
    struct sym_ctx *c;
    struct sym_obj o;

    make_tmpdir();
    memcpy(other, fake_id, sizeof other);
    other[5] ^= 1;
    snprintf(path, sizeof path, "%s/fake.so", tmpdir);

    /* No sections: the id is read from the PT_NOTE. */
    write_elf(path, SHT_SYMTAB, fake_id, sizeof fake_id, FE_NOTE_PHDR);
    o = fake_obj(path, fake_id, sizeof fake_id);
    c = sym_open(&o, 1, NULL);
    ck_assert_ptr_null(fake_lookup(c, 0x1045, 0, &r));
    ck_assert_str_eq(r.note, "no symbols");
    sym_close(c);
    o = fake_obj(path, other, sizeof other);
    c = sym_open(&o, 1, NULL);
    ck_assert_ptr_null(fake_lookup(c, 0x1045, 0, &r));
    ck_assert_str_eq(r.note, "build id differs");
    sym_close(c);

    /* The id in both; a file without an id when one was recorded. */
    write_elf(path, SHT_SYMTAB, fake_id, sizeof fake_id, FE_SECTIONS | FE_NOTE_SECTION | FE_NOTE_PHDR);
    o = fake_obj(path, fake_id, sizeof fake_id);
    c = sym_open(&o, 1, NULL);
    ck_assert_str_eq(fake_lookup(c, 0x1045, 0x1040, &r), "inner");
    sym_close(c);
    write_elf(path, SHT_SYMTAB, NULL, 0, FE_SECTIONS);
    c = sym_open(&o, 1, NULL);
    ck_assert_ptr_null(fake_lookup(c, 0x1045, 0, &r));
    ck_assert_str_eq(r.note, "build id differs");
    sym_close(c);

    /* The object has no symbols; its debug file, under root, has them. A
     * debug file of another build is not used. */
    write_elf(path, SHT_SYMTAB, fake_id, sizeof fake_id, FE_NOTE_PHDR);
    snprintf(dbgdir, sizeof dbgdir, "%s/usr/lib/debug/.build-id/ab", tmpdir);
    char mk[256];
    const char *parts[] = { "/usr", "/usr/lib", "/usr/lib/debug", "/usr/lib/debug/.build-id",
                            "/usr/lib/debug/.build-id/ab" };
    for (size_t i = 0; i < 5; i++) {
        snprintf(mk, sizeof mk, "%s%s", tmpdir, parts[i]);
        ck_assert_int_eq(mkdir(mk, 0755), 0);
    }
    snprintf(dbg, sizeof dbg, "%s/cd0102030405060708090a0b0c0d0e0f1011ef.debug", dbgdir);
    write_elf(dbg, SHT_SYMTAB, other, sizeof other, FE_SECTIONS | FE_NOTE_SECTION);
    c = sym_open(&o, 1, tmpdir);
    ck_assert_ptr_null(fake_lookup(c, 0x1045, 0, &r));
    ck_assert_str_eq(r.note, "no symbols");
    sym_close(c);
    write_elf(dbg, SHT_SYMTAB, fake_id, sizeof fake_id, FE_SECTIONS | FE_NOTE_SECTION);
    c = sym_open(&o, 1, tmpdir);
    ck_assert_str_eq(fake_lookup(c, 0x1045, 0x1040, &r), "inner");
    ck_assert_int_eq(r.source, SYM_DEBUGFILE);
    sym_close(c);
    /* The debug file is used even when the object is gone or was replaced. */
    unlink(path);
    c = sym_open(&o, 1, tmpdir);
    ck_assert_str_eq(fake_lookup(c, 0x1045, 0x1040, &r), "inner");
    ck_assert_int_eq(r.source, SYM_DEBUGFILE);
    sym_close(c);
    rm_tree(tmpdir);
}
END_TEST

START_TEST(odd_files_do_not_crash)
{
    struct sym_obj objs[512];
    list_objs(objs);
    const struct tobj *self = holder(addr_of(sym_test_target));
    char exe[PATH_MAX];
    snprintf(exe, sizeof exe, "%s", self->path);
    size_t exe_n, cxx_n = 0;
    unsigned char *exe_b = read_all(exe, &exe_n), *cxx_b = NULL;
    for (size_t i = 0; i < ntobjs; i++)
        if (strstr(tobjs[i].path, "libcheck") || strstr(tobjs[i].path, "libc.so"))
            cxx_b = read_all(tobjs[i].path, &cxx_n);   /* a big ELF: the last such */
    ck_assert_ptr_nonnull(cxx_b);

    make_tmpdir();
    char p[16][128];
    size_t np = 0;
    unsigned char rand_b[65536];
    for (size_t i = 0; i < sizeof rand_b; i++)
        rand_b[i] = (unsigned char)rnd();
    struct { const char *name; const void *b; size_t n; } files[] = {
        { "empty", "", 0 },
        { "head200", exe_b, 200 },
        { "half", exe_b, exe_n / 2 },
        { "nolast", exe_b, exe_n - 1 },
        { "big64k", cxx_b, cxx_n < 65536 ? cxx_n : 65536 },
        { "random", rand_b, sizeof rand_b },
        { "elfmagic", "\177ELF\2\1\1", 7 },
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p[np], sizeof p[np], "%s/%s", tmpdir, files[i].name);
        write_file(p[np++], files[i].b, files[i].n);
    }
    snprintf(p[np++], sizeof p[0], "/dev/null");
    snprintf(p[np++], sizeof p[0], "%s", tmpdir);                  /* a directory */
    snprintf(p[np], sizeof p[0], "%s/fifo", tmpdir);               /* must not block */
    ck_assert_int_eq(mkfifo(p[np++], 0600), 0);
    snprintf(p[np], sizeof p[0], "%s/unreadable", tmpdir);
    write_file(p[np], exe_b, exe_n);
    chmod(p[np++], 0);

    /* Each file as an object of its own, with and without a build id. */
    for (int with_id = 0; with_id < 2; with_id++) {
        struct sym_obj o[16];
        for (size_t i = 0; i < np; i++) {
            o[i] = one_obj(self, p[i]);
            o[i].bias = o[i].lo = 0x200000000000ULL + i * 0x10000000ULL;
            o[i].hi = o[i].lo + (self->hi - self->lo);
            if (!with_id)
                o[i].build_id_len = 0;
        }
        struct sym_ctx *c = sym_open(o, np, NULL);
        ck_assert_ptr_nonnull(c);
        for (size_t i = 0; i < np; i++)
            poke(c, &o[i], self->hi - self->lo);
        sym_close(c);
    }
    struct sym_result r;
    struct sym_obj o = one_obj(self, "/dev/null");
    struct sym_ctx *c = sym_open(&o, 1, NULL);
    ck_assert_int_eq(sym_lookup(c, self->lo, &r), 0);
    ck_assert_str_eq(r.note, "not a regular file");
    sym_close(c);
    free(exe_b);
    free(cxx_b);
    rm_tree(tmpdir);
}
END_TEST

/* The span of an ELF64 image's .debug_* sections (its DWARF), in *at and
 * *span; 0 and 0 when it has none. */
static void debug_span(const unsigned char *b, size_t n, size_t *at, size_t *span)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b;
    uint64_t lo = UINT64_MAX, hi = 0;
    *at = *span = 0;
    if (eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > n || eh->e_shstrndx >= eh->e_shnum)
        return;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(b + eh->e_shoff), *str = &sh[eh->e_shstrndx];
    for (size_t i = 0; i < eh->e_shnum; i++) {
        if (str->sh_offset + sh[i].sh_name + 8 > n || sh[i].sh_type == SHT_NOBITS ||
            memcmp(b + str->sh_offset + sh[i].sh_name, ".debug_", 7) != 0)
            continue;
        if (sh[i].sh_offset < lo)
            lo = sh[i].sh_offset;
        if (sh[i].sh_offset + sh[i].sh_size > hi)
            hi = sh[i].sh_offset + sh[i].sh_size;
    }
    if (lo < hi && hi <= n) {
        *at = lo;
        *span = hi - lo;
    }
}

/* Copies of the test binary and of the hand-made file with random bytes
 * changed where the parsers look: headers, section headers, tables, and
 * (the test binary's, built with -g) the DWARF that libdw reads. */
START_TEST(mutated_files_do_not_crash)
{
    struct sym_obj objs[512];
    list_objs(objs);
    const struct tobj *self = holder(addr_of(sym_test_target));
    char path[128], fake[128];
    size_t n[2];
    unsigned char *orig[2];

    make_tmpdir();
    snprintf(path, sizeof path, "%s/mut", tmpdir);
    snprintf(fake, sizeof fake, "%s/fake.so", tmpdir);
    write_elf(fake, SHT_SYMTAB, fake_id, sizeof fake_id, FE_SECTIONS | FE_NOTE_SECTION | FE_NOTE_PHDR);
    orig[0] = read_all(self->path, &n[0]);
    orig[1] = read_all(fake, &n[1]);
    size_t dw_at, dw_span;
    debug_span(orig[0], n[0], &dw_at, &dw_span);
#ifdef HAVE_LIBDW
    ck_assert_uint_gt(dw_span, 0);     /* built with -g */
#endif
    int iters = getenv("CHECK_SYM_ITERS") ? atoi(getenv("CHECK_SYM_ITERS")) : 300;
    for (int it = 0; it < iters; it++) {
        int which = it & 1;
        unsigned char *b = malloc(n[which]);
        ck_assert_ptr_nonnull(b);
        memcpy(b, orig[which], n[which]);
        const Elf64_Ehdr *eh = (const Elf64_Ehdr *)orig[which];
        int changes = 1 + (int)(rnd() % 8);
        for (int k = 0; k < changes; k++) {
            size_t at, span;
            switch (rnd() % 5) {
            case 0:                    /* the ELF header and program headers */
                at = 0;
                span = eh->e_phoff + (size_t)eh->e_phnum * eh->e_phentsize;
                break;
            case 1:                    /* the section headers */
                at = eh->e_shoff;
                span = (size_t)eh->e_shnum * eh->e_shentsize;
                break;
            case 2:                    /* the last quarter: .symtab, .strtab */
                at = n[which] - n[which] / 4;
                span = n[which] / 4;
                break;
            case 3:                    /* the DWARF (none in the hand-made file) */
                at = which ? 0 : dw_at;
                span = which ? 0 : dw_span;
                break;
            default:
                at = 0;
                span = n[which];
            }
            if (span == 0 || at + span > n[which])
                continue;
            size_t pos = at + rnd() % span;
            b[pos] = rnd() % 3 == 0 ? 0xff : (unsigned char)rnd();
        }
        size_t len = rnd() % 8 == 0 ? (size_t)(rnd() % n[which]) : n[which];
        write_file(path, b, len);
        free(b);
        struct sym_obj o = which ? fake_obj(path, NULL, 0) : one_obj(self, path);
        if (!which && rnd() % 2)
            o.build_id_len = 0;
        struct sym_ctx *c = sym_open(&o, 1, NULL);
        ck_assert_ptr_nonnull(c);
        poke(c, &o, o.hi - o.lo);
        struct sym_result r;
        uint64_t a = which ? FBIAS + 0x1045 : addr_of(sym_test_target) + 3;
        ck_assert_msg(sym_lookup(c, a, &r) == 0, "iteration %d", it);
        sym_close(c);
    }
    free(orig[0]);
    free(orig[1]);
    rm_tree(tmpdir);
}
END_TEST

/* Runs argv; 0 when it exits 0. */
static int run(const char *const argv[])
{
    int st;
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 2);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

START_TEST(stripped_copy)
{
    struct sym_obj objs[512];
    list_objs(objs);
    const struct tobj *self = holder(addr_of(sym_test_target));
    char stripped[128], bare[128];
    struct sym_result r;

    if (strcmp(OBJCOPY, "no") == 0) {
        fprintf(stderr, "check_sym: stripped_copy skipped: configure found no objcopy\n");
        return;
    }
    make_tmpdir();
    snprintf(stripped, sizeof stripped, "%s/stripped", tmpdir);
    snprintf(bare, sizeof bare, "%s/bare", tmpdir);
    const char *strip[] = { OBJCOPY, "--strip-all", self->path, stripped, NULL };
    ck_assert_msg(run(strip) == 0, "%s --strip-all failed", OBJCOPY);

    struct sym_obj o = one_obj(self, stripped);      /* the build id is kept by strip */
    struct sym_ctx *c = sym_open(&o, 1, NULL);
    ck_assert_ptr_nonnull(c);
    uint64_t a = addr_of(sym_test_exported) + 2;
    ck_assert_int_eq(sym_lookup(c, a, &r), 0);
    ck_assert_str_eq(r.obj, stripped);
    ck_assert_str_eq(r.func, "sym_test_exported");
    ck_assert_uint_eq(r.func_off, 2);
    ck_assert_int_eq(r.source, SYM_DYNSYM);
    /* The static function is not in .dynsym: an offset, or some exported name. */
    a = addr_of(sym_test_target) + 3;
    ck_assert_int_eq(sym_lookup(c, a, &r), 0);
    ck_assert_uint_eq(r.obj_off, a - self->bias);
    ck_assert(r.func == NULL || (r.source == SYM_DYNSYM && strcmp(r.func, "sym_test_target") != 0));
    poke(c, &o, self->hi - self->lo);
    sym_close(c);

    /* Without .dynsym either (objcopy may refuse: then there is nothing to test). */
    const char *nodyn[] = { OBJCOPY, "--strip-all", "-R", ".dynsym", stripped, bare, NULL };
    if (run(nodyn) == 0) {
        o = one_obj(self, bare);
        c = sym_open(&o, 1, NULL);
        ck_assert_int_eq(sym_lookup(c, addr_of(sym_test_exported), &r), 0);
        ck_assert_ptr_null(r.func);
        ck_assert_uint_eq(r.obj_off, addr_of(sym_test_exported) - self->bias);
        ck_assert_str_eq(r.note, "no symbols");
        sym_close(c);
    }
    rm_tree(tmpdir);
}
END_TEST

/* ---- Lines (libdw) ---- */

#ifdef HAVE_LIBDW
static int call_line;          /* the line of the call in sym_test_call */

__attribute__((noinline)) static void *sym_test_ret(void)
{
    void *r = __builtin_extract_return_addr(__builtin_return_address(0));
    __asm__ volatile("" : : "r"(r) : "memory");
    return r;
}

/* The return address of a call made at a known line: the call and the
 * assignment share the line. */
__attribute__((noinline)) static uint64_t sym_test_call(void)
{
    void *r = sym_test_ret(); call_line = __LINE__;
    __asm__ volatile("" : : "r"(r) : "memory");   /* no tail call */
    return (uint64_t)(uintptr_t)r;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Checks r: sym_test_call, at call_line of this file. */
static void assert_call_line(const struct sym_result *r)
{
    ck_assert_str_eq(r->func, "sym_test_call");
    ck_assert_msg(r->file != NULL, "no line: %s", r->line_note ? r->line_note : "(no note)");
    ck_assert_str_eq(base_name(r->file), base_name(__FILE__));
    ck_assert_msg(r->file[0] != '/' || access(r->file, R_OK) == 0, "%s: not this source", r->file);
    ck_assert_uint_eq(r->line, call_line);
    ck_assert_ptr_null(r->line_note);
}

/* The section named name in an ELF64 image b[n], or NULL. */
static Elf64_Shdr *find_section(unsigned char *b, size_t n, const char *name)
{
    Elf64_Ehdr *eh = (Elf64_Ehdr *)b;
    ck_assert_uint_le(eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr), n);
    Elf64_Shdr *sh = (Elf64_Shdr *)(b + eh->e_shoff), *str = &sh[eh->e_shstrndx];
    for (size_t i = 0; i < eh->e_shnum; i++)
        if (str->sh_offset + sh[i].sh_name < n &&
            strcmp((char *)b + str->sh_offset + sh[i].sh_name, name) == 0)
            return &sh[i];
    return NULL;
}

/* Replaces every copy of the build id from[len] in the file by to[len]. */
static void patch_id(const char *path, const uint8_t *from, const uint8_t *to, size_t len)
{
    size_t n, hits = 0;
    unsigned char *b = read_all(path, &n);
    for (unsigned char *p = b; (p = memmem(p, n - (size_t)(p - b), from, len)) != NULL; p += len) {
        memcpy(p, to, len);
        hits++;
    }
    ck_assert_uint_gt(hits, 0);
    write_file(path, b, n);
    free(b);
}

/* Runs objcopy with the arguments, NULL-terminated. */
static void objcopy(const char *a, const char *b, const char *c, const char *d)
{
    const char *argv[] = { OBJCOPY, a, b, c, d, NULL };
    ck_assert_msg(run(argv) == 0, "%s %s %s %s %s failed", OBJCOPY, a, b, c ? c : "", d ? d : "");
}

/* Makes DIR/usr/lib/debug/.build-id/xx and returns the path of the debug
 * file of id[len] under it in path[cap]. */
static void debug_file_path(char *path, size_t cap, const char *dir, const uint8_t *id, size_t len)
{
    char mk[PATH_MAX];
    const char *parts[] = { "/usr", "/usr/lib", "/usr/lib/debug", "/usr/lib/debug/.build-id" };
    for (size_t i = 0; i < 4; i++) {
        snprintf(mk, sizeof mk, "%s%s", dir, parts[i]);
        ck_assert(mkdir(mk, 0755) == 0 || errno == EEXIST);
    }
    snprintf(mk, sizeof mk, "%s/usr/lib/debug/.build-id/%02x", dir, id[0]);
    ck_assert(mkdir(mk, 0755) == 0 || errno == EEXIST);
    int at = snprintf(path, cap, "%s/", mk);
    for (size_t i = 1; i < len; i++)
        at += snprintf(path + at, cap - (size_t)at, "%02x", id[i]);
    snprintf(path + at, cap - (size_t)at, ".debug");
}

/* This test binary, built with -g: the file and line of a call. */
START_TEST(line_from_own_dwarf)
{
    struct sym_obj objs[512];
    size_t n = list_objs(objs);
    struct sym_result r;
    uint64_t ret = sym_test_call();
    ck_assert_ptr_nonnull(holder(ret));

    struct sym_ctx *c = sym_open(objs, n, NULL);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(sym_lookup(c, ret - 1, &r), 0);
    assert_call_line(&r);
    ck_assert_int_eq(r.source, SYM_SYMTAB);
    /* An address of no function's code: named or not, no line invented. */
    ck_assert_int_eq(sym_lookup(c, holder(ret)->lo, &r), 0);
    ck_assert(r.file == NULL && r.line == 0 && r.line_note != NULL);
    sym_close(c);
}
END_TEST

/* A stripped copy: names and lines from the debug file of its build id
 * (objcopy --only-keep-debug), under root; none from a debug file of
 * another build; and the DWARF of two objects in turn. */
START_TEST(line_from_debug_file)
{
    struct sym_obj objs[512];
    list_objs(objs);
    uint64_t ret = sym_test_call();
    const struct tobj *self = holder(ret);
    char stripped[128], dbg[PATH_MAX];
    struct sym_result r;

    make_tmpdir();
    snprintf(stripped, sizeof stripped, "%s/stripped", tmpdir);
    objcopy("--strip-all", self->path, stripped, NULL);
    struct sym_obj o = one_obj(self, stripped);
    struct sym_ctx *c = sym_open(&o, 1, NULL);
    ck_assert_int_eq(sym_lookup(c, ret - 1, &r), 0);
    ck_assert_ptr_null(r.file);
    ck_assert_str_eq(r.line_note, "no debug information");
    sym_close(c);

    debug_file_path(dbg, sizeof dbg, tmpdir, self->id, self->idlen);
    objcopy("--only-keep-debug", self->path, dbg, NULL);
    c = sym_open(&o, 1, tmpdir);
    ck_assert_int_eq(sym_lookup(c, ret - 1, &r), 0);
    assert_call_line(&r);
    ck_assert_int_eq(r.source, SYM_DEBUGFILE);
    sym_close(c);

    /* Two objects, one with its own DWARF and the stripped one with the
     * debug file (placed elsewhere): each lookup changes the open DWARF. */
    struct sym_obj two[2] = { one_obj(self, NULL), one_obj(self, stripped) };
    const uint64_t shift = 0x100000000000ULL;
    two[1].bias += shift;
    two[1].lo += shift;
    two[1].hi += shift;
    c = sym_open(two, 2, tmpdir);
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(sym_lookup(c, ret - 1 + (i & 1 ? shift : 0), &r), 0);
        ck_assert_str_eq(r.obj, i & 1 ? stripped : self->path);
        assert_call_line(&r);
    }
    sym_close(c);

    /* The debug file of another build at that path: neither names nor lines. */
    uint8_t other[SYM_MAX_BUILD_ID];
    memcpy(other, self->id, self->idlen);
    other[self->idlen - 1] ^= 0x5a;
    patch_id(dbg, self->id, other, self->idlen);
    c = sym_open(&o, 1, tmpdir);
    ck_assert_int_eq(sym_lookup(c, ret - 1, &r), 0);
    ck_assert_ptr_null(r.func);
    ck_assert_ptr_null(r.file);
    ck_assert_str_eq(r.line_note, "no debug information");
    sym_close(c);
    rm_tree(tmpdir);
}
END_TEST

/* Compressed debug sections are inflated by libdw; one that claims to
 * inflate to 1 TiB is not (the bound is checked first), and the name
 * still comes from .symtab. */
START_TEST(dwarf_too_large)
{
    struct sym_obj objs[512];
    list_objs(objs);
    uint64_t ret = sym_test_call();
    const struct tobj *self = holder(ret);
    char z[128];
    struct sym_result r;
    size_t n;

    make_tmpdir();
    snprintf(z, sizeof z, "%s/compressed", tmpdir);
    objcopy("--compress-debug-sections=zlib", self->path, z, NULL);
    struct sym_obj o = one_obj(self, z);
    struct sym_ctx *c = sym_open(&o, 1, NULL);
    ck_assert_int_eq(sym_lookup(c, ret - 1, &r), 0);
    assert_call_line(&r);
    sym_close(c);

    unsigned char *b = read_all(z, &n);
    Elf64_Shdr *sh = find_section(b, n, ".debug_info");
    ck_assert_ptr_nonnull(sh);
    ck_assert(sh->sh_flags & SHF_COMPRESSED);
    ck_assert_uint_le(sh->sh_offset + sizeof(Elf64_Chdr), n);
    Elf64_Chdr ch;
    memcpy(&ch, b + sh->sh_offset, sizeof ch);
    ch.ch_size = 1ULL << 40;
    memcpy(b + sh->sh_offset, &ch, sizeof ch);
    write_file(z, b, n);
    free(b);
    c = sym_open(&o, 1, NULL);
    ck_assert_int_eq(sym_lookup(c, ret - 1, &r), 0);
    ck_assert_str_eq(r.func, "sym_test_call");
    ck_assert_ptr_null(r.file);
    ck_assert_str_eq(r.line_note, "debug information too large");
    sym_close(c);
    rm_tree(tmpdir);
}
END_TEST

/* symdw's budget of line-program bytes: a unit whose program is larger than
 * what is left is not read (E2BIG, then and later) and costs nothing; one
 * read takes its program's bytes, once. */
START_TEST(line_program_budget)
{
    struct sym_obj objs[512];
    list_objs(objs);
    uint64_t ret = sym_test_call();
    const struct tobj *self = holder(ret);
    const uint64_t vaddr = ret - 1 - self->bias, big = 1u << 30;
    const char *file, *name;
    const uint8_t *id;
    uint32_t line;
    struct symdw *w;
    uint64_t left = 8;

    ck_assert_int_ne(elf_version(EV_CURRENT), EV_NONE);
    int fd = open(self->path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(symdw_open(e, &left, &w), 0);
    ck_assert_uint_eq(symdw_altlink(w, &name, &id), 0);
    ck_assert_int_eq(symdw_line(w, vaddr, &file, &line), E2BIG);
    ck_assert_int_eq(symdw_line(w, vaddr, &file, &line), E2BIG);
    ck_assert_uint_eq(left, 8);
    symdw_close(w);

    left = big;
    ck_assert_int_eq(symdw_open(e, &left, &w), 0);
    ck_assert_int_eq(symdw_line(w, vaddr, &file, &line), 0);
    ck_assert_uint_eq(line, call_line);
    ck_assert_str_eq(base_name(file), base_name(__FILE__));
    uint64_t cost = big - left;
    ck_assert_uint_gt(cost, 8);
    ck_assert_int_eq(symdw_line(w, vaddr, &file, &line), 0);
    ck_assert_uint_eq(big - left, cost);
    symdw_close(w);
    elf_end(e);
    close(fd);
}
END_TEST

/* Writes a .gnu_debugaltlink section's contents to path: name, NUL, id. */
static void write_altlink(const char *path, const char *name, const uint8_t *id, size_t len)
{
    unsigned char b[512];
    size_t nl = strlen(name) + 1;
    ck_assert_uint_le(nl + len, sizeof b);
    memcpy(b, name, nl);
    memcpy(b + nl, id, len);
    write_file(path, b, nl + len);
}

/* A .gnu_debugaltlink (dwz): the supplementary file is read only from
 * /usr/lib/debug (under root), by its build id or its name there. A good
 * one named elsewhere, or by a name that leaves /usr/lib/debug, is not
 * read, nor is a FIFO (an open would block), nor one of another build; the
 * object then has no lines. */
START_TEST(line_altlink)
{
    struct sym_obj objs[512];
    list_objs(objs);
    uint64_t ret = sym_test_call();
    const struct tobj *self = holder(ret);
    char link[128], withalt[128], outside[128], fifo[128], alt[PATH_MAX], sec[256], dwz[PATH_MAX];
    struct sym_result r;
    struct sym_ctx *c;

    ck_assert_uint_eq(self->idlen, sizeof fake_id);   /* GNU ld's sha1 */
    make_tmpdir();
    snprintf(link, sizeof link, "%s/altlink", tmpdir);
    snprintf(withalt, sizeof withalt, "%s/withalt", tmpdir);
    snprintf(sec, sizeof sec, ".gnu_debugaltlink=%s", link);
    snprintf(fifo, sizeof fifo, "%s/fifo", tmpdir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    /* A usable supplementary file: a debug file with fake_id as build id. */
    snprintf(outside, sizeof outside, "%s/outside.debug", tmpdir);
    objcopy("--only-keep-debug", self->path, outside, NULL);
    patch_id(outside, self->id, fake_id, sizeof fake_id);
    struct sym_obj o = one_obj(self, withalt);

    char escape[256];
    snprintf(escape, sizeof escape, "/usr/lib/debug/../../..%s", outside);
    const char *refused[] = { outside, escape, fifo };
    for (size_t i = 0; i < 3; i++) {
        write_altlink(link, refused[i], fake_id, sizeof fake_id);
        unlink(withalt);
        objcopy("--add-section", sec, self->path, withalt);
        c = sym_open(&o, 1, tmpdir);
        ck_assert_int_eq(sym_lookup(c, ret - 1, &r), 0);
        ck_assert_str_eq(r.func, "sym_test_call");
        ck_assert_msg(r.file == NULL, "%s was read", refused[i]);
        ck_assert_str_eq(r.line_note, "supplementary debug file not found");
        sym_close(c);
    }

    /* By its build id, then by its name under /usr/lib/debug (dh_dwz's
     * .dwz directory). */
    write_altlink(link, "/usr/lib/debug/.dwz/check_sym.debug", fake_id, sizeof fake_id);
    unlink(withalt);
    objcopy("--add-section", sec, self->path, withalt);
    debug_file_path(alt, sizeof alt, tmpdir, fake_id, sizeof fake_id);
    ck_assert_int_eq(rename(outside, alt), 0);
    c = sym_open(&o, 1, tmpdir);
    ck_assert_int_eq(sym_lookup(c, ret - 1, &r), 0);
    assert_call_line(&r);
    sym_close(c);
    snprintf(dwz, sizeof dwz, "%s/usr/lib/debug/.dwz", tmpdir);
    ck_assert_int_eq(mkdir(dwz, 0755), 0);
    strcat(dwz, "/check_sym.debug");
    ck_assert_int_eq(rename(alt, dwz), 0);
    c = sym_open(&o, 1, tmpdir);
    ck_assert_int_eq(sym_lookup(c, ret - 1, &r), 0);
    assert_call_line(&r);
    sym_close(c);
    /* Of another build: refused. */
    patch_id(dwz, fake_id, self->id, sizeof fake_id);
    c = sym_open(&o, 1, tmpdir);
    ck_assert_int_eq(sym_lookup(c, ret - 1, &r), 0);
    ck_assert_ptr_null(r.file);
    ck_assert_str_eq(r.line_note, "supplementary debug file not found");
    sym_close(c);
    rm_tree(tmpdir);
}
END_TEST
#endif

static Suite *sym_suite(void)
{
    Suite *s = suite_create("sym");
    TCase *n = tcase_create("names");
    TCase *b = tcase_create("robustness");
    tcase_add_test(n, static_function_from_symtab);
    tcase_add_test(n, cxx_name_demangled);
    tcase_add_test(n, libc_debug_file_or_dynsym);
    tcase_add_test(n, build_id_differs);
    tcase_add_test(n, missing_object_and_no_object);
    tcase_add_test(n, root_prefix);
    tcase_add_test(n, search_rules);
    tcase_add_test(n, build_id_notes_and_debug_file);
    tcase_add_test(b, odd_files_do_not_crash);
    tcase_add_test(b, mutated_files_do_not_crash);
    tcase_add_test(b, stripped_copy);
    tcase_set_timeout(b, 120);                       /* valgrind */
    suite_add_tcase(s, n);
    suite_add_tcase(s, b);
#ifdef HAVE_LIBDW
    TCase *l = tcase_create("lines");
    tcase_add_test(l, line_from_own_dwarf);
    tcase_add_test(l, line_from_debug_file);
    tcase_add_test(l, dwarf_too_large);
    tcase_add_test(l, line_program_budget);
    tcase_add_test(l, line_altlink);
    tcase_set_timeout(l, 120);
    suite_add_tcase(s, l);
#endif
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(sym_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
