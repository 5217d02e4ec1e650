#!/bin/sh
# bcsim.sh: what recording costs on an allocation-heavy workload that is not
# a bare malloc loop: tools/bcsim (RocksDB's block-cache pattern: about 9
# small allocations and one 4-16 KiB block per read, frees on other threads)
# at 1 and 2 threads, under each backend. Paired and interleaved, the order
# rotating each round: the shim with record:off, at the default sampling
# (stacks:16), with stacks:0, and with sample:1. Reports ops/s against
# record:off as median (min..max) of the rounds.
# Usage: bench/bcsim.sh [ROUNDS] [SECONDS]   (from the build directory)
set -eu
rounds=${1:-5}
secs=${2:-5}
build=${BUILDDIR:-$PWD}
shim="$build/.libs/libmallocshim.so"
bcsim="$build/tools/bcsim"
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/lib.sh"
[ -r "$shim" ] && [ -x "$bcsim" ] || { echo "bcsim.sh: build first" >&2; exit 2; }
export MALLOCSHIM_CONF_FILE=/dev/null
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

header "bcsim: recording against record:off"
echo "# bcsim --cache=64M --duration=$secs, $rounds rounds, order rotating; ratio: ops/s against record:off"
printf '%-9s %3s %10s %22s %22s %22s\n' backend thr "off ops/s" "default (stacks:16)" "stacks:0" "sample:1"
for b in glibc jemalloc tcmalloc; do
    for t in 1 2; do
        labels="off def nost s1"
        rm -f "$W"/off "$W"/def "$W"/nost "$W"/s1
        r=0
        while [ $r -lt "$rounds" ]; do
            k=0
            while [ $k -lt 4 ]; do
                l=$(echo $labels | cut -d' ' -f$(( (r + k) % 4 + 1 )))
                case $l in
                off) c="record:off" ;; def) c="record:on" ;; nost) c="record:on,stacks:0" ;;
                s1) c="record:on,sample:1" ;;
                esac
                MALLOCSHIM_CONF="backend:$b,$c,shm_dir:$W" LD_PRELOAD="$shim" \
                    "$bcsim" --threads=$t --cache=64M --duration="$secs" --json >"$W/out" 2>&1
                python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ops_per_s"])' \
                    "$W/out" >>"$W/$l"
                k=$((k + 1))
            done
            r=$((r + 1))
        done
        ratio() { paste -d' ' "$W/$1" "$W/off" | awk '{ printf "%.4f\n", $1 / $2 }' | med; }
        printf '%-9s %3s %10s %22s %22s %22s\n' $b $t "$(stats <"$W/off" | cut -d' ' -f1)" \
            "$(ratio def)" "$(ratio nost)" "$(ratio s1)"
    done
done
