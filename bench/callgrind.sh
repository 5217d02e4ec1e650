#!/bin/sh
# callgrind.sh: instructions per malloc+free pair, bare and under the shim,
# counted by valgrind's callgrind, so the figure does not depend on a noisy
# machine. Startup is cancelled by running two lengths and taking the
# difference. The sampler thread's passes cost per second, not per pair:
# the recording runs set interval_ms:60000, and only the program's threads
# are counted (callgrind's --separate-threads, less the file of the thread
# that ran sampler_main), since the longer run would otherwise take the
# first pass (at 200 ms) that the shorter one missed: about 300,000
# instructions, 1.5 a pair. seed:1 draws the same tracked blocks in every
# run. Usage: bench/callgrind.sh   (from the build directory)
set -eu
build=${BUILDDIR:-$PWD}
shim="$build/.libs/libmallocshim.so"
pairs="$build/bench/pairs"
libdir=/usr/lib/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
export MALLOCSHIM_CONF_FILE=/dev/null
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is not installed" >&2; exit 2; }

out=$(mktemp -d /tmp/callgrind.XXXXXX)
trap 'rm -rf "$out"' EXIT
count() {  # count PRELOAD CONF SIZE ITERS [MODE] -> instructions of the program's threads
    rm -f "$out"/cg "$out"/cg-*   # callgrind names a thread's file cg-NN
    LD_PRELOAD="$1" MALLOCSHIM_CONF="$2" valgrind --tool=callgrind --separate-threads=yes \
        --callgrind-out-file="$out/cg" "$pairs" 1 "$3" "$4" ${5:-} >/dev/null 2>&1
    t=0 n=0
    for f in "$out"/cg-*; do
        [ -f "$f" ] || continue
        grep -q 'sampler_main' "$f" && continue
        v=$(sed -n 's/^totals: *//p' "$f")
        case $v in '' | *[!0-9]*) echo "callgrind.sh: no totals in $f" >&2; exit 1 ;; esac
        t=$((t + v)) n=$((n + 1))
    done
    [ "$n" -gt 0 ] || { echo "callgrind.sh: callgrind wrote nothing for: $2 $3 $4" >&2; exit 1; }
    echo "$t"
}
per_pair() {  # per_pair PRELOAD CONF SIZE [MODE]
    a=$(count "$1" "$2" "$3" 100000 ${4:-})
    b=$(count "$1" "$2" "$3" 300000 ${4:-})
    awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", (b - a) / 200000 }'
}

echo "# instructions per malloc+free pair (callgrind, 1 thread): bare; the shim with"
echo "# record:off (dispatch) and what it adds; with recording but no block tracked"
echo "# (sample:2^30, sample_bytes:0: the untracked path); sampling by counts alone"
echo "# (sample_bytes:0); at the default sampling (by bytes); with sample:1"
printf '%-9s %6s %8s %8s %8s %10s %10s %10s %10s\n' backend size bare dispatch added untracked by-counts recording sample:1
for b in glibc jemalloc tcmalloc; do
    case $b in
    glibc) pre="" ;;
    jemalloc) pre="$libdir/libjemalloc.so.2" ;;
    tcmalloc) pre="$libdir/libtcmalloc_minimal.so.4" ;;
    esac
    for size in 16 4096 16384; do
        x=$(per_pair "$pre" "" $size)
        y=$(per_pair "$shim" "backend:$b,record:off" $size)
        v=$(per_pair "$shim" "backend:$b,record:on,shm_dir:/tmp,interval_ms:60000,seed:1,sample:1073741824,sample_bytes:0" $size)
        c=$(per_pair "$shim" "backend:$b,record:on,shm_dir:/tmp,interval_ms:60000,seed:1,sample_bytes:0" $size)
        z=$(per_pair "$shim" "backend:$b,record:on,shm_dir:/tmp,interval_ms:60000,seed:1" $size)
        w=$(per_pair "$shim" "backend:$b,record:on,shm_dir:/tmp,interval_ms:60000,seed:1,sample:1" $size)
        printf '%-9s %6s %8s %8s %8s %10s %10s %10s %10s\n' $b $size "$x" "$y" \
            "$(awk -v x="$x" -v y="$y" 'BEGIN { printf "%+.1f", y - x }')" "$v" "$c" "$z" "$w"
    done
done

# C++: operator new + sized delete (bare: jemalloc's own operators, or
# libstdc++'s over glibc or tcmalloc; the shim's, which pass the size on:
# jemalloc's sdallocx up to 4 KiB, tcmalloc's tc_free_sized; glibc's free).
echo
echo "# instructions per operator new + sized delete (callgrind, 1 thread): bare"
echo "# (the allocator's own operators where it has them, else libstdc++'s); the shim with"
echo "# record:off; with recording"
printf '%-9s %6s %8s %8s %10s\n' backend size bare dispatch recording
stdcxx=$libdir/libstdc++.so.6
for b in glibc jemalloc tcmalloc; do
    case $b in
    glibc) pre="" ;;
    jemalloc) pre="$libdir/libjemalloc.so.2" ;;
    tcmalloc) pre="$libdir/libtcmalloc_minimal.so.4" ;;
    esac
    for size in 64 4096 16384; do
        x=$(per_pair "${pre:+$pre }$stdcxx" "" $size cxx)
        y=$(per_pair "$shim" "backend:$b,record:off" $size cxx)
        z=$(per_pair "$shim" "backend:$b,record:on,shm_dir:/tmp,interval_ms:60000,seed:1" $size cxx)
        printf '%-9s %6s %8s %8s %10s\n' $b $size "$x" "$y" "$z"
    done
done
