#!/bin/sh
# stacks.sh: call sites. A program with known call sites (t/integration/sites)
# under each backend: shimdump --stacks names its functions, with their exact
# sizes and counts (sample:1), in age order, in text and JSON; a stack
# deeper than stacks:16 keeps its 16 innermost frames under either unwinder;
# unwind_threads:1 and :0 keep a second thread on libgcc's; a saved JSON
# keeps the names; a stripped copy, a dead process and a replaced binary
# give graceful output; stacks:0 has none; a program that closes libunwind's
# descriptors keeps running; and under db_bench the top long-lived site is in
# RocksDB's block-reading code. A build without libunwind takes every stack
# with libgcc's unwinder, and the checks of libunwind's part say so; a build
# without libelf names no frame, and its checks find the sites by their
# sizes and the frames as object+offset, or skip. sites is built with -g: a
# build with libdw shows its frames' lines too (lines.sh checks them).
. "$TOP_SRCDIR/t/lib.sh"

SD="$TOP_BUILDDIR/tools/shimdump"
export NO_COLOR=1

# Programs that unwind every allocation start slowly on a loaded machine.
stacks_wait() { wait_for "$1" 1200; }

# start_sites DIR BINARY [CONF [MODE]]: runs BINARY DIR [MODE] under the
# shim; sets $pid.
start_sites() {
    mkdir -p "$1"
    MALLOCSHIM_CONF="${3:-sample:1,stacks:16},shm_dir:$TMP/shm" LD_PRELOAD="$SHIM" \
        "$2" "$1" ${4:-} >"$1/out" 2>"$1/err" &
    spid=$!
    stacks_wait "$1/ready" && pid=$(cat "$1/ready") && [ "$pid" = "$spid" ]
}

stop_sites() {
    touch "$1/stop"
    wait "$spid"
}

# Without libelf, shimdump names no frame: a check that looks for a name
# looks for an unnamed frame of the program instead (name REGEX), and the
# checks' descriptions say so ($nl, $by, $frames).
if [ "$HAVE_LIBELF" = yes ]; then
    nl="" by="by name" frames="function and object names"
else
    nl=" (no libelf: frames as object+offset)"
    by="by size, frames as object+offset (no libelf)"
    frames="frames as object+offset (no libelf)"
    no_names="shimdump built without libelf (Debian: libelf-dev)"
fi
# The source of a frame of sites (-g), as the text shows it with libdw.
if [ "$HAVE_LIBDW" = yes ]; then
    at=' at sites\.cc:[0-9]+'
else
    at=''
fi
name() {
    if [ "$HAVE_LIBELF" = yes ]; then
        echo "$1"
    else
        echo 'sites\+0x[0-9a-f]+ \(shimdump built without libelf\)$'
    fi
}

# sites.py JSON HAVE_LIBELF: the sites, by their functions' names, or
# without libelf by their block sizes (then every frame is unnamed).
cat >"$TMP/sites.py" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
names = sys.argv[2] == "yes"
def top(s):
    f = s["stack"]["frames"]
    return f[0]["function"] if f else None
def is_site(s, name, size):
    if names:
        return (top(s) or "").startswith(name)
    st = s["stack"]
    return st["allocs"] > 0 and st["requested_bytes"] == size * st["allocs"]
def site(name, size, lists=("by_live_bytes", "by_long_lived_bytes", "by_alloc_rate")):
    for l in lists:
        for s in sorted(d[l], key=lambda s: -s["stack"]["allocs"]):
            if is_site(s, name, size):
                return s
    sys.exit("no site %s in %s" % (name, [[top(s) for s in d[l]] for l in lists]))
def buckets(h):
    return [i for i, b in enumerate(h) if b["count"]]
assert d["sample"] == 1 and d["stack_depth"] == 16, (d["sample"], d["stack_depth"])
live = d["by_live_bytes"]
assert is_site(live[0], "app::Cache::fill(int)", 16000) and is_site(live[1], "session_open", 3000), \
    [(top(s), s["stack"]["allocs"], s["stack"]["requested_bytes"]) for s in live]
cache, sess = live[0], live[1]
assert cache["est_live_bytes"] == 400 * 16000 and cache["stack"]["live_count"] == 400, cache
assert sess["est_live_bytes"] == 300 * 3000 and sess["stack"]["live_count"] == 300, sess
assert cache["stack"]["allocs"] == 400 and cache["stack"]["frees"] == 0
# age order: every cache block is at least as old as every session block,
# and the cache (1.7 s old) is the top long-lived site
ca, sa = buckets(cache["stack"]["age_hist"]), buckets(sess["stack"]["age_hist"])
assert min(ca) >= max(sa), (ca, sa)
assert d["by_long_lived_bytes"][0]["stack"]["id"] == cache["stack"]["id"], d["by_long_lived_bytes"]
assert d["by_long_lived_bytes"][0]["est_long_lived_bytes"] == 400 * 16000
# churn: the top by allocation rate, every block freed at once
churn = d["by_alloc_rate"][0]
assert is_site(churn, "scratch_churn", 200), [top(s) for s in d["by_alloc_rate"]]
assert churn["stack"]["allocs"] == 50000 and churn["stack"]["frees"] == 50000
assert churn["stack"]["live_count"] == 0
life = churn["stack"]["lifetime_hist"]
fast = sum(b["count"] for b in life if b["le_ns"] is not None and b["le_ns"] <= 65536000)
assert fast >= 49500, life
# temp_buffers: 500 blocks freed after 200 ms
tmp = site("temp_buffers(", 600)["stack"]
assert tmp["allocs"] == 500 and tmp["frees"] == 500 and tmp["live_count"] == 0, tmp
slow = sum(b["count"] for b in tmp["lifetime_hist"]
           if b["le_ns"] is not None and 65536000 < b["le_ns"] <= 4194304000)
assert slow == 500, tmp["lifetime_hist"]
# the caller is named too (or, without libelf, both say why not), and the
# object is the program
f0 = cache["stack"]["frames"]
if names:
    assert f0[1]["function"] == "work", f0[1]
else:
    assert all(f["function"] is None and f["note"] == "shimdump built without libelf" and
               f["offset"] > 0 for f in f0[:2]), f0[:2]
    assert f0[1]["object"] == f0[0]["object"], f0[:2]
main = [o for o in d["objects"] if o["main"]]
assert len(main) == 1 and main[0]["path"].endswith("/sites") and len(main[0]["build_id"]) >= 16, main
assert f0[0]["object"] == d["objects"].index(main[0])
# a stack deeper than the depth keeps its 16 innermost frames (none of the
# shim's), whichever unwinder took it: both calls of deep_leaf are one stack
deep = site("deep_leaf", 4321, lists=("by_live_bytes",))["stack"]
fd = deep["frames"]
assert deep["allocs"] == 80 and len(fd) == 16, (deep["allocs"], len(fd), fd)
if names:
    assert [f["function"] for f in fd] == ["deep_leaf"] + ["deep"] * 15, fd
else:
    assert len(set(f["addr"] for f in fd[1:])) == 1 and fd[0]["addr"] != fd[1]["addr"], fd
EOF

for b in $(backends); do
    d="$TMP/$b"
    start_sites "$d" "$T/sites" "backend:$b,sample:1,stacks:16"
    ok $? "$b: the program with known call sites started"
    check "$SD" --dir "$TMP/shm" --stacks --json --top=8 "$pid" && cp "$TMP/out" "$d/stacks.json" &&
        check python3 "$TMP/sites.py" "$d/stacks.json" "$HAVE_LIBELF"
    ok $? "$b: --stacks --json: the sites $by, exact sizes and counts, age order, churn, lifetimes, a deep stack's 16 frames"
    check "$SD" --dir "$TMP/shm" --stacks "$pid" &&
        grep -q "^CALL SITES BY LIVE BYTES" "$TMP/out" &&
        grep -q "^LONG-LIVED CALL SITES" "$TMP/out" && grep -q "^CALL SITES BY ALLOCATION RATE" "$TMP/out" &&
        grep -Eq "^ +$(name "app::Cache::fill\(int\)\+0x[0-9a-f]+$at +sites\$")" "$TMP/out" &&
        grep -Eq "^ +< $(name "work\+0x[0-9a-f]+$at +sites\$")" "$TMP/out" &&
        grep -Eq '^ +1 +6.10 MiB live +400 blocks' "$TMP/out" &&
        ! grep -q "$(printf '\033')" "$TMP/out" && [ "$(awk '{ if (length > m) m = length } END { print m }' "$TMP/out")" -le 100 ]
    ok $? "$b: --stacks text: three rankings, $frames, within 100 columns"
    check "$SD" --dir "$TMP/shm" "$pid" && grep -q "^LONG-LIVED CALL SITES" "$TMP/out" &&
        grep -Eq "^ +$(name 'app::Cache::fill\(int\)\+0x')" "$TMP/out"
    ok $? "$b: the one-screen view shows the top long-lived site$nl"
    check "$SD" --dir "$TMP/shm" --json "$pid" && cp "$TMP/out" "$d/full.json" &&
        check "$SD" --stacks "$d/full.json" && grep -Eq "^ +$(name 'session_open\+0x')" "$TMP/out" &&
        check "$SD" --stacks --json "$d/full.json" && cp "$TMP/out" "$d/saved.json" &&
        check python3 "$TMP/sites.py" "$d/saved.json" "$HAVE_LIBELF"
    ok $? "$b: a saved --json keeps the stacks and their names$nl"
    kill -9 "$pid"
    wait "$spid" 2>/dev/null
    check "$SD" --dir "$TMP/shm" --stacks "$pid" && grep -q "DEAD" "$TMP/out" &&
        grep -Eq "^ +$(name 'app::Cache::fill\(int\)\+0x')" "$TMP/out" &&
        "$SD" --dir "$TMP/shm" --stacks --json "$pid" >"$d/dead1.json" && sleep 1.2 &&
        "$SD" --dir "$TMP/shm" --stacks --json "$pid" >"$d/dead2.json" &&
        python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
ages = lambda d: [s["stack"]["age_hist"] for s in d["by_live_bytes"]]
assert ages(a) == ages(b), "the ages of a dead process kept growing"' "$d/dead1.json" "$d/dead2.json"
    ok $? "$b: a dead process's stacks are still named, its ages as of its death$nl"
    rm -f "$TMP/shm/mallocshim.$pid"
done

# The same sites in a second thread: its first 256 stacks are libgcc's
# unwinder's, the rest libunwind's (the main thread, which loaded
# libunwind, stays on it), and each site is still one stack with all its
# allocations: the two unwinders give the same frames. Without libunwind,
# every stack is libgcc's and no thread moves.
if [ "$HAVE_LIBUNWIND" = yes ]; then
    moves=2 threads=1 what="moved to libunwind after 256 stacks"
else
    moves=0 threads=0 what="libgcc's unwinder only (no libunwind in this build)"
fi
# thread.py JSON MOVES THREADS HAVE_LIBELF: the unwinders' counts, and the
# cache's 400 blocks one stack whichever unwinder took each.
cat >"$TMP/thread.py" <<'EOF'
import json, sys
cs = json.load(open(sys.argv[1]))["call_stacks"]
moves, threads, names = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "yes"
assert cs["libunwind_moves"] == moves and cs["libunwind_threads"] == threads, cs
if names:
    fill = [s for s in cs["stacks"] if s["frames"] and s["frames"][0]["function"] == "app::Cache::fill(int)"]
else:
    fill = [s for s in cs["stacks"] if s["allocs"] and s["requested_bytes"] == 16000 * s["allocs"]]
assert len(fill) == 1 and fill[0]["allocs"] == 400, fill
if names:
    assert [f["function"] for f in fill[0]["frames"][1:3]] == ["work", "start_thread"], fill[0]["frames"]
EOF
# thread_sites DIR CONF MOVES THREADS: sites in a second thread under CONF,
# checked by sites.py and thread.py, with nothing on stderr.
thread_sites() {
    start_sites "$1" "$T/sites" "$2" thread &&
        check "$SD" --dir "$TMP/shm" --stacks --json --top=8 "$pid" && cp "$TMP/out" "$1/stacks.json" &&
        check python3 "$TMP/sites.py" "$1/stacks.json" "$HAVE_LIBELF" &&
        check "$SD" --dir "$TMP/shm" --json "$pid" && cp "$TMP/out" "$1/full.json" &&
        check python3 "$TMP/thread.py" "$1/full.json" "$3" "$4" "$HAVE_LIBELF" &&
        { [ ! -s "$1/err" ] || { sed 's/^/# stderr: /' "$1/err" >&2; false; }; }
}
for b in $(backends); do
    d="$TMP/$b-thread"
    thread_sites "$d" "backend:$b,sample:1,stacks:16" $moves $threads
    ok $? "$b: sites in a second thread: $what, one stack per site$nl"
    stop_sites "$d"
done

# unwind_threads: the places on libunwind. With 1, the thread that started
# the shim holds it and the second thread stays on libgcc's unwinder; with
# 0, no libunwind is loaded, and no line says so (the user's choice).
for b in $(backends); do
    if [ "$HAVE_LIBUNWIND" != yes ]; then
        skip "$b: unwind_threads:1 and :0" "no libunwind in this build"
        continue
    fi
    for u in 1 0; do
        d="$TMP/$b-u$u"
        thread_sites "$d" "backend:$b,sample:1,stacks:16,unwind_threads:$u" $u $u
        ok $? "$b: unwind_threads:$u: $u thread(s) on libunwind, the second thread on libgcc's, one stack per site$nl"
        stop_sites "$d"
    done
done

# A program that registers unwind tables of its own (a JIT's way) and
# unwinds: libgcc's unwinder allocates under its mutex, so the shim must not
# take that allocation's stack with it (that waited forever: timeout).
for b in $(backends); do
    EXTRA_CONF="sample:1,stacks:16,shm_dir:$TMP/shm"
    check shim "$b" timeout 600 "$T/regframe" && grep -qx "caught 20" "$TMP/out"
    ok $? "$b: unwind tables registered by the program, then backtrace and throw: no deadlock"
    EXTRA_CONF=
done
# The same where libunwind cannot be loaded (/dev/null mounted over it in a
# mount namespace of the test's own, so stacks are libgcc's only): stacks
# stop at the registration, with a line, and nothing waits (it hung). A
# build without libunwind is in that state already.
uw=$(ldconfig -p | sed -n 's/.*libunwind\.so\.8 .*=> //p' | head -n 1)
uw=$( [ -n "$uw" ] && readlink -f "$uw")
for b in $(backends); do
    if [ "$HAVE_LIBUNWIND" != yes ]; then
        MALLOCSHIM_CONF="backend:$b,sample:1,stacks:16,shm_dir:$TMP/shm" LD_PRELOAD="$SHIM" \
            check timeout 60 "$T/regframe" && grep -qx "caught 20" "$TMP/out" &&
            ! grep -q "cannot load" "$TMP/err" &&
            grep -q "registers unwind tables of its own.*call stacks stop here" "$TMP/err"
        ok $? "$b: tables registered in a build without libunwind: stacks stop, no deadlock"
        continue
    fi
    if [ -z "$uw" ] || [ "$(id -u)" -ne 0 ] || ! unshare -m true 2>/dev/null; then
        skip "$b: tables registered where libunwind cannot be loaded" \
            "needs root, a mount namespace (unshare -m) and libunwind.so.8"
        continue
    fi
    check unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec env "$@"' sh "$uw" \
        LD_PRELOAD="$SHIM" MALLOCSHIM_CONF="backend:$b,sample:1,stacks:16,shm_dir:$TMP/shm" \
        timeout 600 "$T/regframe" && grep -qx "caught 20" "$TMP/out" &&
        grep -q "cannot load libunwind" "$TMP/err" &&
        grep -q "registers unwind tables of its own.*call stacks stop here" "$TMP/err"
    ok $? "$b: tables registered where only libgcc's unwinder is in use: stacks stop, no deadlock"
done

# Many threads interning the same stacks at once (bcsim: 8 threads, blocks
# freed by other threads): every live block is on exactly one stack or
# counted as having none, and no stack is listed twice.
MALLOCSHIM_CONF="sample:1,stacks:16,shm_dir:$TMP/shm" LD_PRELOAD="$SHIM" \
    "$TOP_BUILDDIR/tools/bcsim" --threads=8 --cache=8M --duration=2 --hold=30 >"$TMP/bc.out" 2>&1 &
bcpid=$!
i=0
while ! grep -q "^peak/live" "$TMP/bc.out" && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
check "$SD" --dir "$TMP/shm" --json "$bcpid" && cp "$TMP/out" "$TMP/bc.json" && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
cs = d["call_stacks"]
live = sum(s["live_count"] for s in cs["stacks"]) + cs["no_stack_live_count"]
assert d["sampling"]["tracked_dropped"] == 0 and cs["dropped"] == 0, (d["sampling"], cs["dropped"])
assert live == d["totals"]["live_count"], (live, d["totals"]["live_count"])
frames = [tuple(f["addr"] for f in s["frames"]) for s in cs["stacks"]]
assert len(frames) == len(set(frames)), "a stack is listed twice"
assert sum(s["allocs"] for s in cs["stacks"]) > 100000, "too few stacks taken"
main = [i for i, o in enumerate(cs["objects"]) if o["main"]]
assert any(f["object"] in main and (f["function"] or sys.argv[2] != "yes")
           for s in cs["stacks"] for f in s["frames"]), "no frame of bcsim named"
' "$TMP/bc.json" "$HAVE_LIBELF"
ok $? "8 threads: every live block on one stack (or none), no stack twice"
kill "$bcpid" 2>/dev/null
wait "$bcpid" 2>/dev/null

# malloc in a signal handler on a 7 KiB alternate signal stack: no
# unwinding there (it could run off the stack's end into other memory). The
# shim knows the stack from the program's sigaltstack call; with
# SS_AUTODISARM the kernel itself reports none inside the handler.
for b in $(backends); do
    for mode in plain autodisarm; do
        MALLOCSHIM_CONF="backend:$b,sample:1,stacks:16,shm_dir:$TMP/shm" LD_PRELOAD="$SHIM" \
            check "$T/altstack" $mode
        ok $? "$b: malloc on an alternate signal stack ($mode) writes nothing below it"
    done
done

# Started with stdin, stdout and stderr closed (a daemon's way): neither the
# segment nor libunwind's pipe may take those numbers, and stacks still work.
# (The files the sampler reads for a moment each pass are moved above 2 at
# once, but for a microsecond they hold the lowest free number: with
# interval_ms:60000 no pass runs while the test looks, after the first.)
mkdir -p "$TMP/nostd"
MALLOCSHIM_CONF="sample:1,stacks:16,interval_ms:60000,shm_dir:$TMP/shm" LD_PRELOAD="$SHIM" \
    "$T/sites" "$TMP/nostd" <&- >&- 2>&- &
spid=$!
stacks_wait "$TMP/nostd/ready" && pid=$(cat "$TMP/nostd/ready") &&
    ! [ -e "/proc/$pid/fd/0" ] && ! [ -e "/proc/$pid/fd/1" ] && ! [ -e "/proc/$pid/fd/2" ] &&
    check "$SD" --dir "$TMP/shm" --stacks "$pid" && grep -Eq "^ +$(name 'app::Cache::fill\(int\)\+0x')" "$TMP/out"
ok $? "stdio closed: descriptors 0-2 stay closed, and stacks work$nl"
stop_sites "$TMP/nostd"

# What shimdump names and what not, from the symbol tables: these need
# libelf (a build without it names no frame at all).
if [ "$HAVE_LIBELF" != yes ]; then
    skip "stripped: object+offset for its own frames, library frames named" "$no_names"
    skip "replaced: frames of the replaced program say 'build id differs'" "$no_names"
else
    # A stripped copy: no .symtab, and an executable's .dynsym has none of
    # its functions: object+offset, and library frames still named.
    mkdir -p "$TMP/strip"
    ${OBJCOPY:-objcopy} --strip-all "$T/sites" "$TMP/strip/sites-stripped"
    start_sites "$TMP/strip" "$TMP/strip/sites-stripped"
    ok $? "stripped: started"
    check "$SD" --dir "$TMP/shm" --stacks "$pid" &&
        grep -Eq '^ +sites-stripped\+0x[0-9a-f]+ \(no symbols\)$' "$TMP/out" &&
        grep -Eq '__libc_start_call_main\+0x[0-9a-f]+( at [^ ]+:[0-9]+)? +libc.so.6$' "$TMP/out" &&
        check "$SD" --dir "$TMP/shm" --stacks --json "$pid" &&
        cp "$TMP/out" "$TMP/strip/stacks.json" && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
f = d["by_live_bytes"][0]["stack"]["frames"][0]
assert f["function"] is None and f["object"] is not None and f["offset"] > 0, f
assert d["by_live_bytes"][0]["est_live_bytes"] == 6400000' "$TMP/strip/stacks.json"
    ok $? "stripped: object+offset for its own frames, library frames named, sizes right"
    stop_sites "$TMP/strip"
    ok $? "stripped: exited normally"

    # The binary replaced while it runs (an upgrade): its build id no longer
    # matches, and shimdump says so rather than naming the wrong functions.
    mkdir -p "$TMP/upg"
    cp "$T/sites" "$TMP/upg/sites"
    start_sites "$TMP/upg" "$TMP/upg/sites"
    ok $? "replaced: started"
    rm -f "$TMP/upg/sites" && cp "$T/holder" "$TMP/upg/sites"
    check "$SD" --dir "$TMP/shm" --stacks "$pid" &&
        grep -Eq '^ +sites\+0x[0-9a-f]+ \(build id differs\)$' "$TMP/out" &&
        ! grep -q 'app::Cache' "$TMP/out"
    ok $? "replaced: frames of the replaced program say 'build id differs'"
    stop_sites "$TMP/upg"
fi

# stacks:0, and the sample:1 default without a stacks key: no stacks.
for conf in "sample:64,stacks:0" "sample:1"; do
    start_sites "$TMP/nost" "$T/sites" "$conf"
    check "$SD" --dir "$TMP/shm" --stacks "$pid" && grep -q "no call stacks in this segment" "$TMP/out" &&
        check "$SD" --dir "$TMP/shm" --json "$pid" && ! grep -q '"call_stacks"' "$TMP/out" &&
        [ -z "$(ls -l "/proc/$pid/fd" | grep -o 'pipe:\[[0-9]*\]' | sort | uniq -d)" ]
    ok $? "$conf: no stacks, and no pipe of libunwind's (both ends) in the process"
    stop_sites "$TMP/nost"
    rm -rf "$TMP/nost"
done

# The libc calls the shim wraps for the unwinder's sake answer as libc's do
# (results, errno, effects), bare and under the shim.
check "$T/fdcalls"
ok $? "fdcalls bare: the checks hold against libc itself"
MALLOCSHIM_CONF="sample:1,stacks:16,shm_dir:$TMP/shm" LD_PRELOAD="$SHIM" check "$T/fdcalls"
ok $? "close, dup2, dup3, close_range, closefrom, sigaltstack: as libc's under the shim"

# A program that closes every descriptor it did not open (libunwind's pipe
# among them), then opens pipes that take those numbers: it keeps running,
# stacks stop with one line, and nothing is read from or written to its pipes.
# Each way of closing: close_range (os.closerange), close, dup2 onto the
# numbers, closefrom; the sampler's own check (for a close that bypasses
# libc) is kept out of reach (interval_ms:60000), so only the shim's
# wrappers can have stopped stacks. Then a raw close(2) system call, which
# only that check sees (interval_ms:1000). Then children that close every
# descriptor before exec (subprocess: vfork, or fork with preexec_fn): the
# parent keeps its stacks, and nothing is written to the child's stderr.
# A build without libunwind has no pipe to lose: the program runs on, and
# the shim says nothing.
cat >"$TMP/closer.py" <<'EOF'
import ctypes, os, platform, subprocess, sys, time
mode = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
SYS_close = {"x86_64": 3, "aarch64": 57}[platform.machine()]
if mode == "closerange":
    os.closerange(3, 256)
elif mode == "close":
    for fd in range(3, 256):
        try:
            os.close(fd)
        except OSError:
            pass
elif mode == "dup2":
    null = os.open("/dev/null", os.O_RDWR)
    for fd in range(3, 256):
        if fd != null:
            os.dup2(null, fd)
elif mode == "closefrom":
    libc.closefrom(3)
elif mode == "raw":
    for fd in range(3, 256):
        libc.syscall(SYS_close, fd)
elif mode in ("vfork", "fork"):
    for i in range(3):
        r = subprocess.run(["/bin/sh", "-c", "exit 0"], stderr=subprocess.PIPE, close_fds=True,
                           preexec_fn=(lambda: None) if mode == "fork" else None)
        if r.returncode != 0 or r.stderr != b"":
            raise SystemExit("child: rc %d, stderr %r" % (r.returncode, r.stderr))
sys.stderr.write("closed\n")
sys.stderr.flush()
pipes = [os.pipe() for i in range(4)]
os.write(pipes[0][1], b"abc")
keep = [bytes(100 + i % 50) for i in range(20000)]
if mode == "raw":
    # the sampler's check, once a second: until its line is in our stderr
    # (a file), with a hang guard; without libunwind there is no line to
    # wait for, and a few of its passes go by
    err = os.readlink("/proc/self/fd/2")
    for i in range(600 if sys.argv[2] == "yes" else 25):
        if b"mallocshim: " in open(err, "rb").read():
            break
        time.sleep(0.1)
    sys.stderr.write("slept\n")
    sys.stderr.flush()
    keep += [bytes(100 + i % 50) for i in range(20000)]
assert os.read(pipes[0][0], 10) == b"abc"
for r, w in pipes[1:]:
    os.set_blocking(r, False)
    try:
        got = os.read(r, 10)
        raise SystemExit("unexpected bytes in a pipe: %r" % got)
    except BlockingIOError:
        pass
print("done", len(keep))
EOF
for mode in closerange close dup2 closefrom raw vfork fork; do
    case $mode in
    raw) iv=1000 ;;
    *) iv=60000 ;;
    esac
    MALLOCSHIM_CONF="sample:1,stacks:16,interval_ms:$iv,shm_dir:$TMP/shm" LD_PRELOAD="$SHIM" \
        timeout 600 /usr/bin/python3 "$TMP/closer.py" $mode "$HAVE_LIBUNWIND" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    sed "s/^mallocshim: the program closed libunwind's descriptors .*call stacks stop here.*/SHIM/" \
        "$TMP/err" | tr '\n' ' ' >"$TMP/lines"
    case $HAVE_LIBUNWIND$mode in
    yesraw) want="closed SHIM slept |SHIM closed slept " ;;   # the check, before "slept"
    *raw) want="closed slept " ;;
    *vfork | *fork) want="closed " ;;
    yes*) want="SHIM closed |closed SHIM " ;;   # the line waits for the next stack
    *) want="closed " ;;   # no libunwind, no pipe of its to lose
    esac
    [ $rc -eq 0 ] && grep -Eq "^done [0-9]+$" "$TMP/out" &&
        echo "|$want|" | grep -qF "|$(cat "$TMP/lines")|"
    r=$?
    case $HAVE_LIBUNWIND$mode in
    *vfork | *fork) what="children closing descriptors ($mode): the parent keeps its stacks" ;;
    yes*) what="closed descriptors ($mode): the program runs on, stacks stop with one line" ;;
    *) what="closed descriptors ($mode): the program runs on, no line (no libunwind in this build)" ;;
    esac
    ok $r "$what (rc $rc)"
    [ $r -eq 0 ] || diag "$TMP/err"
done

# db_bench (rocksdb-tools): the top long-lived site is RocksDB's block reading.
# The block cache is larger than the DB, so the blocks read stay cached. The
# run is a fixed amount of work, not of time: 4 x 8000 seeded reads, at most
# 4000 a second (db_bench's own rate limit; below that its limiter asserts
# on a request larger than one 100 ms refill), so at least 8 s on any
# machine; a few hundred reads fill the 8 MiB the check wants, so it holds
# from about 1.5 s in (blocks older than 1 s) until the run ends, later on
# a loaded machine, but never not at all.
if [ "$HAVE_LIBELF" != yes ]; then
    skip "db_bench: the top long-lived site" "$no_names"
elif command -v db_bench >/dev/null 2>&1; then
    db="$TMP/db"
    db_bench --db="$db" --benchmarks=fillrandom --num=200000 --value_size=400 \
        --compression_type=lz4 --block_size=16384 --threads=1 >"$TMP/fill" 2>&1
    ok $? "db_bench: a 200k-key DB made"
    cat >"$TMP/rocks.py" <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
ll = d["by_long_lived_bytes"]
assert ll, "no long-lived site"
names = [f["function"] or "" for f in ll[0]["stack"]["frames"]]
block = re.compile(r"^rocksdb::BlockFetcher::ReadBlockContents\(")
assert any(block.match(n) for n in names), names
assert ll[0]["est_long_lived_bytes"] > 8 << 20, ll[0]["est_long_lived_bytes"]
print(" < ".join(n for n in names[:6]))
EOF
    for b in $(backends); do
        MALLOCSHIM_CONF="backend:$b,shm_dir:$TMP/shm" LD_PRELOAD="$SHIM" \
            db_bench --db="$db" --use_existing_db=1 --benchmarks=readrandom --num=200000 \
            --reads=8000 --benchmark_read_rate_limit=4000 --seed=1 --threads=4 \
            --cache_size=134217728 --block_size=16384 \
            --compression_type=lz4 --statistics=0 --histogram=0 >"$TMP/rb.out" 2>"$TMP/rb.err" &
        bpid=$!
        # From 3 s in (blocks must be older than 1 s), until it holds or the
        # run ends.
        sleep 3
        r=1
        while [ $r -ne 0 ] && kill -0 "$bpid" 2>/dev/null; do
            "$SD" --dir "$TMP/shm" --stacks --json --min-age=1s "$bpid" >"$TMP/rocks-$b.json" 2>"$TMP/err" &&
                python3 "$TMP/rocks.py" "$TMP/rocks-$b.json" >"$TMP/out" 2>>"$TMP/err"
            r=$?
            [ $r -eq 0 ] || sleep 0.5
        done
        [ $r -eq 0 ] || diag "$TMP/err"
        ok $r "db_bench under $b: the top long-lived site is in RocksDB's block reading"
        sed 's/^/# /' "$TMP/out" >&2
        wait "$bpid"
        ok $? "db_bench under $b: exited normally"
    done
else
    skip "db_bench: the top long-lived site" "db_bench not installed (Debian: rocksdb-tools)"
fi

done_testing
