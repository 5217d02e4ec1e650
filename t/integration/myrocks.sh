#!/bin/sh
# myrocks.sh: MariaDB with MyRocks under the shim, started as a user starts
# it (mysqld_safe, malloc-lib= in my.cnf, the backend in the shim's config
# file), under each backend: a sysbench read load over a RocksDB block cache,
# read meanwhile by shimdump from another process; the cache's 16 KiB blocks
# and the RSS must be what shimdump shows. Needs root, mariadb-server,
# mariadb-plugin-rocksdb and sysbench; skips without them.
. "$TOP_SRCDIR/t/lib.sh"
. "$TOP_SRCDIR/t/lib-mariadb.sh"

if [ -n "${MALLOCSHIM_DISTCHECK:-}" ]; then
    echo "1..0 # SKIP make check runs it; the distcheck pass checks the package"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "1..0 # SKIP needs root (mysqld_safe starts mariadbd as root, which switches to mysql)"
    exit 0
fi
if why=$(mdb_missing); then
    echo "1..0 # SKIP $why (scripts/deps.sh installs it)"
    exit 0
fi

SD="$TOP_BUILDDIR/tools/shimdump"
export NO_COLOR=1
CACHE=32M
CACHE_BYTES=$((32 * 1024 * 1024))
RUN_S=12     # each read run
SNAP_S=8     # when, into it, shimdump reads the server
THREADS=8

# mariadbd switches to user mysql, which must reach its datadir and run/.
chmod 711 "$TMP"
MDB="$TMP/srv"
trap 'mdb_kill; rm -rf "$TMP"' EXIT
trap 'exit 1' HUP INT TERM
mdb_init "$MDB" "$CACHE"
# The segments' directory is like /dev/shm: world-writable, sticky.
SHM="$TMP/shm"
chmod 1777 "$SHM"
# The backend comes from a config file, as /etc/mallocshim.conf gives it to
# a real server. mysqld_safe cannot pass an environment variable of its own
# to mariadbd, but it keeps its environment: the file's name travels that
# way, so that the test never writes to /etc. MALLOCSHIM_CONF stays unset.
CONF="$TMP/shim.conf"
export MALLOCSHIM_CONF_FILE="$CONF"

# check.py SNAPSHOT.json MODE ARGS: one assertion on shimdump's JSON.
cat >"$TMP/check.py" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
mode, args = sys.argv[2], sys.argv[3:]
MiB = 1 << 20
if mode == "ident":                   # PID BACKEND
    got = (d["pid"], d["comm"], d["state"], d["backend"])
    want = (int(args[0]), "mariadbd", "alive", args[1])
    print("pid, comm, state, backend:", got)
    sys.exit(got != want)
if mode == "blocksite":               # a top stack reads blocks, in the plugin
    for s in d["by_live_bytes"]:
        fr = s["stack"]["frames"]
        names = [f["function"] or "" for f in fr]
        objs = [d["objects"][f["object"]]["path"] for f in fr if f["object"] is not None]
        if any(n.startswith("rocksdb::BlockFetcher::ReadBlockContents(") for n in names) and \
           any(o.endswith("/ha_rocksdb.so") for o in objs):
            print("block reading: %.1f MiB live (estimate), %s" %
                  (s["est_live_bytes"] / MiB, " < ".join(n.split("(")[0] for n in names[:4])))
            sys.exit(0)
    print("top sites:", [[(f["function"] or "?").split("(")[0] for f in s["stack"]["frames"][:3]]
                         for s in d["by_live_bytes"]])
    sys.exit(1)
if mode == "cache":                   # CACHE-BYTES
    cache = int(args[0])
    mid = [c for c in d["size_classes"] if c["min_size"] >= 4096 and
           c["max_size"] is not None and c["max_size"] <= 16384]
    live = sum(c["live_usable_bytes"] for c in mid)
    top = max(mid, key=lambda c: c["live_usable_bytes"], default=None)
    print("4-16 KiB classes: %d live blocks, %.1f MiB live usable = %.2f x the block cache; "
          "the fullest class: (%d, %d] with %.1f MiB" %
          (sum(c["live_count"] for c in mid), live / MiB, live / cache,
           top["min_size"] - 1 if top else 0, top["max_size"] if top else 0,
           top["live_usable_bytes"] / MiB if top else 0))
    sys.exit(not 0.25 * cache <= live <= 2 * cache)
if mode == "rss":                     # VMRSS-KB-BEFORE VMRSS-KB-AFTER
    # shimdump's rss_bytes is the sampler's latest reading of VmRSS in
    # /proc/self/status, at most one interval (plus scheduling delay) older
    # than our readings, taken just before and after shimdump. Between them
    # RSS moves by what it moves in an interval: the tolerance is twice the
    # largest step between the last samples, and at least 4 MiB.
    before, after = int(args[0]) * 1024, int(args[1]) * 1024
    s = [x["rss_bytes"] for x in d["series"][-6:] if x["rss_bytes"] is not None]
    step = max([abs(b - a) for a, b in zip(s, s[1:])] or [0])
    tol = max(4 * MiB, 2 * step)
    age = (d["snapshot_ns"] - d["heartbeat_ns"]) / 1e9
    rss = d["rss_bytes"]
    print("rss_bytes %.1f MiB, %.1f s old; VmRSS %.1f..%.1f MiB; tolerance %.1f MiB "
          "(largest step %.1f MiB)" % (rss / MiB, age, before / MiB, after / MiB, tol / MiB, step / MiB))
    sys.exit(not (age <= 3 * d["interval_ms"] / 1000 and
                  min(before, after) - tol <= rss <= max(before, after) + tol))
if mode == "exited":                  # (none)
    print("state:", d["state"])
    sys.exit(d["state"] != "exited")
sys.exit("unknown mode " + mode)
EOF

# pycheck DESCRIPTION SNAPSHOT MODE ARGS: an ok line, with check.py's line.
pycheck() {
    what=$1
    shift
    line=$(python3 "$TMP/check.py" "$@" 2>&1)
    rc=$?
    ok $rc "$what: $(echo "$line" | tail -n 1)"
}

vmrss() {  # vmrss PID: VmRSS in kB
    awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"
}

check mdb_install
ok $? "mariadb-install-db: a throwaway datadir"

loaded=no
for b in $(backends); do
    d="$TMP/$b"
    mkdir -p "$d"
    # The default sampling, as a user runs it. mariadbd starts as root and
    # becomes mysql; the shim names the segment at start because of that
    # (a root-owned unnamed file can no longer be linked by mysql:
    # fs.protected_hardlinks), so every start must have its segment.
    printf 'backend = %s\nrecord = on\nshm_dir = %s\nverbose = 1\n' "$b" "$SHM" >"$CONF"
    mdb_cnf "$SHIM"
    mdb_start
    rc=$?
    if [ $rc -ne 0 ]; then
        diag "$MDB/safe.out" </dev/null
        tail -n 20 "$MDB/run/error.log" 2>/dev/null | sed 's/^/# /' >&2
    fi
    ok $rc "$b: mysqld_safe with malloc-lib= started mariadbd (pid ${MDB_PID:-none})"
    if [ $rc -ne 0 ]; then
        mdb_kill
        continue
    fi
    pid=$MDB_PID
    seg="$SHM/mallocshim.$pid"

    n=$(grep -c "^mallocshim: pid $pid: backend $b .*config backend:$b,verbose:1,record:1,shm_dir:$SHM;" \
        "$MDB/run/error.log")
    [ "$n" -ge 1 ]
    ok $? "$b: verbose:1's line in the error log, from the config file ($n lines: nohup, then mariadbd)"

    uid=$(awk '$1 == "Uid:" { print $2 }' "/proc/$pid/status")
    [ "$uid" = "$(id -u mysql)" ] && [ "$(stat -c '%u %a' "$seg" 2>/dev/null)" = "0 600" ]
    rc=$?
    if [ $rc -ne 0 ]; then
        grep '^mallocshim:' "$MDB/run/error.log" | sed 's/^/# /' >&2
        ls -la "$SHM" | sed 's/^/# /' >&2
    fi
    ok $rc "$b: mariadbd runs as mysql (uid $uid); its segment stays root's, mode 0600 ($(stat -c '%U %a' "$seg" 2>&1))"
    if command -v setpriv >/dev/null; then
        setpriv --reuid=mysql --regid=mysql --clear-groups "$SD" --dir "$SHM" "$pid" >"$TMP/out" 2>"$TMP/err"
        [ $? -eq 3 ] && grep -q "permission denied: the segment belongs to root" "$TMP/err"
        ok $? "$b: shimdump as user mysql: permission denied, exit 3"
    else
        skip "$b: shimdump as user mysql" "no setpriv"
    fi

    if [ $loaded = no ]; then
        t0=$(date +%s)
        mdb_load
        rc=$?
        t1=$(date +%s)
        [ $rc -ne 0 ] && tail -n 5 "$MDB/prepare.out" | sed 's/^/# /' >&2
        n=$(mdb_sql "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'sbtest' AND engine = 'ROCKSDB'")
        sst=$(cat "$MDB"/data/\#rocksdb/*.sst 2>/dev/null | wc -c)
        [ $rc -eq 0 ] && [ "$n" = "$MDB_SB_TABLES" ] && [ "$sst" -gt "$CACHE_BYTES" ]
        rc=$?
        ok $rc "$b: sysbench loaded $n tables x $MDB_SB_ROWS rows ENGINE=ROCKSDB in $((t1 - t0)) s; $((sst >> 20)) MiB of SST files, more than the $CACHE cache"
        [ $rc -eq 0 ] && loaded=yes
    fi

    mdb_read $RUN_S $THREADS >"$d/sysbench.out" 2>&1 &
    sb=$!
    sleep $SNAP_S
    "$SD" --dir "$SHM" --json "$pid" >"$d/snap.json" 2>"$d/snap.err"
    rc=$?
    [ $rc -ne 0 ] && diag "$d/snap.err" </dev/null
    ok $rc "$b: shimdump --json $pid while sysbench runs"
    "$SD" --dir "$SHM" "$pid" >"$d/view.txt" 2>"$d/view.err"
    rc=$?
    [ $rc -eq 0 ] && grep -q "^pid $pid (mariadbd)  alive .* backend $b " "$d/view.txt" &&
        grep -q '^WHERE THE MEMORY GOES' "$d/view.txt" && grep -q '^  14-16K ' "$d/view.txt"
    ok $? "$b: shimdump $pid: the one-screen view, with the 14-16K class" || diag "$d/view.err" </dev/null
    # The plugin is dlopen'ed after start: its frames must be listed and named.
    blocksite="$b: shimdump --stacks: RocksDB's block reading in ha_rocksdb.so among the top sites by live bytes"
    if [ "$HAVE_LIBELF" = yes ]; then
        "$SD" --dir "$SHM" --stacks --json --top=5 "$pid" >"$d/stacks.json" 2>"$d/stacks.err" &&
            python3 "$TMP/check.py" "$d/stacks.json" blocksite
        ok $? "$blocksite" || diag "$d/stacks.err" </dev/null
    else
        skip "$blocksite" "shimdump built without libelf (Debian: libelf-dev)"
    fi
    # shimdump --set on the running server (issue 33): root may; the
    # server's own user may not (it changed users: ptrace would say no),
    # nor may another.
    "$SD" --set sample_bytes:256k "$pid" >"$d/set.out" 2>&1 &&
        grep -q "^pid $pid (mariadbd): now sample:256,sample_bytes:262144,track:on" "$d/set.out" &&
        "$SD" --dir "$SHM" --json "$pid" >"$d/set.json" 2>/dev/null &&
        python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["sampling"]; assert s["sample_bytes"] == 262144 and s["settings_changes"] == 1, s' "$d/set.json"
    ok $? "$b: shimdump --set sample_bytes:256k on the running mariadbd: $(cat "$d/set.out")"
    if command -v setpriv >/dev/null; then
        for u in mysql nobody; do
            setpriv --reuid=$u --regid=$(id -g $u) --clear-groups "$SD" --set sample_bytes:1m "$pid" >"$d/set.out" 2>&1
            [ $? -eq 3 ]
            ok $? "$b: shimdump --set as user $u: refused, exit 3 ($(cat "$d/set.out"))"
        done
    else
        skip "$b: shimdump --set as another user" "no setpriv"
    fi
    wait $sb
    rc=$?
    [ $rc -eq 0 ] && grep -Eq '^ *ignored errors: *0 ' "$d/sysbench.out" && ! grep -q FATAL "$d/sysbench.out"
    rc=$?
    [ $rc -ne 0 ] && tail -n 10 "$d/sysbench.out" | sed 's/^/# /' >&2
    ok $rc "$b: sysbench oltp_point_select, $THREADS threads, $RUN_S s: no errors, $(mdb_qps "$d/sysbench.out") queries/s"
    # RSS against the kernel's, the server idle (under the load it moved by
    # 11 MiB in 0.8 s once, past what the last samples' steps allowed): a
    # sampler pass stamped after our first reading, our second after it.
    v0=$(vmrss "$pid")
    snapshot_after "$SHM" "$pid" "$(date +%s%N)" "$d/idle.json" || diag "$TMP/err" </dev/null
    v1=$(vmrss "$pid")

    if [ -s "$d/snap.json" ]; then
        pycheck "$b: the segment is mariadbd's, alive, on $b" "$d/snap.json" ident "$pid" "$b"
        pycheck "$b: block-cache blocks" "$d/snap.json" cache "$CACHE_BYTES"
        pycheck "$b: RSS agrees with /proc/$pid/status" "$d/idle.json" rss "$v0" "$v1"
    fi

    mdb_stop
    rc=$?
    ! mdb_alive "$pid"
    ok $((rc | $?)) "$b: mysqladmin shutdown: mariadbd and mysqld_safe ended"
    # mariadbd exited normally, but as user mysql, which may not remove
    # root's file from a sticky directory: the segment is left, marked
    # exited, until shimdump --clean.
    if [ -e "$seg" ]; then
        "$SD" --dir "$SHM" --json "$pid" >"$d/exit.json" 2>/dev/null
        pycheck "$b: after shutdown the segment is left, marked" "$d/exit.json" exited
        check "$SD" --dir "$SHM" --clean && [ ! -e "$seg" ]
        ok $? "$b: shimdump --clean removes it"
    else
        ok 0 "$b: after shutdown the segment is gone"
    fi
done

left=""
for f in /proc/[0-9]*/cmdline; do
    case "$(tr '\0' ' ' <"$f" 2>/dev/null)" in *"$TMP/"*) left="$left ${f#/proc/}" ;; esac
done
left=$(echo $left | sed 's#/cmdline##g')
[ -z "$left" ]
ok $? "no process left that uses the test's directory ${left:+($left)}"
[ -z "$(ls -A "$SHM")" ]
ok $? "no segment left in shm_dir"
trap - EXIT HUP INT TERM
rm -rf "$TMP"
[ ! -e "$TMP" ]
ok $? "the test's directory is removed"
done_testing
