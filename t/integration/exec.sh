#!/bin/sh
# exec.sh: a process that execs itself keeps its pid; the shim starts again
# in the new image with the same backend (mysqld_safe's `nohup mariadbd`).
. "$TOP_SRCDIR/t/lib.sh"

for b in $(backends); do
    EXTRA_CONF=verbose:1 check shim "$b" "$T/selfexec" 2
    ok $? "$b: three images in one pid run to the end"
    pids=$(awk '{print $2}' "$TMP/out" | sort -u | wc -l)
    images=$(grep -c "backend $b left" "$TMP/out")
    starts=$(grep -c "mallocshim: pid [0-9]*: backend $b " "$TMP/err")
    [ "$pids" -eq 1 ] && [ "$images" -eq 3 ] && [ "$starts" -eq 3 ]
    ok $? "$b: one pid, three images, the shim started in each ($pids/$images/$starts)"
done
done_testing
