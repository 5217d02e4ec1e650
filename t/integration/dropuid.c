/* dropuid: a root process that becomes uid/gid 65534 before its first
 * tracked allocation, as mariadbd (user=mysql) does, then allocates and
 * exits normally. Its segment must still be named (at start, while root),
 * and stays after exit, marked exited: as 65534 it may not remove a root
 * file from a sticky directory. Usage: dropuid (as root) */
#include "config.h"

#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    if (setgid(65534) != 0 || setuid(65534) != 0)
        return 2;
    for (int i = 0; i < 100000; i++)
        free(malloc(100));
    void *keep = malloc(20000);
    usleep(300000);
    free(keep);
    return 0;
}
