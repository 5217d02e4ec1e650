/* dlopener: dlopen/dlclose after start, blocks crossing the module
 * boundary both ways, and a C++ runtime loaded into a C program late.
 * Usage: dlopener MODULE_PATH [CXX_PLUGIN_PATH] */
#include "config.h"

#include <dlfcn.h>

#include "testutil.h"

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    /* First, before any libstdc++ is global: a C++ plugin loaded locally. */
    if (argc > 2) {
        void *plug = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
        CHECK(plug != NULL);
        if (plug) {
            int (*caught)(void) = (int (*)(void))dlsym(plug, "plug_bad_alloc_caught");
            int (*handler)(void) = (int (*)(void))dlsym(plug, "plug_handler_calls");
            CHECK(caught && caught() == 1);
            CHECK(handler && handler() == 1);
        } else {
            fprintf(stderr, "dlopen: %s\n", dlerror());
        }
    }
    for (int round = 0; round < 50; round++) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        CHECK(h != NULL);
        if (!h) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            break;
        }
        char *(*make)(size_t) = (char *(*)(size_t))dlsym(h, "mod_make");
        int (*take)(char *, size_t) = (int (*)(char *, size_t))dlsym(h, "mod_take");
        int (*ctor_ok)(void) = (int (*)(void))dlsym(h, "mod_ctor_ok");
        CHECK(make && take && ctor_ok);
        CHECK(ctor_ok());
        char *p = make(1000 + (size_t)round);
        CHECK(p && p[999] == 'x');
        free(p);                       /* allocated in the module, freed here */
        char *q = malloc(500);
        memset(q, 'y', 500);
        CHECK(take(q, 500));           /* allocated here, freed in the module */
        CHECK(dlclose(h) == 0);
    }
    /* Failing dlopen: dlerror allocates its message through us. */
    CHECK(dlopen("/nonexistent/libnothing.so", RTLD_NOW) == NULL);
    CHECK(dlerror() != NULL);
    /* A C++ runtime loaded late: its constructors allocate through the shim. */
    void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
    CHECK(cxx != NULL);
    if (cxx) {
        void *(*op_new)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "_Znwm");
        void (*op_del)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "_ZdlPv");
        CHECK(op_new && op_del);
        void *o = op_new(64);
        memset(o, 0, 64);
        op_del(o);
    }
    return tu_finish("dlopener");
}
