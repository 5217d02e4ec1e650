/* libmod: a module that dlopener loads and unloads; it allocates in its
 * constructor, hands blocks across the boundary, and frees in its
 * destructor. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

static char *ctor_block;

__attribute__((constructor)) static void mod_init(void)
{
    ctor_block = malloc(4096);
    memset(ctor_block, 'm', 4096);
}

__attribute__((destructor)) static void mod_fini(void)
{
    free(ctor_block);
}

char *mod_make(size_t n);
int mod_take(char *p, size_t n);
int mod_ctor_ok(void);

char *mod_make(size_t n)
{
    char *p = malloc(n);
    if (p)
        memset(p, 'x', n);
    return p;
}

int mod_take(char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 'y')
            return 0;
    free(p);
    return 1;
}

int mod_ctor_ok(void)
{
    for (int i = 0; i < 4096; i++)
        if (ctor_block[i] != 'm')
            return 0;
    return 1;
}
