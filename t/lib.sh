# lib.sh: TAP helpers for the shell tests. Sourced; expects SHIM, T,
# TOP_BUILDDIR, HAVE_JEMALLOC, HAVE_TCMALLOC, HAVE_LIBUNWIND, HAVE_LIBELF and
# HAVE_LIBDW from `make check`.
set -u

: "${SHIM:?run me through make check}"
tap_n=0
tap_failed=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mallocshim-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# A config file of the tests' own, so that the host's /etc/mallocshim.conf
# never leaks in. Every test runs with recording on, so that the recording
# path sees every API, thread, fork and exec test; segments go to the test's
# directory, not /dev/shm.
mkdir -p "$TMP/shm"
printf 'record = on\nshm_dir = %s\n' "$TMP/shm" >"$TMP/empty.conf"
export MALLOCSHIM_CONF_FILE="$TMP/empty.conf"
unset MALLOCSHIM_CONF

ok() {  # ok CONDITION-EXIT-STATUS DESCRIPTION
    tap_n=$((tap_n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $tap_n - $2"
    else
        echo "not ok $tap_n - $2"
        tap_failed=$((tap_failed + 1))
        return 1   # so that `ok $? WHAT || diag FILE` says why
    fi
}

skip() {  # skip DESCRIPTION REASON
    tap_n=$((tap_n + 1))
    echo "ok $tap_n - $1 # SKIP $2"
}

# need_other_user DESCRIPTION: a test that plays another user (uid 65534)
# against root's processes needs root, setpriv and ns_last_pid (to give a
# process a pid of its choosing); without them it skips DESCRIPTION and
# ends the test. Sets PY: the system's python, which another user may run
# (root's own may live in /root).
need_other_user() {
    PY=/usr/bin/python3
    [ -x "$PY" ] || PY=$(command -v python3)
    if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null || [ ! -w /proc/sys/kernel/ns_last_pid ]; then
        skip "$1" "needs root, setpriv and a writable /proc/sys/kernel/ns_last_pid"
        done_testing
        exit
    fi
}

# need_zstd: shimreplay's tests need a build with libzstd; else they skip.
need_zstd() {
    if [ "${HAVE_ZSTD:-no}" != yes ]; then
        skip "shimreplay" "built without libzstd"
        done_testing
        exit $?
    fi
}

# distcheck_light: a long test whose sources make check ran on this same
# tree skips in make distcheck's pass (MALLOCSHIM_DISTCHECK, scripts/test.sh),
# which checks that the package builds and its tests run, within CI's time.
distcheck_light() {
    if [ -n "${MALLOCSHIM_DISTCHECK:-}" ]; then
        echo "1..0 # SKIP make check runs it; the distcheck pass checks the package"
        exit 0
    fi
}

# busy_loops N: N shell loops that keep the CPUs busy beside the test (a
# loaded host), each ended after 600 s at most should the test be killed
# before its EXIT trap runs; their pids in BUSY, killed at exit, before
# $TMP is removed (kept with KEEPTMP set).
BUSY=""
busy_loops() {
    for _i in $(seq "$1"); do
        timeout 600 sh -c 'while :; do :; done' &
        BUSY="$BUSY $!"
    done
    trap 'kill $BUSY 2>/dev/null; [ -n "${KEEPTMP:-}" ] || rm -rf "$TMP"' EXIT
}

# listening PID: until PID listens for captures (its sampler has started;
# 60 s hang guard).
listening() {
    _w=0
    while ! grep -q "@mallocshim\.capture\.$1\$" /proc/net/unix && [ $_w -lt 600 ]; do
        sleep 0.1
        _w=$((_w + 1))
    done
    grep -q "@mallocshim\.capture\.$1\$" /proc/net/unix
}

diag() {
    sed 's/^/# /' "$@" >&2
}

done_testing() {
    echo "1..$tap_n"
    [ "$tap_failed" -eq 0 ]
}

# The backends this build offers.
backends() {
    echo glibc
    [ "$HAVE_JEMALLOC" = yes ] && echo jemalloc
    [ "$HAVE_TCMALLOC" = yes ] && echo tcmalloc
    return 0
}

# wait_line FILE TEXT: until FILE has a line with TEXT (60 s hang guard).
wait_line() {
    _w=0
    while ! grep -q "$2" "$1" 2>/dev/null && [ $_w -lt 600 ]; do sleep 0.1; _w=$((_w + 1)); done
    grep -q "$2" "$1" 2>/dev/null
}

# wait_for FILE [TENTHS]: until FILE exists, at most TENTHS tenths of a
# second (600: a hang guard, not a bound on the machine).
wait_for() {
    _w=0
    while [ ! -e "$1" ] && [ $_w -lt "${2:-600}" ]; do sleep 0.1; _w=$((_w + 1)); done
    [ -e "$1" ]
}

# snapshot_after DIR PID NS OUT: `shimdump --json` of PID (segments in DIR)
# into OUT, once a sampler pass stamped after NS (CLOCK_REALTIME ns) has
# run: however late it comes, with a hang guard of 60 s. Fails, saying why,
# when shimdump does or no such pass came.
snapshot_after() {
    _i=0
    while :; do
        if ! "$TOP_BUILDDIR/tools/shimdump" --dir "$1" --json "$2" >"$4" 2>"$TMP/err"; then
            echo "# snapshot_after: shimdump --json $2 failed" >&2
            diag "$TMP/err" </dev/null
            return 1
        fi
        [ "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["heartbeat_ns"])' "$4")" -gt "$3" ] &&
            return 0
        if [ $_i -ge 600 ]; then
            echo "# snapshot_after: no sampler pass of $2 after $3 in 60 s" >&2
            return 1
        fi
        _i=$((_i + 1))
        sleep 0.1
    done
}

# shim BACKEND CMD...: run CMD with the shim on BACKEND (and any extra
# pairs in EXTRA_CONF).
shim() {
    b=$1
    shift
    MALLOCSHIM_CONF="backend:$b${EXTRA_CONF:+,$EXTRA_CONF}" LD_PRELOAD="$SHIM" "$@"
}

# check CMD... : run CMD, keeping its output in $TMP/out and $TMP/err; on
# failure, show them as TAP diagnostics. Returns CMD's status.
check() {
    "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "# command failed ($rc): $*" >&2
        diag "$TMP/err" </dev/null
        tail -n 5 "$TMP/out" | sed 's/^/# out: /' >&2
    fi
    return $rc
}
