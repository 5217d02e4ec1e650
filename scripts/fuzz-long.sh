#!/bin/sh
# fuzz-long.sh [RUNS]: shimdump's readers (segment and JSON) against RUNS
# inputs (1000000 by default), far more than make check's few thousand,
# and the line and branch coverage they reached; then shimreplay's trace
# reader and planner against TRACE_RUNS (RUNS / 4).
#
# The corpus is seeded from real segments: bcsim, sort and (when installed)
# db_bench under each backend and several configurations, each saved as
# its segment file, its live segment and its --json snapshot. Some inputs
# are those files mutated (bytes flipped, 64-bit values made wild, cut
# short): one in 8 a snapshot, one in 1024 a segment (a quarter second
# each); the rest are the driver's own (hostile bodies behind a valid
# header, garbled JSON, raw bytes). Every input that parses goes through
# every view and the JSON round trip, JSON(d) == JSON(read(JSON(d))).
#
# The driver is built here with AddressSanitizer, UBSan (any report aborts)
# and gcov; the work is split over the CPUs, a seed each. Run it from a
# built tree (scripts/build.sh); it leaves the build tree as it was.
set -eu
cd "$(dirname "$0")/.."
RUNS=${1:-1000000}
CPUS=$(nproc)
SHIM=$PWD/.libs/libmallocshim.so
SD=$PWD/tools/shimdump
[ -e "$SHIM" ] && [ -x "$SD" ] || { echo "fuzz-long: build first (sh scripts/build.sh)" >&2; exit 2; }
W=$(mktemp -d /tmp/mallocshim-fuzz.XXXXXX)
echo "fuzz-long: working in $W"
mkdir -p "$W/corpus" "$W/shm" "$W/obj"

# save NAME PID: the process's segment file, its live segment and --json.
n=0
save() {
    name=$1 pid=$2
    [ -e "$W/shm/mallocshim.$pid" ] || return 0
    { printf '\000'; cat "$W/shm/mallocshim.$pid"; } >"$W/corpus/$name.seg"
    fd=$(ls -l "/proc/$pid/fd" 2>/dev/null | sed -n 's/.* \([0-9]*\) -> .*memfd:mallocshim.*/\1/p' | head -n 1)
    if [ -n "$fd" ]; then
        { printf '\000'; cat "/proc/$pid/fd/$fd"; } >"$W/corpus/$name.live" 2>/dev/null || rm -f "$W/corpus/$name.live"
    fi
    { printf '\002'; "$SD" --json "$W/shm/mallocshim.$pid"; } >"$W/corpus/$name.json" 2>/dev/null ||
        rm -f "$W/corpus/$name.json"
    n=$((n + 1))
}

# run NAME CONF CMD...: CMD under the shim, saved 2 s after its segment
# file appears (the sampler's first pass names it), then killed (its
# segment stays, as a crashed server's would). CMD must run longer.
run() {
    name=$1 conf=$2
    shift 2
    env MALLOCSHIM_CONF="$conf,shm_dir:$W/shm,counter_slots:0" LD_PRELOAD="$SHIM" "$@" \
        >/dev/null 2>&1 &
    pid=$!
    i=0
    while [ ! -e "$W/shm/mallocshim.$pid" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
    sleep 2
    save "$name" "$pid"
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -f "$W/shm/mallocshim.$pid"
}

seq 1 400000 | awk '{ printf "%08x line %d of the sort input\n", ($1 * 2654435761) % 4294967296, $1 }' >"$W/sort.in"
backends="glibc"
grep -q '^HAVE_JEMALLOC 1\|#define HAVE_JEMALLOC 1' config.h && backends="$backends jemalloc"
grep -q '#define HAVE_TCMALLOC 1' config.h && backends="$backends tcmalloc"
for b in $backends; do
    for c in "series:60" "sample:1,stacks:8,series:60" "stacks:0,series:60,interval_ms:10" \
             "arenas:2,series:60,slots:2"; do
        tag=$(printf '%s' "$b-$c" | tr ':,' '-_')
        run "bcsim-$tag" "backend:$b,$c" tools/bcsim --threads=4 --cache=16M --duration=30
    done
    # sort reads its input from a FIFO held open: it cannot finish first
    rm -f "$W/fifo" && mkfifo "$W/fifo"
    (cat "$W/sort.in"; sleep 60) >"$W/fifo" &
    feeder=$!
    run "sort-$b" "backend:$b,series:60,interval_ms:50" sort -S 64M "$W/fifo"
    kill "$feeder" 2>/dev/null || true
    wait "$feeder" 2>/dev/null || true
    if command -v db_bench >/dev/null; then
        run "dbbench-$b" "backend:$b,series:60" db_bench --benchmarks=fillrandom --num=2000000 \
            --db="$W/db-$b" --threads=2 --statistics=0 --histogram=0
        rm -rf "$W/db-$b"
    fi
done
echo "fuzz-long: corpus of $(ls "$W/corpus" | wc -l) files from $n real processes ($(du -sh "$W/corpus" | cut -f1))"

# The driver, with sanitizers and coverage, one object per source file.
srcs="t/fuzz/driver.c $(sed -n '/^FUZZ_SRCS = /,/[^\\]$/p' Makefile.am | sed 's/^FUZZ_SRCS = //; s/\\//g')"
CFLAGS="-O1 -g --coverage -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
objs=""
for s in $srcs; do
    o="$W/obj/$(basename "$s" .c).o"
    gcc $CFLAGS -I. -Isrc -Itools -c "$PWD/$s" -o "$o"
    objs="$objs $o"
done
gcc $CFLAGS $objs -lm -o "$W/driver"

# The runs, split over the CPUs.
per=$(( (RUNS + CPUS - 1) / CPUS ))
start=$(date +%s)
i=1
pids=""
while [ $i -le "$CPUS" ]; do
    "$W/driver" --runs "$per" --seed "$i" --corpus "$W/corpus" >"$W/run$i.out" 2>"$W/run$i.err" &
    pids="$pids $!"
    i=$((i + 1))
done
status=0
for p in $pids; do
    wait "$p" || status=1
done
secs=$(( $(date +%s) - start ))
if [ $status -ne 0 ]; then
    echo "fuzz-long: a run failed:" >&2
    tail -n 20 "$W"/run*.err >&2
    exit 1
fi
total=$(cat "$W"/run*.out | sed -n 's/^driver: \([0-9]*\) inputs.*/\1/p' | awk '{ s += $1 } END { print s }')
echo "fuzz-long: $total inputs in $secs s on $CPUS CPUs (seeds 1..$CPUS), no crash, no sanitizer report"

# Coverage of the readers (the driver's own code and the views aside).
echo "fuzz-long: coverage (gcov: lines, branches taken at least once)"
for s in $srcs; do
    case "$s" in t/fuzz/*|tools/cli/view.c) continue ;; esac
    b=$(basename "$s" .c)
    (cd "$W/obj" && gcov -b -n -o "$W/obj" "$PWD/$s" 2>/dev/null) |
        awk -v f="$s" '/^File .*'"$b"'\.c/ { hit = 1 } hit && /^Lines executed/ { l = $2 " of " $4 }
                       hit && /^Taken at least once/ { t = $4 " of " $6; print "  " f ": lines " l ", branches " t; exit }'
done
(cd "$W/obj" && gcov -n -o "$W/obj" "$PWD/tools/cli/view.c" 2>/dev/null) |
    awk '/^File .*view\.c/ { hit = 1 } hit && /^Lines executed/ { print "  tools/cli/view.c (the views): lines " $2 " of " $4; exit }'

# The trace reader and shimreplay's planner (t/fuzz/fuzz_trace.c), with
# their own driver the same way: TRACE_RUNS inputs (RUNS / 4 by default).
if grep -q '#define HAVE_ZSTD 1' config.h; then
    tsrcs="t/fuzz/trace_driver.c $(sed -n '/^TRACE_FUZZ_SRCS = /,/[^\\]$/p' Makefile.am |
        sed 's/^TRACE_FUZZ_SRCS = //; s/\\//g')"
    mkdir -p "$W/tobj"
    tobjs=""
    for s in $tsrcs; do
        o="$W/tobj/$(basename "$s" .c).o"
        gcc $CFLAGS -I. -Isrc -Itools -c "$PWD/$s" -o "$o"
        tobjs="$tobjs $o"
    done
    gcc $CFLAGS $tobjs -lzstd -o "$W/trace_driver"
    truns=${TRACE_RUNS:-$((RUNS / 4))}
    per=$(( (truns + CPUS - 1) / CPUS ))
    start=$(date +%s)
    i=1
    pids=""
    while [ $i -le "$CPUS" ]; do
        "$W/trace_driver" --runs "$per" --seed "$i" >"$W/trace$i.out" 2>"$W/trace$i.err" &
        pids="$pids $!"
        i=$((i + 1))
    done
    status=0
    for p in $pids; do
        wait "$p" || status=1
    done
    secs=$(( $(date +%s) - start ))
    if [ $status -ne 0 ]; then
        echo "fuzz-long: a trace run failed:" >&2
        tail -n 20 "$W"/trace*.err >&2
        exit 1
    fi
    total=$(cat "$W"/trace*.out | sed -n 's/^trace_driver: \([0-9]*\) inputs.*/\1/p' | awk '{ s += $1 } END { print s }')
    echo "fuzz-long: traces: $total inputs in $secs s on $CPUS CPUs (seeds 1..$CPUS), no crash, no sanitizer report"
    for s in src/trace.c src/traceread.c tools/replay/replayplan.c; do
        b=$(basename "$s" .c)
        (cd "$W/tobj" && gcov -b -n -o "$W/tobj" "$PWD/$s" 2>/dev/null) |
            awk -v f="$s" '/^File .*'"$b"'\.c/ { hit = 1 } hit && /^Lines executed/ { l = $2 " of " $4 }
                           hit && /^Taken at least once/ { t = $4 " of " $6; print "  " f ": lines " l ", branches " t; exit }'
    done
fi
echo "fuzz-long: kept in $W (corpus/, obj/*.gcda, tobj/*.gcda)"
