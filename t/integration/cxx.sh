#!/bin/sh
# cxx.sh: the C++ operator family, bad_alloc, new-handler and an STL
# workload under each backend; output identical to a run without the shim;
# a program's own replacements of operator new and delete.
. "$TOP_SRCDIR/t/lib.sh"

"$T/cxxops" none >"$TMP/bare.out" 2>/dev/null
for b in $(backends); do
    check shim "$b" "$T/cxxops" "$b"
    ok $? "$b: every operator new/delete form, bad_alloc, new-handler"
    cmp -s "$TMP/out" "$TMP/bare.out"
    ok $? "$b: same output as without the shim"
done

# A program that replaces operator new and delete itself: the other forms
# chain to its two, with the shim as without it.
"$T/cxxrepl" >"$TMP/bare.out" 2>&1
ok $? "cxxrepl without the shim: $(cat "$TMP/bare.out")"
for b in $(backends); do
    check shim "$b" "$T/cxxrepl"
    ok $? "$b: a program's own operator new and delete serve every form: $(cat "$TMP/out")"
    cmp -s "$TMP/out" "$TMP/bare.out"
    ok $? "$b: the same calls as without the shim"
done
done_testing
