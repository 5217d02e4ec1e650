/* dumpsym: places the frames of a dump's call stacks in their objects and
 * names them through sym (the ELF symbol tables of the objects the process
 * had mapped), in a build with libelf; with libdw, sym gives their source
 * lines too. */
#include "config.h"

#include "dump.h"
#ifdef HAVE_LIBELF
#include "sym.h"
#endif

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Names longer than this are cut (C++ templates run to kilobytes), so that
 * every name fits the JSON reader's string limit. */
#define NAME_MAX_LEN 1024

static char *dup_cut(const char *s)
{
    size_t n = strlen(s);
    char *r;
    if (n > NAME_MAX_LEN)
        n = NAME_MAX_LEN;
    if (!(r = malloc(n + 1)))
        return NULL;
    memcpy(r, s, n);
    r[n] = '\0';
    if (n == NAME_MAX_LEN)
        memcpy(r + n - 3, "...", 3);
    return r;
}

#ifdef HAVE_LIBELF
/* s, or its last NAME_MAX_LEN - 3 bytes after "...": a path keeps its file
 * name. */
static char *dup_tail(const char *s)
{
    size_t n = strlen(s);
    if (n <= NAME_MAX_LEN)
        return strdup(s);
    char *r = malloc(NAME_MAX_LEN + 1);
    if (!r)
        return NULL;
    memcpy(r, "...", 3);
    memcpy(r + 3, s + n - (NAME_MAX_LEN - 3), NAME_MAX_LEN - 3 + 1);
    return r;
}
#endif

/* The object holding addr: the latest in the list (an object loaded where
 * an unloaded one was comes later), or -1. */
static int obj_of(const struct dump *d, uint64_t addr)
{
    for (size_t i = d->nobjs; i-- > 0;)
        if (addr >= d->objs[i].lo && addr < d->objs[i].hi)
            return (int)i;
    return -1;
}

#ifdef HAVE_LIBELF
/* Frames in lookup order: by object, then address (sym holds one object's
 * DWARF at a time, and equal addresses are looked up once). */
static int frame_cmp(const void *a, const void *b, void *frames)
{
    const struct dump_frame *x = (const struct dump_frame *)frames + *(const size_t *)a;
    const struct dump_frame *y = (const struct dump_frame *)frames + *(const size_t *)b;
    if (x->obj != y->obj)
        return x->obj < y->obj ? -1 : 1;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return (x > y) - (x < y);
}

/* Fills frame f from the lookup r of its address. Returns 0, or ENOMEM. */
static int fill_frame(struct dump_frame *f, const struct sym_result *r)
{
    int err = 0;
    if (r->func) {
        free(f->func);
        if (!(f->func = dup_cut(r->func)))
            err = ENOMEM;
        /* the offset of the return address, as debuggers show it */
        f->func_off = r->func_off + 1;
        /* a snapshot saved by a build without libelf said why it had none */
        free(f->note);
        f->note = NULL;
    } else if (r->note) {
        free(f->note);
        f->note = dup_cut(r->note);
    }
    if (r->file) {
        free(f->file);
        f->line = 0;
        if ((f->file = dup_tail(r->file)) != NULL)
            f->line = r->line;
        else
            err = ENOMEM;
    }
    return err;
}

/* Names the placed frames from the objects' files and marks d symbolized.
 * Returns 0, or ENOMEM. */
static int name_frames(struct dump *d, const char *root)
{
    struct sym_obj *so;
    struct sym_ctx *ctx;
    size_t *order;
    int err = 0;

    if (!(order = malloc((d->nframes ? d->nframes : 1) * sizeof *order)))
        return ENOMEM;
    for (size_t i = 0; i < d->nframes; i++)
        order[i] = i;
    qsort_r(order, d->nframes, sizeof *order, frame_cmp, d->frames);
    if (!(so = calloc(d->nobjs ? d->nobjs : 1, sizeof *so))) {
        free(order);
        return ENOMEM;
    }
    for (size_t i = 0; i < d->nobjs; i++) {
        so[i].path = d->objs[i].path;
        so[i].bias = d->objs[i].bias;
        so[i].lo = d->objs[i].lo;
        so[i].hi = d->objs[i].hi;
        so[i].build_id = d->objs[i].build_id;
        so[i].build_id_len = d->objs[i].build_id_len;
    }
    /* More objects than sym takes: the first ones (the program and what
     * it loaded at start); frames in the others stay unnamed. */
    ctx = sym_open(so, d->nobjs < SYM_MAX_OBJS ? d->nobjs : SYM_MAX_OBJS, root);
    free(so);
    if (!ctx) {
        free(order);
        return ENOMEM;
    }
    struct sym_result r;
    uint64_t last = 0;                 /* the address r is of; 0: none yet */
    for (size_t k = 0; k < d->nframes; k++) {
        struct dump_frame *f = &d->frames[order[k]];
        if (f->addr == 0)
            continue;
        /* Return addresses: the call is the byte before. */
        if (f->addr != last) {
            last = 0;
            if (sym_lookup(ctx, f->addr - 1, &r) != 0)
                continue;
            last = f->addr;
        }
        if (fill_frame(f, &r) != 0)
            err = ENOMEM;
    }
    sym_close(ctx);
    free(order);
    d->symbolized = 1;
    return err;
}
#else
/* No names without libelf: each unnamed frame says why, and d stays
 * unsymbolized, so that a shimdump built with libelf names the frames of a
 * snapshot saved from this one. Returns 0. */
static int name_frames(struct dump *d, const char *root)
{
    for (size_t i = 0; i < d->nframes; i++) {
        struct dump_frame *f = &d->frames[i];
        /* out of memory: the frame has no note, as a lookup's note is dropped */
        if (!f->func && !f->note)
            f->note = dup_cut("shimdump built without libelf");
    }
    return 0;
}
#endif

int dump_symbolize(struct dump *d, const char *root)
{
    if (d->symbolized || d->nframes == 0)
        return 0;
    for (size_t i = 0; i < d->nframes; i++) {
        struct dump_frame *f = &d->frames[i];
        f->obj = obj_of(d, f->addr);
        if (f->obj >= 0)
            f->obj_off = f->addr - d->objs[f->obj].bias;
    }
    return name_frames(d, root);
}
