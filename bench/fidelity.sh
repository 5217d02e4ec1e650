#!/bin/sh
# fidelity.sh: does a replay predict the real thing? One workload, run for
# real under each config (glibc, glibc arenas:1, 2 and 4, jemalloc,
# tcmalloc), and captured once under glibc (shimdump --capture) and
# replayed under each config (shimreplay --all --touch=all). Prints, per
# config, the real and the replayed RSS per live byte, at the peak and at
# the end, their ratio, and whether the two rankings agree.
#
# Both sides count the heap's RSS, not the program's code: a real run's is
# its anonymous RSS (RssAnon, sampled every 200 ms: no file-backed pages,
# such as librocksdb's 15-17 MB of code, and not the segment's shared
# pages), a replay's its RSS less its RSS before its first call
# (peak_rss_bytes - base_rss_bytes; end_rss_bytes - base_rss_bytes). Live
# bytes are the requested bytes of live blocks, from the time series of a
# shimdump --json taken every 2 s (the replay counts requested bytes too).
# "peak" is the highest RSS over the highest live bytes; "end" the last
# RSS over the last live bytes. The capture starts CAPTURE_AT seconds into
# the run and lasts CAPTURE seconds.
#
# Usage: bench/fidelity.sh bcsim|dbbench [ROUNDS]   (from the build directory)
# Environment: CAPTURE (20), CAPTURE_AT (1), THREADS (16), TOUCH (all: the
# replays' --touch; a list, "first all", replays each trace under each and
# prints a table for each), PACE (set: the
# replays with --pace, each call at its captured time; unset: --no-pace, as
# its results before pacing became shimreplay's default), REPEAT
# (shimreplay --repeat: 1, each round's own), COMPACT (set: the
# replays with --compact-start, without the free space glibc held among
# the starting heap); bcsim: CACHE
# (256M); dbbench: as bench/dbbench.sh (DBBENCH_DB, DBBENCH_NUM,
# DBBENCH_CACHE).
set -eu

work=${1:?usage: bench/fidelity.sh bcsim|dbbench [ROUNDS]}
rounds=${2:-1}
cap=${CAPTURE:-20}
cap_at=${CAPTURE_AT:-1}
threads=${THREADS:-16}
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILDDIR:-$PWD}
shim="$build/.libs/libmallocshim.so"
sd="$build/tools/shimdump"
sr="$build/tools/shimreplay"
[ -r "$shim" ] && [ -x "$sr" ] || { echo "fidelity.sh: build first (with libzstd)" >&2; exit 2; }
export MALLOCSHIM_CONF_FILE=/dev/null MALLOCSHIM_LIB="$shim"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir "$W/shm"
secs=$((cap_at + cap + 2))

case $work in
bcsim)
    cmd="$build/tools/bcsim --threads=$threads --cache=${CACHE:-256M} --duration=$secs --hold=1" ;;
dbbench)
    db=${DBBENCH_DB:-/var/tmp/mallocshim-dbbench}
    num=${DBBENCH_NUM:-2000000}
    cache=${DBBENCH_CACHE:-67108864}
    command -v db_bench >/dev/null || { echo "fidelity.sh: db_bench not found (rocksdb-tools)" >&2; exit 2; }
    . "$top/bench/lib.sh"
    dbbench_db "$db" "$num"
    cmd="db_bench --db=$db --use_existing_db=1 --num=$num --cache_size=$cache --threads=$threads
         --block_size=16384 --compression_type=lz4 --statistics=0 --histogram=0
         --benchmarks=readrandom --duration=$secs" ;;
*) echo "fidelity.sh: bcsim or dbbench" >&2; exit 2 ;;
esac

# run CONF OUT [capture]: the workload under the shim with CONF; OUT gets
# "peak_rss end_rss peak_live end_live" (bytes). With `capture`, a capture
# of it into $W/trace as well.
run() {
    MALLOCSHIM_CONF="$1,shm_dir:$W/shm" LD_PRELOAD="$shim" $cmd >"$W/run.out" 2>&1 &
    pid=$!
    : >"$W/rss"
    rm -f "$W/jlast"
    t=0
    while kill -0 $pid 2>/dev/null; do
        awk '/^RssAnon:/ { print $2 * 1024 }' /proc/$pid/status >>"$W/rss" 2>/dev/null || true
        if [ $((t % 10)) -eq 9 ] && "$sd" --dir "$W/shm" --json $pid >"$W/j" 2>/dev/null; then
            mv "$W/j" "$W/jlast"
        fi
        if [ "${3:-}" = capture ] && [ $t -eq $((cap_at * 5)) ]; then
            rm -f "$W/trace"
            "$sd" --capture=$cap -o "$W/trace" $pid >"$W/cap.out" 2>"$W/cap.err" &
        fi
        t=$((t + 1))
        sleep 0.2
    done
    wait $pid || true
    [ "${3:-}" = capture ] && wait
    # the live bytes' last samples: the end's, before the hold or the exit
    python3 - "$W/rss" "$W/jlast" >"$2" <<'EOF'
import json, sys
rss = [int(x) for x in open(sys.argv[1]) if x.strip()]
live = [s["live_bytes"] for s in json.load(open(sys.argv[2]))["series"]]
print(max(rss), rss[-2] if len(rss) > 1 else rss[-1], max(live), live[-1])
EOF
}

configs="backend:glibc|backend:glibc,arenas:1|backend:glibc,arenas:2|backend:glibc,arenas:4|backend:jemalloc|backend:tcmalloc"
names="glibc|glibc arenas:1|glibc arenas:2|glibc arenas:4|jemalloc|tcmalloc"
r=1
while [ $r -le "$rounds" ]; do
    echo "fidelity: $work round $r: the real runs" >&2
    i=1
    IFS='|'
    for c in $configs; do
        unset IFS
        run "$c,record:on" "$W/real.$r.$i"
        echo "  $(echo "$names" | cut -d'|' -f$i): $(cat "$W/real.$r.$i")" >&2
        i=$((i + 1))
        IFS='|'
    done
    unset IFS
    echo "fidelity: $work round $r: captured under glibc, replayed under each config" >&2
    run "backend:glibc,record:on" "$W/cap.$r" capture
    cat "$W/cap.out" >&2
    for tm in ${TOUCH:-all}; do
        "$sr" --all --touch=$tm --repeat="${REPEAT:-1}" $([ -n "${PACE:-}" ] && echo --pace || echo --no-pace) \
            ${COMPACT:+--compact-start} --json -q "$W/trace" \
            >"$W/replay.$r.$tm.json"
        cp "$W/replay.$r.$tm.json" "$W/replay.$r.json"
        echo "  --touch=$tm:" >&2
    # this round's capture beside its replays: the free space glibc held at
    # the capture's start (the captured config starts with it), and each
    # replay's RSS per live byte at the peak
    python3 - "$W/replay.$r.json" "$W/cap.$r" >&2 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
pr, er, pl, el = (int(x) for x in open(sys.argv[2]).read().split())
free = d["trace"].get("start_free_bytes")
runs = ", ".join(f'{r["config"]} {(r["peak_rss_bytes"] - r["base_rss_bytes"]) / r["peak_live_bytes"]:.2f}'
                 for r in d["runs"] if r["exit"] == 0)
print(f"  captured run {pr / pl:.2f}; start free {free / 2**20:.0f} MiB" if free is not None
      else f"  captured run {pr / pl:.2f}; start free not said", f"; replays at the peak: {runs}", sep="")
EOF
    done
    r=$((r + 1))
done

for tm in ${TOUCH:-all}; do
echo "--touch=$tm $([ -n "${PACE:-}" ] && echo --pace || echo --no-pace):"
python3 - "$W" "$rounds" "$names" "$work" "$tm" <<'EOF'
import json, sys, statistics as st
W, rounds, names, work, tm = sys.argv[1], int(sys.argv[2]), sys.argv[3].split("|"), sys.argv[4], sys.argv[5]
real = {n: [] for n in names}
rep = {n: [] for n in names}
for r in range(1, rounds + 1):
    for i, n in enumerate(names, 1):
        pr, er, pl, el = (int(x) for x in open(f"{W}/real.{r}.{i}").read().split())
        real[n].append((pr / pl, er / el))
    for run in json.load(open(f"{W}/replay.{r}.{tm}.json"))["runs"]:
        b = run["base_rss_bytes"]
        rep[run["config"]].append(((run["peak_rss_bytes"] - b) / run["peak_live_bytes"],
                                   (run["end_rss_bytes"] - b) / run["end_live_bytes"]))
med = lambda v, k: st.median(x[k] for x in v)
span = lambda v, k: f"{min(x[k] for x in v):.2f}..{max(x[k] for x in v):.2f}"
print(f"{work}: the heap's RSS per live byte, real (under each config) and replayed (one capture under glibc)")
print(f"{'config':<16}{'real peak':>11}{'replay':>9}{'ratio':>8}{'real end':>11}{'replay':>9}{'ratio':>8}")
for n in names:
    if not rep[n]:
        continue
    rp, ep = med(real[n], 0), med(rep[n], 0)
    re_, ee = med(real[n], 1), med(rep[n], 1)
    print(f"{n:<16}{rp:>11.2f}{ep:>9.2f}{ep / rp:>8.2f}{re_:>11.2f}{ee:>9.2f}{ee / re_:>8.2f}")
    if rounds > 1:
        print(f"{'  min..max':<16}{span(real[n], 0):>11} {span(rep[n], 0):>10}{'':>7}"
              f"{span(real[n], 1):>11} {span(rep[n], 1):>10}")
cap = []
for r in range(1, rounds + 1):
    pr, er, pl, el = (int(x) for x in open(f"{W}/cap.{r}").read().split())
    cap.append((pr / pl, er / el))
g = names[0]
print(f"{'(captured run)':<16}{med(cap, 0):>11.2f}{med(rep[g], 0):>9.2f}{med(rep[g], 0) / med(cap, 0):>8.2f}"
      f"{med(cap, 1):>11.2f}{med(rep[g], 1):>9.2f}{med(rep[g], 1) / med(cap, 1):>8.2f}"
      f"   the glibc run that was captured, beside its replay under glibc")
for k, what in ((0, "peak"), (1, "end")):
    have = [n for n in names if rep[n]]
    a = sorted(have, key=lambda n: med(real[n], k))
    b = sorted(have, key=lambda n: med(rep[n], k))
    print(f"ranking at the {what}: real {' < '.join(a)}")
    print(f"{'':>18}replay {' < '.join(b)}  ({'same' if a == b else 'differs'})")
EOF
done
