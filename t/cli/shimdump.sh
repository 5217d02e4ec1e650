#!/bin/sh
# shimdump.sh: shimdump against live processes under each backend: the
# one-screen view, --list, --json checked against the exact counts of a known
# pattern (sample:1), --prometheus, --events, --diff, --watch in a pty; a
# dead process, --clean; and the documented exit codes for every error.
. "$TOP_SRCDIR/t/lib.sh"
distcheck_light   # make check runs it on these sources; distcheck's pass skips it (CI time)

SD="$TOP_BUILDDIR/tools/shimdump"
export NO_COLOR=1

# wait_named DIR PID COMM: until the segment file DIR/mallocshim.PID is
# there and COMM's (an exec'ed image's replaces the shell's), up to 60 s.
# By its path: `shimdump --dir DIR PID` would read the live segment before
# the file has its name.
wait_named() {
    i=0
    until [ -e "$1/mallocshim.$2" ] &&
        "$SD" "$1/mallocshim.$2" 2>/dev/null | grep -q "^pid $2 ($3) "; do
        [ $i -lt 600 ] || return 1
        sleep 0.1
        i=$((i + 1))
    done
}

# The exact deltas of the known pattern, from two JSON snapshots.
cat >"$TMP/check.py" <<'EOF'
import json, sys
base, ready, spec = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
def classes(d):
    return {c["class"]: c for c in d["size_classes"]}
b, r = classes(base), classes(ready)
def cls_of(usable):
    for c in r.values():
        if c["min_size"] <= usable and (c["max_size"] is None or usable <= c["max_size"]):
            return c["class"]
    sys.exit("no class holds usable size %d" % usable)
def delta(c, key):
    return r[c][key] - (b[c][key] if c in b else 0)
def hist_delta(c, key):
    old = {h["le_ns"]: h["count"] for h in b[c][key]} if c in b else {}
    return {h["le_ns"]: h["count"] - old.get(h["le_ns"], 0) for h in r[c][key]}
assert ready["format_version"] == 5 and ready["sampling"]["live_bytes"] == "exact", ready["sampling"]
assert ready["state"] == "alive", ready["state"]
# A lifetime in lo..hi (the holder's own bounds, widened by the 50 us that
# lifeclock allows between the two clocks) lies in a bucket (prev, le] that
# meets that span: the freed blocks' counts must all be in such buckets.
SLACK = 50000
lines = [l.split() for l in open(spec)]
done_ns = int(next(l[1] for l in lines if l[0] == "done"))
assert ready["heartbeat_ns"] > done_ns, "no sampler pass since the pattern was done"
for l in lines:
    if l[0] == "done":
        continue
    size, usable, n, freed, lo, hi = map(int, l)
    c = cls_of(usable)
    live = n - freed
    got = {k: delta(c, k) for k in ("allocs", "frees", "live_count", "live_bytes", "live_usable_bytes")}
    want = {"allocs": n, "frees": freed, "live_count": live, "live_bytes": live * size,
            "live_usable_bytes": live * usable}
    assert got == want, (size, got, want)
    life = hist_delta(c, "lifetime_hist")
    prev, inside = 0, 0
    for le in sorted((k for k in life if k is not None)) + [None]:
        if (le is None or le + SLACK >= lo) and prev < hi + SLACK:
            inside += life.get(le, 0)
        prev = le if le is not None else prev
    assert inside == freed, (size, lo, hi, life)
    # Every survivor was born before the 300 ms sleep, and the last
    # sampler pass came after it: each is older than 65.5 ms (4^8 us).
    age = hist_delta(c, "age_hist")
    assert sum(age.values()) == live, (size, age)
    assert sum(v for le, v in age.items() if le is not None and le <= 65536000) == 0, age
t = ready["totals"]
assert t["live_count"] == sum(c["live_count"] for c in ready["size_classes"])
assert t["live_usable_bytes"] == sum(c["live_usable_bytes"] for c in ready["size_classes"])
assert ready["rss_bytes"] > 0 and len(ready["series"]) >= 1 and ready["backend_stats"], ready["rss_bytes"]
EOF

PROM_RE='^(# (HELP|TYPE) [a-z_]+ .+|[a-z_]+\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\} [0-9]+(\.[0-9]+)?)$'

for b in $(backends); do
    d="$TMP/$b"
    mkdir -p "$d/shm"
    env MALLOCSHIM_CONF="backend:$b,shm_dir:$d/shm,sample:1,name:db" LD_PRELOAD="$SHIM" \
        "$T/holder" "$d" >"$d/out" 2>"$d/err" &
    pid=$!
    wait_for "$d/base"
    ok $? "$b: the holder started"
    check "$SD" --dir "$d/shm" --json "$pid"
    ok $? "$b: --json of a live process"
    cp "$TMP/out" "$d/base.json"
    touch "$d/go"
    wait_for "$d/ready"
    # The ages are the sampler's, once a second: wait for its first pass
    # stamped after the pattern was done (a hang guard of 60 s, no bound on
    # how late it may come within that), then check once.
    snapshot_after "$d/shm" "$pid" "$(sed -n 's/^done //p' "$d/ready")" "$d/ready.json" &&
        check python3 "$TMP/check.py" "$d/base.json" "$d/ready.json" "$d/ready"
    ok $? "$b: --json shows the known pattern exactly: counts, live bytes, lifetimes within the program's own bounds, ages"

    check "$SD" --dir "$d/shm" "$pid"
    grep -q "^pid $pid (holder)  alive" "$TMP/out" && grep -q "backend $b" "$TMP/out" &&
        grep -q '^WHERE THE MEMORY GOES' "$TMP/out" && grep -q '^  process RSS ' "$TMP/out" &&
        grep -q '^SIZE CLASSES' "$TMP/out" && grep -q '^LIFETIMES' "$TMP/out" &&
        grep -q '^AGES OF LIVE BLOCKS' "$TMP/out" && grep -q 'every block tracked (sample:1)' "$TMP/out"
    ok $? "$b: the one-screen view: waterfall, size classes, both heat maps, sampling"
    ! grep -q "$(printf '\033')" "$TMP/out" && python3 -c 'import sys; sys.exit(max(len(l.rstrip("\n")) for l in open(sys.argv[1], encoding="utf-8")) > 100)' "$TMP/out"
    ok $? "$b: no color when stdout is not a tty; it fits 100 columns"
    check "$SD" --dir "$d/shm" --ascii "$pid" && ! LC_ALL=C grep -q '[^ -~]' "$TMP/out"
    ok $? "$b: --ascii prints ASCII only"
    check "$SD" --dir "$d/shm" --list && grep -Eq "^ +$pid +holder +$b .* alive" "$TMP/out"
    ok $? "$b: --list shows it alive"
    # The shim's descriptors (the live segment's memory file, the copy, the
    # capture socket) sit at 512 and above, out of the way of the numbers
    # the program's next files get; the holder opens none of its own.
    # (Below a descriptor limit of 1024 the shim may fall back to low
    # numbers, rightly: then there is nothing to check.)
    if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 1024 ]; then
        skip "$b: the shim's descriptors are numbered 512 and up" "ulimit -n is $(ulimit -n)"
    else
        n=0 low= shm=$(readlink -f "$d/shm")
        for f in /proc/$pid/fd/*; do
            case $(readlink "$f") in
            /memfd:mallocshim* | "$shm/"* | socket:*)   # the copy: maybe still "#<inode> (deleted)"
                n=$((n + 1))
                [ "${f##*/}" -ge 512 ] || low="$low ${f##*/}" ;;
            esac
        done
        [ $n -ge 3 ] && [ -z "$low" ]
        ok $? "$b: the shim's $n descriptors are numbered 512 and up (low:${low:- none})"
    fi
    check "$SD" --dir "$d/shm" --prometheus "$pid" &&
        [ -z "$(grep -Ev "$PROM_RE" "$TMP/out")" ] &&
        grep -q "^mallocshim_up{pid=\"$pid\",comm=\"holder\",backend=\"$b\",name=\"db\"} 1$" "$TMP/out" &&
        [ "$(grep -c '^mallocshim_[a-z_]*{' "$TMP/out")" -eq "$(grep -c ",name=\"db\"" "$TMP/out")" ] &&
        grep -q "^mallocshim_live_bytes_exact{.*} 1$" "$TMP/out" &&
        ! grep -q ',le="' "$TMP/out"
    ok $? "$b: --prometheus is valid exposition text, every series labelled with comm and the config's name, no le label outside a histogram"
    # Prometheus's own linter (Debian's prometheus package), where installed.
    if command -v promtool >/dev/null; then
        promtool check metrics <"$TMP/out" >"$TMP/lint" 2>&1
        ok $? "$b: promtool check metrics finds nothing to say" || diag "$TMP/lint"
    else
        skip "$b: promtool check metrics" "promtool is not installed (Debian: prometheus)"
    fi
    check "$SD" --dir "$d/shm" --events=100000 --no-follow "$pid" &&
        grep -Eq 'alloc +19.5 KiB' "$TMP/out" && grep -Eq 'free +19.5 KiB .* lived [0-9.]+ m?s$' "$TMP/out"
    ok $? "$b: --events shows allocs and frees with their lifetimes"

    # --watch in a pseudo-terminal: it redraws, and q quits cleanly.
    # q once it has drawn three times (whenever that is; a hang guard of 60 s).
    rm -f "$d/typescript"
    (i=0
     while [ "$(cat "$d/typescript" 2>/dev/null | grep -c 'WHERE THE MEMORY GOES')" -lt 3 ] &&
         [ $i -lt 600 ]; do
         sleep 0.1; i=$((i + 1))
     done
     printf q) | timeout 90 script -fqec "$SD --dir $d/shm --watch=0.5 $pid" "$d/typescript" >/dev/null 2>&1
    rc=$?
    [ $rc -eq 0 ] && [ "$(grep -c 'WHERE THE MEMORY GOES' "$d/typescript")" -ge 3 ] &&
        grep -q "$(printf '\033\\[?1049l')" "$d/typescript" && grep -q 'rates over' "$d/typescript"
    ok $? "$b: --watch redraws in a pty with rates, and q exits cleanly (rc $rc)"

    touch "$d/stop"
    wait $pid
    ok $? "$b: the holder exited normally"
    "$SD" --dir "$d/shm" "$pid" >"$TMP/out" 2>"$TMP/err"
    [ $? -eq 1 ] && grep -q "^shimdump: no such process: $pid" "$TMP/err"
    ok $? "$b: after a normal exit the segment is gone: 'no such process', exit 1"
done

# bcsim reports its own live bytes (requested, and usable as the sum of
# malloc_usable_size); shimdump, with the default sampling, must match its
# usable bytes within 1% (the rest of the program's live blocks) and estimate
# its requested bytes within 5%, and state a standard error that covers the
# estimate's distance from the truth. A 128 MiB cache of 16 KiB blocks: about
# 30 tracked live blocks in the class that holds nine tenths of the bytes,
# so the estimate's standard error is about 0.5% (with 32 MiB, about 8
# blocks and 1%: one run in a few hundred missed 5%). A seed: each of
# bcsim's threads draws the same sequence in every run.
cat >"$TMP/acc.py" <<'EOF'
import json, sys
bc, sd = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
t = sd["totals"]
eu = t["live_usable_bytes"] / bc["live_usable"] - 1
er = t["live_bytes"] / bc["live_requested"] - 1
se = t["live_bytes_stderr"] / t["live_bytes"]
print("usable %+.2f%%, requested %+.2f%% (%s, stated standard error %.2f%%)"
      % (100 * eu, 100 * er, sd["sampling"]["live_bytes"], 100 * se))
ok = abs(eu) <= 0.01 and abs(er) <= 0.05 and sd["sampling"]["live_bytes"] == "estimate"
# Covered: within 5 standard errors, plus bcsim's other live blocks (eu).
ok = ok and 0 < se <= 0.02 and abs(er) <= 5 * se + abs(eu)
if not ok:
    for k in sd["size_classes"]:
        if k["live_count"]:
            print("# class %s: %s" % (k["min_size"], {x: k[x] for x in ("live_count", "live_bytes",
                  "live_bytes_stderr", "live_usable_bytes")}), file=sys.stderr)
sys.exit(not ok)
EOF
for b in $(backends); do
    d="$TMP/bc-$b"
    mkdir -p "$d/shm"
    env MALLOCSHIM_CONF="backend:$b,shm_dir:$d/shm,seed:1" LD_PRELOAD="$SHIM" \
        "$TOP_BUILDDIR/tools/bcsim" --threads=4 --cache=128M --duration=3 --json --hold=60 >"$d/bc.json" &
    pid=$!
    i=0
    while [ ! -s "$d/bc.json" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
    check "$SD" --dir "$d/shm" --json "$pid" && cp "$TMP/out" "$d/sd.json" &&
        check python3 "$TMP/acc.py" "$d/bc.json" "$d/sd.json"
    ok $? "$b: against bcsim's own live bytes: $(cat "$TMP/out")"
    # The view and --prometheus state the same standard error as the JSON.
    err=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["totals"]["live_bytes_stderr"])' \
        "$d/sd.json" 2>/dev/null)
    check "$SD" --dir "$d/shm" "$pid" && grep -Eq '^  live requested \(estimate (±|\+/-)(<0\.1|[0-9.]+)%\) ' "$TMP/out" &&
        check "$SD" --dir "$d/shm" --prometheus "$pid" &&
        grep -Eq "^mallocshim_live_bytes_stderr\{pid=\"$pid\",.*\} [1-9][0-9]*$" "$TMP/out" &&
        [ -n "$err" ] && [ "$(grep '^mallocshim_live_bytes_stderr{' "$TMP/out" | awk '{print $2}')" = "$err" ]
    ok $? "$b: the view and --prometheus state the estimate's standard error (JSON: $err bytes)"
    kill $pid
    wait $pid
done

# --diff of two saved snapshots (the same pattern under two backends).
set -- $(backends)
if [ $# -ge 2 ]; then
    check "$SD" --diff "$TMP/$1/ready.json" "$TMP/$2/ready.json" &&
        grep -q "A: $1 .*B: $2 .*B/A" "$TMP/out" && grep -q '^  peak RSS / live requested' "$TMP/out"
    ok $? "--diff of two saved JSON snapshots ($1, $2)"
else
    skip "--diff of two saved JSON snapshots" "one backend in this build"
fi
check "$SD" "$TMP/glibc/ready.json" && grep -q '^WHERE THE MEMORY GOES' "$TMP/out"
ok $? "a saved JSON snapshot renders as the one-screen view"
# A long note wraps within the view's 100 columns: the allocator's in use
# below the live usable bytes, its figures taken a moment before.
python3 - "$TMP/glibc/ready.json" "$TMP/note.json" <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1]))
s, lu = d["series"][-1], d["totals"]["live_usable_bytes"]
s["backend_stats"]["in_use_bytes"] = lu - 5000 - s["backend_stats"]["mmap_bytes"]
s["backend_stats"]["arena_bytes"] = max(s["backend_stats"]["arena_bytes"], lu)
s["backend_stats"]["live_usable_floor_bytes"] = lu // 2
s["backend_stats"]["taken_ns"] = s["t"] - 700000000
json.dump(d, open(sys.argv[2], "w"))
EOF2
check "$SD" "$TMP/note.json" && grep -q "note: the allocator's in use" "$TMP/out" &&
    [ "$(awk '{ if (length > m) m = length } END { print m }' "$TMP/out")" -le 100 ]
ok $? "a long note wraps within 100 columns" || diag "$TMP/out"

# A dead process: flagged, listed, cleaned.
d="$TMP/dead"
mkdir -p "$d"
env MALLOCSHIM_CONF="backend:glibc,shm_dir:$d,sample:1" LD_PRELOAD="$SHIM" sh -c 'exec sleep 60' &
pid=$!
wait_named "$d" $pid sleep
kill -9 $pid
wait $pid 2>/dev/null
check "$SD" --dir "$d" "$pid" && grep -q "^pid $pid (sleep)  DEAD" "$TMP/out" &&
    grep -q 'gone without exiting normally' "$TMP/out"
ok $? "a killed process's segment is shown, flagged DEAD"
check "$SD" --dir "$d" --json "$pid" && grep -q '"state": "dead"' "$TMP/out"
ok $? "--json says state dead"
cp "$d/mallocshim.$pid" "$TMP/saved.seg"
check "$SD" "$TMP/saved.seg" && grep -q "^pid $pid (sleep)  from a file" "$TMP/out"
ok $? "a saved segment file renders"
env MALLOCSHIM_CONF="backend:glibc,shm_dir:$d,sample:1" LD_PRELOAD="$SHIM" sh -c 'exec sleep 60' &
live=$!
wait_named "$d" $live sleep   # sh has exec'ed sleep, whose segment replaces sh's
check "$SD" --dir "$d" --list && ! grep -Eq "^ +$pid " "$TMP/out" &&
    grep -Eq "^ +$live +sleep .* alive" "$TMP/out" &&
    grep -q "^1 more segment of processes that are gone (1 dead, 0 exited): listed with --gone" "$TMP/out"
ok $? "--list shows the running process, and counts the dead one in a line naming --gone"
check "$SD" --dir "$d" --list --gone && grep -Eq "^ +$pid +sleep .* dead" "$TMP/out" &&
    grep -Eq "^ +$live +sleep .* alive" "$TMP/out" && grep -q "^dead: the process ended without exiting normally" "$TMP/out"
ok $? "--list --gone shows the dead one dead, the live one alive, and says what dead means"
check "$SD" --dir "$d" --prometheus && grep -q "^mallocshim_up{pid=\"$live\",comm=\"sleep\",backend=\"glibc\"} 1$" "$TMP/out" &&
    ! grep -q "pid=\"$pid\"" "$TMP/out" && grep -q "^shimdump: 1 more segment of processes that are gone" "$TMP/err"
ok $? "--prometheus exports the running processes only, and says so on stderr"
check "$SD" --dir "$d" --prometheus --gone && grep -q "^mallocshim_up{pid=\"$pid\",.*} 0$" "$TMP/out"
ok $? "--prometheus --gone exports the dead one too, up 0"
# A command name: the one running process of that comm under the shim.
check "$SD" --dir "$d" sleep && grep -q "^pid $live (sleep)  alive" "$TMP/out"
ok $? "shimdump sleep: the one running sleep under the shim"
(cd "$TMP" && : >sleep && "$SD" --dir "$d" sleep >"$TMP/out" 2>"$TMP/err"; echo $? >"$TMP/rc"; rm -f sleep)
[ "$(cat "$TMP/rc")" -eq 5 ] && grep -q "^shimdump: sleep: " "$TMP/err"
ok $? "a file of that name wins over the command (an empty one: exit 5)"
# Errors: one line each, with the documented exit codes.
err_case() {  # err_case WANT-RC PATTERN DESCRIPTION SHIMDUMP-ARGS...
    want=$1 pat=$2 what=$3
    shift 3
    "$SD" "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ $rc -eq "$want" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "^shimdump: .*$pat" "$TMP/err"
    r=$?
    [ $r -ne 0 ] && { echo "# rc $rc, want $want"; diag "$TMP/err"; }
    ok $r "$what: exit $want"
}
err_case 1 "nosuchcmd: no such file, nor a running process of that name" "a command name that nothing runs" \
    --dir "$d" nosuchcmd
env MALLOCSHIM_CONF="backend:glibc,shm_dir:$d,sample:1" LD_PRELOAD="$SHIM" sh -c 'exec sleep 60' &
live2=$!
wait_named "$d" $live2 sleep
err_case 2 "sleep: 2 running processes of that name under the shim, pids .*$live.*; give one" \
    "a command name that two processes run: both named" --dir "$d" sleep
# --clean PID: that one alone, by the same rules.
kill -9 $live2
wait $live2 2>/dev/null
check "$SD" --dir "$d" --clean $live2 && [ ! -e "$d/mallocshim.$live2" ] && [ -e "$d/mallocshim.$pid" ] &&
    grep -q "^removed $d/mallocshim.$live2 (pid $live2, sleep)$" "$TMP/out" && [ "$(wc -l <"$TMP/out")" -eq 1 ]
ok $? "--clean PID removes that dead process's segment alone"
err_case 1 "$d/mallocshim.$live: pid $live (sleep) still runs: kept" "--clean PID of a running process" \
    --dir "$d" --clean $live
[ -e "$d/mallocshim.$live" ]
ok $? "... and its segment is there"
err_case 2 "--clean sleep: give pids" "--clean with a name" --dir "$d" --clean sleep
check "$SD" --dir "$d" --clean && [ ! -e "$d/mallocshim.$pid" ] && [ -e "$d/mallocshim.$live" ] &&
    grep -q "removed $d/mallocshim.$pid (pid $pid, sleep)" "$TMP/out"
ok $? "--clean removes the dead process's segment and keeps the live one's"
kill $live
wait $live 2>/dev/null

# Root's --clean leaves other users' post-mortems unless asked.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
    shared=$(mktemp -d /tmp/mallocshim-clean.XXXXXX)
    chmod 755 "$shared"
    mkdir "$shared/shm"
    chmod 1777 "$shared/shm"
    setpriv --reuid=65534 --regid=65534 --clear-groups env MALLOCSHIM_CONF="backend:glibc,shm_dir:$shared/shm,sample:1" \
        LD_PRELOAD="$SHIM" sleep 60 &
    theirs=$!
    wait_named "$shared/shm" $theirs sleep
    kill -9 $theirs
    wait $theirs 2>/dev/null
    check "$SD" --dir "$shared/shm" --clean && [ -e "$shared/shm/mallocshim.$theirs" ] &&
        grep -q "^1 segment of other users' gone processes left (shimdump --clean --all-users removes them" "$TMP/out"
    ok $? "root's --clean leaves uid 65534's dead segment, and says so"
    check "$SD" --dir "$shared/shm" --clean --all-users && [ ! -e "$shared/shm/mallocshim.$theirs" ]
    ok $? "--clean --all-users removes it"
    rmdir "$shared/shm" "$shared"
else
    skip "root's --clean leaves other users' segments" "needs root and setpriv"
    skip "--clean --all-users removes them" "needs root and setpriv"
fi

# More errors, one line each, with the documented exit codes.
err_case 1 "no such process: 999999999" "a pid that does not exist" --dir "$d" 999999999
err_case 1 "pid $$ (.*) has no segment" "a process without a segment" --dir "$d" $$
err_case 2 "" "an unknown option" --frobnicate
err_case 2 "--diff takes two" "--diff with one argument" --diff 1
err_case 2 "--watch=0: give seconds" "a bad --watch value" --watch=0 1

cp "$TMP/saved.seg" "$TMP/v9.seg"
printf '\011' | dd of="$TMP/v9.seg" bs=1 seek=8 conv=notrunc 2>/dev/null
err_case 4 "segment format version 9; this shimdump reads version 7" "a segment of another format version" "$TMP/v9.seg"
head -c 1000000 "$TMP/saved.seg" >"$TMP/short.seg"
err_case 5 "truncated segment: 1000000 bytes of" "a truncated segment" "$TMP/short.seg"
cp "$TMP/saved.seg" "$TMP/bad.seg"
printf '\377\377' | dd of="$TMP/bad.seg" bs=1 seek=106 conv=notrunc 2>/dev/null
err_case 5 "corrupt segment" "a segment whose offsets disagree" "$TMP/bad.seg"
# (its first byte never one that starts JSON, which shimdump would try to read)
{ printf '\001'; head -c 4095 /dev/urandom; } >"$TMP/noise.seg"
err_case 5 "not a mallocshim segment" "a file that is not a segment" "$TMP/noise.seg"
sed 's/"format_version": [0-9]*/"format_version": 9/' "$TMP/glibc/ready.json" >"$TMP/v9.json"
err_case 4 "JSON format_version 9" "a JSON snapshot of another version" "$TMP/v9.json"
# A snapshot of JSON format 1 (before history) still reads: its series is
# its history.
python3 - "$TMP/glibc/ready.json" "$TMP/v1.json" <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1]))
d["format_version"] = 1
del d["history"]
json.dump(d, open(sys.argv[2], "w"), indent=1)
EOF2
check "$SD" --json "$TMP/v1.json" && python3 - "$TMP/out" "$TMP/glibc/ready.json" <<'EOF2'
import json, sys
d, orig = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert d["format_version"] == 5, d["format_version"]
h = d["history"]
assert len(h) == 1 and h[0]["step_ms"] == d["interval_ms"], h
assert [p["t_ns"] for p in h[0]["points"]] == [s["t"] for s in d["series"]] == [s["t"] for s in orig["series"]]
assert all(p["samples"] == 1 and p["rss_bytes_min"] == p["rss_bytes_max"] == p["rss_bytes"] for p in h[0]["points"])
EOF2
ok $? "a JSON snapshot of format 1 (no history) reads, its series as its one tier"
# A snapshot of JSON format 2 (before the figures' times) still reads: the
# times it lacks are unknown, and no figure is said to be stale.
python3 - "$TMP/glibc/ready.json" "$TMP/v2.json" <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1]))
d["format_version"] = 2
del d["figures"], d["live_usable_bytes_high"]
for s in [d] + d["series"] + [p for t in d["history"] for p in t["points"]]:
    s.pop("rss_huge_ns", None)
    del s["backend_stats"]["taken_ns"], s["backend_stats"]["live_usable_floor_bytes"]
json.dump(d, open(sys.argv[2], "w"), indent=1)
EOF2
check "$SD" --json "$TMP/v2.json" && python3 - "$TMP/out" <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format_version"] == 5 and d["backend_stats"]["taken_ns"] == 0, d["backend_stats"]
w = {s["step"]: s for s in d["figures"]["waterfall"]}
assert w["alloc_in_use"]["age_ns"] is None and not w["alloc_in_use"]["stale"], w["alloc_in_use"]
assert d["figures"]["invariants_failed"] == [], d["figures"]["invariants_failed"]
EOF2
ok $? "a JSON snapshot of format 2 reads; the figures' times it lacks are unknown, not stale"
head -c 2000 "$TMP/glibc/ready.json" >"$TMP/cut.json"
err_case 5 "not a shimdump JSON snapshot" "a cut JSON snapshot" "$TMP/cut.json"

# Permission: a segment of another user names its owner.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
    pd=$(mktemp -d /tmp/mallocshim-perm.XXXXXX)
    chmod 755 "$pd"
    cp "$TMP/saved.seg" "$pd/mallocshim.$pid"
    chmod 600 "$pd/mallocshim.$pid"
    setpriv --reuid=65534 --regid=65534 --clear-groups "$SD" --dir "$pd" "$pid" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ $rc -eq 3 ] && grep -q "permission denied: the segment belongs to root (uid 0)" "$TMP/err"
    ok $? "a segment of another user: permission denied, names the owner, exit 3"
    rm -rf "$pd"
else
    skip "a segment of another user: permission denied" "needs root and setpriv"
fi

check "$SD" --version && grep -q '^shimdump [0-9.]* (segment format 7, JSON format 5)$' "$TMP/out"
ok $? "--version"
check "$SD" --help && grep -q '^Exit status: 0 ok; 1 no such process' "$TMP/out"
ok $? "--help documents the exit codes"
done_testing
