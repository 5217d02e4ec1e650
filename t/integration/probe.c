/* probe: starts THREADS threads that each allocate SIZE bytes at the same
 * moment and keep them, then prints the allocator's view: malloc_info(3)
 * and mallinfo2's mmap counters; with a third argument "stats", also
 * malloc_stats(). Usage: probe THREADS SIZE [stats] */
#include "config.h"

#include <malloc.h>
#include <pthread.h>

#include "testutil.h"

static pthread_barrier_t start, hold;
static size_t size;

static void *worker(void *arg)
{
    pthread_barrier_wait(&start);
    void *p = malloc(size);
    memset(p, 1, size);
    pthread_barrier_wait(&hold);   /* keep it until main has looked */
    pthread_barrier_wait(&hold);
    free(p);
    return arg;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 0;
    pthread_t t[256];
    struct mallinfo2 m0, m1;
    void *mine;

    size = argc > 2 ? (size_t)atol(argv[2]) : 100;
    if (n < 0 || n > 256)
        return 2;
    m0 = mallinfo2();
    pthread_barrier_init(&start, NULL, (unsigned)n + 1);
    pthread_barrier_init(&hold, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    pthread_barrier_wait(&start);
    mine = malloc(size);
    memset(mine, 1, size);
    pthread_barrier_wait(&hold);
    m1 = mallinfo2();
    malloc_info(0, stdout);
    printf("hblks_delta=%zu\n", m1.hblks - m0.hblks);
    fflush(stdout);
    if (argc > 3 && strcmp(argv[3], "stats") == 0)
        malloc_stats();
    pthread_barrier_wait(&hold);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    free(mine);
    return 0;
}
