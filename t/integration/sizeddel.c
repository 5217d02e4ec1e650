/* sizeddel: C++'s sized delete (operator delete(void *, size_t), and its
 * array form) keeps the segment's figures exact: blocks from operator new
 * of many sizes, small and large, freed by the sized forms, leave every
 * class's live count and live usable bytes where they were, and while they
 * live the segment's totals match malloc_usable_size exactly; tracked
 * blocks leave the table. Plain, array and nothrow new. Calls the shim's
 * C++ symbols from C (dlsym), so no C++ compiler decides which form runs.
 * Usage: sizeddel SHM_DIR */
#include "config.h"

#include "segutil.h"

#define NB 4000

typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void (*del_fn)(void *, size_t);

static void *blk[NB];
static size_t req[NB];

static void live_totals(const struct su_snap *s, uint64_t *count, uint64_t *usable)
{
    *count = *usable = 0;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        *count += s->c[c].allocs - s->c[c].frees;
        *usable += s->c[c].usable_alloc - s->c[c].usable_free;
    }
}

int main(int argc, char **argv)
{
    static struct su_snap a, b, z;
    new_fn nw = (new_fn)dlsym(RTLD_DEFAULT, "_Znwm"), na = (new_fn)dlsym(RTLD_DEFAULT, "_Znam");
    new_nt_fn nn = (new_nt_fn)dlsym(RTLD_DEFAULT, "_ZnwmRKSt9nothrow_t");
    del_fn dl = (del_fn)dlsym(RTLD_DEFAULT, "_ZdlPvm"), da = (del_fn)dlsym(RTLD_DEFAULT, "_ZdaPvm");
    uint64_t seed = 7, usable = 0;

    if (argc != 2 || !nw || !na || !nn || !dl || !da)
        return 2;
    for (int i = 0; i < 20000; i++)   /* tracks one: names the segment */
        free(malloc(64));
    const struct seg_header *h = su_open(argv[1], (int)getpid());
    if (!h)
        return 1;
    su_snap(h, &a);
    for (int i = 0; i < NB; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        unsigned r = (unsigned)(seed >> 33);
        /* 0 .. 4096, and above, past tcmalloc's 256 KiB large blocks */
        req[i] = r % 8 == 0 ? 4097 + r % 300000 : r % 4097;
        blk[i] = (i & 1) ? na(req[i]) : i % 3 == 0 ? nn(req[i], NULL) : nw(req[i]);
        usable += malloc_usable_size(blk[i]);
    }
    su_snap(h, &b);
    uint64_t ca, ua, cb, ub;
    live_totals(&a, &ca, &ua);
    live_totals(&b, &cb, &ub);
    CHECK(cb - ca == NB);
    CHECK(ub - ua == usable);
    if (ub - ua != usable)
        fprintf(stderr, "sizeddel: live usable +%llu, malloc_usable_size says %llu\n",
                (unsigned long long)(ub - ua), (unsigned long long)usable);
    for (int i = 0; i < NB; i++)
        ((i & 1) ? da : dl)(blk[i], req[i]);
    su_snap(h, &z);
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        uint64_t live_a = a.c[c].allocs - a.c[c].frees, live_z = z.c[c].allocs - z.c[c].frees;
        uint64_t use_a = a.c[c].usable_alloc - a.c[c].usable_free;
        uint64_t use_z = z.c[c].usable_alloc - z.c[c].usable_free;
        /* The tracked blocks too: each freed one left the table. */
        uint64_t trk_a = a.t[c].allocs - a.t[c].frees, trk_z = z.t[c].allocs - z.t[c].frees;
        CHECK(live_a == live_z && use_a == use_z && trk_a == trk_z);
        if (live_a != live_z || use_a != use_z || trk_a != trk_z)
            fprintf(stderr, "sizeddel: class %u: live %llu -> %llu, usable %llu -> %llu, "
                    "tracked %llu -> %llu\n", c, (unsigned long long)live_a,
                    (unsigned long long)live_z, (unsigned long long)use_a,
                    (unsigned long long)use_z, (unsigned long long)trk_a,
                    (unsigned long long)trk_z);
    }
    if (!tu_failures)
        printf("%d blocks of 0..300 KiB, sized deletes: every class back where it was\n", NB);
    return tu_finish("sizeddel");
}
