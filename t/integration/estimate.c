/* estimate: a large random pattern under the default sampling; the totals
 * (live blocks, live usable bytes) must be exact, and the estimate of live
 * requested bytes, as shimdump states it (dump_from_image: the estimate and
 * its standard error), within 4 of its own standard errors of the truth,
 * which this program knows. Run with a `seed`, the program tracks the same
 * blocks every time: the check passes or fails the same way on any machine.
 * Usage: estimate SHM_DIR */
#include "config.h"

#include "segutil.h"

#include "dump.h"

#define NB 300000
static void *blk[NB];
static size_t req[NB];

int main(int argc, char **argv)
{
    static struct su_snap a, b;
    const struct seg_header *h;
    uint64_t seed = 42, live_req = 0, live_usable = 0, live = 0;

    if (argc != 2)
        return 2;
    /* Sure to track one (all but e^-78 of the time), which names the
     * segment and starts the sampler thread before the pattern. */
    for (int i = 0; i < 20000; i++)
        free(malloc(64));
    h = su_open(argv[1], (int)getpid());
    if (!h)
        return 1;
    CHECK(h->sample > 1 && !(h->flags & SEG_F_EXACT_REQ));
    su_snap(h, &a);
    for (int i = 0; i < NB; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        unsigned r = (unsigned)(seed >> 33);
        switch (r % 10) {
        case 0: case 1: case 2: req[i] = 16 + r % 48; break;
        case 3: case 4: req[i] = 64 + r % 200; break;
        case 5: req[i] = 1000 + r % 3000; break;
        case 6: case 7: req[i] = 16032 + r % 16; break;
        case 8: req[i] = 8300 + r % 700; break;
        default: req[i] = 100000 + r % 100000; break;
        }
        blk[i] = malloc(req[i]);
    }
    for (int i = 0; i < NB; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        if ((seed >> 40) & 1) {
            free(blk[i]);
            blk[i] = NULL;
        } else {
            live++;
            live_req += req[i];
            live_usable += malloc_usable_size(blk[i]);
        }
    }
    su_snap(h, &b);

    uint64_t got_live = 0, got_usable = 0;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        got_live += (b.c[c].allocs - b.c[c].frees) - (a.c[c].allocs - a.c[c].frees);
        got_usable += (b.c[c].usable_alloc - b.c[c].usable_free) - (a.c[c].usable_alloc - a.c[c].usable_free);
    }
    CHECK(got_live == live);
    CHECK(got_usable == live_usable);
    if (got_live != live || got_usable != live_usable)
        fprintf(stderr, "estimate: the segment says %llu live blocks, %llu usable bytes\n",
                (unsigned long long)got_live, (unsigned long long)got_usable);

    /* What shimdump states. Its totals include the blocks live before the
     * pattern (stdio's and the shim's first ones): their requested bytes
     * are at most their usable bytes, exact in snapshot a. */
    static struct dump d;
    char why[256];
    uint64_t before = 0;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++)
        before += a.c[c].usable_alloc - a.c[c].usable_free;
    int rc = dump_from_image(&d, h, su_hdr.total_size, DS_ALIVE, why, sizeof why);
    CHECK(rc == DX_OK);
    if (rc != DX_OK) {
        fprintf(stderr, "estimate: %s\n", why);
        return tu_finish("estimate");
    }
    CHECK(!d.exact);
    double est = (double)d.total.live_req, se = (double)d.total.live_req_err;
    double off = est - (double)live_req;
    double dist = off > (double)before ? off - (double)before : off < 0 ? -off : 0;
    printf("live %llu usable %llu requested %llu estimate %.0f error %+.3f%% = %.2f of its "
           "standard error (%.3f%%)\n", (unsigned long long)live, (unsigned long long)live_usable,
           (unsigned long long)live_req, est, off / (double)live_req * 100, dist / se,
           se / (double)live_req * 100);
    CHECK(se > 0 && se <= 0.02 * (double)live_req);   /* the sample says something */
    CHECK(dist <= 4 * se);
    dump_free(&d);
    for (int i = 0; i < NB; i++)
        free(blk[i]);
    return tu_finish("estimate");
}
