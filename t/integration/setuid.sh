#!/bin/sh
# setuid.sh: a process that starts as root and switches to another user in
# the same image (as mariadbd does) keeps allocating under each backend.
. "$TOP_SRCDIR/t/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
    skip "switch from root to uid 65534" "needs root"
    done_testing
    exit
fi
for b in $(backends); do
    check shim "$b" "$T/suid"
    ok $? "$b: blocks allocated as root, freed and grown as uid 65534"
done
done_testing
