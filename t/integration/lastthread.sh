#!/bin/sh
# lastthread.sh: the shim's sampler thread never keeps a process alive. A
# program whose main calls pthread_exit ends when its last worker returns,
# exit status 0 as without the shim: a worker that allocates (the shim's
# thread-exit hook ends the sampler first, so exit() runs in the worker, as
# bare), one that never calls the malloc family (the sampler finds itself
# alone and ends the process), and workers that leave a SIGTERM pending
# that no program thread can take.
. "$TOP_SRCDIR/t/lib.sh"

for m in alloc quiet sigterm allocterm; do
    timeout -s KILL 30 "$T/lastthread" $m >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ $rc -eq 0 ] || diag "$TMP/err"
    ok $rc "bare: $m: exits 0"
    grep -qx 'exit by: worker' "$TMP/out"
    ok $? "bare: $m: the worker's return runs exit()"
done
for b in $(backends); do
    for conf in "" sample:1 interval_ms:10; do
        for m in alloc quiet sigterm allocterm; do
            timeout -s KILL 30 env MALLOCSHIM_CONF="backend:$b${conf:+,$conf}" \
                LD_PRELOAD="$SHIM" "$T/lastthread" $m >"$TMP/out" 2>"$TMP/err"
            rc=$?
            [ $rc -eq 0 ] || { echo "# exit status $rc (137: killed after 30 s, it hung)"; diag "$TMP/err"; }
            ok $rc "$b ${conf:-default}: $m: the process ends, exit 0"
            grep -qx 'sampler: yes' "$TMP/out"
            ok $? "$b ${conf:-default}: $m: the sampler was running when main left"
            case $m in
            alloc | allocterm)
                # The thread-exit hook stopped the sampler: exit() ran in the
                # worker, as bare, not in a sampler that found itself alone.
                grep -qx 'exit by: worker' "$TMP/out"
                ok $? "$b ${conf:-default}: $m: the worker's return runs exit(), as bare" ;;
            esac
        done
    done
done
done_testing
