#!/bin/sh
# cgmyrocks.sh: what the shim costs MariaDB + MyRocks in instructions per
# query, counted by valgrind's callgrind, so that the figure repeats on a
# noisy machine where bench/myrocks.sh's pairs spread by 10-30%. mariadbd is
# started under callgrind (directly, not by mysqld_safe; InnoDB without
# native AIO, which valgrind lacks), collecting only inside do_command (the
# query's own work, in whichever thread runs it: not the server's start,
# nor its background threads, nor the shim's sampler thread), and sysbench
# oltp_point_select runs through one connection: a warm-up of 3000 queries
# (--rand-seed=7), then SHORT or LONG queries (--rand-seed=1). The difference
# of the two runs over LONG - SHORT cancels the warm-up and the connections.
# Per backend: bare (glibc alone; libjemalloc.so.2 or libtcmalloc_minimal.so.4
# preloaded alone), the shim with record:off, recording with no block tracked
# (sample:2^30, sample_bytes:0), recording with stacks:0, by counts alone
# (sample_bytes:0), and at the default sampling;
# instructions per query and bare / run. Instructions are not time: cache
# misses and the sampler thread's passes are not in them.
# Needs root, mariadb-server, mariadb-plugin-rocksdb, sysbench and valgrind.
# Usage: bench/cgmyrocks.sh [SHORT LONG]   (queries; from the build directory)
# Environment: CACHE (32M), BACKENDS ("glibc jemalloc tcmalloc"), RUNS (as
# bench/cgdbbench.sh's), ROUNDS (1; as bench/cgdbbench.sh's: 2 or more
# for figures that compare, MariaDB's count moving between runs),
# MDB_SB_TABLES (4), MDB_SB_ROWS (100000).
set -u
short=${1:-2000}
long=${2:-8000}
CACHE=${CACHE:-32M}
backends=${BACKENDS:-glibc jemalloc tcmalloc}
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILDDIR:-$PWD}
shim="$build/.libs/libmallocshim.so"
libdir=/usr/lib/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
. "$top/bench/lib.sh"
. "$top/t/lib-mariadb.sh"

[ -r "$shim" ] || { echo "cgmyrocks.sh: $shim: build first (or set BUILDDIR)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "cgmyrocks.sh: needs root (mariadbd switches to user mysql)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "cgmyrocks.sh: valgrind is not installed" >&2; exit 2; }
if why=$(mdb_missing); then
    echo "cgmyrocks.sh: $why (scripts/deps.sh installs it)" >&2
    exit 2
fi
[ "$long" -gt "$short" ] 2>/dev/null || { echo "cgmyrocks.sh: LONG must be more queries than SHORT" >&2; exit 2; }

W=$(mktemp -d)
chmod 711 "$W"
MDB="$W/srv"
MDB_SAFE=""
VG=""
cleanup() {
    [ -n "$VG" ] && kill -KILL "$VG" 2>/dev/null
    mdb_kill
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
mdb_init "$MDB" "$CACHE"
mkdir -m 1777 "$W/shm"
unset MALLOCSHIM_CONF LD_PRELOAD
export MALLOCSHIM_CONF_FILE=/dev/null

# (count runs in a subshell, whose exit does not run the EXIT trap: die ends
# its valgrind itself)
die() {
    echo "cgmyrocks.sh: $*" >&2
    [ -n "$VG" ] && kill -KILL "$VG" 2>/dev/null
    exit 1
}

mdb_install || die "mariadb-install-db failed: $(tail -n 5 "$MDB/install.log")"
mdb_start || die "the server did not start: $(tail -n 5 "$MDB/safe.out")"
mdb_load || { mdb_stop; die "loading failed: $(tail -n 5 "$MDB/prepare.out")"; }
mdb_stop || die "the server did not stop"

# count PRELOAD CONF QUERIES -> the instructions inside do_command, all threads
count() {
    O="$W/cg"
    rm -rf "$O"
    mkdir -m 777 "$O"   # callgrind writes its files as user mysql
    rm -f "$MDB/run/mariadbd.pid"
    env ${1:+LD_PRELOAD="$1"} ${2:+MALLOCSHIM_CONF="$2"} valgrind --tool=callgrind \
        --separate-threads=yes --callgrind-out-file="$O/cg" --collect-atstart=no \
        --toggle-collect='do_command*' --vgdb=no \
        mariadbd --defaults-file="$MDB/my.cnf" --innodb-use-native-aio=0 >"$O/server.out" 2>&1 &
    VG=$!
    i=0
    until mysqladmin --defaults-file="$MDB/my.cnf" --connect-timeout=2 ping >/dev/null 2>&1; do
        kill -0 "$VG" 2>/dev/null || die "mariadbd under callgrind exited ($2): $(tail -n 5 "$O/server.out")"
        [ $i -ge 300 ] && die "mariadbd under callgrind did not answer in 300 s ($2)"
        sleep 1
        i=$((i + 1))
    done
    for run in "3000 7" "$3 1"; do
        set -- "$1" "$2" "$3" $run
        mdb_sb oltp_point_select --rand-type=uniform --threads=1 --time=0 --events="$4" \
            --rand-seed="$5" --report-interval=0 run >"$O/sb.out" 2>&1 ||
            die "sysbench failed ($2): $(tail -n 5 "$O/sb.out")"
        grep -q "queries: *$4 " "$O/sb.out" || die "sysbench did not make $4 queries ($2)"
    done
    mysqladmin --defaults-file="$MDB/my.cnf" shutdown >/dev/null 2>&1
    wait "$VG"
    VG=""
    t=0 n=0
    for f in "$O"/cg-*; do
        [ -f "$f" ] || continue
        v=$(sed -n 's/^totals: *//p' "$f")
        case $v in '' | *[!0-9]*) die "no totals in $f" ;; esac
        t=$((t + v)) n=$((n + 1))
    done
    [ "$n" -gt 0 ] && [ "$t" -gt 0 ] || die "callgrind counted nothing in do_command ($2)"
    echo "$t"
}
# per_query PRELOAD CONF -> instructions per query
per_query() {
    a=$(count "$1" "$2" "$short") || exit 1
    b=$(count "$1" "$2" "$long") || exit 1
    awk -v a="$a" -v b="$b" -v n=$((long - short)) 'BEGIN { printf "%.0f", (b - a) / n }'
}

header "MariaDB + MyRocks point selects under callgrind: instructions per query"
echo "# $(mariadbd --version 2>/dev/null | sed 's/^.*Ver //'); sysbench oltp_point_select, $MDB_SB_TABLES tables x $MDB_SB_ROWS rows, uniform keys, block cache $CACHE"
echo "# 1 connection; inside do_command only; ($long - $short queries) / $((long - short)) after 3000 to warm up"
echo "# ratio: bare / run, queries per instruction against the same backend bare"
printf '%-9s %-20s %12s %8s %8s\n' backend run "instr/query" added ratio
cg_table per_query
