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
    if (i < 64)
        return 4 + 12 * i;                           /* to 760, 12 apart */
    if (i < 96)
        return 768 + 512 * (i - 64) + 5;             /* to 16 KiB */
    if (i < 104)
        return ((size_t)32768 << (i - 96) / 2) + (i % 2) * 12288 + 3;   /* to 268 KiB */
    return 0;
}
