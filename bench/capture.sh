#!/bin/sh
# capture.sh: what a capture costs the captured program. bcsim and db_bench
# readrandom (16 threads each), under the shim on glibc with recording at
# its defaults, paired and interleaved (the order alternating each round):
# plain, and captured for the whole run (shimdump --capture from as soon as
# the process listens), after one plain run not counted (a warm-up: a DB
# just made is not in the page cache yet). Reports the captured run's
# ops/s over the plain one's, median (min..max) over the rounds, and the
# trace's events/s, bytes/s, bytes per event and drops.
#
# With START=1 the captured run is captured from its start instead
# (capture_start, mallocshim.conf(5)): its whole life, the summary taken
# from the trace (shimreplay --info).
#
# Usage: bench/capture.sh [ROUNDS] [SECONDS]   (from the build directory)
# Environment: WORKLOADS ("bcsim dbbench"), BACKEND (glibc), THREADS (16), START;
# db_bench's DB as bench/dbbench.sh (DBBENCH_DB, DBBENCH_NUM, DBBENCH_CACHE).
set -eu

rounds=${1:-3}
secs=${2:-15}
threads=${THREADS:-16}
backend=${BACKEND:-glibc}
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILDDIR:-$PWD}
shim="$build/.libs/libmallocshim.so"
sd="$build/tools/shimdump"
[ -r "$shim" ] || { echo "capture.sh: $shim: build first" >&2; exit 2; }
export MALLOCSHIM_CONF_FILE=/dev/null
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
db=${DBBENCH_DB:-/var/tmp/mallocshim-dbbench}
num=${DBBENCH_NUM:-2000000}
cache=${DBBENCH_CACHE:-67108864}
. "$top/bench/lib.sh"
case " ${WORKLOADS:-bcsim dbbench} " in
*" dbbench "*)
    command -v db_bench >/dev/null || { echo "capture.sh: db_bench not found (rocksdb-tools)" >&2; exit 2; }
    dbbench_db "$db" "$num" ;;
esac

# one WORKLOAD captured|plain: prints ops/s (and, captured, the summary
# line's figures on stderr into $W/sum)
one() {
    case $1 in
    bcsim) set -- "$2" "$build/tools/bcsim" --threads=$threads --cache=256M --duration=$secs ;;
    dbbench) set -- "$2" db_bench --db="$db" --use_existing_db=1 --num="$num" --cache_size="$cache" \
                 --threads=$threads --block_size=16384 --compression_type=lz4 --statistics=0 \
                 --histogram=0 --benchmarks=readrandom --duration=$secs ;;
    esac
    mode=$1
    shift
    start=
    if [ "$mode" = captured ] && [ -n "${START:-}" ]; then
        rm -f "$W/trace"
        start=",capture_start:$W/trace"
    fi
    MALLOCSHIM_CONF="backend:$backend,shm_dir:$W$start" LD_PRELOAD="$shim" "$@" >"$W/out" 2>&1 &
    pid=$!
    if [ -n "$start" ]; then
        wait $pid
        # the summary shimdump would print, from the trace
        "$build/tools/shimreplay" --info --json "$W/trace" >"$W/info.json"
        python3 - "$W/trace" "$W/info.json" >"$W/sum" <<'EOF'
import json, sys
t = json.load(open(sys.argv[2]))["trace"]
s = t["duration_ns"] / 1e9
mib = t["file_bytes"] / 2**20
print(f"{sys.argv[1]}: {t['events']} events of {t['threads']} threads in {s:.1f} s; "
      f"{mib:.1f} MiB ({mib / s:.1f} MiB/s)")
print(f"{sys.argv[1]}: {t['dropped']} events dropped "
      f"({100 * t['dropped'] / max(1, t['events'] + t['dropped']):.2f}%)")
EOF
    elif [ "$mode" = captured ]; then
        rm -f "$W/trace"
        n=0
        until grep -q "@mallocshim\.capture\.$pid\$" /proc/net/unix || [ $n -ge 1200 ]; do
            sleep 0.05
            n=$((n + 1))
        done
        "$sd" --capture=$((secs + 60)) -o "$W/trace" $pid >"$W/sum" 2>/dev/null || true
    fi
    [ -n "$start" ] || wait $pid
    case $* in
    *bcsim*) sed -n 's/^ops .*(\([0-9]*\) ops\/s).*/\1/p' "$W/out" ;;
    *) sed -n 's/^readrandom *:.* \([0-9][0-9]*\) ops\/sec.*/\1/p' "$W/out" | tail -1 ;;
    esac
}

for w in ${WORKLOADS:-bcsim dbbench}; do
    : >"$W/$w.ratios"
    : >"$W/$w.sums"
    one $w plain >/dev/null   # a warm-up, not counted: the DB's pages into the page cache
    r=1
    while [ $r -le "$rounds" ]; do
        if [ $((r % 2)) -eq 1 ]; then
            a=$(one $w plain); b=$(one $w captured)
        else
            b=$(one $w captured); a=$(one $w plain)
        fi
        echo "$w round $r: plain $a ops/s, captured $b ops/s; $(cat "$W/sum" | head -1)" >&2
        echo "$a $b" >>"$W/$w.ratios"
        head -2 "$W/sum" | grep -v '^replay' >>"$W/$w.sums" || true
        r=$((r + 1))
    done
    python3 - "$w" "$W/$w.ratios" "$W/$w.sums" <<'EOF'
import re, statistics as st, sys
w = sys.argv[1]
pairs = [tuple(float(x) for x in l.split()) for l in open(sys.argv[2]) if l.strip()]
ratios = [b / a for a, b in pairs]
print(f"{w}: captured / plain ops/s {st.median(ratios):.3f} ({min(ratios):.3f}..{max(ratios):.3f}), "
      f"{len(ratios)} paired rounds; plain {st.median(a for a, _ in pairs):.0f} ops/s")
for l in open(sys.argv[3]):
    m = re.search(r": (\d+) events of (\d+) threads in ([\d.]+) s.*?; ([\d.]+ \w+) \(([\d.]+ \w+)/s\)", l)
    if m:
        ev, secs = int(m.group(1)), float(m.group(3))
        print(f"  {ev} events in {secs} s: {ev / secs / 1e6:.2f} M events/s, {m.group(4)}, "
              f"{m.group(5)}/s")
    m = re.search(r": (\d+) events? dropped \(([\d.]+)%\)", l)
    if m:
        print(f"    {m.group(1)} events dropped ({m.group(2)}%)")
EOF
done
