/* knobs: what glibc's tuning knobs and tcmalloc's properties do, seen from
 * the program. Run under the shim with mmap_threshold above the sizes used
 * here, so that the blocks come from the main heap (brk).
 *   knobs pad          a 1 MiB block grows the heap by: "grew=<bytes>"
 *                      (M_TOP_PAD: the extra the heap takes each time)
 *   knobs trim         a 4 MiB block at the top of the heap, freed: the heap
 *                      shrinks by "trimmed=<bytes>" (M_TRIM_THRESHOLD: the
 *                      free top it keeps)
 *   knobs tcprop NAME  tcmalloc's numeric property NAME, as the loaded
 *                      tcmalloc reports it: "NAME=<value>", or exit 1 */
#include "config.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "pad")) {
        char *b0 = sbrk(0);
        char *p = malloc(1 << 20);
        char *b1 = sbrk(0);
        if (!p)
            return 1;
        printf("grew=%ld\n", (long)(b1 - b0));
        free(p);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "trim")) {
        char *p = malloc(4 << 20);
        if (!p)
            return 1;
        memset(p, 1, 4 << 20);
        char *b1 = sbrk(0);
        free(p);
        char *b2 = sbrk(0);
        printf("trimmed=%ld\n", (long)(b1 - b2));
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "tcprop")) {
#ifndef TCMALLOC_SONAME
        fprintf(stderr, "knobs: built without tcmalloc\n");
        return 1;
#else
        /* The shim loaded tcmalloc privately: the same instance, by name. */
        void *h = dlopen(TCMALLOC_SONAME, RTLD_NOW | RTLD_NOLOAD);
        int (*get)(const char *, size_t *) =
            h ? (int (*)(const char *, size_t *))dlsym(h, "MallocExtension_GetNumericProperty") : NULL;
        size_t v = 0;
        if (!get || !get(argv[2], &v)) {
            fprintf(stderr, "knobs: %s: no such property, or tcmalloc not loaded\n", argv[2]);
            return 1;
        }
        printf("%s=%zu\n", argv[2], v);
        return 0;
#endif
    }
    fprintf(stderr, "usage: knobs pad | trim | tcprop NAME\n");
    return 2;
}
