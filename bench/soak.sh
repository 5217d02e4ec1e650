#!/bin/sh
# soak.sh: the shim under load for a long time, the way a DBA would leave it
# on. MariaDB with MyRocks (mysqld_safe, malloc-lib= in my.cnf), sysbench
# oltp_read_write with CONNS connections (max_connections raised to fit),
# MINUTES per run: first the server without the shim (A: glibc malloc, or
# with BASELINE=direct the backend's own library), then with the shim on the
# backend (B), the same datadir. During B a second process reads the segment
# the whole time: `shimdump --watch=1` (a redraw every second) and
# `shimdump --json` once a minute (each must exit 0 and parse).
# Reports per backend: sysbench's errors (its exit status and the errors it
# counted; "ignored" are the lock conflicts it retries, A and B alike), QPS
# of B against A, mariadbd's RSS over time (every 10 s, both runs, in
# $OUT/rss.BACKEND.{A,B}) and its peak, and whether the segment was
# consistent at the end (the sum of the classes equals the totals; live
# counts never negative; the sampler's heartbeat recent; no line of the
# shim's on stderr). Never asserts: prints, and exits 1 when a check failed.
# Needs root, mariadb-server, mariadb-plugin-rocksdb and sysbench.
# Usage: bench/soak.sh [MINUTES] [BACKENDS...]   (from the build directory)
#   env: CONNS (256), CACHE (64M), BASELINE (none | direct), OUT (a new
#   temporary directory, kept), MDB_SB_TABLES (8), MDB_SB_ROWS (100000)
# The issue's form is 30 minutes per backend (about 2 h in all, with the
# one bare run; 3 h with BASELINE=direct); `bench/soak.sh 2` is the short
# form (about 10 minutes).
set -u

mins=${1:-30}
shift 2>/dev/null || true
backends=${*:-glibc jemalloc tcmalloc}
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILDDIR:-$PWD}
shim="$build/.libs/libmallocshim.so"
sd="$build/tools/shimdump"
CONNS=${CONNS:-256}
CACHE=${CACHE:-64M}
BASELINE=${BASELINE:-none}
MDB_SB_TABLES=${MDB_SB_TABLES:-8}
MDB_MAX_CONN=$((CONNS + 16))
# sysbench prepares its statements per connection and table
MDB_EXTRA_CNF="max_prepared_stmt_count=1048576"
. "$top/bench/lib.sh"
. "$top/t/lib-mariadb.sh"

[ -r "$shim" ] && [ -x "$sd" ] || { echo "soak.sh: build first (or set BUILDDIR)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "soak.sh: needs root (mysqld_safe switches to user mysql)" >&2; exit 2; }
if why=$(mdb_missing); then
    echo "soak.sh: $why (scripts/deps.sh installs it)" >&2
    exit 2
fi
secs=$((mins * 60))
W=$(mktemp -d)
chmod 711 "$W"
OUT=${OUT:-$(mktemp -d /tmp/soak.XXXXXX)}
mkdir -p "$OUT"
MDB="$W/srv"
MDB_SAFE=""
watcher=""
sampler=""
cleanup() {
    [ -n "$watcher" ] && kill "$watcher" 2>/dev/null
    [ -n "$sampler" ] && kill "$sampler" 2>/dev/null
    mdb_kill
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
mdb_init "$MDB" "$CACHE"
mkdir -m 1777 "$W/shm"
export MALLOCSHIM_CONF_FILE="$W/shim.conf" NO_COLOR=1
unset MALLOCSHIM_CONF LD_PRELOAD
failed=0

die() { echo "soak.sh: $*" >&2; tail -n 20 "$MDB/run/error.log" "$MDB/safe.out" >&2 2>/dev/null; exit 1; }
bad() { echo "#   FAILED: $*"; failed=1; }

direct_lib() {  # the backend's own library, for BASELINE=direct
    case $1 in
    jemalloc) ldconfig -p | sed -n 's/.*libjemalloc\.so\.2 .*=> //p' | head -n 1 ;;
    tcmalloc) ldconfig -p | sed -n 's/.*libtcmalloc_minimal\.so\.4 .*=> //p' | head -n 1 ;;
    esac
}

# rss_every PID FILE: "seconds rss_kib" every 10 s while PID lives
rss_every() {
    t0=$(date +%s)
    while kill -0 "$1" 2>/dev/null; do
        r=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status" 2>/dev/null)
        [ -n "$r" ] && echo "$(( $(date +%s) - t0 )) $r" >>"$2"
        sleep 10
    done
}

# json_every PID TAG: shimdump --json once a minute while sysbench runs;
# counts the reads that failed
json_every() {
    n=0
    : >"$W/json.fail"
    while [ ! -e "$W/sb.done" ]; do
        if "$sd" --dir "$W/shm" --json "$1" >"$W/snap.json" 2>"$W/snap.err" &&
            python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$W/snap.json" 2>>"$W/snap.err"; then
            n=$((n + 1))
        else
            echo "json read $n failed: $(head -c 300 "$W/snap.err")" >>"$W/json.fail"
        fi
        i=0
        while [ $i -lt 60 ] && [ ! -e "$W/sb.done" ]; do sleep 1; i=$((i + 1)); done
    done
    echo "$n" >"$W/json.count"
}

# run LIB TAG: one server run under LIB (none when empty) for $secs
run() {
    lib=$1 tag=$2
    mdb_cnf "$lib"
    mdb_start || die "the server did not start ($tag)"
    rm -f "$OUT/rss.$tag" "$W/sb.done" "$W/json.count"
    rss_every "$MDB_PID" "$OUT/rss.$tag" &
    sampler=$!
    watcher="" jpid=""
    if [ -n "$lib" ] && [ "$lib" = "$shim" ]; then
        "$sd" --dir "$W/shm" --watch=1 "$MDB_PID" >"$W/watch.out" 2>"$W/watch.err" </dev/null &
        watcher=$!
        json_every "$MDB_PID" &
        jpid=$!
    fi
    mdb_sb oltp_read_write --rand-type=uniform --threads="$CONNS" --time="$secs" \
        --report-interval=60 run >"$OUT/sysbench.$tag" 2>&1
    sbrc=$?
    touch "$W/sb.done"
    qps=$(mdb_qps "$OUT/sysbench.$tag")
    errs=$(sed -n 's/^ *ignored errors: *\([0-9]*\).*/\1/p' "$OUT/sysbench.$tag")
    hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$MDB_PID/status")
    echo "#   $tag: sysbench exit $sbrc, ${qps:-?} queries/s, ignored errors ${errs:-?}, VmHWM $((${hwm:-0} / 1024)) MiB"
    [ "$sbrc" -eq 0 ] && [ -n "$qps" ] || bad "$tag: sysbench failed: $(tail -n 3 "$OUT/sysbench.$tag")"
    if [ -n "$watcher" ]; then
        kill -0 "$watcher" 2>/dev/null || bad "$tag: shimdump --watch ended early: $(head -c 300 "$W/watch.err")"
        kill "$watcher" 2>/dev/null
        wait "$watcher" 2>/dev/null
        watcher=""
        wait "$jpid"
        jc=$(cat "$W/json.count" 2>/dev/null || echo 0)
        echo "#   $tag: shimdump --watch redrew $(grep -c 'OVER TIME' "$W/watch.out") times; --json read $jc times"
        [ -s "$W/json.fail" ] && bad "$tag: $(cat "$W/json.fail")"
        [ "$jc" -ge 1 ] || bad "$tag: no --json read succeeded"
        # the segment at the end, read while the server still runs
        if "$sd" --dir "$W/shm" --json "$MDB_PID" >"$OUT/end.$tag.json" 2>"$W/end.err"; then
            python3 - "$OUT/end.$tag.json" "$tag" <<'EOF' || bad "$tag: the segment at the end is not consistent"
import json, sys, time
d = json.load(open(sys.argv[1]))
t, cls = d["totals"], d["size_classes"]
for k in ("allocs", "frees", "live_count", "live_usable_bytes"):
    s = sum(c[k] for c in cls)
    assert s == t[k], (k, s, t[k])
assert all(c["allocs"] >= c["frees"] for c in cls), "a class with more frees than allocs"
assert t["allocs"] > 1000000, t["allocs"]
print("#   %s: end: %d allocs, %d live blocks, %.1f MiB live usable; consistent"
      % (sys.argv[2], t["allocs"], t["live_count"], t["live_usable_bytes"] / 2**20))
EOF
        else
            bad "$tag: shimdump --json at the end failed: $(head -c 300 "$W/end.err")"
        fi
        grep -h '^mallocshim:' "$MDB/run/error.log" "$MDB/safe.out" 2>/dev/null | head -n 5 >"$W/shimlines"
        [ -s "$W/shimlines" ] && bad "$tag: the shim wrote: $(cat "$W/shimlines")"
    fi
    kill "$sampler" 2>/dev/null
    wait "$sampler" 2>/dev/null
    sampler=""
    mdb_stop || die "shutdown failed ($tag)"
    rm -f "$W"/shm/mallocshim.*
    echo "${qps:-0} ${hwm:-0} ${errs:-0}" >"$W/res.$tag"
}

header "soak: MariaDB + MyRocks, sysbench oltp_read_write, $CONNS connections, $mins min per run"
echo "# $MDB_SB_TABLES tables x $MDB_SB_ROWS rows, rocksdb_block_cache_size=$CACHE, max_connections=$MDB_MAX_CONN"
echo "# A: $( [ "$BASELINE" = direct ] && echo "the backend's own library (glibc: none)" || echo "no malloc-lib (glibc malloc)");" \
    "B: malloc-lib=libmallocshim.so on the backend, recording on (defaults), watched"
echo "# $(mariadbd --version); $(sysbench --version); results in $OUT"
mdb_install || die "mariadb-install-db failed"
mdb_cnf ""
mdb_start || die "the server did not start (load)"
mdb_load || die "sysbench prepare failed: $(tail -n 3 "$MDB/prepare.out")"
mdb_stop || die "shutdown after the load failed"

# Without BASELINE=direct the A run is the same server for every backend
# (no malloc-lib): it runs once, first, and each B is compared with it.
if [ "$BASELINE" != direct ]; then
    echo "# A (no malloc-lib), once for every backend"
    run "" "none.A"
fi
for b in $backends; do
    printf 'backend = %s\nshm_dir = %s\n' "$b" "$W/shm" >"$W/shim.conf"
    echo "# $b"
    if [ "$BASELINE" = direct ]; then
        run "$(direct_lib "$b")" "$b.A"
    else
        cp "$W/res.none.A" "$W/res.$b.A"
        cp "$OUT/rss.none.A" "$OUT/rss.$b.A"
    fi
    run "$shim" "$b.B"
done

echo
printf '%-9s %10s %10s %8s %10s %10s %8s %8s\n' backend "A qps" "B qps" "B/A" "A HWM" "B HWM" "A ign" "B ign"
for b in $backends; do
    read -r aq ah ae <"$W/res.$b.A"
    read -r bq bh be <"$W/res.$b.B"
    awk -v b="$b" -v aq="$aq" -v bq="$bq" -v ah="$ah" -v bh="$bh" -v ae="$ae" -v be="$be" 'BEGIN {
        printf "%-9s %10.0f %10.0f %8.3f %6.0f MiB %6.0f MiB %8d %8d\n", b, aq, bq, aq ? bq / aq : 0,
            ah / 1024, bh / 1024, ae, be }'
done
echo "# RSS over time (seconds, KiB) every 10 s: $OUT/rss.BACKEND.{A,B}"
for b in $backends; do
    for t in A B; do
        printf '# %s %s RSS MiB at 25/50/75/100%% of the run: %s\n' "$b" "$t" \
            "$(awk '{ v[NR] = $2 } END { for (q = 1; q <= 4; q++) { i = int(NR * q / 4); if (i < 1) i = 1; printf "%.0f ", v[i] / 1024 } }' "$OUT/rss.$b.$t")"
    done
done
[ $failed -eq 0 ] && echo "# every check held" || echo "# SOME CHECKS FAILED (above)"
exit $failed
