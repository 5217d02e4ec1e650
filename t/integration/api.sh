#!/bin/sh
# api.sh: every C entry point under each backend, and proof that the
# chosen backend (by its own malloc_stats report) served the allocations.
. "$TOP_SRCDIR/t/lib.sh"

for b in $(backends); do
    check shim "$b" "$T/api" "$b"
    ok $? "$b: malloc family semantics, and $b's own stats saw the blocks"
done

# Another allocator preloaded after the shim (two malloc-lib lines) must not
# take over the glibc backend: gperftools exports its own __libc_malloc.
if [ "$HAVE_TCMALLOC" = yes ]; then
    tc=/usr/lib/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)/libtcmalloc_minimal.so.4
    check env MALLOCSHIM_CONF=backend:glibc LD_PRELOAD="$SHIM $tc" "$T/api" glibc
    ok $? "glibc backend with tcmalloc preloaded too: glibc still serves every block"
    grep -q 'another allocator is loaded in this process (it defines tc_malloc)' "$TMP/err"
    ok $? "and the shim says, in one line, that another allocator is loaded"
fi

# Without the shim the program runs against plain glibc: the same checks
# hold there, so they test the C contract and not the shim's quirks.
check "$T/api" none
ok $? "bare glibc, no shim: the same semantic checks hold"
done_testing
