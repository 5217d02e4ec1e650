#!/bin/sh
# dlopen.sh: modules loaded and unloaded after start, blocks crossing the
# boundary, and libstdc++ dlopen'ed into a C program, under each backend.
. "$TOP_SRCDIR/t/lib.sh"

mod="$T/.libs/libmod.so"
for b in $(backends); do
    check shim "$b" "$T/dlopener" "$mod"
    ok $? "$b: 50 dlopen/dlclose rounds, late libstdc++"
done
done_testing
