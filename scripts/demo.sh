#!/bin/sh
# demo.sh: install what is missing, build, and show why glibc malloc and
# RocksDB's block cache don't get on, and what each fix costs. bcsim (the
# block-cache pattern: 16 threads, a 256 MiB sharded LRU cache of ~16 KiB
# blocks freed on eviction by other threads) runs under the shim with glibc,
# glibc arenas:1, jemalloc and tcmalloc; then a table of ops/s, peak RSS, live
# bytes and RSS/live, and shimdump's waterfall of each run, read from the
# running process; then one HTML page of the four runs side by side
# (shimdump --html), at DEMO_REPORT (/tmp/mallocshim-demo.html). DEMO_SECONDS
# (20) sets each run's length.
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh
sh scripts/build.sh >/dev/null

secs=${DEMO_SECONDS:-20}
W=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$W"
}
trap cleanup EXIT INT TERM
mkdir "$W/shm"
export MALLOCSHIM_LIB="$PWD/.libs/libmallocshim.so"
export MALLOCSHIM_CONF_FILE=/dev/null
export NO_COLOR=1

echo
echo "bcsim: 16 threads read ~16 KiB blocks through a 256 MiB LRU cache for ${secs} s;"
echo "a miss mallocs a block, an eviction frees it (often on another thread)."
runs="glibc|glibc arenas:1|jemalloc|tcmalloc"
n=0
IFS='|'
for run in $runs; do
    unset IFS
    n=$((n + 1))
    set -- $run
    conf="backend:$1,record:on,shm_dir:$W/shm${2:+,$2}"
    printf '  run %d of 4: %-16s' $n "$run"
    MALLOCSHIM_CONF="$conf" LD_PRELOAD="$MALLOCSHIM_LIB" \
        tools/bcsim --duration="$secs" --json --hold=600 >"$W/bc.$n" &
    pid=$!
    while [ ! -s "$W/bc.$n" ]; do
        kill -0 "$pid" 2>/dev/null || { echo "bcsim failed under $run" >&2; exit 1; }
        sleep 0.5
    done
    sleep 1.2   # one more sample of the time series after the report
    # by pid, the process running: its RSS class by class comes from /proc
    tools/shimdump --dir "$W/shm" --json "$pid" >"$W/sd.$n"
    tools/shimdump --dir "$W/shm" "$pid" >"$W/view.$n"
    tools/shimdump --stacks --top=2 --frames=3 "$W/shm/mallocshim.$pid" >"$W/stacks.$n"
    tools/shimdump --check "$W/shm/mallocshim.$pid" >"$W/check.$n" || true
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    pid=
    echo "done"
done

echo
python3 - "$W" <<'EOF'
import json, sys
w = sys.argv[1]
runs = ["glibc", "glibc arenas:1", "jemalloc", "tcmalloc"]
mib = lambda b: b / 1048576
print("%-16s %10s %14s %14s %10s %14s" % ("backend", "ops/s", "peak RSS", "live bytes", "RSS/live", "shimdump live"))
for i, name in enumerate(runs, 1):
    bc = json.load(open("%s/bc.%d" % (w, i)))
    sd = json.load(open("%s/sd.%d" % (w, i)))
    print("%-16s %10.0f %10.1f MiB %10.1f MiB %10.2f %10.1f MiB" % (
        name, bc["ops_per_s"], mib(bc["rss_peak"]), mib(bc["live_requested"]),
        bc["peak_rss_per_live"], mib(sd["totals"]["live_bytes"])))
EOF
echo
echo "peak RSS and live bytes are bcsim's own (VmHWM; the bytes its cache holds);"
echo "'shimdump live' is what the shim recorded, read from its segment."

n=0
IFS='|'
for run in $runs; do
    unset IFS
    n=$((n + 1))
    echo
    echo "=== $run: shimdump's waterfall, read while bcsim held its cache"
    sed -n '/^WHERE THE MEMORY GOES/,/^$/p' "$W/view.$n" | sed '/^$/d'
    # every figure checked against the invariants (shimdump --check)
    sed 's/^pid [0-9]* (bcsim): /  shimdump --check: /' "$W/check.$n"
done
echo
echo "=== which code holds the live bytes (shimdump --stacks, the glibc run; trimmed)"
sed -n '/^CALL SITES BY LIVE BYTES/,/^$/p' "$W/stacks.1" | sed '/^$/d'
report=${DEMO_REPORT:-${TMPDIR:-/tmp}/mallocshim-demo.html}
if tools/shimdump --html "$W/sd.1" "$W/sd.2" "$W/sd.3" "$W/sd.4" >"$report.tmp" &&
    mv "$report.tmp" "$report"; then
    page="The four runs side by side, charts and tables, in one page: $report"
else
    rm -f "$report.tmp"
    page="(shimdump --html failed: no page written)"
fi
echo
echo "glibc gives each thread its own arena; blocks freed into arenas whose tops"
echo "are pinned by live blocks stay in RSS. One arena (arenas:1), jemalloc and"
echo "tcmalloc keep RSS near the live bytes, at the ops/s shown above."
echo
echo "$page"
