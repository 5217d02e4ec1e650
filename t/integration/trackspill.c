/* trackspill: the tracked table keeps few blocks in its first entries, and
 * finds every block wherever it went. 400 live blocks must leave at most
 * the table's first 160 KiB resident (track.c's near entries; hashed over
 * the whole table, their tracked ones would touch most of its 5 MiB), read
 * by mincore on this process's own live segment (reading the table through
 * a mapping would make its holes resident). Then 12,000 live at once, their
 * tracked ones more than the near entries hold, so that later ones go over
 * the rest of the table; freed in a shuffled order, each tracked one must
 * leave the tracked figures: the tracked live count back where it was, as
 * many tracked frees as tracked allocations, none dropped. A fork child,
 * with a segment of its own that starts as a copy, must do the same: at 400
 * blocks, keep no more of its table resident; at 12,000, untrack every
 * block it frees (with sampling, its filter, rebuilt at the fork, must hold
 * the far entries too). Run with sample:1 or 2 (then, with a seed, about
 * 6,000 tracked, more than the near entries' 4096).
 * Usage: trackspill SHM_DIR */
#include "config.h"

#include <sys/wait.h>

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

/* In a fork child: frees blk[0..n), and exits 0 if the child's own segment
 * then holds want live tracked blocks (and, with few, kept no more than the
 * near pages of its table resident), else 10 and up. */
static void child_frees(const char *dir, int n, uint64_t want, int few)
{
    static struct su_snap s;
    static void *one[64];
    /* one of them tracked: that starts the child's sampler, which names its file */
    for (int i = 0; i < 64; i++)
        one[i] = malloc(1);
    for (int i = 0; i < 64; i++)
        free(one[i]);
    const struct seg_header *ch = su_open(dir, (int)getpid());
    if (!ch)
        _exit(10);
    size_t res = table_resident(ch);
    if (few && res > NEAR_PAGES) {
        fprintf(stderr, "trackspill: fork child: %zu pages of its table resident\n", res);
        _exit(11);
    }
    for (int i = 0; i < n; i++)
        free(blk[i]);
    su_snap(ch, &s);
    if (tracked_live(&s) != want) {
        fprintf(stderr, "trackspill: fork child: %llu live tracked blocks, want %llu\n",
                (unsigned long long)tracked_live(&s), (unsigned long long)want);
        _exit(12);
    }
    exit(0);   /* normal exit: the child's file goes */
}

static int forked(const char *dir, int n, uint64_t want, int few)
{
    int st = 0;
    pid_t pid = fork();
    if (pid == 0)
        child_frees(dir, n, want, few);
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static uint64_t tracked_frees(const struct su_snap *s)
{
    uint64_t n = 0;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++)
        n += s->t[c].frees;
    return n;
}

static uint64_t tracked_allocs(const struct su_snap *s)
{
    uint64_t n = 0;
    for (unsigned c = 0; c < SIZECLASS_COUNT; c++)
        n += s->t[c].allocs;
    return n;
}

int main(int argc, char **argv)
{
    static struct su_snap a, b, c;
    if (argc < 2)
        return 2;
    /* by its name, as the child will (su_open waits for it): the child's
     * file is then named at the fork */
    const struct seg_header *h = su_open(argv[1], (int)getpid());
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
            fprintf(stderr, "trackspill: %d live blocks: %zu pages of the table resident "
                    "(at most %zu)\n", FEW, few, (size_t)NEAR_PAGES);
            CHECK(few <= NEAR_PAGES);
            CHECK(forked(argv[1], FEW, tracked_live(&a), 1) == 0);
        }
    }
    su_snap(h, &b);
    uint64_t took = tracked_allocs(&b) - tracked_allocs(&a);
    size_t spilled = table_resident(h);
    CHECK(tracked_live(&b) - tracked_live(&a) == took);
    CHECK(took > 4096 + 1000 && spilled > NEAR_PAGES);   /* some went to the far entries */
    CHECK(forked(argv[1], MANY, tracked_live(&a), 0) == 0);
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
    fprintf(stderr, "trackspill: %d blocks, %llu tracked: tracked live %+lld, then %+lld; "
            "tracked frees +%llu; dropped %llu; %zu pages of the table resident\n", MANY,
            (unsigned long long)took, (long long)(tracked_live(&b) - tracked_live(&a)),
            (long long)(tracked_live(&c) - tracked_live(&a)),
            (unsigned long long)(tracked_frees(&c) - tracked_frees(&b)),
            (unsigned long long)dropped, spilled);
    CHECK(tracked_live(&c) == tracked_live(&a));
    CHECK(tracked_frees(&c) - tracked_frees(&b) == took);
    CHECK(dropped == 0);
    return tu_finish("trackspill");
}
