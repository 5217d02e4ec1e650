/* trackspill: the tracked table keeps few blocks in its first entries, and
 * finds every block wherever it went. With sample:1 (every block tracked),
 * a few hundred live blocks must leave at most the table's first 160 KiB
 * resident (track.c's near entries; hashed over the whole table, they would
 * touch most of its 5 MiB), read by mincore on this process's own live
 * segment (reading the table through a mapping would make its holes
 * resident). Then 12,000 blocks live at once, more than the near entries
 * hold, so that later ones go over the whole table; freed in a shuffled
 * order, each must leave the tracked figures: the tracked live count back
 * where it was, 12,000 tracked frees, none dropped.
 * Usage: trackspill (run with sample:1) */
#include "config.h"

#include "segutil.h"

#define FEW 400
#define MANY 12000
/* track.c's TRACK_NEAR entries, and a page either side */
#define NEAR_PAGES ((4096 * sizeof(struct seg_track) + 4095) / 4096 + 2)

static void *blk[MANY];

/* Resident pages of the tracked table in this process's live segment. */
static size_t table_resident(const struct seg_header *h)
{
    static unsigned char res[(SEG_TRACK_DEFAULT * sizeof(struct seg_track)) / 4096 + 2];
    size_t bytes = (size_t)su_hdr.track_cap * sizeof(struct seg_track);
    uintptr_t start = ((uintptr_t)h + su_hdr.off_track) & ~(uintptr_t)4095;
    size_t len = (uintptr_t)h + su_hdr.off_track + bytes - start;
    CHECK(len / 4096 + 1 <= sizeof res);
    CHECK(mincore((void *)start, len, res) == 0);
    size_t n = 0;
    for (size_t i = 0; i < (len + 4095) / 4096; i++)
        n += res[i] & 1;
    return n;
}

static uint64_t tracked_live(const struct su_snap *s)
{
    uint64_t n = 0;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++)
        n += s->t[c].allocs - s->t[c].frees;
    return n;
}

static uint64_t tracked_frees(const struct su_snap *s)
{
    uint64_t n = 0;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++)
        n += s->t[c].frees;
    return n;
}

int main(void)
{
    static struct su_snap a, b, c;
    const struct seg_header *h = su_open_live((int)getpid());
    if (!h)
        return 1;
    CHECK(su_hdr.track_cap == SEG_TRACK_DEFAULT);
    su_snap(h, &a);
    uint64_t x = 12345;
    for (int i = 0; i < MANY; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        blk[i] = malloc(16 + (size_t)(x >> 33) % 3000);
        CHECK(blk[i] != NULL);
        if (i == FEW - 1) {
            size_t few = table_resident(h);
            fprintf(stderr, "trackspill: %d live tracked blocks: %zu pages of the table resident "
                    "(at most %zu)\n", FEW, few, (size_t)NEAR_PAGES);
            CHECK(few <= NEAR_PAGES);
        }
    }
    su_snap(h, &b);
    CHECK(tracked_live(&b) - tracked_live(&a) == MANY);
    for (int i = MANY - 1; i > 0; i--) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int j = (int)((x >> 33) % (uint64_t)(i + 1));
        void *t = blk[i];
        blk[i] = blk[j];
        blk[j] = t;
    }
    for (int i = 0; i < MANY; i++)
        free(blk[i]);
    su_snap(h, &c);
    uint64_t dropped = __atomic_load_n(&h->tracked_dropped, __ATOMIC_RELAXED);
    fprintf(stderr, "trackspill: %d blocks: tracked live %+lld, then %+lld; tracked frees +%llu; "
            "dropped %llu; %zu pages of the table resident\n", MANY,
            (long long)(tracked_live(&b) - tracked_live(&a)),
            (long long)(tracked_live(&c) - tracked_live(&a)),
            (unsigned long long)(tracked_frees(&c) - tracked_frees(&b)),
            (unsigned long long)dropped, table_resident(h));
    CHECK(tracked_live(&c) == tracked_live(&a));
    CHECK(tracked_frees(&c) - tracked_frees(&b) == MANY);
    CHECK(dropped == 0);
    return tu_finish("trackspill");
}
