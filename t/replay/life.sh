#!/bin/sh
# life.sh: a whole life captured from the start (capture_start), and the
# replay's calibration against the real RSS the trace carries (issue 34).
# - capprog captured from its start under each backend: the trace holds
#   every allocation and free the segment's exact counters hold at the same
#   moment (so the first one too), its starting heap is empty, it says it is
#   from the start, with the real RSS; the file is mode 0600.
# - capture_max stops it whole (trailer, complete) near the limit, the
#   program unharmed and nothing said; a write that fails (RLIMIT_FSIZE,
#   SIGXFSZ ignored) ends it with one line on stderr, the program unharmed.
# - shimreplay --all --json on a whole life of bcsim: the captured config's
#   prediction is the real peak, its error replayed/real - 1, every other
#   config real + (replayed - replayed captured), the error carried.
# - a mid-life capture of peakfree, whose RSS was 160 MB higher before:
#   limits.history_higher, the configs that keep freed memory named, the
#   advice; the table marks them.
# - a trace of format 2: replayed, calibration not known, and said why.
# - the launcher's --capture; a file planted at the path by another user
#   (uid 65534), a link or a file: not followed, not written, one line;
#   the program runs on.
# No timing is asserted.
. "$TOP_SRCDIR/t/lib.sh"
need_zstd
distcheck_light   # about 30-60 s: make check runs it; distcheck's pass skips it

SD="$TOP_BUILDDIR/tools/shimdump"
SR="$TOP_BUILDDIR/tools/shimreplay"
TC="$TOP_BUILDDIR/t/replay/tracecat"
CP="$TOP_BUILDDIR/t/integration/capprog"
PF="$TOP_BUILDDIR/t/integration/peakfree"
BC="$TOP_BUILDDIR/tools/bcsim"
export MALLOCSHIM_LIB="$SHIM"

# count.py SEG.json INFO.json TRACECAT: the trace's allocations and frees
# up to the segment's snapshot (the program idle around it) against the
# segment's counters, which count a realloc as a free and an allocation.
cat >"$TMP/count.py" <<'EOF'
import json, sys
seg, info = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
cut = seg["snapshot_ns"] - info["trace"]["start_ns"]
a = f = 0
for l in open(sys.argv[3]):
    x = l.split()
    if x[0] != "ev" or int(x[8]) > cut:
        continue
    op, aux, id_ = int(x[2]), x[4], x[5]
    if op == 3:
        a += id_ != "0"
        f += aux != "0"
    elif op in (4, 14, 15, 16, 17, 18, 19, 20, 21):
        f += 1
    else:
        a += id_ != "0"
t = seg["totals"]
assert t["allocs"] > 0 and (a, f) == (t["allocs"], t["frees"]), ("trace", a, f, "segment", t["allocs"], t["frees"])
tr = info["trace"]
assert tr["from_start"] is True and tr["start_blocks"] == 0 and tr["complete"] is True, tr
assert tr["real"] and tr["real"]["peak_rss_bytes"] >= tr["real"]["start_rss_bytes"] > 0, tr
assert info["limits"]["mid_life"] is False and info["limits"]["advice"] is None, info["limits"]
print(a, f)
EOF

for b in $(backends); do
    d="$TMP/$b"
    mkdir -p "$d"
    MALLOCSHIM_CONF="backend:$b,capture_start:$d/life.%p.trace" LD_PRELOAD="$SHIM" "$CP" "$d" 4 500 \
        >"$d/prog.out" 2>&1 &
    pid=$!
    wait_for "$d/ready" && touch "$d/go" && wait_for "$d/done"
    ok $? "$b: capprog captured from its start runs its calls" || diag "$d/prog.out"
    sleep 1   # idle: the snapshot falls between its calls and its exit's
    "$SD" --dir "$TMP/shm" --json $pid >"$d/seg.json" 2>"$d/sd.err"
    touch "$d/quit"
    wait $pid
    ok $? "$b: capprog exits 0" || diag "$d/prog.out"
    [ ! -s "$d/prog.out" ] && [ "$(stat -c %a "$d/life.$pid.trace")" = 600 ]
    ok $? "$b: the trace is life.PID.trace (%p), mode 0600, nothing said" || diag "$d/prog.out"
    "$TC" "$d/life.$pid.trace" >"$d/cat" 2>"$d/tc.err" &&
        "$SR" --info --json "$d/life.$pid.trace" >"$d/info.json" 2>>"$d/tc.err" &&
        python3 "$TMP/count.py" "$d/seg.json" "$d/info.json" "$d/cat" >"$d/py" 2>&1
    ok $? "$b: the trace has every allocation and free of the segment's counters, from the first; from_start, real RSS" ||
        { diag "$d/py"; diag "$d/tc.err"; }
done

# The size limit: the trace ends whole near 1 MiB; bcsim runs on.
MALLOCSHIM_CONF="backend:glibc,capture_max:1m,capture_start:$TMP/max.trace" LD_PRELOAD="$SHIM" \
    "$BC" --threads=2 --cache=8M --duration=1 >"$TMP/bc.out" 2>"$TMP/bc.err"
rc=$?
size=$(stat -c %s "$TMP/max.trace" 2>/dev/null || echo 0)
"$SR" --info --json "$TMP/max.trace" >"$TMP/max.json" 2>&1
python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["trace"]
assert t["complete"] and t["from_start"] and t["real"], t' "$TMP/max.json"
ok $((rc + $?)) "capture_max:1m ends the trace whole (trailer, real RSS), bcsim exits 0" || diag "$TMP/max.json"
[ "$size" -ge 1048576 ] && [ "$size" -lt 2097152 ] && [ ! -s "$TMP/bc.err" ] && grep -q "^ops " "$TMP/bc.out"
ok $? "the file stops past 1 MiB by less than 1 MiB ($size bytes), bcsim's report whole, nothing on stderr" ||
    diag "$TMP/bc.err"

# Two images of one pid (mysqld_safe's `nohup mariadbd`): with %e, each its
# own file, the second image's life whole.
mkdir -p "$TMP/e"
MALLOCSHIM_CONF="backend:glibc,capture_start:$TMP/e/%e.%p.trace" LD_PRELOAD="$SHIM" \
    nohup "$BC" --threads=2 --cache=8M --duration=1 >"$TMP/bc.out" 2>"$TMP/bc.err"
rc=$?
bt=$(ls "$TMP/e"/bcsim.*.trace 2>/dev/null)
[ $rc -eq 0 ] && [ -n "$bt" ] && [ -e "$TMP/e/nohup.${bt##*/bcsim.}" ] &&
    ! grep -q capture_start "$TMP/bc.err" &&
    "$SR" --info --json "$bt" >"$TMP/e.json" 2>&1 &&
    python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["trace"]
assert t["complete"] and t["from_start"], t' "$TMP/e.json"
ok $? "capture_start with %e under nohup: nohup.PID.trace and bcsim.PID.trace, bcsim's whole ($(ls "$TMP/e" | tr '\n' ' '))" ||
    { diag "$TMP/bc.err"; diag "$TMP/e.json"; }

# A write that fails: one line, the program unharmed.
(trap '' XFSZ; ulimit -f 200; exec env MALLOCSHIM_CONF="backend:glibc,capture_start:$TMP/fsize.trace" \
    LD_PRELOAD="$SHIM" "$BC" --threads=2 --cache=8M --duration=1 >"$TMP/bc.out" 2>"$TMP/bc.err")
rc=$?
# (the limit also stops the segment's file, which says so in a line of its own)
[ $rc -eq 0 ] && [ "$(grep -c capture_start "$TMP/bc.err")" -eq 1 ] &&
    grep -q "^mallocshim: capture_start: writing $TMP/fsize.trace failed: File too large; the trace ends there, recording goes on$" "$TMP/bc.err" &&
    grep -q "^ops " "$TMP/bc.out"
ok $? "a trace that cannot be written: one line on stderr, bcsim exits 0 with its report (rc $rc)" || diag "$TMP/bc.err"

# Calibration on a whole life of bcsim.
MALLOCSHIM_CONF="backend:glibc,capture_start:$TMP/bc.trace" LD_PRELOAD="$SHIM" \
    "$BC" --threads=2 --cache=8M --duration=1 >"$TMP/bc.out" 2>"$TMP/bc.err"
check "$SR" --all --touch=all --json "$TMP/bc.trace" && cp "$TMP/out" "$TMP/all.json"
python3 - "$TMP/all.json" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
real = d["trace"]["real"]
assert real and real["peak_rss_bytes"] > 0, d["trace"]
runs = d["runs"]
cap = [r for r in runs if r["captured"]]
assert len(cap) == 1 and cap[0]["config"] == "glibc", [r["config"] for r in cap]
cap = cap[0]
assert cap["predicted_peak_rss_bytes"] == real["peak_rss_bytes"], cap
assert cap["predicted_end_rss_bytes"] == real["end_rss_bytes"], cap
err = cap["peak_rss_bytes"] / real["peak_rss_bytes"] - 1
for r in runs:
    assert r["exit"] == 0, r
    assert abs(r["calibration_error"] - err) < 1e-4, (r, err)
    assert r["calibration_error_bytes"] == cap["peak_rss_bytes"] - real["peak_rss_bytes"], r
    want = max(0, real["peak_rss_bytes"] + r["peak_rss_bytes"] - cap["peak_rss_bytes"])
    assert r["predicted_peak_rss_bytes"] == want, (r, want)
    assert r["may_hold_more"] is False, r
assert d["limits"] == {"mid_life": False, "history_higher": False, "may_hold_more": [], "advice": None}, d["limits"]
print(len(runs), err)
EOF
ok $? "--all --json: the captured config predicts the real peak, error = replayed/real - 1, the others real + difference" ||
    { diag "$TMP/py"; diag "$TMP/err"; }

# A mid-life capture of a process whose RSS was higher before.
d="$TMP/mid"
mkdir -p "$d"
MALLOCSHIM_CONF="backend:glibc" LD_PRELOAD="$SHIM" "$PF" "$d" >"$d/prog.out" 2>&1 &
pid=$!
wait_for "$d/built" && touch "$d/free" && wait_for "$d/ready" && listening $pid
ok $? "peakfree: its 160 MB peak held, freed, its steady state held" || diag "$d/prog.out"
"$SD" --capture=1 -o "$d/mid.trace" $pid >"$d/cap.out" 2>"$d/cap.err"
ok $? "a mid-life capture of it" || diag "$d/cap.err"
touch "$d/fork" "$d/stop"   # its fork child too, then both exit
wait $pid
"$SR" --info --json "$d/mid.trace" >"$d/info.json" 2>&1
python3 - "$d/info.json" >"$d/py" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
t, lim = d["trace"], d["limits"]
assert t["from_start"] is False and t["real"], t
assert t["real"]["hwm_before_bytes"] > t["real"]["peak_rss_bytes"] + 50 * 2**20, t["real"]
assert lim["mid_life"] and lim["history_higher"], lim
assert lim["may_hold_more"] == ["glibc", "tcmalloc"], lim
assert "capture_start = PATH" in lim["advice"] and "before the capture" in lim["advice"], lim
EOF
ok $? "--info --json: the life before held more; glibc and tcmalloc may hold more; how to capture the life" ||
    diag "$d/py"
check "$SR" --all --json "$d/mid.trace" && cp "$TMP/out" "$d/all.json"
python3 - "$d/all.json" >"$d/py" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
marked = [r["config"] for r in d["runs"] if r["may_hold_more"]]
want = [r["config"] for r in d["runs"] if r["backend"] in ("glibc", "tcmalloc") and not r["captured"]]
assert [r["config"] for r in d["runs"] if r["captured"]] == ["glibc"], d["runs"]
assert marked == want and marked == d["limits"]["may_hold_more"], (marked, want, d["limits"])
assert all(r["backend"] != "jemalloc" for r in d["runs"] if r["may_hold_more"])
EOF
ok $? "--all --json: each glibc and tcmalloc run but the captured one marked may_hold_more, jemalloc not" || { diag "$d/py"; diag "$TMP/err"; }
check "$SR" --all "$d/mid.trace"
grep -Eq "^glibc \* +[0-9]" "$TMP/out" && grep -Eq "^glibc arenas:1 ! " "$TMP/out" &&
    grep -Eq "^tcmalloc ! " "$TMP/out" && ! grep -q "^jemalloc.* ! " "$TMP/out" &&
    grep -q "^! captured mid-life: before the capture the process reached" "$TMP/out"
ok $? "--all: the table marks them ! (not the captured glibc, not jemalloc) and says why" || diag "$TMP/out"

# A trace of format 2: replayed, without calibration, and why.
check "$SR" -b glibc --json "$TOP_SRCDIR/t/replay/v2.trace" && cp "$TMP/out" "$TMP/v2.json"
python3 - "$TMP/v2.json" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["trace"]["real"] is None and d["trace"]["real_unknown"] == "a trace of format 2 carries no real RSS", d["trace"]
r = d["runs"][0]
assert r["exit"] == 0 and r["predicted_peak_rss_bytes"] is None and r["calibration_error"] is None, r
EOF
ok $? "a trace of format 2: replayed, calibration null, real_unknown says why" || diag "$TMP/py"

# The launcher's --capture: a relative name made absolute; a comma refused.
(cd "$TMP" && "$TOP_BUILDDIR/tools/mallocshim" --capture=launch.trace -- "$BC" --threads=1 --cache=4M \
    --duration=1 >"$TMP/bc.out" 2>"$TMP/bc.err")
rc=$?
"$SR" --info --json "$TMP/launch.trace" >"$TMP/launch.json" 2>&1 &&
    grep -q '"from_start": true' "$TMP/launch.json"
ok $((rc + $?)) "mallocshim --capture=launch.trace: a trace from the start in the current directory" ||
    { diag "$TMP/bc.err"; diag "$TMP/launch.json"; }
"$TOP_BUILDDIR/tools/mallocshim" --capture=a,b.trace -- true 2>"$TMP/err"
rc=$?
[ $rc -eq 125 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && [ ! -e "a,b.trace" ]
ok $? "mallocshim --capture=a,b.trace: exit 125, one line (rc $rc)" || diag "$TMP/err"

# Planted by another user: never followed, never written.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
    att=$(mktemp -d /tmp/mallocshim-life.XXXXXX)
    chmod 1777 "$att"
    echo victim >"$TMP/victim"
    setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
        "ln -s '$TMP/victim' '$att/link.trace'; echo mine >'$att/file.trace'"
    for p in link file; do
        MALLOCSHIM_CONF="backend:glibc,capture_start:$att/$p.trace" LD_PRELOAD="$SHIM" \
            "$BC" --threads=1 --cache=4M --duration=1 >"$TMP/bc.out" 2>"$TMP/bc.err"
        rc=$?
        [ $rc -eq 0 ] && [ "$(wc -l <"$TMP/bc.err")" -eq 1 ] &&
            grep -q "^mallocshim: capture_start: cannot create $att/$p.trace: File exists; no trace, recording goes on$" "$TMP/bc.err" &&
            [ "$(cat "$TMP/victim")" = victim ] && [ "$(stat -c %u "$att/$p.trace")" = 65534 ] &&
            { [ $p = link ] || [ "$(cat "$att/file.trace")" = mine ]; }
        ok $? "a $p planted at the path by uid 65534: not followed nor written, one line, bcsim runs on" ||
            diag "$TMP/bc.err"
    done
    rm -f "$att/link.trace" "$att/file.trace"
    rmdir "$att"
else
    skip "files planted by another user at the path" "needs root and setpriv"
fi

done_testing
