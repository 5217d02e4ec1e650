#!/bin/sh
# ownallocs.sh: the program's figures hold only the program's allocations:
# none that the shim makes or causes (the sampler thread's start, its own
# work), across the sampler's start, under every backend; default sampling
# and 1 in 4096 (the sampler then starts later, amid the program's blocks);
# and mallocs that fail (an address-space limit) are not counted.
. "$TOP_SRCDIR/t/lib.sh"

for b in $(backends); do
    for s in 256 4096; do
        # 77: a block tracked before main started the sampler already (about
        # 1 run in 100 at 256): nothing to see, so run again.
        for try in 1 2 3; do
            EXTRA_CONF=sample:$s
            check shim "$b" "$T/ownallocs"
            rc=$?
            EXTRA_CONF=
            [ $rc -eq 77 ] || break
        done
        if [ $rc -eq 77 ]; then
            skip "$b sample:$s: exact totals across the sampler's start" "it started before main 3 times"
            continue
        fi
        ok $rc "$b sample:$s: totals exact across the sampler's start: $(cat "$TMP/out")"
    done
    check shim "$b" "$T/oomcount"
    ok $? "$b: mallocs that fail are not counted: $(cat "$TMP/out")"
    check shim "$b" "$T/oomcount" 10000
    ok $? "$b: nor are those over 4 KiB: $(cat "$TMP/out")"
done
done_testing
