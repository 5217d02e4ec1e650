// sites: a live process with known call sites, for shimdump --stacks. Each
// site is its own function, allocates its own size and keeps it its own time:
//   app::Cache::fill(int)    400 x 16000 B (malloc), kept to the end: oldest
//   session_open             300 x 3000 B (operator new[]), kept, allocated
//                            1.5 s after the cache
//   temp_buffers             500 x 600 B, freed after 200 ms
//   scratch_churn            50000 x 200 B, each freed at once
//   deep_leaf                2 x 40 x 4321 B, kept, each 40 under 25 calls
//                            of deep(): deeper than stacks:16
// all called from work(), run by the main thread, or with `thread` by a
// second thread (whose first 256 stacks libgcc's unwinder takes, and the
// rest libunwind: the first 40 of deep_leaf are libgcc's, the second 40
// libunwind's). Then it writes DIR/ready (its pid) and waits for DIR/stop,
// and exits.
// Usage: sites DIR [thread]
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "handshake.h"

// Keeps the compiler from eliding a block.
static void touch(void *p, size_t n)
{
    memset(p, 0x5a, n);
    __asm__ volatile("" : : "r"(p) : "memory");
}

namespace app {
struct Cache {
    void *blocks[400];
    __attribute__((noinline)) void fill(int n);
};

void Cache::fill(int n)
{
    for (int i = 0; i < n; i++) {
        blocks[i] = malloc(16000);
        touch(blocks[i], 16);
    }
}
}  // namespace app

static char *sessions[300];

extern "C" __attribute__((noinline)) void session_open(int n)
{
    for (int i = 0; i < n; i++) {
        sessions[i] = new char[3000];
        touch(sessions[i], 16);
    }
}

__attribute__((noinline)) static void temp_buffers(int n)
{
    static void *tmp[500];
    for (int i = 0; i < n; i++) {
        tmp[i] = malloc(600);
        touch(tmp[i], 16);
    }
    sleep_ms(200);
    for (int i = 0; i < n; i++)
        free(tmp[i]);
}

extern "C" __attribute__((noinline)) void scratch_churn(int n)
{
    for (int i = 0; i < n; i++) {
        void *p = malloc(200);
        touch(p, 16);
        free(p);
    }
}

static void *deep_blocks[80];
static int deep_used;

extern "C" __attribute__((noinline)) void deep_leaf(int n)
{
    for (int i = 0; i < n; i++) {
        deep_blocks[deep_used] = malloc(4321);
        touch(deep_blocks[deep_used++], 16);
    }
}

extern "C" __attribute__((noinline)) void deep(int level, int n)
{
    if (level > 0)
        deep(level - 1, n);
    else
        deep_leaf(n);
    __asm__ volatile("" ::: "memory");   /* no tail call: each level stays a frame */
}

static app::Cache cache;

extern "C" __attribute__((noinline)) void *work(void *)
{
    deep(24, 40);
    cache.fill(400);
    sleep_ms(1500);
    temp_buffers(500);
    scratch_churn(50000);
    session_open(300);
    deep(24, 40);
    __asm__ volatile("" ::: "memory");   /* no tail call: work stays a frame */
    return NULL;
}

int main(int argc, char **argv)
{
    char pid[32];
    pthread_t t;

    if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "thread") != 0)) {
        fprintf(stderr, "usage: sites DIR [thread]\n");
        return 2;
    }
    if (argc == 3) {
        if (pthread_create(&t, NULL, work, NULL) != 0 || pthread_join(t, NULL) != 0) {
            fprintf(stderr, "sites: cannot run the thread\n");
            return 1;
        }
    } else {
        work(NULL);
    }
    snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    put(argv[1], "ready", pid);
    await_ms(argv[1], "stop", 600000);   /* 10 min at most */
    for (int i = 0; i < 400; i++)
        free(cache.blocks[i]);
    for (int i = 0; i < 300; i++)
        delete[] sessions[i];
    for (int i = 0; i < deep_used; i++)
        free(deep_blocks[i]);
    return 0;
}
