#!/bin/sh
# memread.sh: what shimdump pays to read a running process's memory class by
# class (/proc/PID/status and smaps: tools/dump/dumpproc.c), on processes
# with many mappings: bcsim with 16 and 256 threads (a stack and a guard
# each, and glibc's arenas), and a MariaDB server with MyRocks and a 256 MiB
# InnoDB buffer pool, started by mysqld_safe with malloc-lib=libmallocshim.so
# under sysbench oltp_read_write. Reports the read's wall time (the
# snapshot's process_memory.read_ns) as median (min..max) over READS reads,
# beside the mappings and RSS, and a plain `cat` of smaps_rollup for scale;
# then MariaDB's RSS class by class and diagnosis as the view shows them.
# Never asserts. MariaDB's part needs root, mariadb-server,
# mariadb-plugin-rocksdb and sysbench, and is skipped without them.
# Usage: bench/memread.sh   env: READS (20), BUILDDIR
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILDDIR:-$PWD}
shim="$build/.libs/libmallocshim.so"
SD="$build/tools/shimdump"
READS=${READS:-20}
. "$top/bench/lib.sh"
. "$top/t/lib-mariadb.sh"

[ -r "$shim" ] && [ -x "$SD" ] || { echo "memread.sh: build first (or set BUILDDIR)" >&2; exit 2; }
W=$(mktemp -d)
chmod 711 "$W"
mkdir -m 1777 "$W/shm"
MDB="$W/srv"
MDB_SAFE=""
BC=""
trap '[ -n "$BC" ] && kill "$BC" 2>/dev/null; mdb_kill 2>/dev/null; rm -rf "$W"' EXIT
trap 'exit 1' HUP INT TERM
unset MALLOCSHIM_CONF LD_PRELOAD

# reads PID: READS snapshots of PID; prints "read_ns mappings rss_bytes"
# per read, from each snapshot's process_memory.
reads() {
    i=0
    while [ $i -lt "$READS" ]; do
        "$SD" --dir "$W/shm" --json "$1" 2>/dev/null | python3 -c '
import json, sys
m = json.load(sys.stdin)["process_memory"]
print(m["read_ns"], m["mappings"], m["rss_bytes"]) if m else None'
        i=$((i + 1))
    done
}

# report LABEL PID: one line of the reads' figures, and cat's for scale.
report() {
    reads "$2" >"$W/r"
    [ -s "$W/r" ] || { echo "$1: no reads (process_memory not known)"; return; }
    ms=$(awk '{ print $1 / 1e6 }' "$W/r" | med)
    maps=$(awk '{ print $2 }' "$W/r" | med)
    rss=$(awk '{ print $3 / 1048576 }' "$W/r" | med)
    cat_ms=$(i=0; while [ $i -lt "$READS" ]; do
        python3 -c 'import sys, time; t = time.monotonic(); open(sys.argv[1], "rb").read(); print((time.monotonic() - t) * 1e3)' \
            "/proc/$2/smaps_rollup"; i=$((i + 1)); done | med)
    echo "$1: read $ms ms; $maps mappings, RSS $rss MiB; reading smaps_rollup alone $cat_ms ms"
}

header "memread: the cost of reading a running process's memory class by class"
echo "# $READS reads each; wall ms as median (min..max); the machine is shared, so these are upper bounds"

for t in 16 256; do
    MALLOCSHIM_CONF="backend:glibc,shm_dir:$W/shm" LD_PRELOAD="$shim" \
        "$build/tools/bcsim" -t "$t" -c 256M -d 600 >"$W/bcsim.out" 2>&1 &
    BC=$!
    sleep 15
    kill -0 "$BC" 2>/dev/null || { echo "bcsim -t $t: exited early: $(tail -n 3 "$W/bcsim.out")"; BC=""; continue; }
    report "bcsim -t $t -c 256M (glibc)" "$BC"
    kill "$BC" 2>/dev/null
    wait "$BC" 2>/dev/null
    BC=""
done

if why=$(mdb_missing) || [ "$(id -u)" -ne 0 ]; then
    echo "MariaDB: skipped (${why:-needs root})"
    exit 0
fi
MDB_SB_ROWS=${MDB_SB_ROWS:-20000}
MDB_MAX_CONN=64
MDB_EXTRA_CNF="innodb_buffer_pool_size=256M"
mdb_init "$MDB" 64M
printf 'backend = glibc\nshm_dir = %s\n' "$W/shm" >"$W/shim.conf"
export MALLOCSHIM_CONF_FILE="$W/shim.conf"
mdb_install || { echo "MariaDB: mariadb-install-db failed"; exit 1; }
mdb_cnf "$shim"
mdb_start || { echo "MariaDB: the server did not start"; tail -n 5 "$MDB/run/error.log"; exit 1; }
mdb_load || { echo "MariaDB: sysbench prepare failed"; exit 1; }
mdb_sb oltp_read_write --threads=16 --time=30 --report-interval=0 run >/dev/null 2>&1
echo "# $(mariadbd --version)"
report "mariadbd under oltp_read_write (glibc, 16 threads, done)" "$MDB_PID"
echo "# its view, RSS class by class and the diagnosis:"
"$SD" --dir "$W/shm" "$MDB_PID" | sed -n '/^WHERE THE MEMORY GOES/,/^OVER TIME/p' | sed '$d'
mdb_stop
