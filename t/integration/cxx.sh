#!/bin/sh
# cxx.sh: the C++ operator family, bad_alloc, new-handler and an STL
# workload under each backend; output identical to a run without the shim.
. "$TOP_SRCDIR/t/lib.sh"

"$T/cxxops" none >"$TMP/bare.out" 2>/dev/null
for b in $(backends); do
    check shim "$b" "$T/cxxops" "$b"
    ok $? "$b: every operator new/delete form, bad_alloc, new-handler"
    cmp -s "$TMP/out" "$TMP/bare.out"
    ok $? "$b: same output as without the shim"
done
done_testing
