#!/bin/sh
# snapcost.sh: what the allocator's statistics snapshot costs on a large
# glibc heap, and what the shim's sampler thread spends on it. The program
# is bench/bigheap.c (built here with cc -O2 -pthread): 16 threads, so 16
# glibc arenas on 2 cores, build a heap of blocks of 64 B..16 KiB and free
# every other one (no two neighbours: the free chunks cannot coalesce), then
# keep doing malloc+free pairs of 16 B..4 KiB, paced (a burst of 64, then
# 1 ms asleep), each pair timed.
#
# a. bare, at each SIZES x FREES (live bytes after the frees, fraction
#    freed; the heap spans live / (1 - free)): bigheap's own measurements
#    from a 17th thread, 20 calls each spread over a window of >= 2 s:
#    mallinfo2() and malloc_info(0, a cookie sink), in wall ms and in the
#    calling thread's CPU ms per call, min/med/max; the arenas and free
#    chunks (from one malloc_info); and the program's stall: the workers'
#    worst single pair (ms) and the pairs of 0.5 ms or more ("slow"), in the
#    window with the calls against an equal window without. Then the same
#    under jemalloc and tcmalloc preloaded bare at HOLD_BYTES, where the
#    snapshot is the shim's: mallctl("epoch") + 6 stats reads, and 4
#    MallocExtension_GetNumericProperty reads.
# b. under the shim (a copy of .libs/libmallocshim.so, or of $SHIM, taken
#    once, at the start): `bigheap --hold=HOLD` at HOLD_BYTES, which builds
#    the heap and then only churns, calling no statistics itself; bare
#    glibc against the shim on each of BACKENDS, interleaved, the order
#    rotating each round.
#    For each run: the CPU of the shim's sampler thread (comm "mallocshim")
#    over the hold, in ms per second of wall time, from
#    /proc/PID/task/TID/schedstat (ns) and, coarser, utime+stime of its
#    stat (clock ticks), read when bigheap prints hold-start and hold-end;
#    the same over the process's life so far (build included); and the
#    workers' worst pair per second (median and max over the seconds of
#    the hold), slow pairs per second and pairs per second.
#    Reports median (min..max) over the rounds.
#
# How to read it: the CPU ms of a call is what one snapshot costs; its wall
# ms, beyond that, is time waiting for arena locks or for a core. glibc's
# walks lock each arena in turn for about its share of the call, and a
# worker whose pair needs its arena's lock (sizes above the 1032 B tcache
# limit, about a quarter of the pairs) waits that long: "worst with" well
# above "worst without", and more slow pairs, is that stall. How often the
# shim's sampler takes them is its own rule (preload/sampler.c): up to
# 737e88d it waited 500 times the wall time of the last one (on a heap where
# they take 0.2 s, a hold saw none of them); from 56c13ba, 100 times its
# CPU time but at most 5 passes, so every 5 s on such a heap whatever they
# cost; from c253faf, at most 30 passes. The sampler's ms/s shows what it
# did in the hold (its "life" column
# includes the walks during the build), and the worst pair of the seconds
# its stalls. This machine is shared and has 2 cores: worst-pair figures
# swing by tens of ms from scheduling alone; compare with and without in
# the same run, and across rounds. It never asserts a timing.
#
# Usage: bench/snapcost.sh [ROUNDS] [HOLD]   (from the build directory)
#   ROUNDS (3) rounds of part b, HOLD (15) seconds each; with holds of
#   20 s, `bench/snapcost.sh 3 20`, it takes about 6 minutes.
#   env: SIZES ("256m 1g"), FREES ("0.5"; also 0.1 for 1g), HOLD_BYTES
#   (1g), BACKENDS ("glibc jemalloc tcmalloc"), BIGHEAP_ARGS (more
#   arguments for every bigheap run, e.g. --pace-us=0 to spin), PARTS
#   ("a b"), SHIM (the library to copy and preload; default
#   .libs/libmallocshim.so of the build directory). About 5 minutes at the
#   defaults.
set -eu

rounds=${1:-3}
hold=${2:-15}
sizes=${SIZES:-256m 1g}
frees=${FREES:-0.5}
hold_bytes=${HOLD_BYTES:-1g}
backends=${BACKENDS:-glibc jemalloc tcmalloc}
extra=${BIGHEAP_ARGS:-}
parts=${PARTS:-a b}
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILDDIR:-$PWD}
libdir=/usr/lib/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)   # bare_lib's
. "$top/bench/lib.sh"
src_shim=${SHIM:-$build/.libs/libmallocshim.so}
[ -r "$src_shim" ] || { echo "snapcost.sh: $src_shim: build first" >&2; exit 2; }
export MALLOCSHIM_CONF_FILE=/dev/null
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir "$W/shm"
# one copy, taken now: a rebuild during the run does not change what runs
cp "$src_shim" "$W/libmallocshim.so"
shim="$W/libmallocshim.so"
bigheap="$W/bigheap"
cc -O2 -pthread -o "$bigheap" "$top/bench/bigheap.c" || exit 2
tck=$(getconf CLK_TCK)

# kv FILE PREFIX KEY: KEY's value on FILE's line that starts with PREFIX
kv() {
    sed -n "/^$2/s/.* $3=\([^ ]*\).*/\1/p" "$1" | head -1
}
# third N "a/b/c": the Nth of a slash-separated triple
third() {
    echo "$2" | cut -d/ -f"$1"
}
# ms US: microseconds as milliseconds
ms() {
    awk -v x="$1" 'BEGIN { printf "%.1f", x / 1000 }'
}

# arow LEAD CALL: part a's row for CALL from bigheap's output in $W/a.out
arow() {
    c="call name=$2 " t="stall name=$2 "
    printf '%s %-17s %-22s %-22s %-13s %-11s %s\n' "$1" "$2" \
        "$(kv "$W/a.out" "$c" wall_ms)" "$(kv "$W/a.out" "$c" cpu_ms)" \
        "$(ms "$(kv "$W/a.out" "$t" snap_worst_us)")/$(ms "$(kv "$W/a.out" "$t" quiet_worst_us)")" \
        "$(kv "$W/a.out" "$t" snap_slow)/$(kv "$W/a.out" "$t" quiet_slow)" \
        "$(kv "$W/a.out" "$t" snap_pairs_per_s)/$(kv "$W/a.out" "$t" quiet_pairs_per_s)"
}

header "snapcost: the statistics snapshot on a large glibc heap"
commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$top" diff --quiet HEAD -- preload src 2>/dev/null ||
    commit="$commit (the tree's preload/ and src/ differ from it:$(git -C "$top" diff --shortstat HEAD -- preload src))"
echo "# commit: $commit"
echo "# shim: $src_shim ($(date -u -r "$src_shim" +%Y-%m-%dT%H:%M:%SZ)), copied at start," \
    "sha256 $(sha256sum "$shim" | cut -c1-12)"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg); bigheap extra args: ${extra:-none}"

case " $parts " in *" a "*)
echo
echo "## a. bare: bigheap's own measurements (16 threads; 20 calls spread over >= 2 s, from a 17th thread)"
echo "# live: bytes of live blocks after the frees; heap spans live / (1 - free)"
echo "# worst pair (ms) and slow pairs (>= 0.5 ms): in the window with the calls / in an equal window without"
printf '%-5s %-4s %-6s %-11s %-17s %-22s %-22s %-13s %-11s %s\n' live free arenas free_chunks \
    call "wall ms min/med/max" "cpu ms min/med/max" "worst ms w/wo" "slow w/wo" "pairs/s w/wo"
runs_a=""
for sz in $sizes; do
    for f in $frees; do runs_a="$runs_a $sz:$f"; done
done
# and a lightly fragmented 1g beside them
case " $sizes " in *" 1g "*) case " $frees " in *" 0.1 "*) ;; *) runs_a="$runs_a 1g:0.1" ;; esac ;; esac
for r in $runs_a; do
    sz=${r%%:*} f=${r#*:}
    # shellcheck disable=SC2086
    "$bigheap" --bytes="$sz" --free="$f" $extra >"$W/a.out" 2>&1 || { cat "$W/a.out" >&2; exit 1; }
    arow "$(printf '%-5s %-4s %-6s %-11s' "$sz" "$f" "$(kv "$W/a.out" chunks arenas)" \
        "$(kv "$W/a.out" chunks free_chunks)")" mallinfo2
    arow "$(printf '%-5s %-4s %-6s %-11s' "" "" "" "")" malloc_info
    echo "#   $sz free $f: $(sed -n 's/^heap //p' "$W/a.out" | cut -d' ' -f3-7,9);" \
        "mallinfo2: $(sed -n 's/^chunks .*\(mi_ordblks\)/\1/p' "$W/a.out")"
done
for b in jemalloc tcmalloc; do
    case " $backends " in *" $b "*) ;; *) continue ;; esac
    # shellcheck disable=SC2086
    LD_PRELOAD="$(bare_lib $b)" "$bigheap" --bytes="$hold_bytes" --free=0.5 $extra >"$W/a.out" 2>&1 ||
        { cat "$W/a.out" >&2; exit 1; }
    arow "$(printf '%-5s %-4s %-6s %-11s' "$hold_bytes" 0.5 "($b)" -)" \
        "$(sed -n 's/^call name=\([^ ]*\) .*/\1/p' "$W/a.out")"
done
;; esac

# sampler PID -> "NS TICKS" of the shim's sampler thread, "- -" if none
sampler() {
    for t in /proc/"$1"/task/*; do
        if [ "$(cat "$t/comm" 2>/dev/null)" = mallocshim ]; then
            ns=$(cut -d' ' -f1 "$t/schedstat" 2>/dev/null) || ns=-
            tk=$(sed 's/.*) //' "$t/stat" 2>/dev/null | awk '{ print $12 + $13 }') || tk=-
            echo "${ns:--} ${tk:--}"
            return
        fi
    done
    echo "- -"
}
now_ns() {
    date +%s%N
}
# wait_line PID FILE WORD: until FILE has a line starting with WORD (600 s guard)
wait_line() {
    i=0
    until grep -q "^$3" "$2"; do
        if ! kill -0 "$1" 2>/dev/null || [ $i -gt 12000 ]; then
            echo "snapcost.sh: bigheap ended or hung before '$3':" >&2
            cat "$2" >&2
            kill "$1" 2>/dev/null || true
            exit 1
        fi
        sleep 0.05
        i=$((i + 1))
    done
}
# hold_run PRELOAD CONF LABEL: one bigheap --hold; appends to $W/b.LABEL
# "hold_ms_per_s hold_ticks_ms_per_s life_ms_per_s worst_med_ms worst_max_ms slow_per_s pairs_per_s"
hold_run() {
    out="$W/hold.out"
    : >"$out"
    tl=$(now_ns)
    # shellcheck disable=SC2086
    LD_PRELOAD="$1" MALLOCSHIM_CONF="$2" "$bigheap" --bytes="$hold_bytes" --hold="$hold" \
        --linger=60 $extra >"$out" 2>&1 &
    pid=$!
    wait_line $pid "$out" hold-start
    t0=$(now_ns)
    s0=$(sampler $pid)
    wait_line $pid "$out" hold-end
    t1=$(now_ns)
    s1=$(sampler $pid)
    kill -USR1 $pid
    wait $pid || { echo "snapcost.sh: bigheap exited $?" >&2; cat "$out" >&2; exit 1; }
    if grep -q '^mallocshim:' "$out"; then
        sed -n 's/^/# shim said: /p' "$out" | head -3 >&2
    fi
    h=$(sed -n 's/^hold //p' "$out")
    w=$(echo "$h" | sed 's/.*worst_us_per_s=\([^ ]*\).*/\1/')
    set -- $s0 $s1
    echo "$1 $2 $3 $4 $t0 $t1 $tl $(third 2 "$w") $(third 3 "$w") $(kv "$out" hold slow_per_s) $(kv "$out" hold pairs_per_s)" |
        awk -v tck="$tck" '{
            if ($1 == "-" || $3 == "-") { a = "-"; b = "-"; c = "-" }
            else {
                wall = ($6 - $5) / 1e9
                a = sprintf("%.3f", ($3 - $1) / 1e6 / wall)
                b = sprintf("%.3f", ($4 - $2) * 1000 / tck / wall)
                c = sprintf("%.3f", $3 / 1e6 / (($6 - $7) / 1e9))
            }
            printf "%s %s %s %.3f %.3f %s %s\n", a, b, c, $8 / 1000, $9 / 1000, $10, $11 }' \
        >>"$W/b.$label"
}

case " $parts " in *" b "*)
echo
echo "## b. bigheap --bytes=$hold_bytes --hold=$hold: bare glibc against the shim (record on, defaults), $rounds rounds, order rotating"
echo "# sampler ms/s: the shim's sampler thread's CPU per second of wall time over the hold (schedstat ns; utime+stime in ${tck} Hz ticks),"
echo "#   and over the process's life so far (build included); worst pair: per second of the hold, median and max of the seconds"
labels="bare"
for b in $backends; do labels="$labels $b"; done
n=$(echo $labels | wc -w)
for l in $labels; do : >"$W/b.$l"; done
r=0
while [ $r -lt "$rounds" ]; do
    k=0
    while [ $k -lt "$n" ]; do
        label=$(echo $labels | cut -d' ' -f$(( (r + k) % n + 1 )))
        case $label in
        bare) hold_run "" "" ;;
        *) hold_run "$shim" "backend:$label,shm_dir:$W/shm" ;;
        esac
        k=$((k + 1))
    done
    r=$((r + 1))
done
col() {  # col LABEL N [PREC]: median (min..max) of column N, or -
    if cut -d' ' -f"$2" "$W/b.$1" | grep -q -- -; then
        echo -
    else
        cut -d' ' -f"$2" "$W/b.$1" | stats |
            awk -v p="${3:-3}" '{ f = "%." p "f"; printf f " (" f ".." f ")", $1, $2, $3 }'
    fi
}
printf '%-14s %-24s %-24s %-24s %-24s %-24s %-20s %s\n' run "sampler ms/s (ns)" "sampler ms/s (ticks)" \
    "sampler ms/s (life)" "worst ms/s median" "worst ms/s max" "slow pairs/s" "pairs/s"
for l in $labels; do
    case $l in bare) name="bare glibc" ;; *) name="shim $l" ;; esac
    printf '%-14s %-24s %-24s %-24s %-24s %-24s %-20s %s\n' "$name" "$(col $l 1)" "$(col $l 2)" \
        "$(col $l 3)" "$(col $l 4 1)" "$(col $l 5 1)" "$(col $l 6 1)" "$(col $l 7 0)"
done
echo "# per run (round order; columns as above):"
for l in $labels; do
    echo "#   $l: $(awk '{ printf "%s[%s %s %s %s %s %s %s]", (NR > 1 ? " " : ""), $1, $2, $3, $4, $5, $6, $7 }' "$W/b.$l")"
done
;; esac
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
