/* selfexec: allocates, then execs itself under the same pid (as mysqld_safe's
 * `nohup mariadbd` does), and allocates again in the new image.
 * Usage: selfexec [N]: N more execs to go. */
#include "config.h"

#include <unistd.h>

#include "testutil.h"

int main(int argc, char **argv)
{
    int left = argc > 1 ? atoi(argv[1]) : 1;
    char arg[16];
    void *keep[100];

    for (int i = 0; i < 100; i++) {
        keep[i] = malloc(100 + (size_t)i * 100);
        tu_fill(keep[i], 100 + (size_t)i * 100, (unsigned)i);
    }
    printf("pid %d backend %s left %d\n", (int)getpid(), tu_backend(), left);
    fflush(stdout);
    if (left > 0) {
        snprintf(arg, sizeof arg, "%d", left - 1);
        execl("/proc/self/exe", argv[0], arg, (char *)NULL);
        perror("execl");
        return 1;
    }
    for (int i = 0; i < 100; i++) {
        CHECK(tu_intact(keep[i], 100 + (size_t)i * 100, (unsigned)i));
        free(keep[i]);
    }
    return tu_finish("selfexec");
}
