#!/bin/sh
# copy.sh: what the copy in shm_dir costs (src/seg.h, "Two files"): the
# sampler thread's CPU time per second of the program (it rewrites the copy
# at each pass), the copy's size on disk and the live segment's resident
# memory, and bcsim's ops/s; paired and interleaved against an older build
# whose segment is the file itself (BASE_SHIM=path/to/libmallocshim.so),
# else against record:off of this one.
# Usage: bench/copy.sh [ROUNDS] [SECONDS]   (from the build directory)
set -eu
rounds=${1:-3}
secs=${2:-10}
build=${BUILDDIR:-$PWD}
shim="$build/.libs/libmallocshim.so"
base=${BASE_SHIM:-}
bcsim="$build/tools/bcsim"
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/lib.sh"
[ -r "$shim" ] && [ -x "$bcsim" ] || { echo "copy.sh: build first" >&2; exit 2; }
export MALLOCSHIM_CONF_FILE=/dev/null
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
tck=$(getconf CLK_TCK)

# run LIB CONF: bcsim for $secs s; prints "ops/s sampler_cpu_ms copy_kib live_rss_kib"
run() {
    MALLOCSHIM_CONF="$2,shm_dir:$W" LD_PRELOAD="$1" \
        "$bcsim" --threads=2 --cache=256M --duration="$secs" --json >"$W/out" 2>&1 &
    p=$!
    cpu=0 copy=0 live=0
    while kill -0 $p 2>/dev/null; do
        for t in /proc/$p/task/*; do
            [ "$(cat "$t/comm" 2>/dev/null)" = mallocshim ] &&
                cpu=$(awk -v k="$tck" '{ sub(/.*\) /, ""); print ($12 + $13) * 1000 / k }' "$t/stat" 2>/dev/null || echo "$cpu")
        done
        [ -e "$W/mallocshim.$p" ] && copy=$(du -k "$W/mallocshim.$p" | cut -f1)
        l=$(awk '/^[0-9a-f]+-[0-9a-f]+ .*(memfd:mallocshim|mallocshim\.)/ { on = 1; next }
                 /^[0-9a-f]+-/ { on = 0 } on && /^Rss:/ { s += $2 } END { print s + 0 }' \
                 "/proc/$p/smaps" 2>/dev/null || echo 0)
        [ "${l:-0}" -gt 0 ] && live=$l
        sleep 0.5
    done
    wait $p || true
    ops=$(sed -n 's/.*"ops_per_s": *\([0-9.]*\).*/\1/p' "$W/out" | head -1)
    echo "${ops:-0} $cpu $copy $live"
}

header "the copy in shm_dir: its cost"
echo "# bcsim --threads=2 --cache=256M --duration=$secs, $rounds rounds, order alternating"
echo "# base: ${base:-this build with record:off}"
printf '%-9s %-28s %-28s %-22s %10s %12s\n' backend "ops/s against base" "sampler CPU ms/s (base)" \
    "sampler CPU ms/s (new)" "copy KiB" "live RSS KiB"
for b in glibc jemalloc tcmalloc; do
    rm -f "$W"/r.*
    r=0
    while [ $r -lt "$rounds" ]; do
        for side in a b; do
            [ $(( (r + ${#side}) % 2 )) -eq 0 ] || true
            if [ "$side" = a ]; then
                if [ -n "$base" ]; then run "$base" "backend:$b" >"$W/x"; else run "$shim" "backend:$b,record:off" >"$W/x"; fi
                cat "$W/x" >>"$W/r.base"
            else
                run "$shim" "backend:$b" >>"$W/r.new"
            fi
        done
        r=$((r + 1))
    done
    ratio=$(paste "$W/r.new" "$W/r.base" | awk '$5 > 0 { print $1 / $5 }' | med)
    cb=$(awk -v s="$secs" '{ print $2 / s }' "$W/r.base" | med)
    cn=$(awk -v s="$secs" '{ print $2 / s }' "$W/r.new" | med)
    cp=$(awk '{ print $3 }' "$W/r.new" | med)
    lv=$(awk '{ print $4 }' "$W/r.new" | med)
    printf '%-9s %-28s %-28s %-22s %10s %12s\n' "$b" "$ratio" "$cb" "$cn" "${cp%% *}" "${lv%% *}"
done
