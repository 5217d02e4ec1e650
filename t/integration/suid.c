/* suid: starts as root, allocates, drops to uid/gid 65534 in the same
 * process image (as mariadbd does when it switches to mysql), then frees the
 * root-time blocks and keeps allocating on new threads. */
#include "config.h"

#include <grp.h>
#include <pthread.h>
#include <unistd.h>

#include "testutil.h"

static void *worker(void *arg)
{
    for (int i = 0; i < 20000; i++) {
        void *p = malloc(1 + (size_t)(i % 5000));
        free(p);
    }
    return arg;
}

int main(void)
{
    void *early[500];
    pthread_t t[2];

    for (int i = 0; i < 500; i++) {
        early[i] = malloc(64 + (size_t)i * 17);
        tu_fill(early[i], 64 + (size_t)i * 17, (unsigned)i);
    }
    CHECK(setgroups(0, NULL) == 0);
    CHECK(setgid(65534) == 0);
    CHECK(setuid(65534) == 0);
    CHECK(getuid() == 65534 && geteuid() == 65534);
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 500; i++) {
        CHECK(tu_intact(early[i], 64 + (size_t)i * 17, (unsigned)i));
        early[i] = realloc(early[i], 100000);
        CHECK(early[i] != NULL);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 500; i++)
        free(early[i]);
    return tu_finish("suid");
}
