#!/bin/sh
# record.sh: what recording costs. For each backend, the shim with
# record:off against recording at the default sampling and at sample:1,
# paired and interleaved (A B C, the order rotating each round), on two
# malloc/free-heavy loops: same-size pairs, and churn through a live set.
# Reports throughput ratios (record:off ns / recording ns, so 1.00 is free)
# as median (min..max). Usage: bench/record.sh [ROUNDS] [ITERS] [THREADS...]
# On a machine that other work keeps busy, PAIRS_CLOCK=thread times each
# thread by its CPU time instead of the wall clock (bench/pairs.c).
set -eu

rounds=${1:-9}
iters=${2:-10000000}
shift 2 2>/dev/null || shift $#
threads=${*:-1 2}
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILDDIR:-$PWD}
shim="$build/.libs/libmallocshim.so"
pairs="$build/bench/pairs"
[ -x "$pairs" ] || { echo "record.sh: $pairs: build it with 'make bench/pairs'" >&2; exit 2; }
export MALLOCSHIM_CONF_FILE=/dev/null
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir "$W/shm"

one() {  # one CONF THREADS SIZE MODE -> ns per op
    LD_PRELOAD="$shim" MALLOCSHIM_CONF="$1,shm_dir:$W/shm" "$pairs" "$2" "$3" "$iters" "$4" |
        sed 's/ns_per_pair=//'
}
. "$top/bench/lib.sh"
header "recording cost"
echo "# $rounds rounds of $iters operations per run; ratio = ns(record:off) / ns(recording)"
echo "# clock: ${PAIRS_CLOCK:-wall}; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-9s %3s %-9s %8s %26s %26s\n' backend thr loop off_ns "default sampling" "sample:1"
for b in glibc jemalloc tcmalloc; do
    for thr in $threads; do
        for loop in pairs16 churn; do
            case $loop in pairs16) size=16 mode=plain ;; churn) size=0 mode=churn ;; esac
            : >"$W/off"; : >"$W/r1"; : >"$W/r2"
            r=0
            while [ $r -lt "$rounds" ]; do
                for k in 0 1 2; do
                    case $(( (r + k) % 3 )) in
                    0) one "backend:$b,record:off" $thr $size $mode >>"$W/off.$r" ;;
                    1) one "backend:$b,record:on" $thr $size $mode >>"$W/def.$r" ;;
                    2) one "backend:$b,record:on,sample:1" $thr $size $mode >>"$W/one.$r" ;;
                    esac
                done
                off=$(cat "$W/off.$r"); def=$(cat "$W/def.$r"); s1=$(cat "$W/one.$r")
                echo "$off" >>"$W/off"
                awk -v a="$off" -v b="$def" 'BEGIN { printf "%.4f\n", a / b }' >>"$W/r1"
                awk -v a="$off" -v b="$s1" 'BEGIN { printf "%.4f\n", a / b }' >>"$W/r2"
                rm -f "$W/off.$r" "$W/def.$r" "$W/one.$r"
                r=$((r + 1))
            done
            printf '%-9s %3s %-9s %8s %26s %26s\n' $b $thr $loop "$(med <"$W/off" | cut -d' ' -f1)" \
                "$(med <"$W/r1")" "$(med <"$W/r2")"
        done
    done
done
