#!/bin/sh
# dlopen.sh: modules loaded and unloaded after start, blocks crossing the
# boundary, and libstdc++ dlopen'ed into a C program, under each backend.
. "$TOP_SRCDIR/t/lib.sh"

mod="$T/.libs/libmod.so"
plug="$T/.libs/libcxxplug.so"
check "$T/dlopener" "$mod" "$plug"
ok $? "bare: the same checks pass without the shim"
for b in $(backends); do
    check shim "$b" "$T/dlopener" "$mod" "$plug"
    ok $? "$b: 50 dlopen/dlclose rounds, a C++ plugin loaded RTLD_LOCAL gets bad_alloc and its new-handler, late libstdc++"
done
done_testing
