#!/bin/sh
# set.sh: shimdump --set changes how a running process samples (issue 33 §2).
# bigsmall holds half its blocks, the test changes the sampling, then it holds
# the other half: under each backend and several seeds, the call sites'
# estimates hold their stated errors across the change (each block keeps the
# weight it was taken with); track:off tracks nothing more but the block whose
# draw was under way; stacks:off leaves the blocks tracked after it without a
# stack. Then what a user meets on a busy bcsim: the answer, the settings in
# the JSON and the view's notes, the page's marks, a change that changes
# nothing, keys that only the config sets, bad values, a process without the
# shim, and another user refused. Seeded: the same blocks are tracked on any
# machine; no timing is asserted.
. "$TOP_SRCDIR/t/lib.sh"
distcheck_light

SD="$TOP_BUILDDIR/tools/shimdump"
BS="$TOP_BUILDDIR/t/integration/bigsmall"

cat >"$TMP/sites.py" <<'PY'
# sites.py JSON: "BIG_EST BIG_ERR SMALL_EST SMALL_ERR NOSTACK_BYTES TRACKED"
# from shimdump --stacks --json (0 0 for a site not shown) and --json
import json, sys
d = json.load(open(sys.argv[1]))
full = json.load(open(sys.argv[2]))
# each half is called from its own line of main: two stacks a site, whose
# estimates add up (their blocks are tracked independently: so do variances)
got = {"big_holder": [0, 0], "small_holder": [0, 0]}
for s in d["by_live_bytes"]:
    fns = [f.get("function") or "" for f in s["stack"]["frames"]]
    for k in got:
        if any(fn.startswith(k) for fn in fns):
            got[k][0] += s["est_live_bytes"]
            got[k][1] += s["est_live_bytes_stderr"] ** 2
cs = full["call_stacks"]
tracked = sum(s.get("tracked_allocs", 0) for s in cs["stacks"])
print(*["%.0f %.0f" % (v[0], v[1] ** 0.5) for v in got.values()], cs["no_stack_live_bytes"], tracked)
PY

# half CONF SETTINGS: bigsmall under the shim with CONF holds half, is
# changed to SETTINGS, holds the rest; its sites and figures into $TMP/got
half() {
    rm -rf "$TMP/d"
    mkdir -p "$TMP/d"
    MALLOCSHIM_CONF="$1,shm_dir:$TMP/d" LD_PRELOAD="$SHIM" "$BS" "$TMP/d" half >"$TMP/out" 2>"$TMP/err" &
    bpid=$!
    wait_for "$TMP/d/half" 1200 || { kill "$bpid"; return 1; }
    "$SD" --set "$2" "$bpid" >"$TMP/set.out" 2>>"$TMP/err"
    rc=$?
    touch "$TMP/d/go"
    wait_for "$TMP/d/ready" 1200
    "$SD" --dir="$TMP/d" --stacks --json --top=20 "$bpid" >"$TMP/s.json" 2>>"$TMP/err" &&
        "$SD" --dir="$TMP/d" --json "$bpid" >"$TMP/f.json" 2>>"$TMP/err" || rc=1
    touch "$TMP/d/stop"
    wait "$bpid"
    [ $rc -eq 0 ] && python3 "$TMP/sites.py" "$TMP/s.json" "$TMP/f.json" >"$TMP/got"
}

BIG=$((10 * 8 * 1048576))
SMALL=$((100000 * 1000))
# held EST ERR TRUE: |EST - TRUE| <= 4 ERR (an error of 0: exactly)
held() { awk -v e="$1" -v s="$2" -v t="$3" 'BEGIN { d = e - t; if (d < 0) d = -d; exit !(d <= 4 * s + 0.5) }'; }
mib() { awk -v a="$1" 'BEGIN { printf "%.1f", a / 1048576 }'; }

for b in $(backends); do
    heldok=0 runs=0 line=""
    for seed in 1 2 3 4; do
        # two seeds to more tracking, two to less
        if [ $seed -le 2 ]; then to="sample:64,sample_bytes:64k"; else to="sample_bytes:4m"; fi
        half "backend:$b,seed:$seed" "$to" || { diag "$TMP/err"; continue; }
        runs=$((runs + 1))
        set -- $(cat "$TMP/got")
        held "$1" "$2" $BIG && held "$3" "$4" $SMALL && heldok=$((heldok + 1))
        line="$line $(mib "$1")+/-$(mib "$2")/$(mib "$3")+/-$(mib "$4")"
    done
    [ $heldok -eq 4 ] && [ $runs -eq 4 ]
    ok $? "$b: across a change of sampling, every estimate within 4 of its standard errors ($heldok of $runs; big/small MiB:$line)"

    # sample:2 by counts alone tracks half the blocks, sample:4 a quarter
    half "backend:$b,seed:9,sample:2,sample_bytes:0" "sample:4" || diag "$TMP/err"
    set -- $(cat "$TMP/got")
    [ "$6" -gt 35000 ] && [ "$6" -lt 40000 ] && held "$1" "$2" $BIG && held "$3" "$4" $SMALL
    ok $? "$b: sample:2 then sample:4, by counts: $6 of 100,010 blocks tracked (37,500 expected), estimates held"

    half "backend:$b,seed:7" "track:off" || diag "$TMP/err"
    grep -q "now sample:256,sample_bytes:524288,track:off" "$TMP/set.out" 2>/dev/null &&
        python3 - "$TMP/f.json" "$TMP/got" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
tracked = int(open(sys.argv[2]).read().split()[5])
s = d["sampling"]
assert s["track"] is False and s["settings_changes"] == 1, s
assert s["changes"][0]["track"] is False, s
# the first half tracked about 390 small blocks and every big one; the
# second half at most the block whose draw was under way
print("# tracked", tracked, file=sys.stderr)
assert 150 < tracked < 400, tracked
PY
    ok $? "$b: track:off: the second half is counted but not tracked ($(cut -d' ' -f6 "$TMP/got" 2>/dev/null) blocks tracked of the first)"

    half "backend:$b,seed:8" "stacks:off" || diag "$TMP/err"
    set -- $(cat "$TMP/got")
    # the small site keeps its first half only; the rest has no stack
    held "$3" "$4" $((SMALL / 2)) && [ "$5" -gt $((SMALL / 4)) ]
    ok $? "$b: stacks:off: the small site holds its first half ($(mib "$3") MiB), blocks without a stack $(mib "$5") MiB"
done

# A busy bcsim, as a user meets it.
BC="$TOP_BUILDDIR/tools/bcsim"
MALLOCSHIM_CONF="interval_ms:100,shm_dir:$TMP/shm" LD_PRELOAD="$SHIM" "$BC" -t 2 -c 16M -d 600 >"$TMP/bc.out" 2>&1 &
bc=$!
wait_for "$TMP/shm/mallocshim.$bc" 600
listening $bc

"$SD" --set sample_bytes:64k "$bc" >"$TMP/o1" 2>"$TMP/e1"
rc=$?
[ $rc -eq 0 ] && grep -q "^pid $bc (bcsim): now sample:256,sample_bytes:65536,track:on,stacks:16$" "$TMP/o1"
ok $? "--set sample_bytes:64k: exit $rc, $(cat "$TMP/o1" "$TMP/e1")"
"$SD" --set sample_bytes:65536 "$bc" >"$TMP/o1" 2>&1
ok $? "the same again: $(cat "$TMP/o1")"
grep -q "nothing to change, already" "$TMP/o1"
ok $? "... says that nothing changed"
"$SD" --set track:off --set stacks:off bcsim >"$TMP/o1" 2>&1 && grep -q "track:off,stacks:0" "$TMP/o1"
ok $? "two --set, and the command's name for the pid: $(cat "$TMP/o1")"
snapshot_after "$TMP/shm" "$bc" "$(date +%s%N)" "$TMP/j1" &&
    python3 - "$TMP/j1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["sampling"]
assert s["sample_bytes"] == 65536 and s["track"] is False and s["stacks"] is False, s
assert s["settings_changes"] == 2 and len(s["changes"]) == 2, s
a, b = s["changes"]
assert a["sample_bytes"] == 65536 and a["track"] and a["stacks"], a
assert not b["track"] and not b["stacks"] and b["t_ns"] >= a["t_ns"], b
PY
ok $? "the JSON says the settings in force and both changes, with their times"
"$SD" --dir "$TMP/shm" "$bc" >"$TMP/v1" 2>&1
grep -q "note: sampling changed 2 times while it ran (shimdump --set)" "$TMP/v1" &&
    grep -q "note: tracking is off (track:off since " "$TMP/v1" &&
    grep -q "sampling: no block tracked (track:off)" "$TMP/v1"
ok $? "the view says since when, and that tracking is off" || diag "$TMP/v1"
"$SD" --set track:on,stacks:on "$bc" >"$TMP/o1" 2>&1
ok $? "back on: $(cat "$TMP/o1")"
"$SD" --dir "$TMP/shm" "$bc" >"$TMP/v1" 2>&1
grep -q "note: tracking was off for a while (track:off): blocks allocated then" "$TMP/v1" &&
    ! grep -q "note: tracking is off" "$TMP/v1"
ok $? "tracking back on: the view still says that it was off for a while" || diag "$TMP/v1"
"$SD" --dir "$TMP/shm" --html "$bc" >"$TMP/p.html" 2>"$TMP/e1"
[ "$(grep -o 'class="setmark"' "$TMP/p.html" | wc -l)" -ge 3 ] &&
    grep -q "sampling changed (shimdump --set)" "$TMP/p.html"
ok $? "the page marks each change on the history's charts ($(grep -o 'class="setmark"' "$TMP/p.html" | wc -l) marks)"

# refused: exit 2 (usage) with the process's reason, and nothing changes
refused() {  # refused SETTINGS TEXT
    "$SD" --set "$1" "$bc" >"$TMP/o1" 2>"$TMP/e1"
    rc=$?
    [ $rc -eq 2 ] && grep -q "refused the settings: $2" "$TMP/e1"
    ok $? "--set $1: exit $rc, $(cat "$TMP/e1")"
}
refused arenas:2 "arenas: set at start only (in the config)"
refused stacks:8 "stacks:8: it keeps 16 frames a stack"
refused bogus:1 "unknown key 'bogus'"
refused sample:x "bad value 'x' for 'sample'"
refused "sample_bytes:64k,backend:jemalloc" "backend: set at start only"
refused "sample_bytes=" "sample_bytes: no value"
refused ",,," "no KEY:VALUE to set"
refused "sample:1" "sample:1 (every block, exact figures) is set at start only"
refused "$(printf 'sample:64\nsample_bytes:0')" "a character other than letters, digits"
refused "sample:64 sample_bytes:0" "bad value"
"$SD" --dir "$TMP/shm" --json "$bc" >"$TMP/j2" 2>/dev/null &&
    python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["sampling"]; assert s["settings_changes"] == 3 and s["sample_bytes"] == 65536, s' "$TMP/j2"
ok $? "refusals changed nothing (3 changes, sample_bytes 64k)"

sleep 600 &
sl=$!
"$SD" --set sample:64 $sl >"$TMP/o1" 2>"$TMP/e1"
[ $? -eq 1 ] && grep -q "takes no set request" "$TMP/e1"
ok $? "a process without the shim: exit 1, $(cat "$TMP/e1")"
kill $sl
"$SD" --set sample:64 >"$TMP/o1" 2>"$TMP/e1"
[ $? -eq 2 ]
ok $? "--set without a pid: usage, $(cat "$TMP/e1")"

if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
    setpriv --reuid=65534 --regid=65534 --clear-groups "$SD" --set sample:64 "$bc" >"$TMP/o1" 2>"$TMP/e1"
    rc=$?
    [ $rc -eq 3 ] && grep -q "only pid $bc's owner (uid 0) or root may change the settings of it" "$TMP/e1"
    ok $? "another user: exit $rc, $(cat "$TMP/e1")"
    # past shimdump's own check: the process closes on a stranger at once
    setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 - "$bc" >"$TMP/o1" 2>&1 <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect("\0mallocshim.capture.%s" % sys.argv[1])
m = struct.pack("<IIIIiIQQQQQQQII", 0x4c54434d, 1, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
m += b"sample:64".ljust(160, b"\0")
try:
    s.send(m)
    r = s.recv(248)
except OSError as e:
    r = b""
print("answer", len(r))
PY
    grep -q "^answer 0$" "$TMP/o1" &&
        "$SD" --dir "$TMP/shm" --json "$bc" >"$TMP/j2" 2>/dev/null &&
        python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["sampling"]; assert s["settings_changes"] == 3 and s["sample"] == 256, s' "$TMP/j2"
    ok $? "another user's own request: closed without an answer, nothing changed ($(cat "$TMP/o1"))"
else
    skip "another user refused" "needs root and setpriv"
    skip "another user's own request" "needs root and setpriv"
fi
kill $bc
wait $bc 2>/dev/null
done_testing
