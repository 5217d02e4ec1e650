#!/bin/sh
# threads.sh: cross-thread frees, reallocs on other threads, and threads that
# exit while their blocks live on, under each backend.
. "$TOP_SRCDIR/t/lib.sh"

for b in $(backends); do
    check shim "$b" "$T/threads" 4 40000
    ok $? "$b: 4 producer/consumer pairs, 200 short-lived threads"
done
done_testing
