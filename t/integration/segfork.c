/* segfork: a fork child gets a segment of its own (a copy as of the fork,
 * then its own counts), the parent's is untouched by the child, the child's
 * file goes at its normal exit; an exec'ed image under the same pid replaces
 * the segment with a fresh one. Usage: segfork SHM_DIR [exec'ed] */
#include "config.h"

#include <sys/wait.h>

#include "segutil.h"

#define SZ 5000

static uint64_t live_in(const struct seg_header *h, unsigned c)
{
    static struct su_snap s;
    su_snap(h, &s);
    return s.c[c].allocs - s.c[c].frees;
}

int main(int argc, char **argv)
{
    const char *dir = argv[1];
    static void *kept[1500];
    const struct seg_header *h;
    char path[512];

    if (argc < 2)
        return 2;
    void *probe = malloc(SZ);
    unsigned c = sizeclass_of(malloc_usable_size(probe));
    free(probe);

    if (argc > 2) {
        /* The exec'ed image: same pid, a fresh segment. */
        h = su_open(dir, (int)getpid());
        if (!h)
            return 1;
        CHECK(h->pid == (uint32_t)getpid());
        CHECK(live_in(h, c) == 0);
        for (int i = 0; i < 300; i++)
            kept[i] = malloc(SZ);
        CHECK(live_in(h, c) == 300);
        for (int i = 0; i < 300; i++)
            free(kept[i]);
        return tu_finish("segfork (exec'ed image)");
    }

    for (int i = 0; i < 1000; i++)
        kept[i] = malloc(SZ);
    h = su_open(dir, (int)getpid());
    if (!h)
        return 1;
    uint64_t before = live_in(h, c);
    CHECK(before >= 1000);

    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 1000; i < 1500; i++)
            kept[i] = malloc(SZ);
        const struct seg_header *ch = su_open(dir, (int)getpid());
        if (!ch)
            _exit(10);
        if (ch->pid != (uint32_t)getpid() || live_in(ch, c) != before + 500)
            _exit(11);
        if (!(ch->flags & SEG_F_INHERITED))
            _exit(12);   /* its counts started from a copy: marked approximate */
        exit(0);   /* normal exit: the child's file goes */
    }
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fprintf(stderr, "child status 0x%x\n", st);
    CHECK(live_in(h, c) == before);            /* untouched by the child */
    CHECK(h->pid == (uint32_t)getpid());
    snprintf(path, sizeof path, "%s/mallocshim.%d", dir, (int)pid);
    CHECK(access(path, F_OK) != 0);            /* removed at the child's exit */
    if (tu_failures)
        return tu_finish("segfork");
    fflush(stdout);
    execl("/proc/self/exe", argv[0], dir, "exec'ed", (char *)NULL);
    perror("execl");
    return 1;
}
