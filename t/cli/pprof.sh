#!/bin/sh
# pprof.sh: shimdump --pprof, read by the real reader, go tool pprof. The
# program with known call sites (t/integration/sites) under each backend with
# sample:1 (every block tracked, so the figures are exact): the profile is
# gzip, and go tool pprof reads it: -raw's inuse_space total equals the sites'
# est_live_bytes from shimdump --stacks --json and the live bytes of --json,
# its alloc_* the sites' allocations; -top names the program's functions and
# -lines their file:line (the malloc's line in sites.cc); -tags has the age,
# size class, process and backend; -comments the sampling. A --json snapshot
# gives the same profile's totals; stacks:0, a terminal and a build without
# protobuf-c are refused in one line. Without go, each check skips. With
# PPROF_SCREENSHOT=FILE.png (not in make check: it is slow) headless
# Chromium loads go tool pprof -http's flame graph and saves it there.
. "$TOP_SRCDIR/t/lib.sh"

SD="$TOP_BUILDDIR/tools/shimdump"
SRC="$TOP_SRCDIR/t/integration/sites.cc"
export NO_COLOR=1

checks="the profile is gzip; go tool pprof -raw totals equal --stacks --json and the live bytes
go tool pprof -top names the program's functions
go tool pprof -lines: file:line of the mallocs
go tool pprof -tags: age, size class, process, backend; -comments: the sampling
a --json snapshot gives the same totals"

# skip_checks PREFIX REASON: skips each of $checks (in this shell: the
# TAP count goes on).
skip_checks() {
    while read -r what; do
        skip "$1$what" "$2"
    done <<EOF
$checks
EOF
}

# Built without protobuf-c: --pprof says so, and that is all there is.
"$SD" --pprof "$TMP/none" >/dev/null 2>"$TMP/err"
rc=$?
if grep -q 'not built in' "$TMP/err"; then
    [ $rc -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q '^shimdump: --pprof: not built in: ' "$TMP/err"
    ok $? "--pprof in a build without it: one line, exit 2: $(cat "$TMP/err")"
    skip_checks "" "shimdump built without --pprof"
    done_testing
    exit
fi

# go tool pprof, offline, with a home and a cache of the test's own.
GO=${GO-$(command -v go || true)}
export HOME="$TMP/home" GOCACHE="$TMP/gocache" GOPATH="$TMP/gopath" GOPROXY=off GOFLAGS= GOTOOLCHAIN=local
export PPROF_TMPDIR="$TMP/pprof" PPROF_BINARY_PATH="$TMP/nobinaries"
mkdir -p "$HOME" "$PPROF_TMPDIR"
pprof() {
    "$GO" tool pprof "$@" 2>"$TMP/pprof.err"
}

# start_sites DIR CONF: runs sites DIR under the shim; sets $pid.
start_sites() {
    mkdir -p "$1"
    MALLOCSHIM_CONF="$2,shm_dir:$TMP/shm" LD_PRELOAD="$SHIM" "$T/sites" "$1" >"$1/out" 2>"$1/err" &
    spid=$!
    wait_for "$1/ready" 1200 && pid=$(cat "$1/ready") && [ "$pid" = "$spid" ]
}

stop_sites() {
    touch "$1/stop"
    wait "$spid"
}

# totals.py RAW STACKS JSON: the sums of go tool pprof -raw's four value
# columns against --stacks --json's sites and --json's totals; prints them.
cat >"$TMP/totals.py" <<'EOF'
import json, re, sys
raw = open(sys.argv[1]).read()
head = re.search(r"^Samples:\n(.*)\n", raw, re.M).group(1).split()
names = [h.split("/")[0] for h in head]
assert names == ["alloc_objects", "alloc_space", "inuse_objects", "inuse_space[dflt]"] or \
    names == ["alloc_objects", "alloc_space", "inuse_objects", "inuse_space"], head
tot = [0, 0, 0, 0]
for m in re.finditer(r"^ +(\d+) +(\d+) +(\d+) +(\d+):", raw, re.M):
    tot = [t + int(v) for t, v in zip(tot, m.groups())]
st = json.load(open(sys.argv[2]))
snap = json.load(open(sys.argv[3]))
sites = sum(s["est_live_bytes"] for s in st["by_live_bytes"])
blocks = sum(s["est_live_blocks"] for s in st["by_live_bytes"])
assert st["stacks"] <= 64, st["stacks"]   # every site is in the top 64
nostack = snap["call_stacks"]["no_stack_live_bytes"]
assert tot[3] == sites + nostack, ("inuse_space", tot[3], sites, nostack)
assert tot[2] == blocks + snap["call_stacks"]["no_stack_live_count"], ("inuse_objects", tot[2], blocks)
# sample:1: the live totals are exact, and every live block is tracked
assert tot[3] == snap["totals"]["live_bytes"], ("live bytes", tot[3], snap["totals"]["live_bytes"])
assert snap["totals"]["live_bytes_stderr"] == 0
allocs = sum(s["allocs"] for s in snap["call_stacks"]["stacks"])
req = sum(s["requested_bytes"] for s in snap["call_stacks"]["stacks"])
assert tot[0] == allocs and tot[1] == req, ("alloc_*", tot[:2], allocs, req)
assert allocs >= 400 + 300 + 500 + 50000 + 80, allocs
print("inuse_space %d = --stacks --json %d = live bytes %d; inuse_objects %d; alloc %d objects, %d B"
      % (tot[3], sites + nostack, snap["totals"]["live_bytes"], tot[2], tot[0], tot[1]))
EOF

# line_of PATTERN: the line of sites.cc that holds PATTERN.
line_of() {
    grep -n "$1" "$SRC" | head -n 1 | cut -d: -f1
}

for b in $(backends); do
    d="$TMP/$b"
    start_sites "$d" "backend:$b,sample:1,stacks:16"
    ok $? "$b: the program with known call sites started"
    check "$SD" --dir "$TMP/shm" --pprof "$pid" && cp "$TMP/out" "$d/heap.pb.gz" &&
        check "$SD" --dir "$TMP/shm" --stacks --json --top=64 "$pid" && cp "$TMP/out" "$d/stacks.json" &&
        check "$SD" --dir "$TMP/shm" --json "$pid" && cp "$TMP/out" "$d/snap.json"
    ok $? "$b: --pprof, --stacks --json and --json of the sites"
    if [ -z "$GO" ]; then
        skip_checks "$b: " "no go (Debian: golang-go)"
        stop_sites "$d"
        continue
    fi
    [ "$(head -c 2 "$d/heap.pb.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ] && gzip -t "$d/heap.pb.gz" &&
        pprof -raw "$d/heap.pb.gz" >"$d/raw" && check python3 "$TMP/totals.py" "$d/raw" "$d/stacks.json" "$d/snap.json"
    ok $? "$b: the profile is gzip ($(wc -c <"$d/heap.pb.gz") bytes); go tool pprof -raw: $(cat "$TMP/out")" ||
        diag "$TMP/pprof.err"
    # -top with exact bytes: its total is ours, and the sites are named
    live=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["totals"]["live_bytes"])' "$d/snap.json")
    if [ "$HAVE_LIBELF" = yes ]; then
        pprof -top -unit=B "$d/heap.pb.gz" >"$d/top" &&
            grep -q "^Showing nodes accounting for ${live}B, 100% of ${live}B total\$" "$d/top" &&
            grep -Eq '^ +6400000B .* app::Cache::fill$' "$d/top" &&
            grep -Eq '^ +900000B .* session_open$' "$d/top" &&
            grep -Eq '^ +345680B .* deep_leaf$' "$d/top" &&
            grep -Eq ' work$' "$d/top" && grep -Eq ' main$' "$d/top" &&
            pprof -top -unit=B -sample_index=alloc_space "$d/heap.pb.gz" >"$d/topalloc" &&
            grep -Eq '^ +10000000B .* scratch_churn$' "$d/topalloc" &&
            grep -Eq '^ +300000B .* temp_buffers' "$d/topalloc"
        ok $? "$b: go tool pprof -top: ${live}B in all, app::Cache::fill 6400000B, session_open, deep_leaf, work, main; alloc_space: scratch_churn, temp_buffers" ||
            { diag "$d/top" "$TMP/pprof.err"; }
    else
        skip "$b: go tool pprof -top names the program's functions" "shimdump built without libelf"
    fi
    if [ "$HAVE_LIBDW" = yes ]; then
        fill=$(line_of 'blocks\[i\] = malloc(16000)') sess=$(line_of 'new char\[3000\]')
        pprof -top -lines -unit=B "$d/heap.pb.gz" >"$d/lines" &&
            grep -Eq "^ +6400000B .* app::Cache::fill [^ ]*/sites\.cc:$fill\$" "$d/lines" &&
            grep -Eq "^ +900000B .* session_open [^ ]*/sites\.cc:$sess\$" "$d/lines"
        ok $? "$b: go tool pprof -lines: app::Cache::fill at sites.cc:$fill, session_open at sites.cc:$sess" ||
            diag "$d/lines" "$TMP/pprof.err"
    else
        skip "$b: go tool pprof -lines: file:line of the mallocs" "shimdump built without libdw"
    fi
    pprof -tags "$d/heap.pb.gz" >"$d/tags" && pprof -comments "$d/heap.pb.gz" >"$d/comments" &&
        grep -Eq '^ *age: Total' "$d/tags" && grep -Eq '%\): <=[0-9.]+(us|ms|s|m|h)$' "$d/tags" &&
        grep -Eq '^ +6\.1MB \( *[0-9.]+%\): 14-16K$' "$d/tags" &&
        grep -Eq '\(  100%\): sites$' "$d/tags" && grep -Eq "\(  100%\): $b\$" "$d/tags" &&
        grep -Eq "\(  100%\): $pid\$" "$d/tags" &&
        grep -q "^mallocshim heap profile: pid $pid (sites), backend $b " "$d/comments" &&
        grep -q '^sampling: every allocation tracked (sample:1)' "$d/comments" &&
        grep -q "^inuse_space: $live B, standard error 0 B; live requested bytes of all blocks (the counters): $live B" \
            "$d/comments"
    ok $? "$b: go tool pprof -tags: age, size class 14-16K, process, pid and backend; -comments: the sampling, both totals" ||
        diag "$d/tags" "$d/comments" "$TMP/pprof.err"
    # a saved snapshot, its process gone: the same profile's figures
    stop_sites "$d"
    check "$SD" --pprof "$d/snap.json" && cp "$TMP/out" "$d/saved.pb.gz" &&
        pprof -raw "$d/saved.pb.gz" >"$d/savedraw" &&
        check python3 "$TMP/totals.py" "$d/savedraw" "$d/stacks.json" "$d/snap.json"
    ok $? "$b: --pprof of the --json snapshot: $(cat "$TMP/out")" || diag "$TMP/pprof.err"
done

# Refusals, one line each: a process without stacks, a terminal.
start_sites "$TMP/nostacks" "sample:1,stacks:0"
"$SD" --dir "$TMP/shm" --pprof "$pid" >"$TMP/out" 2>"$TMP/err"
rc=$?
stop_sites "$TMP/nostacks"
[ $rc -eq 2 ] && [ ! -s "$TMP/out" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q 'no call stacks' "$TMP/err"
ok $? "stacks:0: exit 2, nothing on stdout: $(cat "$TMP/err")"
if command -v script >/dev/null; then
    script -qec "'$SD' --pprof '$TMP/none'" /dev/null >"$TMP/out" 2>&1
    rc=$?
    [ $rc -eq 2 ] && grep -q 'standard output is a terminal' "$TMP/out"
    ok $? "a terminal: exit 2, nothing written: $(tr -d '\r' <"$TMP/out")"
else
    skip "a terminal: refused" "no script(1) (Debian: bsdutils)"
fi

# The flame graph of go tool pprof -http, in headless Chromium, saved to
# $PPROF_SCREENSHOT for a person to look at: only when asked for (a server
# and a browser take seconds, and make check keeps to what must hold).
CHROMIUM=${CHROMIUM-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "${PPROF_SCREENSHOT:-}" ]; then
    skip "go tool pprof -http: the flame graph in Chromium" "set PPROF_SCREENSHOT=FILE.png to take it"
elif [ -z "$GO" ] || [ -z "$CHROMIUM" ]; then
    skip "go tool pprof -http: the flame graph in Chromium" "needs go and chromium"
else
    port=$((20000 + $$ % 20000))
    "$GO" tool pprof -no_browser -http="127.0.0.1:$port" "$TMP/glibc/heap.pb.gz" >"$TMP/http.out" 2>&1 &
    hpid=$!
    _i=0
    until python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
        "http://127.0.0.1:$port/ui/" 2>/dev/null || [ $_i -ge 300 ]; do
        sleep 0.1
        _i=$((_i + 1))
    done
    timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --user-data-dir="$TMP/chromium" --no-first-run --disable-extensions \
        --window-size=1400,900 --virtual-time-budget=5000 --screenshot="$PPROF_SCREENSHOT" \
        "http://127.0.0.1:$port/ui/flamegraph?si=inuse_space" >/dev/null 2>"$TMP/chromium.err"
    rc=$?
    kill "$hpid"
    wait "$hpid" 2>/dev/null
    [ $rc -eq 0 ] && [ -s "$PPROF_SCREENSHOT" ]
    ok $? "go tool pprof -http: the flame graph in Chromium, saved to $PPROF_SCREENSHOT" ||
        diag "$TMP/http.out" "$TMP/chromium.err"
fi
done_testing
