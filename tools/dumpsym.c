/* dumpsym: places the frames of a dump's call stacks in their objects and
 * names them through sym (the ELF symbol tables of the objects the process
 * had mapped), in a build with libelf. */
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
/* Names the placed frames from the objects' files and marks d symbolized.
 * Returns 0, or ENOMEM. */
static int name_frames(struct dump *d, const char *root)
{
    struct sym_obj *so;
    struct sym_ctx *ctx;
    int err = 0;

    if (!(so = calloc(d->nobjs ? d->nobjs : 1, sizeof *so)))
        return ENOMEM;
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
    if (!ctx)
        return ENOMEM;
    for (size_t i = 0; i < d->nframes; i++) {
        struct dump_frame *f = &d->frames[i];
        struct sym_result r;
        /* Return addresses: the call is the byte before. */
        if (f->addr == 0 || sym_lookup(ctx, f->addr - 1, &r) != 0)
            continue;
        if (r.func) {
            free(f->func);
            if (!(f->func = dup_cut(r.func)))
                err = ENOMEM;
            /* the offset of the return address, as debuggers show it */
            f->func_off = r.func_off + 1;
            /* a snapshot saved by a build without libelf said why it had none */
            free(f->note);
            f->note = NULL;
        } else if (r.note) {
            free(f->note);
            f->note = dup_cut(r.note);
        }
    }
    sym_close(ctx);
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
