#!/bin/sh
# watch.sh: what `shimdump --watch` costs the process it watches. bench/pairs
# (churn through a live set, recording on at the default sampling) runs
# alone and with `shimdump --watch=0.2` reading its segment five times a
# second (ten times the default rate), paired and interleaved (A B, B A, ...).
# Reports ratio = ns alone / ns watched (1.00: no cost) as median (min..max).
# Usage: bench/watch.sh [ROUNDS] [ITERS] [THREADS]   (from the build dir)
set -eu

rounds=${1:-9}
iters=${2:-20000000}
thr=${3:-1}
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILDDIR:-$PWD}
shim="$build/.libs/libmallocshim.so"
pairs="$build/bench/pairs"
sd="$build/tools/shimdump"
[ -x "$pairs" ] || { echo "watch.sh: $pairs: build it with 'make bench/pairs'" >&2; exit 2; }
export MALLOCSHIM_CONF_FILE=/dev/null NO_COLOR=1
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir "$W/shm"
. "$top/bench/lib.sh"

one() {  # one BACKEND WATCHED(0|1) -> ns per op
    env LD_PRELOAD="$shim" MALLOCSHIM_CONF="backend:$1,record:on,shm_dir:$W/shm" \
        "$pairs" "$thr" 0 "$iters" churn >"$W/out" &
    p=$!
    w=
    if [ "$2" = 1 ]; then
        while [ ! -e "$W/shm/mallocshim.$p" ] && kill -0 $p 2>/dev/null; do sleep 0.01; done
        "$sd" --dir "$W/shm" --watch=0.2 "$p" >/dev/null 2>&1 </dev/null &
        w=$!
    fi
    wait $p
    [ -n "$w" ] && { kill $w; wait $w 2>/dev/null || true; }
    sed 's/ns_per_pair=//' "$W/out"
}

header "shimdump --watch cost"
echo "# $rounds rounds of $iters churn operations, $thr thread(s); ratio = ns alone / ns watched"
printf '%-9s %10s %26s\n' backend alone_ns "ratio (watched every 0.2 s)"
for b in glibc jemalloc tcmalloc; do
    : >"$W/a"; : >"$W/r"
    r=0
    while [ $r -lt "$rounds" ]; do
        if [ $((r % 2)) -eq 0 ]; then a=$(one $b 0); w=$(one $b 1); else w=$(one $b 1); a=$(one $b 0); fi
        echo "$a" >>"$W/a"
        awk -v a="$a" -v b="$w" 'BEGIN { printf "%.4f\n", a / b }' >>"$W/r"
        r=$((r + 1))
    done
    printf '%-9s %10s %26s\n' $b "$(med <"$W/a" | cut -d' ' -f1)" "$(med <"$W/r")"
done
