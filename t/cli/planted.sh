#!/bin/sh
# planted.sh: files that another user puts at a segment's name are never
# shown as a root process's heap. An unprivileged user (uid 65534) forges
# copies from a segment of her own (the pid and the command changed) and
# plants them in a shared directory: at the name of a root process that is
# not under the shim; at the name of a pid before a root process under the
# shim gets it (ns_last_pid); a link and a FIFO in place of a root
# process's copy, in a directory without the sticky bit; a thousand for pids
# that do not run; and a plain text file that --clean must leave alone.
# Each case failed before (the forged figures shown, exit 0; exit 5; the
# text file deleted).
. "$TOP_SRCDIR/t/lib.sh"

SD="$TOP_BUILDDIR/tools/shimdump"
need_other_user "files planted by another user at a segment's name"

# The shared directory, sticky like /dev/shm, in a folder the attacker may
# enter ($TMP is root's alone).
att=$(mktemp -d /tmp/mallocshim-plant.XXXXXX)
chmod 755 "$att"
mkdir "$att/shm" "$att/open" "$att/me"
chmod 1777 "$att/shm"
chmod 777 "$att/open"
chown 65534:65534 "$att/me"
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$att"; [ -n "${KEEPTMP:-}" ] || rm -rf "$TMP"' EXIT
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
bcsim() {  # bcsim DIR SECONDS: bcsim under the shim, its segment in DIR; $! its pid
    (exec env MALLOCSHIM_CONF="backend:glibc,sample:1,shm_dir:$1" LD_PRELOAD="$SHIM" \
        "$TOP_BUILDDIR/tools/bcsim" --threads=1 --cache=4M --duration="$2" >"$TMP/target.out" \
        2>"$TMP/target.err") &
}

# The forger's own segment, of her own process.
setpriv --reuid=65534 --regid=65534 --clear-groups env MALLOCSHIM_CONF="backend:glibc,sample:1,shm_dir:$att/me" \
    LD_PRELOAD="$SHIM" "$TOP_BUILDDIR/tools/bcsim" --threads=1 --cache=4M --duration=60 >/dev/null 2>&1 &
npid=$!
wait_for "$att/me/mallocshim.$npid" || { ok 1 "uid 65534's own segment appeared"; done_testing; exit; }
sleep 1
# kept as it is now: the forger's template
setpriv --reuid=65534 --regid=65534 --clear-groups cp --sparse=always "$att/me/mallocshim.$npid" "$att/me/src"
cat >"$att/forge.py" <<'PY'
# forge.py SRC DST PID UID: a copy of segment SRC at DST, made to say pid
# PID, uid UID and the command "forged", written as the one who runs it.
import struct, sys
src, dst, pid, uid = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
data = bytearray(open(src, "rb").read())
struct.pack_into("<II", data, 24, pid, uid)
OFF_COMM = int(sys.argv[5]) if len(sys.argv) > 5 else -1
if OFF_COMM >= 0:
    data[OFF_COMM:OFF_COMM + 16] = b"forged".ljust(16, b"\0")
open(dst, "wb").write(data)
PY
# where the command is in the header: find the forger's own comm (bcsim)
off_comm=$("$PY" -c "import sys; print(open(sys.argv[1],'rb').read(8192).find(b'bcsim\0'))" "$att/me/src")
forge() {  # forge DIR PID UID: as uid 65534, a forged copy at DIR/mallocshim.PID
    as_nobody "$PY" "$att/forge.py" "$att/me/src" "$1/mallocshim.$2" "$2" "$3" "$off_comm"
}
"$SD" --json --dir="$att/me" "$npid" >"$TMP/own.json" 2>"$TMP/err"
ok $? "the forger's own segment is readable to root (comm at $off_comm)" || diag "$TMP/err"

# 1. At the name of a root process that does not run under the shim.
sleep 60 &
rpid=$!
forge "$att/shm" "$rpid" 65534
forge "$att/open" "$rpid" 0
for d in shm open; do
    "$SD" --json --dir="$att/$d" "$rpid" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ $rc -eq 1 ] && [ ! -s "$TMP/out" ] &&
        grep -q "pid $rpid (sleep) has no segment shimdump can read: $att/$d/mallocshim.$rpid is not its segment" "$TMP/err"
    ok $? "a forged copy ($d) at the name of root's sleep: not read, exit 1 (rc $rc)" || diag "$TMP/err" "$TMP/out"
done
"$SD" --prometheus --dir="$att/shm" >"$TMP/prom" 2>"$TMP/err"
! grep -q "pid=\"$rpid\"" "$TMP/prom" && grep -Eq "^shimdump: 1 (file at a segment's name|segment of processes that are gone).*not shown" "$TMP/err"
ok $? "--prometheus exports nothing of it, and says so in one line on stderr" || diag "$TMP/err"
kill "$rpid"
rm -f "$att/shm/mallocshim.$rpid" "$att/open/mallocshim.$rpid"

# 2. Planted before a root process under the shim gets the pid: the
# process says its name is taken, and root's shimdump reads the process.
tpid=
for try in 1 2 3 4 5 6 7 8 9 10; do
    want=$(($(cat /proc/sys/kernel/ns_last_pid) + 50))
    forge "$att/shm" "$want" 65534
    echo $((want - 1)) >/proc/sys/kernel/ns_last_pid
    bcsim "$att/shm" 60
    tpid=$!
    [ "$tpid" -eq "$want" ] && break
    kill "$tpid"; wait "$tpid" 2>/dev/null
    rm -f "$att/shm/mallocshim.$want"
    tpid=
done
if [ -z "$tpid" ]; then
    skip "a copy planted before a root process gets the pid" "no process got the pid in 10 tries"
else
    wait_line "$TMP/target.err" "is taken by a file of uid 65534"
    grep -q "^mallocshim: cannot create $att/shm/mallocshim.$tpid: the name is taken by a file of uid 65534; \`shimdump $tpid\` reads the process itself and ignores it$" "$TMP/target.err"
    ok $? "the root process says in one line that its name is taken, by whom" || diag "$TMP/target.err"
    sleep 1
    "$SD" --json --dir="$att/shm" "$tpid" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ $rc -eq 0 ] && grep -q '"comm": "bcsim"' "$TMP/out" && grep -q "\"uid\": 0," "$TMP/out" &&
        grep -q "note: $att/shm/mallocshim.$tpid is not pid $tpid's segment (owned by .*uid 65534.*): ignored; the process itself was read" "$TMP/err"
    ok $? "root's shimdump reads the process itself, not the planted file, and says so (rc $rc)" ||
        diag "$TMP/err"
    "$SD" --dir="$att/shm" >"$TMP/list" 2>"$TMP/err"
    ! grep -q forged "$TMP/list" && grep -q "bcsim" "$TMP/list" &&
        grep -Eq "^1 (file at a segment's name|segment of processes that are gone).*not shown" "$TMP/list"
    ok $? "the list shows the process, not the planted file, and says so" || diag "$TMP/list" "$TMP/err"
    kill "$tpid"
    wait "$tpid" 2>/dev/null
fi

# 3. No sticky bit: the process warns; a link, then a FIFO, in place of
# its copy do not hide it from root's shimdump.
bcsim "$att/open" 60
tpid=$!
wait_for "$att/open/mallocshim.$tpid"
grep -q "^mallocshim: $att/open is writable by other users and has no sticky bit" "$TMP/target.err" &&
    [ "$(grep -c "sticky" "$TMP/target.err")" -eq 1 ]
ok $? "a directory others may write, without the sticky bit: one line" || diag "$TMP/target.err"
as_nobody mv "$att/open/mallocshim.$tpid" "$att/open/moved" &&
    as_nobody ln -s /etc/passwd "$att/open/mallocshim.$tpid"
ok $? "uid 65534 renamed root's copy and put a link in its place"
"$SD" --json --dir="$att/open" "$tpid" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] && grep -q '"comm": "bcsim"' "$TMP/out" && grep -q "a symbolic link, not a segment" "$TMP/err"
ok $? "a link at the name: root's shimdump reads the process (rc $rc)" || diag "$TMP/err"
as_nobody rm "$att/open/mallocshim.$tpid" && as_nobody mkfifo "$att/open/mallocshim.$tpid"
timeout 20 "$SD" --json --dir="$att/open" "$tpid" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] && grep -q '"comm": "bcsim"' "$TMP/out" && grep -q "a FIFO, not a segment" "$TMP/err"
ok $? "a FIFO at the name: root's shimdump reads the process (rc $rc)" || diag "$TMP/err"
kill "$tpid"
wait "$tpid" 2>/dev/null

# 4. A thousand forged copies for pids that do not run, half of them
# claiming root's: the list and --prometheus show none, in one line each.
rm -f "$att/shm"/mallocshim.*
cat >"$att/many.py" <<'PY'
# many.py SRC DIR FIRST N WHOLE: N forged copies for pids FIRST.., the
# first WHOLE of them whole (sparse copies: readable segments), the rest
# the header page alone; every other one claims root's process.
import struct, subprocess, sys
src, d, first, n, whole = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
hdr = bytearray(open(src, "rb").read(4096))
for i in range(n):
    path = "%s/mallocshim.%d" % (d, first + i)
    ids = struct.pack("<II", first + i, 0 if i % 2 else 65534)
    if i < whole:
        subprocess.run(["cp", "--sparse=always", src, path], check=True)
        with open(path, "r+b") as f:
            f.seek(24)
            f.write(ids)
    else:
        hdr[24:32] = ids
        open(path, "wb").write(hdr)
PY
as_nobody "$PY" "$att/many.py" "$att/me/src" "$att/shm" 3900000 1000 20
ls "$att/shm" | grep -c '^mallocshim\.39' >"$TMP/n"
t0=$(date +%s%N)
"$SD" --dir="$att/shm" >"$TMP/list" 2>"$TMP/err"
rc=$?
t1=$(date +%s%N)
[ $rc -eq 0 ] && ! grep -q '39[0-9]\{5\}' "$TMP/list" &&
    grep -q "^500 files at a segment's name in $att/shm are not the segment of that process" "$TMP/list" &&
    grep -q "^500 segments of processes that are gone, owned by other users: not shown" "$TMP/list"
ok $? "$(cat "$TMP/n") planted files: the list shows none, in two lines, in $(((t1 - t0) / 1000000)) ms" ||
    diag "$TMP/list" "$TMP/err"
"$SD" --prometheus --dir="$att/shm" >"$TMP/prom" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c 'pid="39' "$TMP/prom")" -eq 0 ] && [ "$(wc -l <"$TMP/err")" -eq 2 ]
ok $? "--prometheus: no line of theirs, two lines on stderr (rc $rc)" || diag "$TMP/err"
# Named one at a time, a forged file of a pid that does not run: one that
# claims root's process is not read; one that claims hers is hers, and says so.
"$SD" --json --dir="$att/shm" 3900001 >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 5 ] && grep -q "owned by uid 65534 but naming a process of uid 0" "$TMP/err"
ok $? "a file of uid 65534 claiming root's process is not read (rc $rc)" || diag "$TMP/err"

# 5. --clean removes segments of processes that are gone, and nothing else.
echo "a user's notes" >"$att/shm/mallocshim.3999999"
as_nobody sh -c "echo 'her notes' >$att/shm/mallocshim.3999998"
cp --sparse=always "$att/me/src" "$TMP/dead" &&
    "$PY" "$att/forge.py" "$TMP/dead" "$att/shm/mallocshim.3999997" 3999997 0
"$SD" --clean --dir="$att/shm" >"$TMP/out" 2>"$TMP/err"
[ -e "$att/shm/mallocshim.3999999" ] && [ -e "$att/shm/mallocshim.3999998" ] &&
    [ ! -e "$att/shm/mallocshim.3999997" ] && grep -q "removed $att/shm/mallocshim.3999997" "$TMP/out"
ok $? "--clean removed a dead process's segment, and left text files at segment names alone" ||
    diag "$TMP/out" "$TMP/err"

kill "$npid" 2>/dev/null
wait 2>/dev/null
done_testing
