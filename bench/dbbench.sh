#!/bin/sh
# dbbench.sh: the shim on real RocksDB. Debian's db_bench (rocksdb-tools)
# readrandom, multi-threaded, on a DB several times larger than the block
# cache. For each backend, paired and interleaved (the order rotating each
# round): the backend bare (glibc alone; libjemalloc.so.2 or
# libtcmalloc_minimal.so.4 preloaded alone), the shim with recording at the
# default sampling, and the shim with sample:1; for glibc also heaptrack,
# the tool users compare with. Reports ops/s ratios against bare as median
# (min..max), and peak RSS (VmHWM) / block cache.
#
# Usage: bench/dbbench.sh [ROUNDS] [SECONDS]   (from the build directory)
# Environment: DBBENCH_DB (the DB, made once: /var/tmp/mallocshim-dbbench),
# DBBENCH_NUM (keys, 2000000), DBBENCH_CACHE (bytes, 67108864),
# DBBENCH_THREADS (16), BACKENDS ("glibc jemalloc tcmalloc"), HEAPTRACK (1),
# RUNS (the runs besides bare: "shim shim1", and heaptrack for glibc; also
# "nostacks": the shim at the default sampling with stacks:0; "off": the
# shim with record:off, its dispatch alone; "untracked": recording with
# sample:2^30 and sample_bytes:0, its counting alone, no block tracked).
set -eu

rounds=${1:-5}
secs=${2:-15}
db=${DBBENCH_DB:-/var/tmp/mallocshim-dbbench}
num=${DBBENCH_NUM:-2000000}
cache=${DBBENCH_CACHE:-67108864}
threads=${DBBENCH_THREADS:-16}
backends=${BACKENDS:-glibc jemalloc tcmalloc}
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILDDIR:-$PWD}
shim="$build/.libs/libmallocshim.so"
libdir=/usr/lib/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
command -v db_bench >/dev/null || { echo "dbbench.sh: db_bench not found (Debian: rocksdb-tools)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "dbbench.sh: /usr/bin/time not found (Debian: time)" >&2; exit 2; }
[ -r "$shim" ] || { echo "dbbench.sh: $shim: build first" >&2; exit 2; }
. "$top/bench/lib.sh"
export MALLOCSHIM_CONF_FILE=/dev/null
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir "$W/shm"

common="--use_existing_db=1 --num=$num --cache_size=$cache --threads=$threads --block_size=16384
        --compression_type=lz4 --statistics=0 --histogram=0"
dbbench_db "$db" "$num"

# one LABEL PRELOAD CONF -> "ops_per_s peak_rss_kb", appended to $W/LABEL
one() {
    label=$1 pre=$2 conf=$3
    case $label in
    heaptrack)
        /usr/bin/time -f '%M' -o "$W/rss" heaptrack -o "$W/ht" db_bench --db="$db" \
            --benchmarks=readrandom --duration="$secs" $common >"$W/out" 2>&1
        rm -f "$W"/ht* ;;
    *)
        env ${pre:+LD_PRELOAD="$pre"} ${conf:+MALLOCSHIM_CONF="$conf"} \
            /usr/bin/time -f '%M' -o "$W/rss" db_bench --db="$db" --benchmarks=readrandom \
            --duration="$secs" $common >"$W/out" 2>&1 ;;
    esac
    ops=$(sed -n 's/^readrandom *:.* \([0-9][0-9]*\) ops\/sec.*/\1/p' "$W/out" | tail -1)
    [ -n "$ops" ] || { echo "dbbench.sh: no result from $label:" >&2; tail -5 "$W/out" >&2; exit 1; }
    echo "$ops $(tail -1 "$W/rss")" >>"$W/$label"
}

header "db_bench readrandom, bare against the shim"
echo "# db_bench $(db_bench --version 2>/dev/null | head -1 | sed 's/^db_bench //'); $num keys x 400 B (lz4, 16 KiB blocks) in $db ($(du -sh "$db" | cut -f1) on disk)"
echo "# readrandom, $threads threads, ${secs} s per run, block cache $((cache / 1048576)) MiB; $rounds rounds, order rotating"
echo "# ratio: ops/s against the same backend bare; RSS/cache: peak RSS (VmHWM) / block cache"
printf '%-9s %-16s %10s %24s %22s\n' backend run "ops/s" "ratio to bare" "peak RSS/cache"
for b in $backends; do
    bare=$(bare_lib $b)
    labels="bare ${RUNS:-shim shim1}"
    [ -z "${RUNS:-}" ] && [ "$b" = glibc ] && [ "${HEAPTRACK:-1}" = 1 ] && command -v heaptrack >/dev/null && labels="$labels heaptrack"
    for l in $labels; do rm -f "$W/$l"; done   # each backend's rounds alone
    n=$(echo $labels | wc -w)
    r=0
    while [ $r -lt "$rounds" ]; do
        k=0
        while [ $k -lt $n ]; do
            l=$(echo $labels | cut -d' ' -f$(( (r + k) % n + 1 )))
            case $l in
            bare) one bare "$bare" "" ;;
            shim) one shim "$shim" "backend:$b,record:on,shm_dir:$W/shm" ;;
            shim1) one shim1 "$shim" "backend:$b,record:on,sample:1,shm_dir:$W/shm" ;;
            nostacks) one nostacks "$shim" "backend:$b,record:on,stacks:0,shm_dir:$W/shm" ;;
            off) one off "$shim" "backend:$b,record:off" ;;
            untracked) one untracked "$shim" "backend:$b,record:on,sample:1073741824,sample_bytes:0,shm_dir:$W/shm" ;;
            heaptrack) one heaptrack "" "" ;;
            esac
            k=$((k + 1))
        done
        r=$((r + 1))
    done
    for l in $labels; do
        case $l in
        bare) name="bare" ;; shim) name="shim (sample:256)" ;; shim1) name="shim (sample:1)" ;;
        nostacks) name="shim (stacks:0)" ;; off) name="shim (record:off)" ;;
        untracked) name="shim (untracked)" ;;
        heaptrack) name="heaptrack" ;;
        esac
        # Ratios pair round i of this run with round i of bare.
        paste -d' ' "$W/$l" "$W/bare" | awk '{ printf "%.4f\n", $1 / $3 }' >"$W/ratio"
        awk -v c="$cache" '{ printf "%.3f\n", $2 * 1024 / c }' "$W/$l" >"$W/rc"
        printf '%-9s %-18s %8s %24s %22s\n' $b "$name" "$(cut -d' ' -f1 "$W/$l" | med | cut -d' ' -f1)" \
            "$(med <"$W/ratio")" "$(med <"$W/rc")"
    done
done
