#!/bin/sh
# floor.sh: what the recorder's hot path costs, part by part, down to its
# floor: the exact count of allocations and frees per size class and
# nothing else. Builds the tree four times from a copy of its sources with
# bench/floor.patch applied (a bench-only knob, FLOOR, in preload/record.c;
# the shipped library is FLOOR 4, the patch's default):
#   FLOOR 1  the count of allocations and frees per class alone: the
#            dispatch, the usable size (or class) at free, the class at
#            malloc, one add each, the out-of-line paths as shipped
#   FLOOR 2  + the requested and usable bytes per class (the other adds)
#   FLOOR 3  + the sampling countdown at each allocation
#   FLOOR 4  + the filter's test at each free (the shipped hot path)
# then counts each with callgrind, untracked (sample:2^30, sample_bytes:0:
# no block tracked, so the figure is the hot path alone): instructions per
# malloc+free pair (bench/callgrind.sh's method, 16 B) and per db_bench
# read (bench/cgdbbench.sh's), against bare. Never asserts.
# Usage: bench/floor.sh   (from the source tree; needs what the build and
# bench/cgdbbench.sh need). Environment: BACKENDS ("jemalloc glibc
# tcmalloc"), OUT (a directory to build in; a new one under /tmp by
# default, removed at the end).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
backends=${BACKENDS:-jemalloc glibc tcmalloc}
own=
if [ -z "${OUT:-}" ]; then
    OUT=$(mktemp -d /tmp/floor.XXXXXX)
    own=1
fi
trap '[ -z "$own" ] || rm -rf "$OUT"' EXIT
src="$OUT/src"
mkdir -p "$src"
(cd "$top" && git ls-files -z | xargs -0 tar cf - 2>/dev/null) | tar xf - -C "$src" ||
    { echo "floor.sh: could not copy the sources (a git checkout is needed)" >&2; exit 2; }
(cd "$src" && patch -s -p1 <"$top/bench/floor.patch") ||
    { echo "floor.sh: bench/floor.patch does not apply to preload/record.c any more" >&2; exit 2; }
(cd "$src" && autoreconf -fi >/dev/null 2>&1 && ./configure --sysconfdir=/etc >/dev/null &&
    make -j"$(nproc)" >/dev/null && make bench/pairs >/dev/null) ||
    { echo "floor.sh: the build failed" >&2; exit 1; }
for f in 1 2 3 4; do
    mkdir -p "$OUT/f$f/.libs" "$OUT/f$f/bench"
    # (FLOOR 1 and 2 leave malloc_tracked unused: gcc's warning, in make.err)
    (cd "$src" && touch preload/record.c &&
        make -j"$(nproc)" CPPFLAGS="-DFLOOR=$f" libmallocshim.la >/dev/null 2>"$OUT/make.err") ||
        { cat "$OUT/make.err" >&2; echo "floor.sh: the FLOOR=$f build failed" >&2; exit 1; }
    cp "$src/.libs/libmallocshim.so" "$OUT/f$f/.libs/"
    cp "$src/bench/pairs" "$OUT/f$f/bench/"
done

export MALLOCSHIM_CONF_FILE=/dev/null
libdir=/usr/lib/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
. "$top/bench/lib.sh"
untracked="record:on,shm_dir:/tmp,interval_ms:60000,seed:1,sample:1073741824,sample_bytes:0"
cgpair() {  # cgpair PRELOAD CONF ITERS -> instructions of the program's threads
    rm -f "$OUT"/cg "$OUT"/cg-*
    LD_PRELOAD="$1" MALLOCSHIM_CONF="$2" valgrind --tool=callgrind --separate-threads=yes \
        --callgrind-out-file="$OUT/cg" "$OUT/f4/bench/pairs" 1 16 "$3" >/dev/null 2>&1
    t=0
    for c in "$OUT"/cg-*; do
        grep -q sampler_main "$c" && continue
        t=$((t + $(sed -n 's/^totals: *//p' "$c")))
    done
    echo "$t"
}
per_pair() {
    a=$(cgpair "$1" "$2" 100000)
    b=$(cgpair "$1" "$2" 300000)
    awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", (b - a) / 200000 }'
}
header "the recorder's hot path down to its floor (bench/floor.sh)"
echo "# instructions per malloc+free pair of 16 B (callgrind, 1 thread); untracked"
printf '%-9s %8s %9s %9s %9s %9s %9s\n' backend bare "record:off" FLOOR1 FLOOR2 FLOOR3 FLOOR4
for b in $backends; do
    x=$(per_pair "$(bare_lib "$b")" "")
    row="$x $(per_pair "$OUT/f4/.libs/libmallocshim.so" "backend:$b,record:off")"
    for f in 1 2 3 4; do
        row="$row $(per_pair "$OUT/f$f/.libs/libmallocshim.so" "backend:$b,$untracked")"
    done
    # shellcheck disable=SC2086
    printf '%-9s %8s %9s %9s %9s %9s %9s\n' "$b" $row
done
echo
echo "# db_bench readrandom (bench/cgdbbench.sh), untracked, each FLOOR's own table"
for f in 1 2 3 4; do
    echo "## FLOOR $f"
    # shellcheck disable=SC2086
    BUILDDIR="$OUT/f$f" BACKENDS="$backends" RUNS=untracked \
        sh "$top/bench/cgdbbench.sh" ${READS:-20000 80000} | grep -v '^#'
done
