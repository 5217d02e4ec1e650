# lib-mariadb.sh: a throwaway MariaDB server with MyRocks, started the way a
# user starts it (mysqld_safe, malloc-lib= in my.cnf), for
# t/integration/myrocks.sh and bench/myrocks.sh. Sourced; POSIX sh.
#
# Every function works on one server directory, MDB (set by mdb_init):
#   $MDB/my.cnf     written by mdb_cnf
#   $MDB/data       the datadir (mariadb-install-db)
#   $MDB/run        socket, pid-file and error log; owned by the server's
#                   user, since mariadbd (and mysqld_safe's log helper)
#                   write there after switching to it
# Processes: only the mysqld_safe this shell started (MDB_SAFE) and the
# mariadbd whose pid-file is ours, checked against its parent, are ever
# signalled.

MDB_SB_TABLES=${MDB_SB_TABLES:-4}
MDB_SB_ROWS=${MDB_SB_ROWS:-100000}
# max_connections of the servers mdb_cnf writes, and more [mysqld] lines
MDB_MAX_CONN=${MDB_MAX_CONN:-64}
MDB_EXTRA_CNF=${MDB_EXTRA_CNF:-}

# mdb_missing: prints what this machine lacks to run a server with MyRocks
# and sysbench (nothing when all is there). Returns 0 when something lacks.
mdb_missing() {
    for c in mysqld_safe mariadbd mariadb-install-db mariadb mysqladmin sysbench; do
        command -v $c >/dev/null 2>&1 || { echo "$c not installed"; return 0; }
    done
    MDB_PLUGIN_DIR=$(mariadbd --no-defaults --verbose --help 2>/dev/null | awk '$1 == "plugin-dir" { print $2 }')
    [ -r "${MDB_PLUGIN_DIR:-/usr/lib/mysql/plugin}/ha_rocksdb.so" ] ||
        { echo "ha_rocksdb.so not in ${MDB_PLUGIN_DIR:-/usr/lib/mysql/plugin} (mariadb-plugin-rocksdb)"; return 0; }
    id mysql >/dev/null 2>&1 || { echo "no user mysql"; return 0; }
    return 1
}

# mdb_free_port: prints a TCP port on 127.0.0.1 that nothing listens on now.
mdb_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# mdb_init DIR CACHE: makes DIR a server directory with a block cache of
# CACHE (bytes, k/M/G suffixes as my.cnf takes them). DIR's parents must be
# searchable by user mysql.
mdb_init() {
    MDB=$1
    MDB_CACHE=$2
    MDB_PORT=$(mdb_free_port)
    MDB_SAFE=""
    mkdir -p "$MDB/run"
    chown mysql:mysql "$MDB/run"
}

# mdb_cnf [MALLOC_LIB]: (re)writes $MDB/my.cnf; with MALLOC_LIB, mysqld_safe
# preloads it. Everything but the allocator stays the same between runs.
mdb_cnf() {
    cat >"$MDB/my.cnf" <<EOF
[client]
socket=$MDB/run/sock
user=root

[mysqld]
user=mysql
datadir=$MDB/data
socket=$MDB/run/sock
port=$MDB_PORT
bind-address=127.0.0.1
pid-file=$MDB/run/mariadbd.pid
log-error=$MDB/run/error.log
skip-log-bin
plugin-load-add=ha_rocksdb.so
default-storage-engine=ROCKSDB
# RocksDB tables cannot be temporary
default-tmp-storage-engine=Aria
rocksdb_block_cache_size=$MDB_CACHE
rocksdb_block_size=16384
# loading goes faster; nothing here needs durability
rocksdb_flush_log_at_trx_commit=2
innodb_buffer_pool_size=8M
innodb_log_file_size=8M
max_connections=$MDB_MAX_CONN
$MDB_EXTRA_CNF
EOF
    if [ -n "${1:-}" ]; then
        printf '\n[mysqld_safe]\nmalloc-lib=%s\n' "$1" >>"$MDB/my.cnf"
    fi
}

# mdb_install: a fresh datadir. Returns mariadb-install-db's status; its
# output is in $MDB/install.log.
mdb_install() {
    mdb_cnf
    mariadb-install-db --defaults-file="$MDB/my.cnf" --auth-root-authentication-method=socket \
        >"$MDB/install.log" 2>&1
}

# mdb_start: starts mysqld_safe in the background with $MDB/my.cnf and waits
# (up to 90 s) until mariadbd answers. Sets MDB_SAFE (mysqld_safe's pid) and
# MDB_PID (mariadbd's, from its pid-file, checked to be mysqld_safe's
# child). Returns 0 when the server is up.
mdb_start() {
    MDB_PID=""
    rm -f "$MDB/run/mariadbd.pid"
    mysqld_safe --defaults-file="$MDB/my.cnf" >"$MDB/safe.out" 2>&1 </dev/null &
    MDB_SAFE=$!
    i=0
    while [ $i -lt 900 ]; do
        mdb_alive "$MDB_SAFE" || { echo "mysqld_safe exited" >>"$MDB/safe.out"; return 1; }
        if [ -s "$MDB/run/mariadbd.pid" ] &&
            mysqladmin --defaults-file="$MDB/my.cnf" --connect-timeout=2 ping >/dev/null 2>&1; then
            MDB_PID=$(cat "$MDB/run/mariadbd.pid")
            [ "$(awk '{ print $4 }' "/proc/$MDB_PID/stat" 2>/dev/null)" = "$MDB_SAFE" ] && return 0
            echo "pid-file says $MDB_PID, which is not mysqld_safe's child" >>"$MDB/safe.out"
            MDB_PID=""
            return 1
        fi
        sleep 0.1
        i=$((i + 1))
    done
    echo "no answer after 90 s" >>"$MDB/safe.out"
    return 1
}

# mdb_sql SQL: runs SQL through the client as root (socket authentication).
mdb_sql() {
    mariadb --defaults-file="$MDB/my.cnf" -N -B -e "$1"
}

# mdb_ours PID: PID is a mariadbd started with our my.cnf.
mdb_ours() {
    [ -n "$1" ] && { tr '\0' '\n' <"/proc/$1/cmdline"; } 2>/dev/null | grep -qx -- "--defaults-file=$MDB/my.cnf"
}

# mdb_alive PID: PID runs (a zombie, such as our exited but not yet waited
# for mysqld_safe, does not).
mdb_alive() {
    st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
    [ -n "$st" ] && [ "$st" != Z ]
}

# mdb_wait_gone PID TENTHS: waits until PID is gone; returns 0 if it is.
mdb_wait_gone() {
    i=0
    while mdb_alive "$1" && [ $i -lt "$2" ]; do sleep 0.1; i=$((i + 1)); done
    ! mdb_alive "$1"
}

# mdb_stop: clean shutdown (mysqladmin shutdown), then waits for mariadbd and
# mysqld_safe to end. Returns 0 when both ended within 60 s.
mdb_stop() {
    mysqladmin --defaults-file="$MDB/my.cnf" shutdown >>"$MDB/safe.out" 2>&1
    rc=$?
    if [ -n "$MDB_PID" ]; then
        mdb_wait_gone "$MDB_PID" 600 && MDB_PID="" || rc=1
    fi
    if [ -n "$MDB_SAFE" ]; then
        if mdb_wait_gone "$MDB_SAFE" 100; then
            wait "$MDB_SAFE" 2>/dev/null
            MDB_SAFE=""
        else
            rc=1
        fi
    fi
    return $rc
}

# mdb_kill: for error paths. Ends our mariadbd (SIGTERM is a clean
# shutdown; SIGKILL after 30 s) and our mysqld_safe, which ignores SIGTERM
# (SIGKILL first when mariadbd needs it, so that it cannot restart it).
mdb_kill() {
    pid=""
    [ -s "$MDB/run/mariadbd.pid" ] && pid=$(cat "$MDB/run/mariadbd.pid" 2>/dev/null)
    mdb_ours "$pid" || pid=$MDB_PID
    if mdb_ours "$pid"; then
        kill -TERM "$pid" 2>/dev/null
        if ! mdb_wait_gone "$pid" 300; then
            [ -n "$MDB_SAFE" ] && kill -KILL "$MDB_SAFE" 2>/dev/null
            kill -KILL "$pid" 2>/dev/null
            mdb_wait_gone "$pid" 50
        fi
    fi
    if [ -n "$MDB_SAFE" ]; then
        mdb_wait_gone "$MDB_SAFE" 50 || kill -KILL "$MDB_SAFE" 2>/dev/null
        wait "$MDB_SAFE" 2>/dev/null
        MDB_SAFE=""
    fi
    MDB_PID=""
}

# mdb_sb TEST ARGS...: sysbench TEST against the sbtest database.
mdb_sb() {
    t=$1
    shift
    sysbench "$t" --db-driver=mysql --mysql-socket="$MDB/run/sock" --mysql-user=root \
        --mysql-db=sbtest --tables="$MDB_SB_TABLES" --table-size="$MDB_SB_ROWS" "$@"
}

# mdb_load: creates sbtest with MDB_SB_TABLES tables of MDB_SB_ROWS rows,
# ENGINE=ROCKSDB, primary keys only, and flushes the memtable so that
# reads go through the block cache. Output in $MDB/prepare.out.
mdb_load() {
    mdb_sql "CREATE DATABASE sbtest" >"$MDB/prepare.out" 2>&1 &&
        mdb_sb oltp_point_select --mysql-storage-engine=rocksdb --create_secondary=off \
            --threads=4 prepare >>"$MDB/prepare.out" 2>&1 &&
        mdb_sql "SET GLOBAL rocksdb_force_flush_memtable_now = 1" >>"$MDB/prepare.out" 2>&1
}

# mdb_read SECONDS THREADS: uniform point selects (every block as likely,
# so the working set exceeds the cache). Output on stdout.
mdb_read() {
    mdb_sb oltp_point_select --rand-type=uniform --threads="$2" --time="$1" --report-interval=0 run
}

# mdb_qps FILE: the queries per second in sysbench's report.
mdb_qps() {
    sed -n 's/^ *queries: *[0-9]* *(\([0-9.]*\) per sec.)$/\1/p' "$1"
}
