#!/bin/sh
# replay.sh: shimreplay on traces that t/replay/mktrace writes through the
# trace writer from a seeded workload, with the figures the workload gives
# (a side file): --info's counts exactly; a replay under each backend the
# build has (the shim's own verbose line says which served it) doing every
# op, with the exact peak and end live bytes, no free that found its block
# missing (each cross-thread free waited for its allocation) and, with
# --touch=all, an end RSS that holds the live bytes; --pace; --all's table
# and JSON;
# the starting heap's free space, under the captured config only;
# the stall guard; a trace without its trailer, replayed as far as it goes;
# and the documented exit code and one line for a file cut in its header,
# a corrupt, foreign or other-version file, a missing file or shim, and bad
# options.
. "$TOP_SRCDIR/t/lib.sh"
distcheck_light   # make check runs it on these sources; distcheck's pass skips it (CI time)

need_zstd

SR="$TOP_BUILDDIR/tools/shimreplay"
MK="$TOP_BUILDDIR/t/replay/mktrace"
export MALLOCSHIM_LIB="$SHIM"
TR="$TMP/a.trace"

check "$MK" --seed=7 --threads=8 --events=100000 --cache=4000 --expect="$TMP/expect" "$TR"
ok $? "mktrace writes a trace of 100000 events of 8 threads"

# compare.py INFO_JSON EXPECT [RUN_INDEX]: the trace's figures as the
# workload gave them; with a run, that run's too.
cat >"$TMP/compare.py" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
want = {k: int(v) for k, v in (l.split() for l in open(sys.argv[2]))}
t = d["trace"]
got = {k: t[k] for k in want}
assert got == want, ("trace", got, want)
assert 0 < want["start_freed"] < want["start_blocks"] and want["orphans"] == 1, want
if len(sys.argv) > 3:
    r = d["runs"][int(sys.argv[3])]
    assert r["exit"] == 0, r
    assert r["ops"] == want["ops"], ("ops", r["ops"], want["ops"])
    assert r["peak_live_bytes"] == want["peak_live_bytes"], r
    assert r["end_live_bytes"] == want["end_live_bytes"], r
    assert r["failed"] == 0 and r["lost"] == 0 and r["clobbered"] == 0, r
    assert r["peak_rss_bytes"] >= r["end_rss_bytes"] > r["base_rss_bytes"] > 0, r
    assert r["ops_per_s"] > 0 and r["seconds"] > 0, r
    assert abs(r["rss_per_live_peak"] - r["peak_rss_bytes"] / r["peak_live_bytes"]) < 1e-3, r
    if len(sys.argv) > 4 and sys.argv[4] == "touch-all":
        assert r["end_rss_bytes"] >= r["end_live_bytes"], ("every page written", r)
EOF

check "$SR" --info --json "$TR"
cp "$TMP/out" "$TMP/info.json"
python3 "$TMP/compare.py" "$TMP/info.json" "$TMP/expect" >"$TMP/py" 2>&1
ok $? "--info --json: events, chunks, threads, ops, failed, cross-thread frees, starting heap, peak and end live bytes as the workload made them" ||
    diag "$TMP/py"

# A trace of format 1 (its reallocs stamped before the call), written by
# the mktrace of then (t/replay/v1.trace, with the figures it gave): still
# read, its frees paired as that format says.
check "$SR" --info --json "$TOP_SRCDIR/t/replay/v1.trace" &&
    python3 "$TMP/compare.py" "$TMP/out" "$TOP_SRCDIR/t/replay/v1.expect" >"$TMP/py" 2>&1
ok $? "a trace of format 1: read, with the figures it was made with" || diag "$TMP/py"
# And of format 2 (events as they are, not byte planes; t/replay/v2.trace,
# made by the mktrace of then with --seed=7 --threads=4 --events=3000
# --cache=100): read, and replayed with every op done.
check "$SR" --info --json "$TOP_SRCDIR/t/replay/v2.trace" &&
    python3 "$TMP/compare.py" "$TMP/out" "$TOP_SRCDIR/t/replay/v2.expect" >"$TMP/py" 2>&1
ok $? "a trace of format 2: read, with the figures it was made with" || diag "$TMP/py"
check "$SR" --backend=glibc --json "$TOP_SRCDIR/t/replay/v2.trace" &&
    python3 "$TMP/compare.py" "$TMP/out" "$TOP_SRCDIR/t/replay/v2.expect" 0 >"$TMP/py" 2>&1
ok $? "a trace of format 2: replayed, every op done, its live bytes as made" || diag "$TMP/py"

check "$SR" --info "$TR"
grep -q "^cross-thread $(sed -n 's/^cross_thread //p' "$TMP/expect") frees" "$TMP/out" &&
    grep -q "^live bytes   peak $(sed -n 's/^peak_live_bytes //p' "$TMP/expect") " "$TMP/out"
ok $? "--info as text" || diag "$TMP/out"

for b in $(backends); do
    check "$SR" --backend=$b --conf=verbose:1 --json "$TR"
    rc=$?
    cp "$TMP/out" "$TMP/$b.json"
    grep -q "^mallocshim: pid [0-9]*: backend $b .*record:0" "$TMP/err"
    served=$?
    python3 "$TMP/compare.py" "$TMP/$b.json" "$TMP/expect" 0 >"$TMP/py" 2>&1
    ok $((rc + served + $?)) "replay under $b (its shim says so): every op, exact live bytes, every free found its block" ||
        { diag "$TMP/py"; diag "$TMP/err"; }
done

check "$SR" --touch=all --json "$TR"
python3 "$TMP/compare.py" "$TMP/out" "$TMP/expect" 0 touch-all >"$TMP/py" 2>&1
ok $? "--touch=all: the end RSS holds every live byte" || diag "$TMP/py"

# --pace: each call at its time in the trace. A trace of about 1 s
# (events 1..100 us apart): every op, the exact live bytes, and a replay
# that cannot have ended before its last call's time (a bound that holds on
# any machine, however slow: no op goes more than 20 us early).
check "$MK" --seed=3 --threads=4 --events=20000 --cache=500 --gap=100000 --expect="$TMP/pexpect" "$TMP/p.trace" &&
    check "$SR" --pace --json "$TMP/p.trace" && cp "$TMP/out" "$TMP/p.json" &&
    python3 - "$TMP/p.json" "$TMP/pexpect" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
want = {k: int(v) for k, v in (l.split() for l in open(sys.argv[2]))}
t, r = d["trace"], d["runs"][0]
assert r["paced"] is True and r["exit"] == 0, r
assert r["ops"] == want["ops"] and r["peak_live_bytes"] == want["peak_live_bytes"], (r, want)
assert r["end_live_bytes"] == want["end_live_bytes"] and r["lost"] == 0, (r, want)
assert t["duration_ns"] > 0.9e9, t["duration_ns"]
assert r["seconds"] >= 0.9 * t["duration_ns"] / 1e9, (r["seconds"], t["duration_ns"])
EOF
ok $? "--pace: every op at its time, exact live bytes, no sooner than the trace's length" ||
    diag "$TMP/py"
check "$SR" --pace "$TMP/p.trace" && grep -q "; paced at the trace's times$" "$TMP/out"
ok $? "--pace: the table says so"
# Paced is the default for a trace of up to 300 s; a longer one is
# replayed as fast as it goes, with a line, and --no-pace does so always.
check "$SR" --json "$TMP/p.trace" &&
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["runs"][0]; assert r["paced"] is True, r' "$TMP/out" &&
    [ ! -s "$TMP/err" ]
ok $? "a trace of 1 s: paced by default, nothing on stderr"
check "$SR" --no-pace --json "$TMP/p.trace" &&
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["runs"][0]; assert r["paced"] is False, r' "$TMP/out"
ok $? "--no-pace: not paced"
check "$MK" --seed=5 --threads=2 --events=1000 --cache=50 --gap=1000000000 "$TMP/long.trace"
check "$SR" "$TMP/long.trace"
rc=$?
[ $rc -eq 0 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] &&
    grep -Eq "^shimreplay: $TMP/long.trace spans [3-9][0-9]{2} s: replayed as fast as it goes, not at its times \(--pace waits its length for each replay\)$" "$TMP/err" &&
    grep -q "; not paced$" "$TMP/out"
ok $? "a trace of more than 300 s: not paced by default, one line says so, the table too" ||
    { diag "$TMP/err"; diag "$TMP/out"; }

# --all: a fresh process per config, one table and one JSON list.
configs="glibc|glibc arenas:1|glibc arenas:2|glibc arenas:4"
[ "$HAVE_JEMALLOC" = yes ] && configs="$configs|jemalloc"
[ "$HAVE_TCMALLOC" = yes ] && configs="$configs|tcmalloc"
check "$SR" --all --json --conf=verbose:1 "$TR"
rc=$?
cp "$TMP/out" "$TMP/all.json"
cp "$TMP/err" "$TMP/all.err"
python3 - "$TMP/all.json" "$TMP/expect" "$configs" >"$TMP/py" 2>&1 <<'EOF'
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
names = [r["config"] for r in d["runs"]]
assert names == sys.argv[3].split("|"), names
for i in range(len(names)):
    subprocess.run([sys.executable, sys.argv[1].rsplit("/", 1)[0] + "/compare.py", sys.argv[1], sys.argv[2], str(i)], check=True)
    for k in ("config", "peak_rss_bytes", "end_rss_bytes", "peak_live_bytes", "ops_per_s"):
        assert k in d["runs"][i], k
EOF
ok $((rc + $?)) "--all --json: one run per config ($configs), each complete" || diag "$TMP/py"
# Three replays of each (--all's default): the median replay's figures,
# the spread, and the ranking by the documented rule (shimreplay(1),
# Ranking), recomputed here from each replay's peak.
python3 - "$TMP/all.json" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
runs = d["runs"]
for r in runs:
    p = r["peak_rss_runs"]
    assert r["repeats"] == 3 and len(p) == 3 and len(r["end_rss_runs"]) == 3, r
    assert r["peak_rss_bytes"] == sorted(p)[1], r
    i = p.index(r["peak_rss_bytes"])
    assert r["end_rss_bytes"] == r["end_rss_runs"][i], r
    assert (r["peak_rss_min_bytes"], r["peak_rss_max_bytes"]) == (min(p), max(p)), r
# The documented rule, checked as properties: every replay of a group
# peaked below every replay of the next; within a group the configs'
# spans overlap, directly or through others; in a group, by median.
groups = d["ranking"]["groups"]
by = {r["config"]: r for r in runs}
assert sorted(c for g in groups for c in g) == sorted(by), (groups, list(by))
span = lambda c: (min(by[c]["peak_rss_runs"]), max(by[c]["peak_rss_runs"]))
for g, h in zip(groups, groups[1:]):
    assert max(span(c)[1] for c in g) < min(span(c)[0] for c in h), (g, h, [span(c) for c in g + h])
for i, g in enumerate(groups):
    seen = {g[0]}
    while True:
        more = {c for c in g if c not in seen and any(span(c)[0] <= span(x)[1] and span(x)[0] <= span(c)[1] for x in seen)}
        if not more:
            break
        seen |= more
    assert seen == set(g), (g, [span(c) for c in g])
    meds = [by[c]["peak_rss_bytes"] for c in g]
    assert meds == sorted(meds), (g, meds)
    assert all(by[c]["rank"] == i for c in g), g
assert d["ranking"]["repeats"] == 3, d["ranking"]
print(groups)
EOF
ok $? "--all: 3 replays of each config, the median replay's figures, the ranking by the rule ($(tail -n 1 "$TMP/py"))" ||
    diag "$TMP/py"
# Each config in its own process, on its own backend and arena count.
n=0
for c in 0 1 2 4; do
    grep -q "backend glibc .*config backend:glibc,arenas:$c,.*record:0" "$TMP/all.err" && n=$((n + 1))
done
nconf=$(echo "$configs" | tr '|' '\n' | wc -l)
[ $n -eq 4 ] && [ "$(grep -c '^mallocshim: pid ' "$TMP/all.err")" -eq $((3 * nconf)) ] &&
    [ "$(grep '^mallocshim: pid ' "$TMP/all.err" | sed 's/: backend.*//' | sort -u | wc -l)" -eq $((3 * nconf)) ]
ok $? "--all: each replay of each config in a process of its own, with its arenas" || diag "$TMP/all.err"

check "$SR" --all "$TR"
rc=$?
rows=0
for c in $(echo "$configs" | tr ' |' '_ '); do
    grep -Eq "^$(echo "$c" | tr '_' ' ')( \*)?( !)? +[0-9.]+ [KMG]iB +[0-9]+\.[0-9]% +(-|[0-9.]+ [KMG]iB) +(-|[+-][0-9.]+%) +[0-9.]+ [KMG]iB +[0-9.]+ +[0-9.]+ +[0-9]+$" "$TMP/out" &&
        rows=$((rows + 1))
done
[ $rc -eq 0 ] && [ $rows -eq "$nconf" ] &&
    grep -q "^config  *peak RSS  *spread  *predicted  *error  *end RSS  *RSS/live  *RSS/live  *ops/s$" "$TMP/out" &&
    grep -q "^  *median  *of 3  *peak RSS  *at peak  *at end *$" "$TMP/out" &&
    grep -q "^peak RSS: the median of 3 replays per config" "$TMP/out" &&
    grep -q "^no prediction: .* carries no real RSS" "$TMP/out" && [ ! -s "$TMP/err" ]
ok $? "--all: the table, a row per config with its spread, no prediction for a trace without the real RSS, nothing on stderr" || diag "$TMP/out"
# The ranking line names every config, joined by < and =.
tr '\n' ' ' <"$TMP/out" | sed 's/  */ /g' >"$TMP/flat"
n=0
for c in $(echo "$configs" | tr ' |' '_ '); do
    grep -Eq "ranking, least peak RSS first, over 3 replays each:(.* [<=])? $(echo "$c" | tr '_' ' ')( !)?( [<=]|\. )" "$TMP/flat" && n=$((n + 1))
done
[ $n -eq "$nconf" ]
ok $? "--all: the ranking line, every config in it" || diag "$TMP/out"
check "$SR" --all --repeat=1 "$TR"
rc=$?
tr '\n' ' ' <"$TMP/out" | sed 's/  */ /g' >"$TMP/flat"
[ $rc -eq 0 ] && grep -q "^config  *peak RSS  *predicted  *error  *end RSS" "$TMP/out" &&
    grep -q "ranking, least peak RSS first, one replay each: .* --repeat=3 shows which of these differences are beyond that" "$TMP/flat" &&
    ! grep -q "spread\|median" "$TMP/out"
ok $? "--all --repeat=1: no spread column, and the ranking says what one replay cannot tell" || diag "$TMP/out"
# A replay that fails ends its config's repeats: one line each, exit 6,
# no figures, no rank (thread 0 of every replay stops at its call 100).
SHIMREPLAY_TEST_HANG=0:100 "$SR" --all --repeat=2 --stall=1 --json "$TR" >"$TMP/out" 2>"$TMP/err"
rc=$?
python3 - "$TMP/out" "$TMP/err" "$nconf" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
err = open(sys.argv[2]).read().splitlines()
runs = d["runs"]
assert len(runs) == int(sys.argv[3]) and len(err) == len(runs), (len(runs), err)
for r in runs:
    assert r["exit"] == 6 and r["repeats"] == 0 and r["peak_rss_runs"] == [] and r["rank"] is None, r
    assert r["peak_rss_min_bytes"] is None and "peak_rss_bytes" not in r, r
assert d["ranking"] == {"repeats": 2, "groups": []}, d["ranking"]
EOF
ok $(( (rc != 6) + $? )) "--all --repeat=2, every first replay stalled: exit 6, a line and no figures per config, no ranking (exit $rc)" ||
    { diag "$TMP/py"; diag "$TMP/err"; }
check "$SR" --backend=glibc --repeat=2 --json "$TR"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r, = d["runs"]
assert r["repeats"] == 2 and len(r["peak_rss_runs"]) == 2 and r["peak_rss_bytes"] == min(r["peak_rss_runs"]), r
assert d["ranking"] == {"repeats": 2, "groups": [["glibc"]]}, d["ranking"]' "$TMP/out" >"$TMP/py" 2>&1
ok $? "--repeat=2 under one config: 2 replays, the lower of the middle two" || diag "$TMP/py"

# The starting heap's free space (the trace's start_free): a replay under
# the captured config (glibc, its arena count) leaves it as holes among the
# starting blocks; the other configs, and --compact-start, start from the
# live blocks alone. 32 MiB beside mktrace's 40 MiB starting heap: with
# every page written, the holes stay resident (glibc keeps free chunks
# among live ones), so the glibc replay's RSS exceeds its compact one's by
# at least half of it.
check "$MK" --seed=7 --threads=8 --events=100000 --cache=4000 --start-free=33554432 "$TMP/f.trace"
ok $? "mktrace writes a trace whose allocator held 32 MiB free at its start"
check "$SR" --info "$TMP/f.trace"
grep -qx "start free   32.0 MiB held free by glibc besides the live blocks; a replay under the same config starts with it" "$TMP/out"
ok $? "--info: the free space at the start" || diag "$TMP/out"
"$SR" --info --json "$TR" >"$TMP/nofree.json" 2>&1 && "$SR" --info --json "$TMP/f.trace" >"$TMP/free.json" 2>&1 &&
    grep -q '"start_free_bytes": null,' "$TMP/nofree.json" && grep -q '"start_free_bytes": 33554432,' "$TMP/free.json"
ok $? "--info --json: start_free_bytes, null for a trace that has none" || { diag "$TMP/nofree.json"; diag "$TMP/free.json"; }
check "$SR" --all --json --touch=all "$TMP/f.trace"
rc=$?
cp "$TMP/out" "$TMP/free-all.json"
check "$SR" --all --json --touch=all --compact-start "$TMP/f.trace"
rc=$((rc + $?))
cp "$TMP/out" "$TMP/compact-all.json"
python3 - "$TMP/free-all.json" "$TMP/compact-all.json" "$configs" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
held = json.load(open(sys.argv[1]))["runs"]
compact = json.load(open(sys.argv[2]))["runs"]
names = sys.argv[3].split("|")
assert [r["config"] for r in held] == names == [r["config"] for r in compact], names
for r in held + compact:
    assert r["exit"] == 0 and r["failed"] == 0 and r["lost"] == 0 and r["clobbered"] == 0, r
    assert r["ops"] == held[0]["ops"], r
# what it made, its spacers' chunks: the 32 MiB, but for each thread's
# last share (under one block of mktrace's, 16 KiB at most, short; or a
# chunk's header and rounding, under 32 bytes, over)
got = {r["config"]: r["start_free_bytes"] for r in held}
assert 33554432 - 8 * 16400 < got["glibc"] < 33554432 + 8 * 32, got
assert all(got[n] == 0 for n in names if n != "glibc"), got
assert all(r["start_free_bytes"] == 0 for r in compact), compact
grown = (held[0]["peak_rss_bytes"] - held[0]["base_rss_bytes"]) - \
        (compact[0]["peak_rss_bytes"] - compact[0]["base_rss_bytes"])
assert grown >= 16 << 20, ("the holes are not resident", grown)
print(grown >> 20, "MiB")
EOF
ok $((rc + $?)) "--all: only the captured config (glibc) starts with the 32 MiB free, resident as holes; --compact-start: none does" ||
    diag "$TMP/py"
check "$MK" --seed=7 --threads=8 --events=100000 --cache=4000 --start-free=33554432 --arenas=2 "$TMP/f2.trace"
check "$SR" --all "$TMP/f2.trace"
rc=$?
grep -Eq "^glibc arenas:2 \* +[0-9.]+ [KMG]iB " "$TMP/out" && [ "$(grep -c ' \* ' "$TMP/out")" -eq 1 ] &&
    grep -Eq "^\* the captured config: started with 3[12]\.[0-9] MiB free as holes among its live blocks,$" "$TMP/out" &&
    grep -q "^  as glibc held 32.0 MiB free besides them when the capture began; the others start$" "$TMP/out"
ok $((rc + $?)) "a capture under arenas:2: glibc arenas:2 is the config that starts with it, marked, with the footnote" ||
    diag "$TMP/out"
# more than the 1 PiB a header may say (below, with the corrupt files)
check "$MK" --seed=7 --threads=8 --events=1000 --start-free=2251799813685249 "$TMP/f3.trace"

# Progress: on a terminal only.
if command -v script >/dev/null; then
    SHELL=/bin/sh script -qefc "'$SR' '$TR' >/dev/null" "$TMP/typescript" >/dev/null 2>&1
    rc=$?
    grep -q "shimreplay: reading the trace: 100%" "$TMP/typescript"
    ok $((rc + $?)) "progress on a terminal" || diag "$TMP/typescript"
else
    skip "progress on a terminal" "no script(1)"
fi

# The stall guard: a thread that stops (as if its allocator hung) ends
# the replay with exit 6 and a line naming who waits for whom.
SHIMREPLAY_TEST_HANG=0:100 "$SR" --stall=1 "$TR" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 6 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "^shimreplay: replay under glibc: no op done in 1 s: thread 0 (tid [0-9]*) is at op 100 of " "$TMP/err"
ok $? "a replay that makes no progress: exit 6 (got $rc) and one line" || diag "$TMP/err"
# Paced, the others asleep for their times: the thread stuck in a call
# still ends it.
SHIMREPLAY_TEST_HANG=0:100 "$SR" --pace --stall=1 "$TMP/p.trace" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 6 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "^shimreplay: replay under glibc: no op done in 1 s: thread 0 (tid [0-9]*) is at op 100 of " "$TMP/err"
ok $? "--pace: a replay that makes no progress: exit 6 (got $rc) and one line" || diag "$TMP/err"

# Bad files: each its exit code and one line.
one_line() {  # one_line CODE PATTERN DESCRIPTION CMD...
    code=$1 pat=$2 what=$3
    shift 3
    "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ $rc -eq "$code" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "^shimreplay: $pat" "$TMP/err" &&
        [ ! -s "$TMP/out" ]
    ok $? "$what: exit $code (got $rc), one line" || diag "$TMP/err"
}
size=$(wc -c <"$TR")
# A trace without its trailer (the captured process died, the file was
# cut): read up to its last whole chunk, said in one line, and replayed.
# Cut in the middle of a chunk, and cut just before the trailer (every
# chunk whole: every call there).
head -c $((size / 2)) "$TR" >"$TMP/cut.trace"
head -c $((size - 64)) "$TR" >"$TMP/notrailer.trace"
for f in cut notrailer; do
    "$SR" --json "$TMP/$f.trace" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ $rc -eq 0 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] &&
        grep -q "^shimreplay: .*$f.trace: no trailer after [0-9]* whole chunks ([0-9]* calls; [0-9]* bytes after them): the capture did not finish, or the file was cut; read as far as it goes$" "$TMP/err" &&
        python3 - "$TMP/out" "$TMP/expect" "$f" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
want = {k: int(v) for k, v in (l.split() for l in open(sys.argv[2]))}
t, r = d["trace"], d["runs"][0]
assert t["complete"] is False, t
if sys.argv[3] == "notrailer":
    assert t["events"] == want["events"] and t["ops"] == want["ops"], (t, want)
    assert t["peak_live_bytes"] == want["peak_live_bytes"], (t, want)
else:
    assert 0 < t["events"] < want["events"] and 0 < t["duration_ns"], (t, want)
assert r["exit"] == 0 and r["ops"] == t["ops"] and r["lost"] == 0, r
assert r["peak_live_bytes"] == t["peak_live_bytes"], r
EOF
    ok $? "a trace without its trailer ($f): exit 0 (got $rc), one line, its whole chunks replayed" ||
        { diag "$TMP/err"; diag "$TMP/py"; }
done
head -c 100 "$TR" >"$TMP/short.trace"
one_line 5 ".*short.trace: truncated: the file ends inside the header" "a trace cut in its header" "$SR" "$TMP/short.trace"
cp "$TR" "$TMP/flip.trace"
printf '\377' | dd of="$TMP/flip.trace" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
one_line 5 ".*flip.trace: corrupt" "a trace with a byte changed in a chunk" "$SR" "$TMP/flip.trace"
cp "$TR" "$TMP/head.trace"
printf 'X' | dd of="$TMP/head.trace" bs=1 seek=200 conv=notrunc 2>/dev/null
one_line 5 ".*head.trace: corrupt header: checksum mismatch" "a trace with a byte changed in its header" "$SR" "$TMP/head.trace"
cp "$TR" "$TMP/v9.trace"
printf '\011' | dd of="$TMP/v9.trace" bs=1 seek=8 conv=notrunc 2>/dev/null
one_line 4 ".*v9.trace: trace format 9, this shimreplay reads formats 1 to 4" "a trace of another format version" "$SR" "$TMP/v9.trace"
one_line 5 ".*: not a mallocshim trace (bad magic number)" "a foreign file" "$SR" "$TMP/compare.py"
: >"$TMP/empty.trace"
one_line 5 ".*empty.trace: not a mallocshim trace (empty file)" "an empty file" "$SR" "$TMP/empty.trace"
one_line 5 ".*f3.trace: corrupt header: 2251799813685249 bytes free at the start" \
    "a header that says more than 1 PiB was free" "$SR" --info "$TMP/f3.trace"
one_line 5 ".*: not a regular file" "a directory" "$SR" "$TMP"
one_line 1 ".*nothere.trace: no such file" "a missing file" "$SR" "$TMP/nothere.trace"
one_line 1 ".*nothere.so: cannot read the shim library (set MALLOCSHIM_LIB)" "a missing shim" \
    env MALLOCSHIM_LIB="$TMP/nothere.so" "$SR" "$TR"
one_line 2 "--backend=ptmalloc: unknown backend (glibc, jemalloc or tcmalloc)" "an unknown backend" \
    "$SR" --backend=ptmalloc "$TR"
for b in jemalloc tcmalloc; do
    if ! backends | grep -qx $b; then
        one_line 2 "--backend=$b: this build of mallocshim has no $b" "a backend this build lacks" \
            "$SR" --backend=$b "$TR"
    fi
done
one_line 2 "--arenas=many: give a count from 0 to 4096" "a bad arena count" "$SR" --arenas=many "$TR"
one_line 2 "--all replays every config: no --backend or --arenas with it" "--all with --backend" \
    "$SR" --all --backend=glibc "$TR"
one_line 2 "--repeat=0: give a count from 1 to 20" "--repeat=0" "$SR" --repeat=0 "$TR"
one_line 2 "--repeat=21: give a count from 1 to 20" "--repeat=21" "$SR" --all --repeat=21 "$TR"
one_line 2 "--info replays nothing: no --all, --backend, --arenas or --repeat with it" "--info with --repeat" \
    "$SR" --info --repeat=3 "$TR"
one_line 2 "which trace FILE?" "no file" "$SR"
one_line 2 "--frobnicate: unknown option" "an unknown option" "$SR" --frobnicate "$TR"
# A trace of another user's, mode 0600 (as root: read as nobody).
mkdir -p "$TMP/pub" && chmod 755 "$TMP" "$TMP/pub" && cp "$TR" "$TMP/pub/private.trace" &&
    chmod 000 "$TMP/pub/private.trace"
if [ "$(id -u)" -ne 0 ]; then
    one_line 3 ".*private.trace: permission denied" "a trace we may not read" \
        "$SR" --info "$TMP/pub/private.trace"
elif command -v setpriv >/dev/null; then
    one_line 3 ".*private.trace: permission denied" "a trace we may not read (as nobody)" \
        setpriv --reuid=65534 --regid=65534 --clear-groups "$SR" --info "$TMP/pub/private.trace"
else
    skip "a trace we may not read" "root, and no setpriv"
fi
done_testing
