/* estimate: a large random pattern under the default sampling; the totals
 * (live blocks, live usable bytes) must be exact, and the estimate of live
 * requested bytes within 3% of the truth, which this program knows.
 * Usage: estimate SHM_DIR */
#include "config.h"

#include "segutil.h"

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

    uint64_t got_live = 0, got_usable = 0, est = 0, base_est = 0;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++) {
        int exact;
        got_live += (b.c[c].allocs - b.c[c].frees) - (a.c[c].allocs - a.c[c].frees);
        got_usable += (b.c[c].usable_alloc - b.c[c].usable_free) - (a.c[c].usable_alloc - a.c[c].usable_free);
        est += seg_live_req_class(h, &su_hdr, &b.c[c], c, &exact);
        base_est += seg_live_req_class(h, &su_hdr, &a.c[c], c, &exact);
        CHECK(!exact);
    }
    est -= base_est;
    double err = ((double)est - (double)live_req) / (double)live_req;
    printf("live %llu usable %llu requested %llu estimate %llu error %+.3f%%\n",
           (unsigned long long)live, (unsigned long long)live_usable,
           (unsigned long long)live_req, (unsigned long long)est, err * 100);
    CHECK(got_live == live);
    CHECK(got_usable == live_usable);
    if (got_live != live || got_usable != live_usable)
        fprintf(stderr, "estimate: the segment says %llu live blocks, %llu usable bytes\n",
                (unsigned long long)got_live, (unsigned long long)got_usable);
    CHECK(err < 0.03 && err > -0.03);
    for (int i = 0; i < NB; i++)
        free(blk[i]);
    return tu_finish("estimate");
}
