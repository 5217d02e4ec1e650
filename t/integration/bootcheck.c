/* bootcheck: checks the blocks that libbootprobe's constructor allocated from
 * the shim's bootstrap buffer, once the shim has a backend: their usable size
 * is the size asked, realloc moves them to the backend with their contents,
 * free takes them. Usage: bootcheck PATH-TO-libbootprobe.so */
#include "config.h"

#include <dlfcn.h>
#include <stdint.h>

#include "testutil.h"

int main(int argc, char **argv)
{
    void *h;
    size_t usable;
    int zeroed, aligned, grown;

    if (argc != 2)
        return 2;
    CHECK(strcmp(tu_backend(), "tcmalloc") == 0);
    h = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
    CHECK(h != NULL);
    if (!h)
        return tu_finish("bootcheck");
    int (*results)(size_t *, int *, int *, int *) =
        (int (*)(size_t *, int *, int *, int *))dlsym(h, "bootprobe_results");
    char *(*early)(void) = (char *(*)(void))dlsym(h, "bootprobe_early");
    void *(*al)(void) = (void *(*)(void))dlsym(h, "bootprobe_aligned");
    CHECK(results && early && al);

    results(&usable, &zeroed, &aligned, &grown);
    CHECK(usable == 300);       /* the buffer's exact size; glibc would say 312 */
    CHECK(zeroed);
    CHECK(aligned);
    CHECK(grown);
    char *e = early();
    CHECK(malloc_usable_size(e) == 300);
    char *g = realloc(e, 100000);   /* moves the block to the backend */
    CHECK(g != NULL && g != e);
    for (int i = 0; i < 300; i++)
        CHECK(g[i] == 'b');
    CHECK(malloc_usable_size(g) >= 100000);
    free(g);
    free(al());                     /* a buffer block: free is a no-op */
    return tu_finish("bootcheck");
}
