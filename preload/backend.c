/* backend: helpers shared by the backends. */
#include "config.h"

#include <errno.h>
#include <stdio.h>

#include "backend.h"

int backend_info_xml(FILE *fp, int options, const char *backend, const char *version,
                     const char *const *names, const unsigned long long *values, size_t n)
{
    if (options != 0)
        return EINVAL;
    fprintf(fp, "<malloc version=\"%s-%s\">\n", backend, version);
    for (size_t i = 0; i < n; i++)
        fprintf(fp, "<total type=\"%s\" size=\"%llu\"/>\n", names[i], values[i]);
    fprintf(fp, "</malloc>\n");
    return 0;
}

size_t backend_probe_size(size_t i)
{
    size_t n;
    if (i < 64)
        n = 1 + 16 * i;
    else if (i < 124)
        n = 1024 + 256 * (i - 64) + 7;
    else if (i < 184)
        n = 16384 + 4096 * (i - 124) + 9;
    else if (i < BACKEND_PROBES)
        n = ((size_t)1 << (18 + (i - 184) / 3)) + (i % 3) * 8 - 8;
    else
        return 0;
    return n <= (8u << 20) ? n : 0;
}
