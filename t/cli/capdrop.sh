#!/bin/sh
# capdrop.sh: a capture whose writer cannot keep up drops calls, counts
# every one, and still ends whole. libwritehook holds the writer's chunk
# writes (as slow storage would) while t/integration/capprog's 4 threads
# make their 6000-op windows, all known (its own log); each thread's four
# buffers (4 x 1024 events) fill, and every later call is dropped. So,
# exactly: the trace holds each thread's first 4096 calls, in order, and
# nothing else; the dropped count, in shimdump's summary, in the trailer
# and in shimreplay --info, is every other call of the window; shimdump
# says so in its summary; and the trace replays (the blocks whose
# allocation was dropped made as orphans). Under each backend.
# No timing is asserted: waits are polls with hang guards.
. "$TOP_SRCDIR/t/lib.sh"
distcheck_light   # make check runs it on these sources; distcheck's pass skips it (CI time)

if [ "${HAVE_ZSTD:-no}" != yes ]; then
    skip "shimdump --capture" "built without libzstd"
    done_testing
    exit $?
fi
hook="$TOP_BUILDDIR/t/integration/.libs/libwritehook.so"
[ -e "$hook" ] || { echo "1..0 # SKIP libwritehook.so is not built"; exit 0; }

SD="$TOP_BUILDDIR/tools/shimdump"
SR="$TOP_BUILDDIR/tools/shimreplay"
TC="$TOP_BUILDDIR/t/replay/tracecat"
CP="$TOP_BUILDDIR/t/integration/capprog"
export MALLOCSHIM_LIB="$SHIM"
BUF=4096   # events a thread's buffers hold (capture.c: CAP_NBUF x CAP_CHUNK)

# prefix.py TRACECAT LOG BUF: each thread's events are the first BUF calls
# of its log, in order; prints the log's calls and the trailer's dropped.
cat >"$TMP/prefix.py" <<'PY'
import sys
from collections import defaultdict
trace, log = defaultdict(list), defaultdict(list)
dropped = None
buf = int(sys.argv[3])
for l in open(sys.argv[1]):
    f = l.split()
    if f[0] == "ev":
        trace[int(f[1])].append((int(f[2]), int(f[3]), f[4], f[5]))
    elif f[0] == "trailer":
        dropped = int(f[2])
for l in open(sys.argv[2]):
    f = l.split()
    if f[0] != "cross":
        log[int(f[0])].append((int(f[1]), int(f[2]), f[3], f[4]))
assert set(trace) == set(log), ("threads", sorted(trace), sorted(log))
for tid in log:
    assert len(log[tid]) > buf, ("a thread made too few calls to outrun its buffers", tid, len(log[tid]))
    assert trace[tid] == log[tid][:buf], ("thread", tid, len(trace[tid]),
        next((i, a, b) for i, (a, b) in enumerate(zip(trace[tid], log[tid])) if a != b)
        if any(a != b for a, b in zip(trace[tid], log[tid])) else "lengths")
calls = sum(len(v) for v in log.values())
assert dropped == calls - buf * len(log), ("dropped", dropped, calls, buf * len(log))
print(calls, dropped)
PY

for b in $(backends); do
    d="$TMP/$b"
    mkdir -p "$d"
    touch "$d/hold"
    WRITEHOLD="$d/hold" WRITEHOLD_TRACE="$d/t.trace" MALLOCSHIM_CONF="backend:$b,sample:1" \
        LD_PRELOAD="$hook $SHIM" "$CP" "$d" 4 6000 >"$d/prog.out" 2>&1 &
    pid=$!
    wait_for "$d/ready"
    ok $? "$b: capprog is ready" || diag "$d/prog.out"
    "$SD" --capture=600 -o "$d/t.trace" $pid >"$d/cap.out" 2>"$d/cap.err" &
    cpid=$!
    wait_line "$d/cap.err" "capturing pid $pid"
    ok $? "$b: the capture starts" || diag "$d/cap.err"
    touch "$d/go"
    wait_for "$d/done"
    ok $? "$b: the threads' calls are done while the writer is held" || diag "$d/prog.out"
    grep -q "^writehook: holding a write of $d/t.trace" "$d/prog.out"
    ok $? "$b: the writer was held" || diag "$d/prog.out"
    rm -f "$d/hold"
    kill -TERM $cpid
    wait $cpid
    rc=$?
    touch "$d/quit"
    wait $pid
    ok $? "$b: capprog exits 0" || diag "$d/prog.out"
    grep -q "^$d/t.trace: [0-9]* events of 4 threads in .* s (stopped early, as asked); " "$d/cap.out"
    ok $((rc + $?)) "$b: the capture ends whole (rc $rc)" || { diag "$d/cap.out"; diag "$d/cap.err"; }

    check "$TC" "$d/t.trace" && cp "$TMP/out" "$d/cat"
    ncalls=unknown ndropped=unknown
    /usr/bin/python3 "$TMP/prefix.py" "$d/cat" "$d/log" $BUF >"$d/py" 2>&1 &&
        read -r ncalls ndropped <"$d/py"
    ok $? "$b: the trace holds each thread's first $BUF calls, in order, and the trailer counts every other call as dropped" ||
        diag "$d/py"
    grep -q "^$d/t.trace: $ndropped events dropped ([0-9.]*%): threads filled their buffers faster than" "$d/cap.out"
    ok $? "$b: shimdump's summary says $ndropped events dropped" || diag "$d/cap.out"

    check "$SR" --info --json "$d/t.trace"
    /usr/bin/python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["trace"]
assert t["events"] + t["dropped"] == int(sys.argv[2]) and t["dropped"] == int(sys.argv[3]), t
assert t["complete"] is True and t["threads"] == 4, t
' "$TMP/out" "$ncalls" "$ndropped" >"$d/py" 2>&1
    ok $? "$b: shimreplay --info: events + dropped = the $ncalls calls of the window" ||
        { diag "$d/py"; diag "$TMP/out"; }
    check "$SR" --backend=$b --json "$d/t.trace"
    /usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
assert r["exit"] == 0 and r["ops"] == 4 * int(sys.argv[2]), r
assert r["failed"] == 0 and r["lost"] == 0 and r["clobbered"] == 0, r
' "$TMP/out" $BUF >"$d/py" 2>&1
    ok $? "$b: the trace with its drops replays under $b, every op done" || { diag "$d/py"; diag "$TMP/err"; }
done
done_testing
