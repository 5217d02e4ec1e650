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
