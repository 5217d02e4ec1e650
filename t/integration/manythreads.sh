#!/bin/sh
# manythreads.sh: counts stay exact with 1000 threads alive at once (most
# of them beyond the segment's 128 slots, in counter slots) and with 20000
# created and joined one after another, under every backend, default
# sampling and sample:1; 4095 at once write nothing in the shared overflow
# slot's counters; 4300 at once (beyond the counter slots too) stay exact.
. "$TOP_SRCDIR/t/lib.sh"
distcheck_light   # make check runs it on these sources; distcheck's pass skips it (CI time)

for b in $(backends); do
    for conf in "" sample:1; do
        EXTRA_CONF=$conf
        check shim "$b" timeout 600 "$T/manythreads" 1000 20000
        ok $? "$b ${conf:-default}: 1000 threads at once, 20000 in turn: exact counts"
        EXTRA_CONF=
    done
    # The most the default slots and counter slots hold (the main thread has
    # one): not one call in the shared overflow slot; and beyond them.
    check shim "$b" timeout 600 "$T/manythreads" 4095 0
    ok $? "$b: 4095 threads at once: exact counts, each in counters of its own"
    check shim "$b" timeout 600 "$T/manythreads" 4300 0
    ok $? "$b: 4300 threads at once (204 in the overflow slot): exact counts"
done
done_testing
