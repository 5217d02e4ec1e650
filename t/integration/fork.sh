#!/bin/sh
# fork.sh: fork() while three threads allocate and free; every child
# allocates, starts a thread and exits 0, under each backend.
. "$TOP_SRCDIR/t/lib.sh"
distcheck_light   # make check runs it on these sources; distcheck's pass skips it (CI time)

for b in $(backends); do
    check timeout 600 env MALLOCSHIM_CONF="backend:$b" LD_PRELOAD="$SHIM" "$T/forkload" 100
    ok $? "$b: 100 forks under load, no deadlock in the child"
done
done_testing
