#!/bin/sh
# dispatch.sh: what the shim's dispatch alone (record:off) adds to a
# malloc+free pair, against
# the same allocator called directly (glibc bare; jemalloc and tcmalloc
# preloaded on their own). Runs are paired and interleaved (A B A B ...,
# the order flipping each round); reports the median difference in ns and
# the median ratio shim/bare, each with its min..max over the rounds.
# Usage: bench/dispatch.sh [ROUNDS] [ITERS]   (from the build directory)
set -eu

rounds=${1:-11}
iters=${2:-20000000}
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILDDIR:-$PWD}
shim="$build/.libs/libmallocshim.so"
pairs="$build/bench/pairs"
libdir=/usr/lib/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
[ -x "$pairs" ] || { echo "dispatch.sh: $pairs: build it with 'make bench/pairs'" >&2; exit 2; }
[ -r "$shim" ] || { echo "dispatch.sh: $shim: build the library first" >&2; exit 2; }
export MALLOCSHIM_CONF_FILE=/dev/null
TMPDIR_B=$(mktemp -d)
trap 'rm -rf "$TMPDIR_B"' EXIT

bare_preload() {
    case $1 in
    glibc) echo "" ;;
    jemalloc) echo "$libdir/libjemalloc.so.2" ;;
    tcmalloc) echo "$libdir/libtcmalloc_minimal.so.4" ;;
    esac
}

one() {  # one PRELOAD CONF THREADS SIZE -> ns per pair
    LD_PRELOAD="$1" MALLOCSHIM_CONF="$2" "$pairs" "$3" "$4" "$iters" | sed 's/ns_per_pair=//'
}

. "$top/bench/lib.sh"
header "dispatch cost"
echo "# $rounds rounds of $iters pairs per run, paired and interleaved"
printf '%-9s %3s %6s %9s %9s %22s %24s\n' backend thr size bare_ns shim_ns "shim-bare ns (min..max)" "shim/bare (min..max)"
for b in glibc jemalloc tcmalloc; do
    pre=$(bare_preload "$b")
    [ -z "$pre" ] || [ -r "$pre" ] || { echo "# $b: $pre missing, skipped"; continue; }
    for thr in 1 2; do
        for size in 16 4096; do
            : >"$TMPDIR_B/a"; : >"$TMPDIR_B/b"; : >"$TMPDIR_B/d"; : >"$TMPDIR_B/r"
            r=0
            while [ $r -lt "$rounds" ]; do
                if [ $((r % 2)) -eq 0 ]; then
                    a=$(one "$pre" "" $thr $size); s=$(one "$shim" "backend:$b,record:off" $thr $size)
                else
                    s=$(one "$shim" "backend:$b,record:off" $thr $size); a=$(one "$pre" "" $thr $size)
                fi
                echo "$a" >>"$TMPDIR_B/a"; echo "$s" >>"$TMPDIR_B/b"
                awk -v a="$a" -v s="$s" 'BEGIN { printf "%.3f\n", s - a }' >>"$TMPDIR_B/d"
                awk -v a="$a" -v s="$s" 'BEGIN { printf "%.4f\n", s / a }' >>"$TMPDIR_B/r"
                r=$((r + 1))
            done
            set -- $(stats <"$TMPDIR_B/a"); am=$1
            set -- $(stats <"$TMPDIR_B/b"); sm=$1
            set -- $(stats <"$TMPDIR_B/d"); d="$1 ($2..$3)"
            set -- $(stats <"$TMPDIR_B/r"); q="$1 ($2..$3)"
            printf '%-9s %3s %6s %9s %9s %22s %24s\n' "$b" $thr $size "$am" "$sm" "$d" "$q"
        done
    done
done
