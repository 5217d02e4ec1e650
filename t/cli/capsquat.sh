#!/bin/sh
# capsquat.sh: another user cannot take over shimdump --capture. An
# unprivileged user (uid 65534) makes a listening socket under the name of
# a pid it had, hands it to a process of its own and lets the pid go; root
# starts a process under the shim that gets that pid (ns_last_pid), whose
# own socket finds the name taken and says so in one line; root's
# `shimdump --capture` then finds the name held by uid 65534, not by the
# process (SO_PEERCRED's uid, and the listener's pidfd: its process gone),
# exits 3 and sends nothing: the squatter gets no descriptor, and the file
# is removed. A squatter that never accepts (its backlog full) holds
# shimdump for 5 s at most, and SIGTERM ends the wait at once.
. "$TOP_SRCDIR/t/lib.sh"

SD="$TOP_BUILDDIR/tools/shimdump"
need_other_user "a squatter of another user on the capture socket"

# the squatter's own folder: $TMP is root's alone
att=$(mktemp -d /tmp/mallocshim-squat.XXXXXX)
chmod 777 "$att"
trap 'rm -rf "$att"; [ -n "${KEEPTMP:-}" ] || rm -rf "$TMP"' EXIT
cat >"$att/squat.py" <<'PY'
# squat.py DIR MODE: as the squatter. A child binds and listens on the
# capture name of its own pid, hands the socket over and exits; DIR/pid
# gets that pid, now free. MODE take: accept one connection, and for each
# descriptor it brings write DIR/got and scribble into it; exit once it is
# closed. MODE full: never accept, and fill the backlog.
import os, socket, sys, time
d, mode = sys.argv[1], sys.argv[2]
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
pid = os.fork()
if pid == 0:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind(b"\0mallocshim.capture.%d" % os.getpid())
    s.listen(0 if mode == "full" else 4)
    socket.send_fds(b, [b"x"], [s.fileno()])
    time.sleep(0.1)
    os._exit(0)
msg, fds, fl, ad = socket.recv_fds(a, 16, 1)
s = socket.socket(fileno=fds[0])
os.waitpid(pid, 0)
name = b"\0mallocshim.capture.%d" % pid
fill = []
if mode == "full":
    for i in range(4):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        c.setblocking(False)
        try:
            c.connect(name)
        except BlockingIOError:
            break
        fill.append(c)
with open(os.path.join(d, "pid.tmp"), "w") as f:
    f.write("%d\n" % pid)
os.rename(os.path.join(d, "pid.tmp"), os.path.join(d, "pid"))
s.settimeout(90)
while True:
    if mode == "full":
        time.sleep(90)
        break
    try:
        c, _ = s.accept()
    except socket.timeout:
        break
    c.settimeout(60)
    while True:
        try:
            data, got, fl, ad = socket.recv_fds(c, 4096, 4)
        except OSError:
            break
        if got:
            with open(os.path.join(d, "got"), "w") as f:
                f.write("%d descriptors\n" % len(got))
            for fd in got:
                os.write(fd, b"written by the squatter\n")
        if not data and not got:
            break   # shimdump closed the connection
    break
PY

# squat MODE: starts the squatter ($spid) and sets $free to the pid it let go.
squat() {
    rm -f "$att/pid" "$att/got"
    setpriv --reuid=65534 --regid=65534 --clear-groups "$PY" "$att/squat.py" "$att" "$1" \
        >"$att/out" 2>&1 &
    spid=$!
    wait_for "$att/pid" || return 1
    free=$(cat "$att/pid")
}

# on_pid PID CMD...: runs CMD in the background with pid PID ($tpid), by
# ns_last_pid; returns 1 when another process took PID first.
on_pid() {
    want=$1
    shift
    echo $((want - 1)) >/proc/sys/kernel/ns_last_pid
    "$@" &
    tpid=$!
    [ "$tpid" -eq "$want" ] && return 0
    kill "$tpid" 2>/dev/null
    wait "$tpid" 2>/dev/null
    return 1
}

# 1. The take-over: a process under the shim on the squatter's old pid.
tries=0
while :; do
    tries=$((tries + 1))
    squat take || break
    on_pid "$free" env MALLOCSHIM_CONF="backend:glibc,sample:1,shm_dir:$TMP" LD_PRELOAD="$SHIM" \
        "$TOP_BUILDDIR/tools/bcsim" --threads=2 --cache=4M --duration=60 \
        >"$TMP/target.out" 2>"$TMP/target.err" && break
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    [ $tries -lt 10 ] || break
done
if [ -z "${tpid:-}" ] || [ "${tpid:-0}" -ne "${free:-1}" ]; then
    skip "a squatter of another user on the capture socket" "no process got the freed pid in 10 tries"
    kill "$spid" "${tpid:-}" 2>/dev/null
    done_testing
    exit
fi
ok 0 "the squatter (uid 65534) holds the capture name of pid $free; a root process under the shim got that pid"
# its sampler starts at its first tracked allocation, tries the name, and
# names its segment's copy at its first pass
wait_for "$TMP/mallocshim.$free"
"$SD" --capture=2 -o "$TMP/victim.trace" "$free" >"$TMP/out" 2>"$TMP/err"
rc=$?
wait "$spid"   # the squatter ends once shimdump has closed its connection
[ $rc -eq 3 ] && grep -q "is held by uid 65534, neither root nor pid $free's owner: something else holds the name; nothing was sent" "$TMP/err" &&
    [ ! -e "$att/got" ] && [ ! -e "$TMP/victim.trace" ]
ok $? "root's shimdump --capture: exit 3, the squatter named, no descriptor sent, no file left (rc $rc)" ||
    diag "$TMP/err" "$att/out"
[ "$(grep -c "capture: the socket name mallocshim.capture.$free is taken" "$TMP/target.err")" -eq 1 ]
ok $? "the process said once that its capture name is taken" || diag "$TMP/target.err"
kill "$tpid" "$spid" 2>/dev/null
wait "$tpid" "$spid" 2>/dev/null

# 2. A squatter that never accepts, its backlog full, on a root process's
# pid: a bounded wait, then a line; and SIGTERM ends it at once.
squat full
tries=0
while :; do
    tries=$((tries + 1))
    on_pid "$free" sleep 60 && break
    [ $tries -lt 10 ] || break
done
if [ "${tpid:-0}" -ne "$free" ]; then
    skip "a squatter with a full backlog" "no process got the freed pid in 10 tries"
else
    timeout 60 "$SD" --capture=2 -o "$TMP/full.trace" "$free" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ $rc -eq 1 ] && grep -q "accepts no connection in 5 s" "$TMP/err" && [ ! -e "$TMP/full.trace" ]
    ok $? "a full backlog: shimdump gives up after its 5 s, exit 1, no file left (rc $rc)" || diag "$TMP/err"
    timeout 60 "$SD" --capture=2 -o "$TMP/term.trace" "$free" >"$TMP/out" 2>"$TMP/err" &
    sd=$!
    # its handlers are in place before it creates the file, and it waits
    # for the socket after: a SIGTERM now finds it waiting (or about to)
    wait_for "$TMP/term.trace"
    kill -TERM "$sd"
    wait "$sd"
    rc=$?
    [ $rc -eq 1 ] && grep -q "interrupted while waiting for pid $free's capture socket" "$TMP/err" &&
        [ ! -e "$TMP/term.trace" ]
    ok $? "SIGTERM while it waits: it ends, saying so, no file left (rc $rc)" || diag "$TMP/err"
fi
kill "$tpid" "$spid" 2>/dev/null
wait 2>/dev/null
done_testing
