#!/bin/sh
# stacks.sh: what call stacks cost. callgrind counts the instructions of a
# malloc+free pair (16 B, 1 thread, bench/pairs) under the shim with
# sample:1, with stacks:0 and with stacks:N, at several call depths
# (PAIRS_DEPTH): the difference is the cost of one stack, since every
# allocation is tracked. Then the same at the default sampling (1 in 256),
# which is what a program pays per pair. Startup is cancelled by running two
# lengths. Usage: bench/stacks.sh [BACKEND]   (from the build directory)
set -eu
build=${BUILDDIR:-$PWD}
shim="$build/.libs/libmallocshim.so"
pairs="$build/bench/pairs"
b=${1:-glibc}
export MALLOCSHIM_CONF_FILE=/dev/null
command -v valgrind >/dev/null || { echo "stacks.sh: valgrind is not installed" >&2; exit 2; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

count() {  # count CONF DEPTH ITERS -> instructions
    PAIRS_DEPTH="$2" LD_PRELOAD="$shim" MALLOCSHIM_CONF="$1" valgrind --tool=callgrind \
        --callgrind-out-file=/dev/null "$pairs" 1 16 "$3" 2>&1 >/dev/null |
        sed -n 's/.*Collected : *//p'
}
per_pair() {  # per_pair CONF DEPTH N1 N2
    a=$(count "$1" "$2" "$3")
    c=$(count "$1" "$2" "$4")
    awk -v a="$a" -v c="$c" -v n="$(($4 - $3))" 'BEGIN { printf "%.1f", (c - a) / n }'
}

base="backend:$b,record:on,shm_dir:$W,interval_ms:60000"
echo "# mallocshim call-stack cost, $b backend: instructions per malloc+free pair (callgrind)"
echo "# depth: frames above the loop (PAIRS_DEPTH); the stack at malloc is about depth+4 deep"
printf '%6s %7s %14s %14s %12s %18s\n' depth stacks "sample:1" "sample:1+st" "per stack" "default sampling"
for depth in 0 10 30; do
    for st in 16 64; do
        s0=$(per_pair "$base,sample:1,stacks:0" $depth 20000 60000)
        s1=$(per_pair "$base,sample:1,stacks:$st" $depth 20000 60000)
        d0=$(per_pair "$base,stacks:0" $depth 200000 600000)
        d1=$(per_pair "$base,stacks:$st" $depth 200000 600000)
        printf '%6s %7s %14s %14s %12s %9s -> %-8s\n' $depth $st "$s0" "$s1" \
            "$(awk -v x="$s0" -v y="$s1" 'BEGIN { printf "%.0f", y - x }')" "$d0" "$d1"
    done
done
