/* forkpeak: a fork child after its parent's RSS fell, for fork.sh: the
 * parent allocates a block (which starts its sampler), maps and touches
 * 64 MiB (DIR/high, its pid), unmaps them on DIR/drop (DIR/dropped), forks
 * on DIR/fork; the child allocates a block (its sampler), writes DIR/child
 * (its pid), and both exit on DIR/stop. The child's peak RSS must be its
 * own, below the parent's, and its history must not hold the parent's
 * higher RSS against it.
 * Usage: forkpeak DIR */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "handshake.h"

#define HIGH (64u << 20)

int main(int argc, char **argv)
{
    char pid[32];
    if (argc != 2)
        return 2;
    snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    /* a block, always tracked, to start the sampler */
    void *volatile keep = malloc(4u << 20);
    char *m = mmap(NULL, HIGH, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 4;
    memset(m, 1, HIGH);
    put(argv[1], "high", pid);
    await_ms(argv[1], "drop", 0);
    munmap(m, HIGH);
    put(argv[1], "dropped", pid);
    await_ms(argv[1], "fork", 0);
    pid_t child = fork();
    if (child == 0) {
        void *volatile own = malloc(4u << 20);
        snprintf(pid, sizeof pid, "%d\n", (int)getpid());
        put(argv[1], "child", pid);
        await_ms(argv[1], "stop", 0);
        free(own);
        _exit(0);
    }
    if (child < 0)
        return 5;
    await_ms(argv[1], "stop", 0);
    int st;
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 6;
    free(keep);
    return 0;
}
