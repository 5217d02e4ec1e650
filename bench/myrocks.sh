#!/bin/sh
# myrocks.sh: MariaDB with MyRocks, started by mysqld_safe without malloc-lib
# (A: the system's glibc malloc) and with malloc-lib=libmallocshim.so (B: the
# shim on a backend, recording on), paired and interleaved (A B, then B A,
# ...), the same datadir for every run. Each run: a warm-up, then sysbench
# oltp_point_select (uniform keys, so the block cache churns). Reports per
# backend: queries/s, peak RSS (mariadbd's VmHWM), peak RSS / block cache,
# and the QPS ratio B/A as median (min..max) over the pairs. Never asserts.
# Needs root, mariadb-server, mariadb-plugin-rocksdb and sysbench.
# Usage: bench/myrocks.sh [PAIRS] [SECONDS] [BACKENDS...]
#   env: CACHE (32M), THREADS (8), WARM (4 s), RECORD (on), SHIM_CONF (more
#   key:value pairs for B's config file, comma-separated: stacks:0), BASELINE
#   (none: A has no malloc-lib; direct: A preloads the backend's own library,
#   Debian's libjemalloc.so.2 or libtcmalloc_minimal.so.4, to isolate the
#   shim's cost from the allocator's), MDB_SB_TABLES (4), MDB_SB_ROWS (100000)
set -u

pairs=${1:-3}
secs=${2:-10}
shift 2 2>/dev/null || shift $#
backends=${*:-glibc jemalloc tcmalloc}
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILDDIR:-$PWD}
shim="$build/.libs/libmallocshim.so"
CACHE=${CACHE:-32M}
THREADS=${THREADS:-8}
WARM=${WARM:-4}
RECORD=${RECORD:-on}
BASELINE=${BASELINE:-none}
. "$top/bench/lib.sh"
. "$top/t/lib-mariadb.sh"

[ -r "$shim" ] || { echo "myrocks.sh: $shim: build first (or set BUILDDIR)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "myrocks.sh: needs root (mysqld_safe switches to user mysql)" >&2; exit 2; }
if why=$(mdb_missing); then
    echo "myrocks.sh: $why (scripts/deps.sh installs it)" >&2
    exit 2
fi
cache_bytes=$(echo "$CACHE" | awk '{ n = $0 + 0; u = substr($0, length($0));
    print n * (u == "G" ? 1073741824 : u == "M" ? 1048576 : u == "K" ? 1024 : 1) }')

W=$(mktemp -d)
chmod 711 "$W"
MDB="$W/srv"
MDB_SAFE=""
trap 'mdb_kill; rm -rf "$W"' EXIT
trap 'exit 1' HUP INT TERM
mdb_init "$MDB" "$CACHE"
mkdir -m 1777 "$W/shm"
export MALLOCSHIM_CONF_FILE="$W/shim.conf"
unset MALLOCSHIM_CONF LD_PRELOAD

die() { echo "myrocks.sh: $*" >&2; tail -n 20 "$MDB/run/error.log" "$MDB/safe.out" >&2 2>/dev/null; exit 1; }

direct_lib() {  # direct_lib BACKEND: the backend's own library, for BASELINE=direct
    case $1 in
    jemalloc) ldconfig -p | sed -n 's/.*libjemalloc\.so\.2 .*=> //p' | head -n 1 ;;
    tcmalloc) ldconfig -p | sed -n 's/.*libtcmalloc_minimal\.so\.4 .*=> //p' | head -n 1 ;;
    esac
}

# one LIB TAG: a server run with malloc-lib=LIB (none when empty); appends
# "qps hwm_kb" to $W/TAG.
one() {
    mdb_cnf "$1"
    mdb_start || die "the server did not start ($2)"
    mdb_read "$WARM" "$THREADS" >/dev/null 2>&1 || die "warm-up failed ($2)"
    mdb_read "$secs" "$THREADS" >"$W/sb.out" 2>&1 || die "sysbench failed ($2)"
    hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$MDB_PID/status")
    qps=$(mdb_qps "$W/sb.out")
    mdb_stop || die "shutdown failed ($2)"
    rm -f "$W"/shm/mallocshim.*
    echo "$qps $hwm" >>"$W/$2"
    echo "#   $2: $qps queries/s, VmHWM $((hwm / 1024)) MiB"
}

header "MariaDB + MyRocks, sysbench oltp_point_select, without and with the shim"
echo "# $MDB_SB_TABLES tables x $MDB_SB_ROWS rows, rocksdb_block_cache_size=$CACHE, 16 KiB blocks;" \
    "$THREADS threads, $WARM s warm-up then $secs s; $pairs pairs per backend, A B / B A alternating"
echo "# A: mysqld_safe $( [ "$BASELINE" = direct ] && echo "with malloc-lib=the backend's own library (glibc: none)" || echo "without malloc-lib (glibc malloc)");" \
    "B: malloc-lib=libmallocshim.so, backend from its config file, record:$RECORD${SHIM_CONF:+,$SHIM_CONF}"
echo "# $(mariadbd --version); $(sysbench --version)"
mdb_install || die "mariadb-install-db failed"
mdb_cnf ""
mdb_start || die "the server did not start (load)"
t0=$(date +%s)
mdb_load || die "sysbench prepare failed: $(tail -n 3 "$MDB/prepare.out")"
echo "# loaded in $(( $(date +%s) - t0 )) s; SST files: $(( $(cat "$MDB"/data/\#rocksdb/*.sst | wc -c) >> 20 )) MiB"
mdb_stop || die "shutdown after the load failed"

for b in $backends; do
    printf 'backend = %s\nrecord = %s\nshm_dir = %s\n%s\n' "$b" "$RECORD" "$W/shm" \
        "$(printf '%s' "${SHIM_CONF:-}" | tr ',' '\n' | sed 's/:/ = /')" >"$W/shim.conf"
    base=""
    [ "$BASELINE" = direct ] && base=$(direct_lib "$b")
    : >"$W/A.$b"; : >"$W/B.$b"
    r=0
    while [ $r -lt "$pairs" ]; do
        if [ $((r % 2)) -eq 0 ]; then
            one "$base" "A.$b"; one "$shim" "B.$b"
        else
            one "$shim" "B.$b"; one "$base" "A.$b"
        fi
        r=$((r + 1))
    done
done

echo
printf '%-9s %10s %10s %24s %9s %9s %8s %8s\n' backend "A qps" "B qps" "B/A qps" "A HWM" "B HWM" "A/cache" "B/cache"
for b in $backends; do
    paste -d' ' "$W/A.$b" "$W/B.$b" | awk '{ printf "%.4f\n", $3 / $1 }' >"$W/ratio"
    aq=$(cut -d' ' -f1 "$W/A.$b" | stats | cut -d' ' -f1)
    bq=$(cut -d' ' -f1 "$W/B.$b" | stats | cut -d' ' -f1)
    ah=$(cut -d' ' -f2 "$W/A.$b" | stats | cut -d' ' -f1)
    bh=$(cut -d' ' -f2 "$W/B.$b" | stats | cut -d' ' -f1)
    printf '%-9s %10.0f %10.0f %24s %s\n' "$b" "$aq" "$bq" "$(med <"$W/ratio")" \
        "$(awk -v a="$ah" -v b="$bh" -v c="$cache_bytes" \
            'BEGIN { printf "%5.0f MiB %5.0f MiB %8.2f %8.2f", a / 1024, b / 1024, a * 1024 / c, b * 1024 / c }')"
done
echo "# qps and HWM: medians over the pairs; B/A: median (min..max) of the per-pair ratios"
