#!/bin/sh
# manythreads.sh: counts stay exact with 1000 threads alive at once (most
# of them beyond the segment's 128 slots) and with 20000 created and joined
# one after another, under every backend, default sampling and sample:1.
. "$TOP_SRCDIR/t/lib.sh"

for b in $(backends); do
    for conf in "" sample:1; do
        EXTRA_CONF=$conf
        check shim "$b" timeout 600 "$T/manythreads" 1000 20000
        ok $? "$b ${conf:-default}: 1000 threads at once, 20000 in turn: exact counts"
        EXTRA_CONF=
    done
done
done_testing
