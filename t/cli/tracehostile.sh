#!/bin/sh
# tracehostile.sh: traces that claim far more than their bytes hold, every
# checksum right (t/replay/mkhostile writes them; FNV-1a stops no one),
# cost shimreplay what their size allows, not what they claim: events
# beyond 8 a byte are refused before any is read (--max-events reads
# them), --info writes no plan, a plan that cannot fit in $TMPDIR is
# refused before it fills it, a replay that cannot fit in memory before it
# starts (--max-memory), and a replay whose allocations failed says how
# many and shows no figures. Each refusal: one line, its documented exit
# code, nothing on stdout.
. "$TOP_SRCDIR/t/lib.sh"

need_zstd

SR="$TOP_BUILDDIR/tools/shimreplay"
MK="$TOP_BUILDDIR/t/replay/mkhostile"
export MALLOCSHIM_LIB="$SHIM"

# refused CODE PATTERN DESCRIPTION CMD...: CMD exits CODE with one line on
# stderr, matching "shimreplay: PATTERN", and nothing on stdout. A hang
# guard (timeout 60) far beyond what a bounded run takes: a shimreplay that
# works through the claim instead is stopped, and fails.
refused() {
    code=$1 pat=$2 what=$3
    shift 3
    timeout 60 "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ $rc -eq "$code" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "^shimreplay: $pat" "$TMP/err" &&
        [ ! -s "$TMP/out" ]
    ok $? "$what: exit $code (got $rc), one line" || { diag "$TMP/err"; head -c 2000 "$TMP/out" | diag; }
}

# 1.31 G events in 3 MB: --info refuses them at once. It writes no plan
# (TMPDIR does not exist) and no file at all (ulimit -f: a shimreplay that
# wrote a plan of 48 bytes an event would be stopped by SIGXFSZ at once).
check "$MK" events 1310720000 "$TMP/big.trace"
ok $? "mkhostile writes a trace of 1.31 G events in $(wc -c <"$TMP/big.trace") bytes"
refused 5 ".*big.trace: 1310720000 events in [0-9]* bytes, more than the 8 a byte that any capture holds: crafted or damaged (--max-events=N reads it)$" \
    "--info on 1.31 G events in 3 MB: refused, not read" \
    sh -c 'ulimit -f 65536 && TMPDIR="$1/nonexistent" exec "$2" --info "$3"' sh "$TMP" "$SR" "$TMP/big.trace"

# 13.1 M events in 30 KB: refused as well; with --max-events, --info reads
# them without a plan file; a replay's plan (600 MiB) is refused before a
# byte is written when $TMPDIR cannot hold it.
check "$MK" events 13107200 "$TMP/mid.trace"
ok $? "mkhostile writes a trace of 13.1 M events in $(wc -c <"$TMP/mid.trace") bytes"
refused 5 ".*mid.trace: 13107200 events in [0-9]* bytes, more than the 8 a byte" \
    "a replay of 13.1 M events in 30 KB: refused, not read" "$SR" "$TMP/mid.trace"
refused 5 ".*mid.trace: 13107200 events, more than --max-events=1000000$" \
    "--max-events lower than the trace's events: refused" "$SR" --info --max-events=1000000 "$TMP/mid.trace"
sh -c 'ulimit -f 65536 && TMPDIR="$1/nonexistent" exec timeout 60 "$2" --info --max-events=20000000 "$3"' \
    sh "$TMP" "$SR" "$TMP/mid.trace" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] && grep -q "^events       13107200 in 200 chunks" "$TMP/out" && [ ! -s "$TMP/err" ]
ok $? "--info --max-events=20000000: read, with no plan file (exit $rc)" || { diag "$TMP/err"; diag "$TMP/out"; }

# A small file system for $TMPDIR: a tmpfs in a mount namespace of our
# own (root, unshare and mount needed), gone when the command ends:
# unshare -m sh -c "$IN_TMPFS" sh SIZE CMD... runs CMD with TMPDIR on a
# fresh tmpfs of SIZE at $TMP/small.
mkdir -p "$TMP/small"
IN_TMPFS='mount -t tmpfs -o size="$1" tmpfs "$SMALL" || exit 99; shift; TMPDIR=$SMALL exec "$@"'
export SMALL="$TMP/small"
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null &&
    unshare -m sh -c "$IN_TMPFS" sh 1m true 2>/dev/null; then
    # A trace as a capture writes it (mktrace: 10 bytes an event) whose
    # plan (1.5 MB) is more than a TMPDIR of 1 MiB holds.
    check "$TOP_BUILDDIR/t/replay/mktrace" --seed=7 --threads=4 --events=30000 --cache=500 "$TMP/real.trace"
    refused 6 ".*real.trace: its plan needs about 1.[0-9] MiB in .*/small, which has room for 896.0 KiB (7/8 of what is free there): set TMPDIR to a place with more$" \
        "a captured trace whose plan TMPDIR cannot hold: refused before writing" \
        unshare -m sh -c "$IN_TMPFS" sh 1m "$SR" "$TMP/real.trace"
    refused 6 ".*mid.trace: its plan needs about 600.1 MiB in .*/small, which has room for 896.0 KiB (7/8 of what is free there): set TMPDIR to a place with more$" \
        "a plan of 600 MiB, a TMPDIR of 1 MiB: refused before writing" \
        unshare -m sh -c "$IN_TMPFS" sh 1m "$SR" --max-events=20000000 "$TMP/mid.trace"
    # 50000 frees of blocks the trace never made: a plan of twice the
    # estimate (each freed block is made in a prelude), 4.8 MB. The
    # estimate (2.4 MB) fits the 3.5 MiB of a 4 MiB tmpfs that it may
    # take; the plan stops there.
    check "$MK" orphans 50000 "$TMP/orphans.trace"
    refused 6 ".*orphans.trace: its plan outgrew the 3584 KiB it may take in .*/small (7/8 of what was free there): set TMPDIR to a place with more room$" \
        "a plan that outgrows its estimate: stopped at 7/8 of TMPDIR's free space" \
        unshare -m sh -c "$IN_TMPFS" sh 4m "$SR" --max-events=50000 "$TMP/orphans.trace"
    unshare -m sh -c "$IN_TMPFS" sh 16m "$SR" --max-events=50000 --json "$TMP/orphans.trace" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ $rc -eq 0 ] && grep -q '"exit": 0, "peak_rss_bytes"' "$TMP/out"
    ok $? "the same plan in a TMPDIR of 16 MiB: replayed (exit $rc)" || diag "$TMP/err"
else
    skip "a captured trace whose plan TMPDIR cannot hold" "needs root, unshare(1) and mount(8) for a small tmpfs"
    skip "a plan larger than TMPDIR" "needs root, unshare(1) and mount(8) for a small tmpfs"
    skip "a plan that outgrows its estimate" "needs root, unshare(1) and mount(8) for a small tmpfs"
    skip "the same plan in a larger TMPDIR" "needs root, unshare(1) and mount(8) for a small tmpfs"
fi

# A starting heap of 2^30 blocks (16 GiB, and 8 GiB of slots) in a file
# of 1.9 KB: --info reads it at once; a replay is refused before it
# starts, against what the process may have (ulimit -v: RLIMIT_AS) or
# --max-memory. (ulimit -v also keeps a replay that went ahead small.)
check "$MK" start 0 1073741824 17179869184 "$TMP/blocks.trace"
ok $? "mkhostile writes a trace whose starting heap is 2^30 blocks, in $(wc -c <"$TMP/blocks.trace") bytes"
timeout 60 "$SR" --info "$TMP/blocks.trace" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] && grep -q "^start heap   1073741824 blocks, 16.00 GiB" "$TMP/out"
ok $? "--info on it: its figures (exit $rc)" || { diag "$TMP/err"; diag "$TMP/out"; }
refused 6 ".*blocks.trace: a replay needs at least 24.00 GiB (16.00 GiB live at the peak, 1073741824 slots), more than the [0-9.]* [KMG]iB that [A-Za-z_. ']* allows (--max-memory=SIZE sets it)$" \
    "a replay of 2^30 starting blocks under ulimit -v 4 GiB: refused before it starts" \
    sh -c 'ulimit -v 4194304 && exec "$@"' sh "$SR" "$TMP/blocks.trace"
refused 6 ".*blocks.trace: a replay needs at least 24.00 GiB .*, more than the 1.00 GiB that --max-memory allows" \
    "--max-memory=1G: refused before it starts" \
    sh -c 'ulimit -v 4194304 && exec "$@"' sh "$SR" --max-memory=1G "$TMP/blocks.trace"

# A starting heap of 1 PiB (16 blocks of 64 TiB): refused against any
# host's memory. --max-memory=2P lets it try.
check "$MK" start 84 16 1125899906842624 "$TMP/pib.trace"
ok $? "mkhostile writes a trace whose starting heap is 1 PiB"
refused 6 ".*pib.trace: a replay needs at least 1.00 PiB (1.00 PiB live at the peak, 16 slots), more than the [0-9.]* [KMGT]iB that [A-Za-z_. ']* allows" \
    "a replay of a 1 PiB starting heap: refused before it starts" "$SR" "$TMP/pib.trace"
refused 6 "the replay under glibc: 16 allocations failed (its allocator refused them): not the trace's calls, so no figures$" \
    "--max-memory=2P: it tries; 16 allocations failed, said so, no table" \
    sh -c 'ulimit -v 4194304 && exec "$@"' sh "$SR" --max-memory=2P "$TMP/pib.trace"

# 16 blocks of 16 bytes aligned to 1 TiB: 256 live bytes, so no check
# before the replay stops it, and no allocator gets them within ulimit -v
# 4 GiB. The replay says how many failed, exits 6 and shows no figures:
# no table, no JSON, and under --all no config's.
check "$MK" aligned 16 "$TMP/aligned.trace"
ok $? "mkhostile writes a trace of 16 blocks aligned to 1 TiB"
refused 6 "the replay under glibc: 16 allocations failed (its allocator refused them): not the trace's calls, so no figures$" \
    "a replay whose allocations failed: said so, no table" \
    sh -c 'ulimit -v 4194304 && exec "$@"' sh "$SR" "$TMP/aligned.trace"
refused 6 "the replay under glibc: 16 allocations failed" "--json: said so, no JSON" \
    sh -c 'ulimit -v 4194304 && exec "$@"' sh "$SR" --json "$TMP/aligned.trace"
timeout 120 sh -c 'ulimit -v 4194304 && exec "$@"' sh "$SR" --all --json "$TMP/aligned.trace" \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
python3 - "$TMP/out" "$TMP/err" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
err = open(sys.argv[2]).read().splitlines()
assert runs and all(r["exit"] == 6 and "peak_rss_bytes" not in r for r in runs), runs
assert len(err) == len(runs) and all("16 allocations failed" in l for l in err), err
EOF
ok $(( (rc != 6) + $? )) "--all --json: every run exit 6, none with figures, a line each (exit $rc)" ||
    { diag "$TMP/py"; diag "$TMP/err"; }

# Calls 10,000 s apart under a trailer that claims 0 s: the default
# pacing goes by the calls' times, so the replay runs unpaced at once,
# saying so, rather than sleeping for what the trailer hid.
check "$MK" late "$TMP/late.trace"
timeout 60 "$SR" "$TMP/late.trace" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] &&
    grep -q "^shimreplay: $TMP/late.trace spans 10000 s: replayed as fast as it goes" "$TMP/err" &&
    grep -q "; not paced$" "$TMP/out"
ok $? "a trace whose calls outlast its trailer's claim: not paced by default, one line (exit $rc)" ||
    { diag "$TMP/err"; diag "$TMP/out"; }

refused 2 "--max-events=0: give a count of 1 or more$" "--max-events=0" "$SR" --info --max-events=0 "$TMP/pib.trace"
refused 2 "--max-memory=lots: give bytes" "--max-memory=lots" "$SR" --max-memory=lots "$TMP/pib.trace"
done_testing
