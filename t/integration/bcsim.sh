#!/bin/sh
# bcsim.sh: the workload generator runs briefly under each backend and bare,
# reports plausible live bytes and valid JSON, and rejects bad usage with
# one line and status 2. Never asserts timings or RSS ratios.
. "$TOP_SRCDIR/t/lib.sh"

BCSIM="$TOP_BUILDDIR/tools/bcsim"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

# A small cache and a short run: 4 threads, 8 MiB, 1 MiB memtable.
ARGS="--json --duration=2 --threads=4 --cache=8M --block=16K --memtable=1M --seed=7"

# plausible FILE: the JSON parses; some reads ran; live requested is within
# cache + memtable + a block pinned per thread, and usable >= requested.
plausible() {
    "$PY" - "$1" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
cap = d["cache_bytes"] + d["memtable_bytes"] + d["threads"] * 2 * d["block_bytes"]
problems = []
if d["ops"] <= 0 or d["ops_per_s"] <= 0:
    problems.append("no reads")
if not 0 < d["live_requested"] <= cap:
    problems.append("live_requested %d not in (0, %d]" % (d["live_requested"], cap))
if d["live_usable"] < d["live_requested"]:
    problems.append("usable %d < requested %d" % (d["live_usable"], d["live_requested"]))
if d["live_blocks"] <= 0 or d["memtable_writes"] <= 0:
    problems.append("no blocks or no memtable writes")
if d["rss_peak"] < d["rss_now"] or d["rss_now"] <= 0:
    problems.append("rss peak %d < now %d" % (d["rss_peak"], d["rss_now"]))
for p in problems:
    print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
PYEOF
}

check "$BCSIM" $ARGS && plausible "$TMP/out" 2>"$TMP/why"
rc=$?
[ $rc -eq 0 ] || diag "$TMP/why" </dev/null
ok $rc "bare: runs, JSON parses, live bytes plausible"

for b in $(backends); do
    check shim "$b" "$BCSIM" $ARGS && plausible "$TMP/out" 2>"$TMP/why"
    rc=$?
    [ $rc -eq 0 ] || diag "$TMP/why" </dev/null
    ok $rc "$b: runs, JSON parses, live bytes plausible"
done

check "$BCSIM" --duration=1 --threads=2 --cache=4M --skew=0.9 --interval=0.3
[ $? -eq 0 ] && grep -q '^peak/live ' "$TMP/out" && grep -q ' zipf 0.9$' "$TMP/out" &&
    grep -q '^bcsim: 0\.[0-9] s: .* ops/s' "$TMP/err"
ok $? "plain report, Zipf keys, progress lines on stderr"

check "$BCSIM" --help && grep -q '^Usage: bcsim' "$TMP/out"
ok $? "--help"
check "$BCSIM" --version && grep -q '^bcsim [0-9]' "$TMP/out"
ok $? "--version"

# bad ARGS...: status 2 and exactly one line, "bcsim: <what>: <why>".
bad() {
    "$BCSIM" "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ $rc -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && [ ! -s "$TMP/out" ] &&
        grep -q '^bcsim: [^:]*: ' "$TMP/err"
}
for args in "--threads=0" "--threads=x" "--cache=12X" "--cache=1M --block=128K" \
        "--skew=1" "--spread=-1" "--duration=0" "--keys=1" "--bogus" "-q" \
        "--threads" "extra" "--memtable=1Q"; do
    # shellcheck disable=SC2086
    bad $args
    rc=$?
    [ $rc -eq 0 ] || diag "$TMP/err" </dev/null
    ok $rc "usage error, one line, status 2: $args ($(cat "$TMP/err"))"
done
done_testing
