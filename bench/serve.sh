#!/bin/sh
# serve.sh: what a scrape of shimdump --serve costs the host. N processes
# (bcsim, glibc, 1 thread, a 4 MiB cache, the shim's default config) run a
# moment and then hold their heap, idle but for the shim's sampler; one
# server (shimdump --serve=127.0.0.1:0, the build's) reads them. For each N
# in COUNTS, ROUNDS scrapes of /metrics one after another (after 3 not
# counted), each timed by curl (wall ms, from connect to the last byte), and
# the server's CPU over them from /proc/PID/schedstat (ns on a CPU), per
# scrape; the body's size and the server's peak RSS (VmHWM). Then, with one
# process, /json, /report and /pprof/heap (frames named: the first request
# of each names them afresh, as every one does). Reports median (min..max)
# of the wall ms; the CPU is the mean over the rounds.
#
# The server reads every segment whole for each scrape: its CPU grows with
# N, and so does its wall time on a busy host (the scrapes wait for a core).
#
# Usage: bench/serve.sh [COUNTS] [ROUNDS]   (defaults "1 8 32" and 50)
# Needs a build with --serve (libmicrohttpd), curl.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh

COUNTS=${1:-"1 8 32"}
ROUNDS=${2:-50}
SD=$PWD/tools/shimdump
SHIM=${SHIM:-$PWD/.libs/libmallocshim.so}
W=$(mktemp -d "${TMPDIR:-/tmp}/mallocshim-bench-serve.XXXXXX")
mkdir "$W/shm"
printf 'record = on\nshm_dir = %s\n' "$W/shm" >"$W/conf"
export MALLOCSHIM_CONF_FILE="$W/conf"
unset MALLOCSHIM_CONF SHIMDUMP_CHECK
procs=""
trap 'for p in $procs; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$W"' EXIT

cpu_ns() { cut -d' ' -f1 "/proc/$1/schedstat"; }

# start N: N more bcsims holding their heap; waits for each one's segment.
start() {
    i=0
    while [ $i -lt "$1" ]; do
        LD_PRELOAD="$SHIM" "$PWD/tools/bcsim" --threads=1 --cache=4M --duration=0.5 --hold=3600 \
            >/dev/null 2>&1 &
        procs="$procs $!"
        i=$((i + 1))
    done
    for p in $procs; do
        while [ ! -e "$W/shm/mallocshim.$p" ]; do sleep 0.1; done
    done
    sleep 2   # past the run, into the hold
}

# measure PATH ROUNDS: one line: wall ms median (min..max), CPU ms per
# request, bytes.
measure() {
    for i in 1 2 3; do curl -s -o /dev/null "$U$1"; done
    c0=$(cpu_ns "$sp")
    : >"$W/times"
    i=0
    while [ $i -lt "$2" ]; do
        curl -s -o /dev/null -w '%{time_total} %{size_download} %{http_code}\n' "$U$1" >>"$W/times"
        i=$((i + 1))
    done
    c1=$(cpu_ns "$sp")
    if grep -qv ' 200$' "$W/times"; then
        echo "serve.sh: $1: not every request answered 200" >&2
        exit 1
    fi
    printf '%-22s %4d  %-24s %9.2f %10d\n' "$1" "$n" \
        "$(awk '{ print $1 * 1000 }' "$W/times" | med)" \
        "$(echo "$c0 $c1 $2" | awk '{ print ($2 - $1) / $3 / 1e6 }')" \
        "$(awk 'END { print $2 }' "$W/times")"
}

header "shimdump --serve: the cost of a scrape"
echo "# $ROUNDS requests per row, one after another; bcsim processes (glibc, 1 thread, 4 MiB cache)"
echo "# holding their heap; server: $SD --serve=127.0.0.1:0; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-22s %4s  %-24s %9s %10s\n' "# path" "N" "wall ms med (min..max)" "CPU ms" "bytes"
n=0
for want in $COUNTS; do
    start $((want - n))
    n=$want
    "$SD" --dir "$W/shm" --serve=127.0.0.1:0 2>"$W/serve.err" &
    sp=$!
    while ! grep -q 'serving http://' "$W/serve.err" 2>/dev/null; do sleep 0.1; done
    U=http://$(sed -n 's|.*serving http://\([0-9.:]*\)/.*|\1|p' "$W/serve.err")
    measure /metrics "$ROUNDS"
    if [ "$n" -eq 1 ]; then
        p=$(echo $procs)
        for path in "/json?pid=$p" "/report?pid=$p" "/pprof/heap?pid=$p"; do
            measure "$path" 10
        done
    fi
    echo "# server peak RSS with N=$n: $(awk '/^VmHWM:/ { print $2, $3 }' "/proc/$sp/status")"
    kill "$sp"
    wait "$sp"
done
