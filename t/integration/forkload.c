/* forkload: fork() from a process whose other threads allocate and free
 * without pause; each child must be able to allocate, free, start a thread
 * and exit cleanly. Usage: forkload [FORKS] */
#include "config.h"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static volatile int stop;

static void *churn(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    void *slots[256] = { 0 };
    while (!stop) {
        seed = seed * 1103515245 + 12345;
        unsigned i = (seed >> 8) % 256;
        free(slots[i]);
        slots[i] = malloc(1 + (seed >> 4) % 20000);
    }
    for (int i = 0; i < 256; i++)
        free(slots[i]);
    return NULL;
}

static void *child_thread(void *arg)
{
    void *p = malloc(1000);
    free(p);
    return arg;
}

static int child(void)
{
    pthread_t t;
    void *blocks[1000];
    for (int i = 0; i < 1000; i++) {
        blocks[i] = malloc(1 + (size_t)i * 33);
        tu_fill(blocks[i], 1 + (size_t)i * 33, (unsigned)i);
    }
    if (pthread_create(&t, NULL, child_thread, NULL) != 0)
        return 3;
    pthread_join(t, NULL);
    for (int i = 0; i < 1000; i++) {
        if (!tu_intact(blocks[i], 1 + (size_t)i * 33, (unsigned)i))
            return 4;
        free(blocks[i]);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int forks = argc > 1 ? atoi(argv[1]) : 100;
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < forks; i++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(child());
        CHECK(pid > 0);
        int st = 0;
        alarm(30);
        CHECK(waitpid(pid, &st, 0) == pid);
        alarm(0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fprintf(stderr, "child %d: status 0x%x\n", i, st);
    }
    stop = 1;
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    return tu_finish("forkload");
}
