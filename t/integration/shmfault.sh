#!/bin/sh
# shmfault.sh: nothing done to the segment's files reaches the program. The
# copy in shm_dir truncated while 8 threads allocate, or its file system
# full (a 1 MiB tmpfs, as root): the program runs on and exits 0, its own
# SIGBUS and SIGSEGV handlers see its own faults before and after, and the
# shim says one line. The live segment cannot be truncated at all, and
# shimdump reads a dead process's stale copy saying that it is stale.
. "$TOP_SRCDIR/t/lib.sh"

# start DIR SHMDIR BACKEND CONF: runs shmfault in the background ($pid) and
# waits for it to be ready; returns 1 if it died first.
start() {
    mkdir -p "$1"
    MALLOCSHIM_CONF="backend:$3,shm_dir:$2,interval_ms:100${4:+,$4}" LD_PRELOAD="$SHIM" \
        "$T/shmfault" "$1" 8 >"$1/out" 2>"$1/err" &
    pid=$!
    w=0
    while [ ! -e "$1/ready" ] && kill -0 $pid 2>/dev/null && [ $w -lt 6000 ]; do
        sleep 0.02
        w=$((w + 1))
    done
    [ -e "$1/ready" ]
}

# finish DIR: lets it end, waits; returns its exit status.
finish() {
    touch "$1/go" "$1/stop"
    wait $pid
}

small=""
if [ "$(id -u)" -eq 0 ] && mkdir -p "$TMP/small" &&
    mount -t tmpfs -o size=1m tmpfs "$TMP/small" 2>/dev/null; then
    small="$TMP/small"
    trap 'umount "$TMP/small" 2>/dev/null; [ -n "${KEEPTMP:-}" ] || rm -rf "$TMP"' EXIT
fi

n=0
for b in $(backends); do
    for conf in "" sample:1; do
        what="$b ${conf:-default}"
        n=$((n + 1))
        d="$TMP/cut.$n"
        start "$d" "$TMP/shm" "$b" "$conf"
        ok $? "$what: the program started"
        copy="$TMP/shm/mallocshim.$pid"
        w=0   # named at the first tracked allocation
        while [ ! -e "$copy" ] && [ $w -lt 6000 ]; do sleep 0.02; w=$((w + 1)); done
        size=$(stat -c %s "$copy" 2>/dev/null)
        truncate -s 4096 "$copy"
        live=$(ls -l "/proc/$pid/fd" 2>/dev/null | sed -n 's|.* \([0-9]*\) -> /memfd:mallocshim.*|\1|p')
        [ -n "$live" ] && ! truncate -s 4096 "/proc/$pid/fd/$live" 2>/dev/null
        ok $? "$what: the live segment (fd ${live:-none}) cannot be truncated"
        touch "$d/go"
        w=0
        while [ "$(stat -c %s "$copy" 2>/dev/null)" != "$size" ] && [ $w -lt 6000 ]; do
            sleep 0.02
            w=$((w + 1))
        done
        [ "$(stat -c %s "$copy" 2>/dev/null)" = "$size" ]
        ok $? "$what: the copy is whole again ($size bytes) while the program runs"
        "$TOP_BUILDDIR/tools/shimdump" --dir "$TMP/shm" --json "$pid" >"$d/json" 2>"$d/dumperr"
        ok $? "$what: shimdump reads the process after the truncation" || diag "$d/dumperr"
        finish "$d"
        rc=$?
        [ $rc -eq 0 ] || { echo "# exit status $rc (135: SIGBUS)"; diag "$d/err"; }
        ok $rc "$what: truncated copy: the program exits 0, its faults reached its handlers"
        # One line, "cut to 4096 bytes"; or none, when the truncation came
        # while the copy was being written, whose next pwrites made it whole.
        n_lines=$(grep -c '^mallocshim: ' "$d/err")
        [ "$n_lines" -eq 0 ] || { [ "$n_lines" -eq 1 ] &&
            grep -q "mallocshim: $copy was cut to [0-9]* bytes while the process ran" "$d/err"; }
        ok $? "$what: truncated copy: the shim says so in one line, or made it whole unasked"
        [ $? -eq 0 ] || diag "$d/err"

        if [ -z "$small" ]; then
            skip "$what: full tmpfs" "needs root to mount a 1 MiB tmpfs"
            skip "$what: full tmpfs: one line" "needs root"
            skip "$what: full tmpfs: the dead process's copy says it is stale" "needs root"
            continue
        fi
        d="$TMP/full.$n"
        start "$d" "$small" "$b" "$conf"
        ok $? "$what: full tmpfs: the program started"
        touch "$d/go"
        w=0   # until a write of the copy has failed (the sampler's first pass)
        while ! grep -q 'cannot write' "$d/err" && [ $w -lt 6000 ]; do sleep 0.02; w=$((w + 1)); done
        finish "$d"
        rc=$?
        [ $rc -eq 0 ] || { echo "# exit status $rc (135: SIGBUS)"; diag "$d/err"; }
        ok $rc "$what: full tmpfs: the program exits 0, its faults reached its handlers"
        [ "$(grep -c '^mallocshim: ' "$d/err")" -eq 1 ] &&
            grep -q "mallocshim: cannot write $small/mallocshim.$pid: No space left on device" "$d/err"
        ok $? "$what: full tmpfs: the shim says so in one line"
        [ $? -eq 0 ] || diag "$d/err"
        # A process that dies leaves its copy, as of the last write that fit.
        d="$TMP/dead.$n"
        start "$d" "$small" "$b" "$conf"
        touch "$d/go"
        w=0   # until a write of the copy has failed
        while ! grep -q 'cannot write' "$d/err" && [ $w -lt 6000 ]; do sleep 0.02; w=$((w + 1)); done
        kill -KILL $pid
        wait $pid 2>/dev/null
        "$TOP_BUILDDIR/tools/shimdump" --dir "$small" --json "$pid" >"$d/json" 2>"$d/dumperr" &&
            grep -q '"copy_stale": true' "$d/json" &&
            "$TOP_BUILDDIR/tools/shimdump" --dir "$small" "$pid" >"$d/view" 2>&1 &&
            grep -q 'the figures are stale' "$d/view"
        ok $? "$what: full tmpfs: shimdump shows the dead process's copy, saying it is stale"
        [ $? -eq 0 ] || diag "$d/dumperr" "$d/view"
        rm -f "$small/mallocshim.$pid"
    done
done
done_testing
