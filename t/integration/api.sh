#!/bin/sh
# api.sh: every C entry point under each backend, and proof that the
# chosen backend (by its own malloc_stats report) served the allocations.
. "$TOP_SRCDIR/t/lib.sh"

for b in $(backends); do
    check shim "$b" "$T/api" "$b"
    ok $? "$b: malloc family semantics, and $b's own stats saw the blocks"
done

# Without the shim the program runs against plain glibc: the same checks
# hold there, so they test the C contract and not the shim's quirks.
check "$T/api" none
ok $? "bare glibc, no shim: the same semantic checks hold"
done_testing
