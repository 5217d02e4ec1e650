/* log: the one diagnostics channel of the preload, built on write(2). */
#include "config.h"

#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#include "fmt.h"

/* Per-thread recursion guard: formatting never allocates, but a write(2)
 * interposed by a tracer might; a nested call is dropped instead of looping. */
static __thread int log_busy __attribute__((tls_model("initial-exec")));

void log_raw(const char *s, unsigned long n)
{
    int saved = errno;
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        s += w;
        n -= (unsigned long)w;
    }
    errno = saved;
}

void log_msg(const char *fmt, ...)
{
    char line[512];
    static const char prefix[] = "mallocshim: ";
    size_t n = sizeof prefix - 1;
    va_list ap;

    if (log_busy)
        return;
    log_busy = 1;
    for (size_t i = 0; i < n; i++)
        line[i] = prefix[i];
    va_start(ap, fmt);
    n += fmt_vbuf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    line[n++] = '\n';
    log_raw(line, n);
    log_busy = 0;
}
