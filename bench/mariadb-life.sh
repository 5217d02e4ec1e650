#!/bin/sh
# mariadb-life.sh: the whole life of a MariaDB + MyRocks server, measured
# per allocator config (issue 34): a fresh datadir, start (mysqld_safe,
# malloc-lib=libmallocshim.so, recording on, so that every config's
# process is the one a capture reads), sysbench prepare of TABLES x ROWS
# (a bulk load), then oltp_read_write with THREADS threads for SECS s.
# Reports per config: the peak RSS of the whole life (mariadbd's VmHWM at
# the end), RSS and VmHWM at the end of the prepare, the highest RSS
# sampled during the load (every 0.25 s, so a lower bound), the load's
# queries/s, and the RSS at the end of the prepare and the load's peak in
# RssAnon too (the heap without code or the segment, as bench/fidelity.sh
# counts a real run).
#
# CAPTURE=mid: a shimdump --capture=MID_SECS taken MID_AT s into the load,
# kept in $OUT/mid.trace. CAPTURE=life: the life captured from the shim's
# start (capture_start, mallocshim.conf(5)) to the server's exit, kept in
# $OUT/life.trace; the trace's size is sampled with the RSS, and its growth
# through the prepare and through the load reported. Then (unless
# REPLAY=no) shimreplay --all of the trace, with its calibration, and with
# REAL=FILE (this script's output for the same life without a capture)
# the table: real peak | replayed peak | calibrated prediction | error, per
# config, and both rankings. OUT keeps the segment's JSON at the end of
# the prepare and of the load too.
#
# START=safe (the default) starts the server as a user does, mysqld_safe
# with malloc-lib=libmallocshim.so; START=direct as systemd does,
# mariadbd itself with LD_PRELOAD (mariadb.service, Environment=). The
# same mariadbd, the same arguments; CAPTURE=life needs direct: under
# mysqld_safe, nohup is preloaded too and exec's mariadbd in its own pid,
# so nohup's image takes the trace's name (%p) and mariadbd's capture_start
# finds it taken.
#
# Needs root, mariadb-server, mariadb-plugin-rocksdb and sysbench. One
# server at a time; its datadir is made in /var/tmp and removed at exit.
# Usage: bench/mariadb-life.sh [CONFIGS...]   (from the build directory)
#   CONFIGS: glibc, glibc-arenas1, jemalloc, tcmalloc (default: all four)
#   env: MDB_SB_TABLES (4), MDB_SB_ROWS (500000), CACHE (256M), THREADS
#   (16), SECS (60), SECONDARY (on: sysbench's default prepare, which
#   builds the secondary index k after the insert, a MyRocks bulk index
#   build; off: primary keys only, as bench/myrocks.sh), CAPTURE (none, mid
#   or life), MID_AT (20), MID_SECS (20), START (safe; direct with
#   CAPTURE=life), OUT (a directory that keeps the traces, the JSON, the
#   samples and the replays; needed with CAPTURE or TRACE), REAL, REPLAY
#   (yes), TOUCH (shimreplay's --touch: its default when unset; several,
#   space-separated, replayed REPEAT times each), REPEAT (shimreplay --repeat: 3),
#   PACE (1: shimreplay --pace, each replay as long as the life; 0:
#   --no-pace; unset: shimreplay's default, paced up to 300 s),
#   TRACE (a trace kept before: no life, only its replay and the table)
set -u

configs=${*:-glibc glibc-arenas1 jemalloc tcmalloc}
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILDDIR:-$PWD}
shim="$build/.libs/libmallocshim.so"
sd="$build/tools/shimdump"
CACHE=${CACHE:-256M}
THREADS=${THREADS:-16}
SECS=${SECS:-60}
CAPTURE=${CAPTURE:-none}
MID_AT=${MID_AT:-20}
MID_SECS=${MID_SECS:-20}
MDB_SB_TABLES=${MDB_SB_TABLES:-4}
MDB_SB_ROWS=${MDB_SB_ROWS:-500000}
MDB_MAX_CONN=$((THREADS + 16))
SECONDARY=${SECONDARY:-on}
REPEAT=${REPEAT:-3}
. "$top/bench/lib.sh"
. "$top/t/lib-mariadb.sh"

[ -r "$shim" ] && [ -x "$sd" ] || { echo "mariadb-life.sh: $shim: build first (or set BUILDDIR)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "mariadb-life.sh: needs root (mysqld_safe switches to user mysql)" >&2; exit 2; }
if why=$(mdb_missing); then
    echo "mariadb-life.sh: $why (scripts/deps.sh installs it)" >&2
    exit 2
fi
case $CAPTURE in none|mid|life) ;; *) echo "mariadb-life.sh: CAPTURE: none, mid or life" >&2; exit 2 ;; esac
START=${START:-$( [ "$CAPTURE" = life ] && echo direct || echo safe)}
case $START in safe|direct) ;; *) echo "mariadb-life.sh: START: safe or direct" >&2; exit 2 ;; esac
[ "$CAPTURE" = none ] && [ -z "${TRACE:-}" ] || [ -n "${OUT:-}" ] ||
    { echo "mariadb-life.sh: CAPTURE and TRACE need OUT" >&2; exit 2; }
if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT" || exit 2
    OUT=$(cd "$OUT" && pwd)
fi
# the datadir of 4 x 500k rows takes about 1 GiB with its logs
avail=$(df -Pk /var/tmp | awk 'NR == 2 { print $4 }')
[ "$avail" -gt 4194304 ] || { echo "mariadb-life.sh: /var/tmp: under 4 GiB free" >&2; exit 2; }

W=$(mktemp -d /var/tmp/mallocshim-life.XXXXXX)
chmod 711 "$W"
MDB="$W/srv"
MDB_SAFE=""
MDB_PID=""
sampler=""
capper=""
cleanup() {
    [ -n "$sampler" ] && kill "$sampler" 2>/dev/null
    [ -n "$capper" ] && kill "$capper" 2>/dev/null
    mdb_kill
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
mdb_init "$MDB" "$CACHE"
mkdir -m 1777 "$W/shm" "$W/cap"
export MALLOCSHIM_CONF_FILE="$W/shim.conf"
unset MALLOCSHIM_CONF LD_PRELOAD

die() { echo "mariadb-life.sh: $*" >&2; tail -n 20 "$MDB/run/error.log" "$MDB/safe.out" >&2 2>/dev/null; exit 1; }

# start_direct: mdb_start's work without mysqld_safe: mariadbd with our
# my.cnf, the shim in LD_PRELOAD (as mariadb.service starts it), waited
# for (90 s) until it answers. MDB_SAFE and MDB_PID are both its pid (it
# is our child), so that mdb_stop and mdb_kill end it as they end ours.
start_direct() {
    MDB_PID=""
    rm -f "$MDB/run/mariadbd.pid"
    LD_PRELOAD="$shim" mariadbd --defaults-file="$MDB/my.cnf" >"$MDB/safe.out" 2>&1 </dev/null &
    MDB_SAFE=$!
    i=0
    while [ $i -lt 900 ]; do
        mdb_alive "$MDB_SAFE" || { echo "mariadbd exited" >>"$MDB/safe.out"; return 1; }
        if [ -s "$MDB/run/mariadbd.pid" ] &&
            mysqladmin --defaults-file="$MDB/my.cnf" --connect-timeout=2 ping >/dev/null 2>&1; then
            MDB_PID=$(cat "$MDB/run/mariadbd.pid")
            [ "$MDB_PID" = "$MDB_SAFE" ] && return 0
            echo "pid-file says $MDB_PID, which is not our mariadbd ($MDB_SAFE)" >>"$MDB/safe.out"
            MDB_PID=""
            return 1
        fi
        sleep 0.1
        i=$((i + 1))
    done
    echo "no answer after 90 s" >>"$MDB/safe.out"
    return 1
}

# prepare: the sbtest database, MDB_SB_TABLES x MDB_SB_ROWS rows,
# ENGINE=ROCKSDB, 4 threads (a table each), the secondary index as
# SECONDARY says, then the memtable flushed. Output in $MDB/prepare.out.
prepare() {
    mdb_sql "CREATE DATABASE sbtest" >"$MDB/prepare.out" 2>&1 &&
        mdb_sb oltp_read_write --mysql-storage-engine=rocksdb --create_secondary="$SECONDARY" \
            --threads=4 prepare >>"$MDB/prepare.out" 2>&1 &&
        mdb_sql "SET GLOBAL rocksdb_force_flush_memtable_now = 1" >>"$MDB/prepare.out" 2>&1
}

# kb FIELD PID: a field of /proc/PID/status, in KiB
kb() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$2/status" 2>/dev/null; }

# sample PID FILE: "seconds VmRSS RssAnon VmHWM" (KiB) and the size of
# the life's trace (bytes, 0 when none) every 0.25 s while PID runs; the
# phase marks ($W/phase) go in as "# phase" lines.
sample() {
    tr="$W/cap/life.$1.trace"
    t0=$(date +%s.%N)
    last=""
    while [ -r "/proc/$1/status" ]; do
        ph=$(cat "$W/phase" 2>/dev/null)
        [ "$ph" != "$last" ] && { echo "# $ph"; last=$ph; }
        sz=$(stat -c %s "$tr" 2>/dev/null || echo 0)
        awk -v t0="$t0" -v now="$(date +%s.%N)" -v sz="$sz" '
            $1 == "VmRSS:" { r = $2 } $1 == "RssAnon:" { a = $2 } $1 == "VmHWM:" { h = $2 }
            END { if (r != "") printf "%.2f %d %d %d %d\n", now - t0, r, a, h, sz }' "/proc/$1/status" 2>/dev/null
        sleep 0.25
    done >"$2"
}

# peak PHASE FILE COLUMN: the highest value of COLUMN (2 VmRSS, 3 RssAnon)
# sampled in PHASE, in KiB
peak() {
    awk -v p="# $1" -v c="$3" '/^#/ { on = ($0 == p); next } on && $c > m { m = $c } END { print m + 0 }' "$2"
}

# conf CONFIG: the shim's config file for CONFIG
conf() {
    case $1 in
    glibc) b=glibc a=0 ;;
    glibc-arenas1) b=glibc a=1 ;;
    jemalloc) b=jemalloc a=0 ;;
    tcmalloc) b=tcmalloc a=0 ;;
    *) die "$1: not a config (glibc, glibc-arenas1, jemalloc, tcmalloc)" ;;
    esac
    printf 'backend = %s\narenas = %s\nrecord = on\nshm_dir = %s\n' "$b" "$a" "$W/shm" >"$W/shim.conf"
    if [ "$CAPTURE" = life ]; then
        printf 'capture_start = %s\ncapture_max = 8g\n' "$W/cap/life.%p.trace" >>"$W/shim.conf"
    fi
}

# snap NAME: the segment's JSON into $OUT/NAME.json (when OUT is set)
snap() {
    [ -n "${OUT:-}" ] || return 0
    "$sd" --dir "$W/shm" --json "$MDB_PID" >"$OUT/$1.json" 2>"$W/snap.err" ||
        echo "# shimdump --json ($1) failed: $(head -c 200 "$W/snap.err")"
}

# life CONFIG: one whole life; prints its line of figures into $W/res
life() {
    c=$1
    rm -rf "$MDB/data"
    mdb_install || die "mariadb-install-db failed ($c)"
    conf "$c"
    echo start >"$W/phase"
    if [ "$START" = direct ]; then
        mdb_cnf ""
        start_direct || die "the server did not start ($c)"
    else
        mdb_cnf "$shim"
        mdb_start || die "the server did not start ($c)"
    fi
    sample "$MDB_PID" "$W/samples.$c" &
    sampler=$!
    echo "#   $c: started, VmRSS $(( $(kb VmRSS "$MDB_PID") / 1024 )) MiB"

    echo prepare >"$W/phase"
    s_tr=$(stat -c %s "$W/cap/life.$MDB_PID.trace" 2>/dev/null || echo 0)
    t0=$(date +%s)
    prepare || die "sysbench prepare failed ($c): $(tail -n 3 "$MDB/prepare.out")"
    tprep=$(( $(date +%s) - t0 ))
    p_rss=$(kb VmRSS "$MDB_PID") p_anon=$(kb RssAnon "$MDB_PID") p_hwm=$(kb VmHWM "$MDB_PID")
    p_tr=$(stat -c %s "$W/cap/life.$MDB_PID.trace" 2>/dev/null || echo 0)
    snap "$c.prepared"
    echo "#   $c: prepared in $tprep s; VmRSS $((p_rss / 1024)) MiB, RssAnon $((p_anon / 1024)) MiB, VmHWM $((p_hwm / 1024)) MiB"

    echo load >"$W/phase"
    tl=$(date +%s.%N)
    if [ "$CAPTURE" = mid ]; then
        ( sleep "$MID_AT" && "$sd" --dir "$W/shm" --capture="$MID_SECS" -o "$OUT/mid.trace" "$MDB_PID" \
            >"$OUT/mid.summary" 2>&1 ) &
        capper=$!
    fi
    mdb_sb oltp_read_write --threads="$THREADS" --time="$SECS" --report-interval=10 run \
        >"$W/sb.$c" 2>&1 || die "sysbench oltp_read_write failed ($c): $(tail -n 3 "$W/sb.$c")"
    tl=$(awk -v a="$tl" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    qps=$(mdb_qps "$W/sb.$c")
    e_tr=$(stat -c %s "$W/cap/life.$MDB_PID.trace" 2>/dev/null || echo 0)
    e_rss=$(kb VmRSS "$MDB_PID") e_anon=$(kb RssAnon "$MDB_PID") e_hwm=$(kb VmHWM "$MDB_PID")
    echo end >"$W/phase"
    sleep 0.5
    snap "$c.end"
    if [ -n "$capper" ]; then
        wait "$capper"
        capper=""
        echo "#   $c: mid-life capture: $(head -n 3 "$OUT/mid.summary" | tr '\n' ' ')"
    fi
    kill "$sampler" 2>/dev/null
    wait "$sampler" 2>/dev/null
    sampler=""
    l_rss=$(peak load "$W/samples.$c" 2) l_anon=$(peak load "$W/samples.$c" 3)
    a_anon=$(awk '!/^#/ && $3 > m { m = $3 } END { print m + 0 }' "$W/samples.$c")
    echo "#   $c: load $qps queries/s; end VmRSS $((e_rss / 1024)) MiB, VmHWM $((e_hwm / 1024)) MiB;" \
        "load peak VmRSS $((l_rss / 1024)) MiB (sampled)"
    grep -h '^mallocshim:' "$MDB/run/error.log" "$MDB/safe.out" 2>/dev/null | head -n 3 | sed 's/^/#   the shim wrote: /'
    pid=$MDB_PID
    mdb_stop || die "shutdown failed ($c)"
    if [ "$CAPTURE" = life ]; then
        tr="$W/cap/life.$pid.trace"
        [ -s "$tr" ] || die "no trace from the start ($tr): $(grep -h '^mallocshim:' "$MDB/run/error.log" "$MDB/safe.out" | head -n 3)"
        f_tr=$(stat -c %s "$tr")
        mv "$tr" "$OUT/life.trace"
        awk -v s="$s_tr" -v p="$p_tr" -v e="$e_tr" -v f="$f_tr" -v tp="$tprep" -v tl="$tl" 'BEGIN {
            m = 1048576
            printf "#   %s: the trace: %.1f MiB when the prepare began, %.1f MiB at its end (%.2f MiB/s over its %d s),", "'"$c"'", s / m, p / m, (p - s) / m / tp, tp
            printf " %.1f MiB at the end of the load (%.2f MiB/s over its %.1f s), %.1f MiB at exit\n", e / m, (e - p) / m / tl, tl, f / m }'
    fi
    [ -n "${OUT:-}" ] && { cp "$W/samples.$c" "$OUT/samples.$c"; cp "$W/sb.$c" "$OUT/sysbench.$c"; }
    rm -f "$W"/shm/mallocshim.*
    echo "$c $e_hwm $p_rss $p_hwm $l_rss $e_rss $qps $tprep $p_anon $l_anon $a_anon" >>"$W/res"
}

header "MariaDB + MyRocks, a whole life per allocator config"
echo "# a fresh datadir; $( [ "$START" = direct ] && echo "mariadbd started directly with LD_PRELOAD=libmallocshim.so" ||
    echo "mysqld_safe with malloc-lib=libmallocshim.so") (record on, the config's backend);"
echo "# sysbench prepare $MDB_SB_TABLES x $MDB_SB_ROWS rows (ENGINE=ROCKSDB, $( [ "$SECONDARY" = on ] &&
    echo "the secondary index k built after the insert" || echo "primary keys only"), 4 threads, then a memtable flush);"
echo "# oltp_read_write, $THREADS threads, $SECS s; rocksdb_block_cache_size=$CACHE, 16 KiB blocks; capture: $CAPTURE"
echo "# $(mariadbd --version); $(sysbench --version)"
if [ -n "${TRACE:-}" ]; then
    # only the replay, of a trace this script kept before
    CAPTURE=given
else
: >"$W/res"
for c in $configs; do
    life "$c"
done

echo
echo "# MiB (KiB / 1024); life peak: VmHWM at the end; load peak: the highest VmRSS sampled in the load (0.25 s)"
printf '%-14s %10s %12s %12s %10s %9s %9s %7s %12s %12s\n' config "life peak" "prep VmRSS" "prep VmHWM" \
    "load peak" "end RSS" "qps" "prep s" "prep anon" "load anon"
awk '{ printf "%-14s %10.0f %12.0f %12.0f %10.0f %9.0f %9.0f %7d %12.0f %12.0f\n",
       $1, $2 / 1024, $3 / 1024, $4 / 1024, $5 / 1024, $6 / 1024, $7, $8, $9 / 1024, $10 / 1024 }' "$W/res"
fi

[ "$CAPTURE" != none ] && [ "${REPLAY:-yes}" != no ] || exit 0
sr="$build/tools/shimreplay"
export MALLOCSHIM_LIB="$shim"
trace=${TRACE:-$OUT/$CAPTURE.trace}
[ -s "$trace" ] || die "$trace: no trace"
echo
echo "# shimreplay --info $trace:"
"$sr" --info "$trace" 2>&1 | sed 's/^/#   /'
for t in ${TOUCH:-default}; do
    opt=""
    [ "$t" = default ] || opt="--touch=$t"
    case ${PACE:-auto} in 1) opt="$opt --pace" ;; 0) opt="$opt --no-pace" ;; esac
    echo
    echo "# shimreplay --all --repeat=$REPEAT $opt (touch: $t), $(date -u +%H:%MZ):"
    TMPDIR=/var/tmp "$sr" --all --quiet --repeat="$REPEAT" --json $opt "$trace" >"$OUT/replay.$t.json" 2>"$W/sr.err"
    rc=$?
    # a table of the replays from their JSON (shimreplay --all without
    # --json prints its own), each replay's peak beside it
    [ -s "$OUT/replay.$t.json" ] && python3 - "$OUT/replay.$t.json" <<'PY' | tee "$OUT/replay.$t.txt"
import json, sys
d = json.load(open(sys.argv[1]))
M = 1 << 20
print("%-16s %9s %19s %10s %9s" % ("config", "peak MiB", "range", "predicted", "end MiB"))
for r in d["runs"]:
    if r.get("exit"):
        print("%-16s failed: exit %d" % (r["config"], r["exit"]))
        continue
    pr = r.get("predicted_peak_rss_bytes")
    print("%-16s %9.0f %19s %10s %9.0f%s" % (r["config"] + (" *" if r["captured"] else ""), r["peak_rss_bytes"] / M,
          "%.0f..%.0f" % (r["peak_rss_min_bytes"] / M, r["peak_rss_max_bytes"] / M),
          "%.0f" % (pr / M) if pr else "-", r["end_rss_bytes"] / M, " !" if r["may_hold_more"] else ""))
print("# each replay's peak, MiB: " + "; ".join("%s %s" % (r["config"], " ".join("%.0f" % (p / M) for p in r["peak_rss_runs"]))
      for r in d["runs"]))
print("# shimreplay's ranking: " + " < ".join(" = ".join(g) for g in d["ranking"]["groups"]) +
      "; paced: %s" % ", ".join(sorted({str(r["paced"]) for r in d["runs"]})))
PY
    if [ $rc -ne 0 ]; then
        echo "# shimreplay --all --json $opt: exit $rc: $(head -c 300 "$W/sr.err")"
        continue
    fi
    [ -n "${REAL:-}" ] || continue
    python3 - "$OUT/replay.$t.json" "$REAL" "$t" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
lives = {}
for l in open(sys.argv[2]):
    m = re.match(r"(glibc|glibc-arenas1|jemalloc|tcmalloc)\s+(\d+)\s", l)
    if m:
        lives.setdefault(m.group(1).replace("glibc-arenas1", "glibc arenas:1"), []).append(float(m.group(2)))
# the mean of every life of a config in the file, said with its range
real = {c: sum(v) / len(v) for c, v in lives.items()}
print("# real: the life peak's mean over the lives in %s: %s" % (sys.argv[2], ", ".join(
    "%s %.0f (%d: %.0f..%.0f)" % (c, real[c], len(v), min(v), max(v)) for c, v in lives.items())))
M = 1 << 20
cal = (d.get("trace") or {}).get("real")
if cal:
    print("# the capture's own process: peak %.0f MiB (%s), start %.0f, end %.0f, VmHWM before %.0f" % (
        cal["peak_rss_bytes"] / M, "VmHWM" if cal.get("peak_exact") else "sampled, a lower bound",
        cal["start_rss_bytes"] / M, cal["end_rss_bytes"] / M, cal["hwm_before_bytes"] / M))
lim = d.get("limits")
if lim:
    print("# limits: mid_life %s, history_higher %s, may_hold_more %s" % (
        lim.get("mid_life"), lim.get("history_higher"), lim.get("may_hold_more")))
    if lim.get("advice"):
        print("#   " + lim["advice"])
rows = []
print("%-16s %10s %10s %8s %10s %8s %7s" % ("config (touch " + sys.argv[3] + ")", "real", "replayed", "rep/real",
      "predicted", "pred err", "calib"))
for r in d["runs"]:
    c = r.get("config")
    if c not in real:
        continue
    rp = r.get("peak_rss_bytes")
    pr = r.get("predicted_peak_rss_bytes")
    ce = r.get("calibration_error")
    rows.append((c, real[c], rp / M if rp else None, pr / M if pr else None))
    print("%-16s %10.0f %10s %8s %10s %8s %7s%s" % (c, real[c],
          "%.0f" % (rp / M) if rp else "-", "%.2f" % (rp / M / real[c]) if rp else "-",
          "%.0f" % (pr / M) if pr else "-", "%+.1f%%" % ((pr / M / real[c] - 1) * 100) if pr else "-",
          "%+.1f%%" % (ce * 100) if ce is not None else "-", " !" if r.get("may_hold_more") else ""))
# The ranking, by shimreplay's rule (shimreplay(1), Ranking): each
# config's peaks span its lowest to its highest; configs whose spans
# overlap, directly or through others, are one group (=: not told apart);
# within a group, by median. The real side from its lives' peaks, the
# replay's from each replay's peak, both over the configs that have lives
# (a config without, as glibc arenas:2, would join others). Right: no pair
# in the opposite order; each pair one side tells apart and the other does
# not is said.
def groups_of(spans):
    gs, top = [], 0
    for c, lo, mid, hi in sorted(spans, key=lambda x: (x[1], x[2])):
        if not gs or lo > top:
            gs.append([])
        gs[-1].append((mid, c))
        top = hi if len(gs[-1]) == 1 else max(top, hi)
    return [[c for m, c in sorted(g)] for g in gs]
med = lambda v: sorted(v)[(len(v) - 1) // 2]
real_groups = groups_of([(c, min(v), med(v), max(v)) for c, v in lives.items()])
rep_groups = groups_of([(r["config"], min(r["peak_rss_runs"]), r["peak_rss_bytes"], max(r["peak_rss_runs"]))
                        for r in d["runs"] if r["config"] in real and not r.get("exit") and r.get("peak_rss_runs")])
def place(gs):
    return {c: i for i, g in enumerate(gs) for c in g}
pr, pp = place(real_groups), place(rep_groups)
wrong, coarser, finer = [], [], []
cs = [c for c in real if c in pp]
for a in cs:
    for b in cs:
        if pr[a] < pr[b] and pp[a] > pp[b]:
            wrong.append("%s above %s" % (a, b))
        elif pr[a] < pr[b] and pp[a] == pp[b]:
            coarser.append("%s < %s" % (a, b))
        elif pr[a] == pr[b] and pp[a] < pp[b]:
            finer.append("%s < %s" % (a, b))
fmt = lambda gs: " < ".join(" = ".join(g) for g in gs)
print("# ranking, least peak first (=: not told apart): real (%d lives each) %s; replayed (%d replays each) %s: %s%s%s" % (
    min((len(v) for v in lives.values()), default=0), fmt(real_groups), d["ranking"]["repeats"], fmt(rep_groups),
    "right" if not wrong else "WRONG: " + ", ".join(wrong),
    "; real lives tell apart, replays do not: " + ", ".join(coarser) if coarser else "",
    "; replays tell apart, real lives do not: " + ", ".join(finer) if finer else ""))
PY
done
