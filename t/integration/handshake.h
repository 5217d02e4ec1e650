/* handshake: how the live test programs (holder, sites, lines) and their
 * shell tests signal each other, through files in a directory, without
 * allocating: put() writes a file whole (by rename), await() waits for one.
 * Inline, so that a program that uses only some of them is not warned of
 * the others. */
#ifndef MALLOCSHIM_HANDSHAKE_H
#define MALLOCSHIM_HANDSHAKE_H

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Writes DIR/NAME with text, all at once; exits 3 on failure. */
static inline void put(const char *dir, const char *name, const char *text)
{
    char path[512], tmp[520];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) || close(fd) != 0 ||
        rename(tmp, path) != 0)
        _exit(3);
}

/* Waits for DIR/NAME to exist, at most max_ms (0: for ever). Returns 0 when
 * it does, -1 after max_ms. */
static inline int await_ms(const char *dir, const char *name, long max_ms)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    for (long waited = 0; access(path, F_OK) != 0; waited += 20) {
        if (max_ms && waited >= max_ms)
            return -1;
        sleep_ms(20);
    }
    return 0;
}

static inline void await(const char *dir, const char *name)
{
    await_ms(dir, name, 0);
}

#endif
