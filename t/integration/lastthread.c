/* lastthread: a process ends when its last thread does, as glibc ends it
 * (exit(0)) once main has called pthread_exit and the workers return; the
 * shim's sampler thread must not keep it alive.
 *
 * Usage: lastthread MODE
 *   alloc      the worker allocates, then returns
 *   quiet      the worker never calls the malloc family
 *   sigterm    the worker blocks SIGTERM, sends it to the process, returns:
 *              the signal is pending with no program thread left to take it
 *   allocterm  both: the worker allocates, then leaves SIGTERM pending
 * main allocates enough to start the sampler first, prints "sampler: yes"
 * (or "no") as it finds a thread named "mallocshim", and calls
 * pthread_exit. The process must then exit 0, as it does bare; an atexit
 * handler prints "exit by: worker" when the worker's return ran exit(), as
 * it does bare (else "exit by: another thread"). */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "testutil.h"

/* The block escapes: no compiler may drop the allocation. */
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

static int go[2];
static const char *mode;
static pid_t worker_tid;

static void at_exit(void)
{
    char line[64];
    int n = snprintf(line, sizeof line, "exit by: %s\n",
                     (pid_t)syscall(SYS_gettid) == worker_tid ? "worker" : "another thread");
    if (write(1, line, (size_t)n) != n)
        _exit(3);
}

/* Whether a thread named "mallocshim" runs in this process (main only). */
static int sampler_running(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int found = 0;
    if (!d)
        return 0;
    while (!found && (e = readdir(d)) != NULL) {
        char path[300], comm[32] = "";
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f) {
            found = fgets(comm, sizeof comm, f) && strcmp(comm, "mallocshim\n") == 0;
            fclose(f);
        }
    }
    closedir(d);
    return found;
}

/* Whether the main thread has exited (a zombie): then this thread is the
 * program's last. open and read allocate nothing. */
static int main_gone(void)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)getpid());
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 1;
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return paren && (paren[2] == 'Z' || paren[2] == 'X');
}

static void *worker(void *arg)
{
    char c;
    (void)arg;
    worker_tid = (pid_t)syscall(SYS_gettid);
    /* Wait until main is gone, so that this thread is the last. */
    while (read(go[0], &c, 1) < 0)
        ;
    while (!main_gone())
        usleep(1000);
    if (strcmp(mode, "alloc") == 0 || strcmp(mode, "allocterm") == 0) {
        for (int i = 0; i < 1000; i++) {
            void *p = malloc(64 + (size_t)i);
            ESCAPE(p);
            free(p);
        }
    }
    if (strcmp(mode, "sigterm") == 0 || strcmp(mode, "allocterm") == 0) {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &s, NULL);
        kill(getpid(), SIGTERM);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t t;
    void *keep[4096];

    if (argc != 2 || (strcmp(argv[1], "alloc") && strcmp(argv[1], "quiet") &&
                      strcmp(argv[1], "sigterm") && strcmp(argv[1], "allocterm"))) {
        fprintf(stderr, "usage: lastthread alloc|quiet|sigterm|allocterm\n");
        return 2;
    }
    mode = argv[1];
    atexit(at_exit);
    CHECK(pipe(go) == 0);
    /* The worker first, so that a quiet one has never allocated. */
    CHECK(pthread_create(&t, NULL, worker, NULL) == 0);
    /* Enough allocations that the default sampling tracks some (and so
     * starts the sampler); the blocks stay live to the end. */
    for (int i = 0; i < 4096; i++) {
        keep[i] = malloc(32 + (size_t)(i % 200));
        ESCAPE(keep[i]);
    }
    for (int tries = 0; tries < 200 && !sampler_running(); tries++)
        usleep(10000);
    printf("sampler: %s\n", sampler_running() ? "yes" : "no");
    fflush(stdout);
    CHECK(write(go[1], "x", 1) == 1);
    pthread_exit(NULL);
}
