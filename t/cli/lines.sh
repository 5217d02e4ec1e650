#!/bin/sh
# lines.sh: the source file and line of call sites (libdw). A program built
# with -g (t/integration/lines) allocates at a known line, found here with
# grep: `shimdump --stacks`, the one-screen view and --json show that file
# and line, and a saved snapshot keeps them; a stripped copy gets them from
# the debug file of its build id (in a mount namespace of the test's own,
# where a directory of ours is /usr/lib/debug), and has none without it; a
# copy without debug information shows function+offset exactly as before;
# and libc's frames have lines when libc6-dbg is installed. A build without
# libdw shows no line at all, and the checks that need one skip.
. "$TOP_SRCDIR/t/lib.sh"

SD="$TOP_BUILDDIR/tools/shimdump"
export NO_COLOR=1
src="$TOP_SRCDIR/t/integration/lines.c"
site=$(grep -n 'lines.sh: the call site' "$src" | cut -d: -f1)
caller=$(grep -n 'lines.sh: the caller' "$src" | cut -d: -f1)
[ -n "$site" ] && [ -n "$caller" ]
ok $? "the call site is at lines.c:$site, its caller at lines.c:$caller"
OBJCOPY=${OBJCOPY:-objcopy}

# start_lines DIR BINARY [PREFIX...]: runs PREFIX... env ... BINARY DIR
# under the shim; sets $pid once DIR/ready names it.
start_lines() {
    d=$1 bin=$2
    shift 2
    mkdir -p "$d"
    "$@" env MALLOCSHIM_CONF="sample:1,stacks:8,interval_ms:100,shm_dir:$TMP/shm" \
        LD_PRELOAD="$SHIM" "$bin" "$d" >"$d/out" 2>"$d/err" &
    lpid=$!
    wait_for "$d/ready" 1200 && pid=$(cat "$d/ready") && [ "$pid" = "$lpid" ]
}

stop_lines() {
    touch "$1/stop"
    wait "$lpid"
}

# shown PATTERN SHIMDUMP-ARGS...: shimdump's output (in $TMP/out) has a line
# matching PATTERN (grep -E), trying again until the sampler counted the
# blocks' ages past 1 s (the view's long-lived sites), for 60 s at most.
shown() {
    _p=$1
    shift
    _i=0
    while :; do
        check "$SD" --dir "$TMP/shm" "$@" || return 1
        grep -Eq "$_p" "$TMP/out" && return 0
        [ $_i -lt 300 ] || { diag "$TMP/out"; return 1; }
        _i=$((_i + 1))
        sleep 0.2
    done
}

# frames.py JSON SRC SITE CALLER WANT [ROOT]: the top stack of --stacks --json
# is lines_site < main, and their file and line are as WANT says: "lines"
# (SRC, at SITE and CALLER) or "none" (both null). The file is SRC itself,
# compared as files (its path is the one the compiler recorded).
cat >"$TMP/frames.py" <<'EOF'
import json, os, sys
path, src, site, caller, want = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
d = json.load(open(path))
top = d["by_live_bytes"][0]["stack"]
assert top["allocs"] == 200 and top["requested_bytes"] == 200 * 5000, top
f = top["frames"]
assert [x["function"] for x in f[:2]] == ["lines_site", "main"], f[:2]
for x, line in ((f[0], site), (f[1], caller)):
    if want == "none":
        assert x["file"] is None and x["line"] is None, x
    else:
        assert x["file"] and os.path.samefile(x["file"], src), (x["file"], src)
        assert x["line"] == line, (x["line"], line)
EOF

if [ "$HAVE_LIBELF" != yes ]; then
    skip "lines: every check" "shimdump built without libelf, and so without libdw"
    done_testing
    exit
fi

# A build without libdw: the -g program's frames are named, with no line.
if [ "$HAVE_LIBDW" != yes ]; then
    start_lines "$TMP/nodw" "$T/lines"
    ok $? "no libdw: the program started"
    check "$SD" --dir "$TMP/shm" --stacks "$pid" &&
        grep -Eq '^ +lines_site\+0x[0-9a-f]+ +lines$' "$TMP/out" && ! grep -q ' at ' "$TMP/out" &&
        check "$SD" --dir "$TMP/shm" --stacks --json "$pid" && cp "$TMP/out" "$TMP/nodw.json" &&
        check python3 "$TMP/frames.py" "$TMP/nodw.json" "$src" "$site" "$caller" none
    ok $? "no libdw: function+offset only, and file and line null in JSON"
    stop_lines "$TMP/nodw"
    for what in "--stacks, the view and --json: file and line" "a saved snapshot keeps them" \
        "a long name is cut before ' at'" "a stripped copy: lines from the debug file of its build id" \
        "a copy without debug information: today's text" "libc's frames: lines from libc6-dbg"; do
        skip "$what" "shimdump built without libdw (Debian: libdw-dev)"
    done
    done_testing
    exit
fi

# The program as built, with its own DWARF.
start_lines "$TMP/own" "$T/lines"
ok $? "the program built with -g started"
shown "^ +lines_site\+0x[0-9a-f]+ at lines\.c:$site +lines\$" --stacks "$pid" &&
    grep -Eq "^ +< main\+0x[0-9a-f]+ at lines\.c:$caller +lines\$" "$TMP/out" &&
    [ "$(grep ' at ' "$TMP/out" | awk '{ if (length > m) m = length } END { print m + 0 }')" -le 100 ]
ok $? "--stacks: lines_site at lines.c:$site < main at lines.c:$caller, frames within 100 columns"
shown "^ +lines_site\+0x[0-9a-f]+ at lines\.c:$site +lines\$" "$pid" &&
    sed -n '/^LONG-LIVED CALL SITES/,$p' "$TMP/out" | grep -Eq "^ +lines_site\+0x[0-9a-f]+ at lines\.c:$site +lines\$"
ok $? "the one-screen view: the long-lived site at lines.c:$site"
check "$SD" --dir "$TMP/shm" --stacks --json "$pid" && cp "$TMP/out" "$TMP/own.json" &&
    check python3 "$TMP/frames.py" "$TMP/own.json" "$src" "$site" "$caller" lines
ok $? "--stacks --json: file is lines.c, line $site and $caller"

# Saved: the snapshot keeps file and line, read back without the program.
check "$SD" --dir "$TMP/shm" --json "$pid" && cp "$TMP/out" "$TMP/full.json"
r=$?
stop_lines "$TMP/own"
[ $r -eq 0 ] && check "$SD" --stacks "$TMP/full.json" &&
    grep -Eq "^ +lines_site\+0x[0-9a-f]+ at lines\.c:$site +lines\$" "$TMP/out" &&
    check "$SD" --stacks --json "$TMP/full.json" && cp "$TMP/out" "$TMP/saved.json" &&
    check python3 "$TMP/frames.py" "$TMP/saved.json" "$src" "$site" "$caller" lines
ok $? "a saved snapshot keeps the file and line"

check "$SD" --html "$TMP/full.json" &&
    grep -Eq "lines_site\+0x[0-9a-f]+ at <span class=\"src\" title=\"[^\"]*/lines\.c\">lines\.c:$site</span>" "$TMP/out"
ok $? "--html: the frame's file and line, the whole path on hover"

# A snapshot of JSON format 1 (no history, frames without file and line)
# still reads: its frames have none.
python3 - "$TMP/full.json" "$TMP/v1.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["format_version"] = 1
del d["history"]
for s in d["call_stacks"]["stacks"]:
    for f in s["frames"]:
        del f["file"], f["line"]
json.dump(d, open(sys.argv[2], "w"))
EOF
check "$SD" --stacks "$TMP/v1.json" &&
    grep -Eq "^ +lines_site\+0x[0-9a-f]+ +lines\$" "$TMP/out" && ! grep -q " at lines\.c:" "$TMP/out" &&
    check "$SD" --json "$TMP/v1.json" && ! grep -q '"file": "' "$TMP/out" && grep -q '"file": null' "$TMP/out"
ok $? "a snapshot of JSON format 1 reads, its frames without file and line"

# A name too long for the line is cut before " at": the line number stays.
python3 - "$TMP/full.json" "$TMP/long.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for s in d["call_stacks"]["stacks"]:
    for f in s["frames"]:
        if f["function"] == "lines_site":
            f["function"] = "ns::Template<" + "int, " * 60 + "int>::lines_site(char const*)"
            f["file"] = "/very/long/directory/" * 8 + "lines.c"
json.dump(d, open(sys.argv[2], "w"))
EOF
check "$SD" --stacks "$TMP/long.json" &&
    grep -Eq "^ +ns::Template<int, int, .*\.\.\. at lines\.c:$site +lines\$" "$TMP/out" &&
    [ "$(grep ' at ' "$TMP/out" | awk '{ if (length > m) m = length } END { print m + 0 }')" -le 100 ]
ok $? "a long name is cut before ' at lines.c:$site', within 100 columns"

# Without debug information (its .symtab kept): function+offset exactly as a
# build without libdw shows it, and null in JSON.
mkdir -p "$TMP/nodebug"
"$OBJCOPY" --strip-debug "$T/lines" "$TMP/nodebug/lines-nodebug"
ok $? "objcopy --strip-debug made a copy without debug information"
start_lines "$TMP/nodebug" "$TMP/nodebug/lines-nodebug" &&
    shown '^ +lines_site\+0x[0-9a-f]+ +lines-nodebug$' --stacks "$pid" &&
    grep -Eq '^ +< main\+0x[0-9a-f]+ +lines-nodebug$' "$TMP/out" &&
    ! grep -q ' at lines\.c' "$TMP/out" &&
    check "$SD" --dir "$TMP/shm" --stacks --json "$pid" && cp "$TMP/out" "$TMP/nodebug.json" &&
    check python3 "$TMP/frames.py" "$TMP/nodebug.json" "$src" "$site" "$caller" none
ok $? "a copy without debug information: function+offset and object, as before; null in JSON"
stop_lines "$TMP/nodebug"

# Stripped of everything: names and lines come only from the debug file of
# its build id, which a mount namespace puts under /usr/lib/debug/.build-id
# for the program alone (shimdump reads it through /proc/PID/root).
mkdir -p "$TMP/strip"
id=$(readelf -n "$T/lines" 2>/dev/null | sed -n 's/^ *Build ID: *//p' | head -n 1)
"$OBJCOPY" --strip-all "$T/lines" "$TMP/strip/lines-stripped"
r=$?
[ $r -eq 0 ] && [ ${#id} -ge 4 ]
ok $? "objcopy --strip-all made a stripped copy (build id ${id:-none})"
start_lines "$TMP/strip" "$TMP/strip/lines-stripped" &&
    shown '^ +lines-stripped\+0x[0-9a-f]+ \(no symbols\)$' --stacks "$pid" &&
    ! grep -q ' at lines\.c' "$TMP/out"
ok $? "stripped, no debug file: object+offset, no symbols, no line"
stop_lines "$TMP/strip"
if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2>/dev/null || [ ! -d /usr/lib/debug ]; then
    skip "a stripped copy: lines from the debug file of its build id" \
        "needs root, a mount namespace (unshare -m) and a /usr/lib/debug to mount over (Debian: libc6-dbg)"
else
    dbg="$TMP/debugroot/.build-id/$(echo "$id" | cut -c1-2)"
    mkdir -p "$dbg" &&
        "$OBJCOPY" --only-keep-debug "$T/lines" "$dbg/$(echo "$id" | cut -c3-).debug" &&
        start_lines "$TMP/dbgfile" "$TMP/strip/lines-stripped" \
            unshare -m sh -c 'mount --bind "$1" /usr/lib/debug && shift && exec "$@"' sh "$TMP/debugroot" &&
        shown "^ +lines_site\+0x[0-9a-f]+ at lines\.c:$site +lines-stripped\$" --stacks "$pid" &&
        grep -Eq "^ +< main\+0x[0-9a-f]+ at lines\.c:$caller +lines-stripped\$" "$TMP/out" &&
        check "$SD" --dir "$TMP/shm" --stacks --json "$pid" && cp "$TMP/out" "$TMP/dbgfile.json" &&
        check python3 "$TMP/frames.py" "$TMP/dbgfile.json" "$src" "$site" "$caller" lines
    ok $? "a stripped copy: names and lines from the debug file of its build id"
    stop_lines "$TMP/dbgfile"
fi

# The real thing: glibc's frames, from libc6-dbg's debug file.
libc=$(ldd "$T/lines" | sed -n 's/.*libc\.so\.6 => \([^ ]*\).*/\1/p')
cid=$( [ -n "$libc" ] && readelf -n "$libc" 2>/dev/null | sed -n 's/^ *Build ID: *//p' | head -n 1)
if [ -z "$cid" ] || [ ! -r "/usr/lib/debug/.build-id/$(echo "$cid" | cut -c1-2)/$(echo "$cid" | cut -c3-).debug" ]; then
    skip "libc's frames: lines from libc6-dbg" "no debug file for $libc (Debian: libc6-dbg)"
else
    start_lines "$TMP/libc" "$T/lines" &&
        shown '^ +< __libc_start_call_main\+0x[0-9a-f]+ at [^ /]+\.[ch]:[0-9]+ +libc\.so\.6$' --stacks "$pid"
    ok $? "libc's frames: lines from libc6-dbg's debug file"
    stop_lines "$TMP/libc"
fi

done_testing
