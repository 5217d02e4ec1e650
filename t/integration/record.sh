#!/bin/sh
# record.sh: what libmallocshim.so records into its segment, under each
# backend: exact counts, lifetimes and ages with sample:1; lifetimes true to
# the program's own clock; estimates within 4 of their stated standard
# errors with the default sampling (a fixed seed: the same blocks each run);
# 16 threads with cross-thread frees (with and without enough slots); fork
# children and exec'ed images.
. "$TOP_SRCDIR/t/lib.sh"

shm="$TMP/shm"
mkdir -p "$shm"
for b in $(backends); do
    EXTRA_CONF="shm_dir:$shm,sample:1" check shim "$b" "$T/pattern" "$shm"
    ok $? "$b: a known pattern with sample:1: exact counts, live bytes, lifetime buckets, ages"
    EXTRA_CONF="shm_dir:$shm,sample:1,stacks:0" check shim "$b" "$T/trackspill" "$shm"
    ok $? "$b: the tracked table keeps 400 live blocks in its first 160 KiB, and finds all 12,000 of a spill, also in fork children"
    EXTRA_CONF="shm_dir:$shm,sample:2,seed:1,stacks:0" check shim "$b" "$T/trackspill" "$shm"
    ok $? "$b: so it does with sample:2, the fork child's filter rebuilt from the near and the far entries"
    EXTRA_CONF="shm_dir:$shm,sample:1" check shim "$b" "$T/lifeclock" "$shm"
    ok $? "$b: lifetimes agree with the program's own clock: $(cat "$TMP/out")"
    EXTRA_CONF="shm_dir:$shm,sample:1,interval_ms:50" check shim "$b" "$T/lifeclock" "$shm"
    ok $? "$b: so they do with the clock corrected every 50 ms"
    for seed in 1 2; do
        EXTRA_CONF="shm_dir:$shm,seed:$seed" check shim "$b" "$T/estimate" "$shm"
        ok $? "$b: default sampling, seed:$seed: exact totals; requested bytes estimated within 4 stated standard errors ($(cut -d' ' -f9- "$TMP/out"))"
    done
    EXTRA_CONF="shm_dir:$shm" check shim "$b" "$T/sizeddel" "$shm"
    ok $? "$b: C++ sized delete keeps live counts and usable bytes exact"
    EXTRA_CONF="shm_dir:$shm,sample:1" check shim "$b" "$T/sizeddel" "$shm"
    ok $? "$b: so it does with every block tracked"
    EXTRA_CONF="shm_dir:$shm" check shim "$b" "$T/xthreads" "$shm"
    ok $? "$b: 16 threads freeing each other's blocks count exactly"
    EXTRA_CONF="shm_dir:$shm,slots:4,counter_slots:0" check shim "$b" "$T/xthreads" "$shm"
    ok $? "$b: 16 threads with 4 slots and no counter slots (the rest in the overflow slot) count exactly"
    EXTRA_CONF="shm_dir:$shm" check shim "$b" "$T/xthreads" "$shm" cxx
    ok $? "$b: so they do with operator new and sized delete, a thread's first call a sized delete"
    EXTRA_CONF="shm_dir:$shm,slots:4,counter_slots:0" check shim "$b" "$T/xthreads" "$shm" cxx
    ok $? "$b: and with 4 slots and no counter slots (the overflow slot)"
    EXTRA_CONF="shm_dir:$shm,sample:1" check shim "$b" "$T/segfork" "$shm"
    ok $? "$b: a fork child's own segment, the parent's untouched, an exec'ed image's fresh one"
done

# On by default: a config that does not mention it records; record:off
# creates nothing. With a seed, as above: estimate also checks its sampling
# estimate against 4 standard errors, which a clock-seeded run missed once
# (4.97, 2026-12-02).
printf 'shm_dir = %s\nseed = 1\n' "$shm" >"$TMP/plain.conf"
MALLOCSHIM_CONF_FILE="$TMP/plain.conf" check shim glibc "$T/estimate" "$shm"
ok $? "recording is on by default: the segment is there"
printf 'shm_dir = %s\nrecord = off\n' "$shm" >"$TMP/off.conf"
MALLOCSHIM_CONF_FILE="$TMP/off.conf" check shim glibc "$T/estimate" "$shm"
[ $? -ne 0 ] && grep -q "mallocshim.[0-9]*: No such file" "$TMP/err"
ok $? "record:off: no segment"

# Normal exit removes the segment; a killed process leaves it readable.
# (env, not the shim function, so that $! is the pid that sleep execs in;
# env itself runs without the shim, so the one segment under that pid is
# sleep's: with sh -c 'exec sleep', sh's segment could be named first and
# its name go at the exec, between the two checks below)
env MALLOCSHIM_CONF="backend:glibc,record:on,shm_dir:$shm,sample:1" LD_PRELOAD="$SHIM" sleep 30 &
pid=$!
# Named by the sampler's first pass: wait for it (a hang guard of 60 s).
i=0
while [ ! -f "$shm/mallocshim.$pid" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ -f "$shm/mallocshim.$pid" ]
ok $? "a running process's segment is $shm/mallocshim.<pid>"
mode=$(stat -c %a "$shm/mallocshim.$pid")
[ "$mode" = 600 ]
ok $? "it is created mode 0600 (mode ${mode:-unknown})"
kill -9 $pid
wait $pid 2>/dev/null
[ -f "$shm/mallocshim.$pid" ]
ok $? "a killed process's segment stays for post-mortem"
EXTRA_CONF="shm_dir:$shm,sample:1" check shim glibc /bin/ls /
[ -z "$(ls "$shm" | grep -v "mallocshim.$pid\$")" ]
ok $? "processes that exit normally leave nothing behind"
env MALLOCSHIM_CONF="backend:glibc,record:on,shm_dir:$shm,sample:1" LD_PRELOAD="$SHIM" \
    sh -c 'ls "$0" | grep -q "mallocshim.$$" &&
           exec env MALLOCSHIM_CONF="record:on,shm_dir:$0,sample:1000000" /bin/true' "$shm"
[ $? -eq 0 ] && [ -z "$(ls "$shm" | grep -v "mallocshim.$pid\$")" ]
ok $? "an image that named its segment, then exec'ed a short one: the name is gone"
# A root process that becomes another user before its first tracked
# allocation (mariadbd, user=mysql) names its segment at start, while root;
# after exit the segment stays (that user may not remove a root file from a
# sticky directory), and shimdump shows it exited.
if [ "$(id -u)" -eq 0 ]; then
    sd=$(mktemp -d /tmp/mallocshim-drop.XXXXXX)
    chmod 1777 "$sd"
    env MALLOCSHIM_CONF="backend:glibc,shm_dir:$sd" LD_PRELOAD="$SHIM" "$T/dropuid" 2>"$TMP/err" &
    pid=$!
    wait $pid
    rc=$?
    "$TOP_BUILDDIR/tools/shimdump" --dir "$sd" --json "$pid" >"$TMP/out" 2>>"$TMP/err"
    [ $rc -eq 0 ] && [ ! -s "$TMP/err" ] && grep -q '"state": "exited"' "$TMP/out" &&
        grep -q '"uid": 0,' "$TMP/out"
    ok $? "root that becomes uid 65534 before tracking: segment named, readable, exited"
    [ $? -eq 0 ] || diag "$TMP/err"
    rm -rf "$sd"
else
    skip "root that becomes uid 65534 before tracking" "needs root"
fi

EXTRA_CONF="shm_dir:/nonexistent/dir,verbose:1" check shim glibc /bin/echo ok
[ "$(cat "$TMP/out")" = ok ] && grep -q 'cannot create /nonexistent/dir/mallocshim' "$TMP/err"
ok $? "an unusable shm_dir: one line, the program runs without recording"
done_testing
