#!/bin/sh
# cgdbbench.sh: what the shim costs db_bench in instructions, counted by
# valgrind's callgrind, so that the figure repeats on a noisy machine where
# bench/dbbench.sh's ops/s move by more than the cost in question. Debian's
# db_bench readrandom, one reading thread, the DB opened read-only (nothing
# in it changes from run to run) and its keys drawn from --seed=1. Each run
# is made at two lengths and the instructions of the reading thread (the
# busiest thread that is not the shim's sampler) subtracted, which cancels
# the DB's opening and the shim's start; both lengths are past the first
# 256 stacks of the thread, which libgcc's unwinder takes before it moves
# to libunwind (preload/stack.c), so the figure is the steady state.
# Per backend: bare (glibc alone; libjemalloc.so.2 or libtcmalloc_minimal.so.4
# preloaded alone), the shim with record:off, recording with no block
# tracked (sample:2^30, sample_bytes:0), recording at the default sampling with stacks:0,
# sampling by counts alone (sample_bytes:0, 1 in 256 whatever the size),
# and at the default sampling; instructions per read and bare / run (the
# ratio of reads per instruction, 1 where the shim costs nothing).
# Instructions are not time: cache misses and the sampler thread's passes
# are not in them.
# Usage: bench/cgdbbench.sh [SHORT LONG]   (reads; from the build directory)
# Environment: DBBENCH_DB, DBBENCH_NUM, DBBENCH_CACHE as for bench/dbbench.sh;
# BACKENDS ("glibc jemalloc tcmalloc"); RUNS (the shim's rows, bench/lib.sh's
# cg_table: "off untracked stacks:0 by-counts default", and bytes:2m); ROUNDS (1:
# each backend's bare and rows measured that many times in turn).
set -eu
short=${1:-20000}
long=${2:-80000}
db=${DBBENCH_DB:-/var/tmp/mallocshim-dbbench}
num=${DBBENCH_NUM:-2000000}
cache=${DBBENCH_CACHE:-67108864}
backends=${BACKENDS:-glibc jemalloc tcmalloc}
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILDDIR:-$PWD}
shim="$build/.libs/libmallocshim.so"
libdir=/usr/lib/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
command -v db_bench >/dev/null || { echo "cgdbbench.sh: db_bench not found (Debian: rocksdb-tools)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "cgdbbench.sh: valgrind is not installed" >&2; exit 2; }
[ -r "$shim" ] || { echo "cgdbbench.sh: $shim: build first" >&2; exit 2; }
[ "$long" -gt "$short" ] 2>/dev/null || { echo "cgdbbench.sh: LONG must be more reads than SHORT" >&2; exit 2; }
. "$top/bench/lib.sh"
export MALLOCSHIM_CONF_FILE=/dev/null
W=$(mktemp -d /tmp/cgdbbench.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir "$W/shm"
dbbench_db "$db" "$num"

# count PRELOAD CONF READS -> the instructions of the reading thread
count() {
    rm -f "$W"/cg "$W"/cg-*   # callgrind names a thread's file cg-NN
    env ${1:+LD_PRELOAD="$1"} ${2:+MALLOCSHIM_CONF="$2"} valgrind --tool=callgrind \
        --separate-threads=yes --callgrind-out-file="$W/cg" db_bench --db="$db" \
        --use_existing_db=1 --readonly=1 --num="$num" --cache_size="$cache" --threads=1 \
        --block_size=16384 --compression_type=lz4 --statistics=0 --histogram=0 \
        --benchmarks=readrandom --reads="$3" --seed=1 >"$W/out" 2>&1 ||
        { echo "cgdbbench.sh: db_bench failed under callgrind ($2, $3 reads):" >&2; tail -5 "$W/out" >&2; exit 1; }
    grep -q "^readrandom .* $3 operations" "$W/out" ||
        { echo "cgdbbench.sh: db_bench did not make $3 reads ($2):" >&2; tail -5 "$W/out" >&2; exit 1; }
    busiest=0
    for f in "$W"/cg-*; do
        [ -f "$f" ] || continue
        grep -q 'sampler_main' "$f" && continue
        v=$(sed -n 's/^totals: *//p' "$f")
        case $v in '' | *[!0-9]*) echo "cgdbbench.sh: no totals in $f" >&2; exit 1 ;; esac
        [ "$v" -gt "$busiest" ] && busiest=$v
    done
    [ "$busiest" -gt 0 ] || { echo "cgdbbench.sh: callgrind wrote nothing ($2, $3 reads)" >&2; exit 1; }
    echo "$busiest"
}
# per_read PRELOAD CONF -> instructions per read
per_read() {
    a=$(count "$1" "$2" "$short")
    b=$(count "$1" "$2" "$long")
    awk -v a="$a" -v b="$b" -v n=$((long - short)) 'BEGIN { printf "%.0f", (b - a) / n }'
}

header "db_bench readrandom under callgrind: instructions per read"
echo "# db_bench $(db_bench --version 2>/dev/null | head -1 | sed 's/^db_bench //'); $num keys x 400 B (lz4, 16 KiB blocks) in $db, opened read-only"
echo "# readrandom, 1 thread, --seed=1, block cache $((cache / 1048576)) MiB; ($long - $short reads) / $((long - short))"
echo "# ratio: bare / run, reads per instruction against the same backend bare"
printf '%-9s %-20s %12s %8s %8s\n' backend run "instr/read" added ratio
cg_table per_read
