#!/bin/sh
# capture.sh: shimdump --capture on running processes, under each backend.
# t/integration/capprog's window of calls, all known (its own log), must be
# in the trace exactly: every call of every thread in its order, with its
# op, size, alignment, count, old block and block, and nothing else; the
# trace's starting heap holds the blocks made before; its replay finds
# every block it frees (the starting heap's too) and waits for the other
# thread's allocation at each cross-thread free, exactly as often as the
# program did one. Then what a user meets: the file's mode, the summary,
# an existing file never written over, another user refused, a second
# capture refused while one runs, a process without the shim or with
# capture:off, a dead pid, bad arguments; a capture ended by its time, by
# the size limit, by a signal to shimdump, and by the process's exit, each
# leaving a whole trace; C++'s operators by their names; and bcsim's 16
# busy threads, whose trace replays.
# No timing is asserted: waits are polls with hang guards.
. "$TOP_SRCDIR/t/lib.sh"
distcheck_light   # make check runs it on these sources; distcheck's pass skips it (CI time)

if [ "${HAVE_ZSTD:-no}" != yes ]; then
    skip "shimdump --capture" "built without libzstd"
    done_testing
    exit $?
fi

SD="$TOP_BUILDDIR/tools/shimdump"
SR="$TOP_BUILDDIR/tools/shimreplay"
TC="$TOP_BUILDDIR/t/replay/tracecat"
CP="$TOP_BUILDDIR/t/integration/capprog"
export MALLOCSHIM_LIB="$SHIM"

# compare.py TRACECAT LOG: the log's calls are the trace's events, thread by
# thread, in order; nothing else is in the trace.
cat >"$TMP/compare.py" <<'EOF'
import sys
from collections import defaultdict
trace, log = defaultdict(list), defaultdict(list)
last_t = {}
start = 0
for l in open(sys.argv[1]):
    f = l.split()
    if f[0] == "ev":
        tid, op, size, aux, id_, usable, align = int(f[1]), int(f[2]), int(f[3]), f[4], f[5], int(f[6]), int(f[7])
        trace[tid].append((op, size, aux, id_))
        t = int(f[8])
        prev = last_t.get(tid, 0)
        assert t >= prev, ("a thread's times go back", f)
        last_t[tid] = t
        if op in (1, 2, 5) and id_ != "0":
            assert usable >= (size * int(aux, 16) if op == 2 else size), ("usable", f)
        if op == 4:
            assert usable > 0, ("a free's usable size", f)
        if op == 5:
            assert align in (6, 12), ("alignment", f)
        elif op == 3:   # tracecat's "align" of a realloc: the call's length
            assert t - align >= prev, ("a realloc that began before its thread's call before", f)
        elif align:
            assert False, ("an alignment", f)
    elif f[0] == "start":
        start += int(f[2])
    elif f[0] == "trailer":
        assert f[2] == "0", ("dropped", f)
cross = None
for l in open(sys.argv[2]):
    f = l.split()
    if f[0] == "cross":
        cross = int(f[1])
        continue
    log[int(f[0])].append((int(f[1]), int(f[2]), f[3], f[4]))
assert set(trace) == set(log), ("threads", sorted(trace), sorted(log))
for tid in log:
    assert trace[tid] == log[tid], ("thread", tid, len(trace[tid]), len(log[tid]),
        next((i, a, b) for i, (a, b) in enumerate(zip(trace[tid], log[tid])) if a != b) if any(a != b for a, b in zip(trace[tid], log[tid])) else "lengths")
assert start >= 400, ("starting heap", start)
print(sum(len(v) for v in log.values()), cross)
EOF

for b in $(backends); do
    d="$TMP/$b"
    mkdir -p "$d"
    MALLOCSHIM_CONF="backend:$b,sample:1" LD_PRELOAD="$SHIM" "$CP" "$d" 4 2000 >"$d/prog.out" 2>&1 &
    pid=$!
    wait_for "$d/ready" && listening $pid
    ok $? "$b: capprog is ready, and listens for a capture" || diag "$d/prog.out"

    if [ $b = glibc ]; then
        # Before any capture: what is refused, and leaves nothing.
        echo keep >"$d/exists.trace"
        "$SD" --capture=5 -o "$d/exists.trace" $pid >"$TMP/out" 2>"$TMP/err"
        rc=$?
        [ $rc -eq 2 ] && [ "$(cat "$d/exists.trace")" = keep ] && grep -q "never written over" "$TMP/err"
        ok $? "an existing file: exit 2, one line, the file untouched (rc $rc)" || diag "$TMP/err"
        if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
            pub=$(mktemp -d /tmp/mallocshim-pub.XXXXXX)
            chmod 1777 "$pub"
            setpriv --reuid=65534 --regid=65534 --clear-groups "$SD" --capture=5 -o "$pub/n.trace" $pid \
                >"$TMP/out" 2>"$TMP/err"
            rc=$?
            [ $rc -eq 3 ] && [ ! -e "$pub/n.trace" ] && grep -q "only pid $pid's owner (uid 0) or root" "$TMP/err"
            ok $? "another user: shimdump says who may, exit 3, no file left (rc $rc)" || diag "$TMP/err"
            # The process's own check, without shimdump's: a request with a
            # file attached, from another user, gets no answer and no capture.
            cat >"$pub/raw.py" <<'EOF'
import array, os, socket, struct, sys
pid, path = int(sys.argv[1]), sys.argv[2]
fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(b"\0mallocshim.capture.%d" % pid)
msg = struct.pack("<IIIIiIQQQQQQQII160s", 0x4c54434d, 1, 1, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, b"")
s.sendmsg([msg], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
try:
    got = s.recv(4096)
except ConnectionResetError:
    got = b""
print("answer", len(got), "size", os.fstat(fd).st_size)
EOF
            setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 "$pub/raw.py" $pid "$pub/raw.trace" \
                >"$TMP/out" 2>"$TMP/err"
            grep -qx "answer 0 size 0" "$TMP/out"
            ok $? "another user's own request: closed without an answer, nothing written" ||
                { diag "$TMP/out"; diag "$TMP/err"; }
            rm -rf "$pub"
        else
            skip "another user: refused" "needs root and setpriv"
            skip "another user's own request: refused" "needs root and setpriv"
        fi
    fi

    "$SD" --capture=600 -o "$d/t.trace" $pid >"$d/cap.out" 2>"$d/cap.err" &
    cpid=$!
    wait_line "$d/cap.err" "capturing pid $pid"
    ok $? "$b: the capture starts" || diag "$d/cap.err"

    if [ $b = glibc ]; then
        "$SD" --capture=5 -o "$d/second.trace" $pid >"$TMP/out" 2>"$TMP/err"
        rc=$?
        [ $rc -eq 6 ] && [ ! -e "$d/second.trace" ] && grep -q "capture is under way" "$TMP/err"
        ok $? "a second capture while one runs: refused, exit 6, no file left (rc $rc)" || diag "$TMP/err"
    fi

    touch "$d/go"
    wait_for "$d/done"
    ok $? "$b: the threads' calls are done" || diag "$d/prog.out"
    kill -TERM $cpid
    wait $cpid
    rc=$?
    grep -q "^$d/t.trace: [0-9]* events of [0-9]* threads in .* s (stopped early, as asked); " "$d/cap.out" &&
        grep -q "^replay it under every allocator: shimreplay --all $d/t.trace (3 replays of up to 6 configs, each as long as the capture: about [1-9][0-9]* min; add --repeat=1 --no-pace for a quick, rougher look)$" "$d/cap.out"
    ok $((rc + $?)) "$b: SIGTERM to shimdump ends the capture whole, and it says so, with how long --all's replays take (rc $rc)" ||
        { diag "$d/cap.out"; diag "$d/cap.err"; }
    touch "$d/quit"
    wait $pid
    ok $? "$b: capprog exits 0, its log written" || diag "$d/prog.out"

    [ "$(stat -c %a "$d/t.trace")" = 600 ]
    ok $? "$b: the trace is mode 0600"
    check "$TC" "$d/t.trace" && cp "$TMP/out" "$d/cat"
    python3 "$TMP/compare.py" "$d/cat" "$d/log" >"$d/py" 2>&1
    ok $? "$b: every call of the window is in the trace as made, thread by thread, and nothing else" ||
        diag "$d/py"
    read -r ncalls ncross <"$d/py" || true

    check "$SR" --info --json "$d/t.trace"
    python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["trace"]
assert t["events"] == int(sys.argv[2]) and t["dropped"] == 0 and t["threads"] == 4, t
assert t["start_freed"] == 200 and t["orphans"] == 0 and t["failed"] == 0, t
assert t["cross_thread"] == int(sys.argv[3]), (t["cross_thread"], sys.argv[3])
' "$TMP/out" "${ncalls:-0}" "${ncross:-0}" >"$d/py" 2>&1
    ok $? "$b: shimreplay --info: the events, no drop, 200 starting-heap blocks freed, no orphan, the program's $ncross cross-thread frees" ||
        { diag "$d/py"; diag "$TMP/out"; }
    check "$SR" --backend=$b --json "$d/t.trace"
    python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
assert r["exit"] == 0 and r["ops"] == int(sys.argv[2]), r
assert r["failed"] == 0 and r["lost"] == 0 and r["clobbered"] == 0, r
' "$TMP/out" "${ncalls:-0}" >"$d/py" 2>&1
    ok $? "$b: the trace replays under $b, every op done" || { diag "$d/py"; diag "$TMP/err"; }
done

# C++'s operators, recorded by their names: t/integration/capcxx's window
# of 100 x new/delete (sized, as g++ makes it), new[]/delete[], an aligned
# type's new/delete (64) and operator new/sized delete.
for b in $(backends); do
    d="$TMP/cxx-$b"
    mkdir -p "$d"
    MALLOCSHIM_CONF="backend:$b,sample:1" LD_PRELOAD="$SHIM" "$TOP_BUILDDIR/t/integration/capcxx" "$d" \
        >"$d/prog.out" 2>&1 &
    pid=$!
    wait_for "$d/ready" && listening $pid
    "$SD" --capture=600 -o "$d/t.trace" $pid >"$d/cap.out" 2>"$d/cap.err" &
    cpid=$!
    wait_line "$d/cap.err" "capturing pid $pid" && touch "$d/go" && wait_for "$d/done"
    kill -TERM $cpid
    wait $cpid
    rc=$?
    touch "$d/quit"
    wait $pid
    "$TC" "$d/t.trace" 2>&1 | awk '$1 == "ev" { n[$3 " " $8]++ } END { for (k in n) print k, n[k] }' |
        sort >"$d/ops"
    printf '10 0 300\n12 6 100\n14 0 200\n16 0 200\n' | diff - "$d/ops" >"$d/diff"
    ok $((rc + $?)) "$b: C++'s operators by name: 300 new, 100 aligned new (64), 200 delete, 200 sized delete" ||
        { diag "$d/diff"; diag "$d/cap.err"; }
done

# A capture that ends by its time, of a process that calls nothing meanwhile.
d="$TMP/time"
mkdir -p "$d"
MALLOCSHIM_CONF="backend:glibc,sample:1" LD_PRELOAD="$SHIM" "$CP" "$d" 1 10 >"$d/prog.out" 2>&1 &
pid=$!
wait_for "$d/ready" && listening $pid
check "$SD" --capture=1 -o "$d/t.trace" $pid
rc=$?
grep -q "^$d/t.trace: 0 events of 0 threads in [0-9.]* s; " "$TMP/out"
ok $((rc + $?)) "a capture ends by its time (1 s, no call meanwhile: 0 events)" || diag "$TMP/out"
check "$SR" --info "$d/t.trace"
ok $? "a trace of no events reads"
touch "$d/go" "$d/quit"
wait $pid

# The process exits during the capture: the trace still ends whole, with
# every call.
d="$TMP/exit"
mkdir -p "$d"
MALLOCSHIM_CONF="backend:glibc,sample:1" LD_PRELOAD="$SHIM" "$CP" "$d" 2 1000 exit >"$d/prog.out" 2>&1 &
pid=$!
wait_for "$d/ready" && listening $pid
"$SD" --capture=600 -o "$d/t.trace" $pid >"$d/cap.out" 2>"$d/cap.err" &
cpid=$!
wait_line "$d/cap.err" "capturing pid $pid"
touch "$d/go"
wait $pid
wait $cpid
rc=$?
grep -q "(the process was exiting)" "$d/cap.out" && "$TC" "$d/t.trace" >"$d/cat" 2>&1 &&
    python3 "$TMP/compare.py" "$d/cat" "$d/log" >"$d/py" 2>&1
ok $((rc + $?)) "the process exits during the capture: exit 0, said, the trace whole with every call (rc $rc)" ||
    { diag "$d/cap.out"; diag "$d/cap.err"; diag "$d/py"; }

# The size limit, on a busy process.
d="$TMP/size"
mkdir -p "$d"
MALLOCSHIM_CONF="backend:glibc,capture_max:1m" LD_PRELOAD="$SHIM" "$TOP_BUILDDIR/tools/bcsim" --threads=4 --cache=16M --duration=600 \
    >"$d/prog.out" 2>&1 &
pid=$!
n=0
until "$SD" --capture=60 -o "$d/t.trace" $pid >"$d/cap.out" 2>"$d/cap.err" || [ $n -ge 600 ]; do
    rm -f "$d/t.trace"   # the sampler may not have started yet
    sleep 0.1
    n=$((n + 1))
done
size=$(stat -c %s "$d/t.trace" 2>/dev/null || echo 0)
grep -q "(stopped at the size limit, the config key capture_max)" "$d/cap.out" &&
    [ "$size" -ge 1048576 ] && [ "$size" -lt $((1048576 + 65536)) ] && "$SR" --info --json "$d/t.trace" >"$d/info" 2>&1 &&
    grep -q '"complete": true' "$d/info"
ok $? "capture_max:1m stops the capture at 1 MiB and one chunk ($size bytes), the trace whole" ||
    { diag "$d/cap.out"; diag "$d/cap.err"; diag "$d/info"; }

kill $pid
wait $pid 2>/dev/null
for b in $(backends); do
    d="$TMP/bc-$b"
    mkdir -p "$d"
    MALLOCSHIM_CONF="backend:$b" LD_PRELOAD="$SHIM" "$TOP_BUILDDIR/tools/bcsim" --threads=16 --cache=32M --duration=600 >"$d/prog.out" 2>&1 &
    pid=$!
    n=0
    until "$SD" --capture=2 -o "$d/t.trace" $pid >"$d/cap.out" 2>"$d/cap.err" || [ $n -ge 600 ]; do
        rm -f "$d/t.trace"
        sleep 0.1
        n=$((n + 1))
    done
    kill $pid
    wait $pid 2>/dev/null
    check "$SR" --backend=$b --json "$d/t.trace"
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
t, r = d["trace"], d["runs"][0]
assert t["threads"] >= 16 and t["events"] > 1000, t
assert r["exit"] == 0 and r["ops"] == t["ops"] and r["failed"] == 0 and r["lost"] == 0, r
# glibc says what it holds free (its top chunks at least), and the replay
# under the same config starts with it, each thread short of its share by
# less than one block (below 128 KiB), or over by under a chunk header
# and rounding (32 bytes); the others do not say
if sys.argv[2] == "glibc":
    f, n = t["start_free_bytes"], t["threads"]
    lo = f - n * 131072 if f > n * 131072 else 0
    assert 0 < f < 1 << 30 and lo < r["start_free_bytes"] < f + n * 32, (t, r)
else:
    assert t["start_free_bytes"] is None and r["start_free_bytes"] == 0, (t, r)
' "$TMP/out" $b >"$d/py" 2>&1
    ok $? "$b: bcsim's 16 threads captured for 2 s, and replayed under $b$([ $b = glibc ] && echo ", from the free space glibc held")" ||
        { diag "$d/cap.out"; diag "$d/cap.err"; diag "$d/py"; }
done

# What cannot be captured, and bad arguments.
sleep 60 &
spid=$!
"$SD" --capture=1 -o "$TMP/s.trace" $spid >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 1 ] && [ ! -e "$TMP/s.trace" ] && grep -q "takes no capture" "$TMP/err"
ok $? "a process without the shim: exit 1, one line, no file (rc $rc)" || diag "$TMP/err"
kill $spid
d="$TMP/off"
mkdir -p "$d"
MALLOCSHIM_CONF="backend:glibc,sample:1,capture:off" LD_PRELOAD="$SHIM" "$CP" "$d" 1 10 >"$d/prog.out" 2>&1 &
pid=$!
wait_for "$d/ready"
# its sampler runs (the thread is named), and no socket is there
n=0
until grep -qx mallocshim /proc/$pid/task/*/comm 2>/dev/null || [ $n -ge 600 ]; do sleep 0.1; n=$((n + 1)); done
"$SD" --capture=1 -o "$TMP/o.trace" $pid >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 1 ] && [ ! -e "$TMP/o.trace" ] && grep -q "takes no capture" "$TMP/err" &&
    grep -qx mallocshim /proc/$pid/task/*/comm
ok $? "capture:off: the sampler runs, the process takes no capture, exit 1 (rc $rc)" || diag "$TMP/err"
touch "$d/go" "$d/quit"
wait $pid
"$SD" --capture=1 $pid >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 1 ] && grep -q "no process $pid" "$TMP/err"
ok $? "a dead pid: exit 1, one line (rc $rc)" || diag "$TMP/err"
for bad in "--capture=0 1" "--capture=86401 1" "--capture=x 1" "--capture=1" "--capture=1 1 2" \
           "--capture=1 file" "-o x 1" "--capture=1 --json 1"; do
    # shellcheck disable=SC2086
    "$SD" $bad >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ $rc -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ]
    ok $? "shimdump $bad: exit 2, one line (rc $rc)" || diag "$TMP/err"
done

done_testing
