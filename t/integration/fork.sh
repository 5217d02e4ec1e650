#!/bin/sh
# fork.sh: fork() while three threads allocate and free; every child
# allocates, starts a thread and exits 0, under each backend; and a fork
# child's peak RSS is its own (forkpeak).
. "$TOP_SRCDIR/t/lib.sh"
distcheck_light   # make check runs it on these sources; distcheck's pass skips it (CI time)

for b in $(backends); do
    check timeout 600 env MALLOCSHIM_CONF="backend:$b" LD_PRELOAD="$SHIM" "$T/forkload" 100
    ok $? "$b: 100 forks under load, no deadlock in the child"
done

# A fork child's peak RSS is its own, and its history does not contradict
# it: forkpeak's parent held 64 MiB more when a pass saw its peak than when
# it forked. One history tier of 1000-sample points (10 s at 10 ms), so the
# point under way at the fork holds the parent's peak whatever the timing.
# Every read is checked (SHIMDUMP_CHECK=1): a point of the child's above
# its peak fails it.
SD="$TOP_BUILDDIR/tools/shimdump"
HIGH=67108864
# jq_ok FILE EXPR: the JSON in FILE makes the Python expression (of d) true
jq_ok() {
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(not eval(sys.argv[2]))' "$1" "$2" 2>/dev/null
}
# poll PID FILE EXPR: a checked read of PID into FILE until EXPR holds (60 s)
poll() {
    _i=0
    while [ $_i -lt 600 ]; do
        SHIMDUMP_CHECK=1 "$SD" --dir="$d/shm" --json "$1" >"$2" 2>"$d/err.last" && jq_ok "$2" "$3" && return 0
        cat "$d/err.last" >>"$d/err"
        _i=$((_i + 1))
        sleep 0.1
    done
    return 1
}
for b in $(backends); do
    d="$TMP/peak-$b"
    mkdir -p "$d/shm"
    MALLOCSHIM_CONF="backend:$b,shm_dir:$d/shm,interval_ms:10,history:1000x8" LD_PRELOAD="$SHIM" \
        "$T/forkpeak" "$d" >"$d/out" 2>>"$d/err" &
    pid=$!
    r=1
    if wait_for "$d/high" && poll $pid "$d/p.json" "(d['peak_rss_bytes'] or 0) >= $HIGH"; then
        touch "$d/drop"
        wait_for "$d/dropped" &&
            poll $pid "$d/q.json" "d['rss_bytes'] + $HIGH // 2 < d['peak_rss_bytes']" &&
            touch "$d/fork" && wait_for "$d/child" &&
            poll "$(cat "$d/child")" "$d/c.json" "(d['peak_rss_ns'] or 0) >= d['started_ns']" &&
            python3 - "$d/q.json" "$d/c.json" $HIGH <<'PY'
import json, sys
p, c = (json.load(open(f)) for f in sys.argv[1:3])
high, st = int(sys.argv[3]), c["started_ns"]
# the child's own peak, below what its parent's was
assert c["peak_rss_ns"] >= st and c["peak_rss_bytes"] + high // 2 < p["peak_rss_bytes"], (c["peak_rss_bytes"], p["peak_rss_bytes"])
# it inherited the parent's higher samples (the situation forced)
assert any(s["t"] < st and s["rss_bytes"] > c["peak_rss_bytes"] for s in c["series"])
# no point of its own holds more than its peak; the child has one
own = [q for t in c["history"] for q in t["points"] if q["t_ns"] >= st]
assert own and all(q["rss_bytes_max"] <= c["peak_rss_bytes"] for q in own), own
PY
        r=$?
    fi
    touch "$d/drop" "$d/fork" "$d/stop"   # whichever it waits for
    wait $pid || r=1
    [ $r -eq 0 ] || diag "$d/err"
    ok $r "$b: a fork child's peak RSS is its own, below its parent's, and its history holds none of its parent's above it"
done
done_testing
