#!/bin/sh
# peaksites.sh: the call sites at the peak of live bytes, and how much of
# the live bytes the sites shown hold (issue 36). peakfree holds 160 MB in
# 1000-byte blocks from peak_builder, frees them, then holds 60 MB in
# 2400-byte blocks from steady_holder. Under each backend, seeded (the same
# blocks are tracked on any machine, so each check passes or fails the same
# way), with the default sampling (1 in 256 small blocks, by bytes):
# - the live sites show steady_holder at 60 MB within 4 of its standard
#   errors, and no peak_builder;
# - the peak's sites show peak_builder at 160 MB within 4 of its standard
#   errors, and no steady_holder; the peak's live usable bytes hold the
#   160,000 blocks, and its time lies between the start and the read;
# - the coverage, now and at the peak, adds up: the sites shown, the other
#   stacks, the blocks without a stack and the rest make the live bytes,
#   the rest within 4 of its errors (or 1%), the share within 0..1;
# - the text view says both, and a saved --json snapshot read back gives
#   the same peak sites (JSON format 5);
# - a fork child shows its own peak, of the steady state it inherited,
#   never its parent's peak_builder.
# The test waits until a sampler pass has seen the whole peak before it
# lets peakfree free it (the sampler sees the peak only at its passes).
. "$TOP_SRCDIR/t/lib.sh"

SD="$TOP_BUILDDIR/tools/shimdump"
PF="$TOP_BUILDDIR/t/integration/peakfree"
PEAK=160000000
STEADY=60000000

cat >"$TMP/check.py" <<'PY'
# check.py SITES.JSON PEAK STEADY: one line per failed check (none: all held)
import json, sys
d = json.load(open(sys.argv[1]))
peak, steady = int(sys.argv[2]), int(sys.argv[3])
bad = []
def funcs(s):
    return [f.get("function") or "" for f in s["stack"]["frames"]]
def holds(fn, s):
    return any(f.startswith(fn) for f in funcs(s))
def near(est, err, truth):
    return abs(est - truth) <= 4 * err + 0.5
live = d["by_live_bytes"]
st = [s for s in live if holds("steady_holder", s)]
if len(st) != 1:
    bad.append("live: steady_holder in %d sites" % len(st))
elif not near(st[0]["est_live_bytes"], st[0]["est_live_bytes_stderr"], steady):
    bad.append("live: steady_holder %.0f +/- %.0f, not %d" %
               (st[0]["est_live_bytes"], st[0]["est_live_bytes_stderr"], steady))
if any(holds("peak_builder", s) for s in live):
    bad.append("live: peak_builder shown, freed")
p = d["peak"]
if p is None:
    bad.append("no peak")
else:
    ps = d["by_peak_live_bytes"]
    if not ps or not holds("peak_builder", ps[0]):
        bad.append("peak: the top site is not peak_builder")
    elif not near(ps[0]["est_peak_live_bytes"], ps[0]["est_peak_live_bytes_stderr"], peak):
        bad.append("peak: peak_builder %.0f +/- %.0f, not %d" %
                   (ps[0]["est_peak_live_bytes"], ps[0]["est_peak_live_bytes_stderr"], peak))
    if any(holds("steady_holder", s) for s in ps):
        bad.append("peak: steady_holder shown, not yet allocated then")
    if p["live_usable_bytes"] < peak:
        bad.append("peak: live usable %d < %d" % (p["live_usable_bytes"], peak))
    if not 0 < p["since_start_s"] <= d["uptime_s"]:
        bad.append("peak: %.1f s after start, up %.1f s" % (p["since_start_s"], d["uptime_s"]))
for name, c in (("now", d["coverage"]), ("peak", p and p["coverage"])):
    if c is None:
        bad.append("%s: no coverage" % name)
        continue
    others = c["est_all_stacks_bytes"] - c["est_sites_bytes"]
    total = c["est_sites_bytes"] + others + c["est_no_stack_bytes"] + c["est_rest_bytes"]
    if abs(total - c["est_live_bytes"]) > 2:
        bad.append("%s: the parts make %d, not %d" % (name, total, c["est_live_bytes"]))
    if abs(c["est_rest_bytes"]) > 4 * c["est_rest_bytes_stderr"] + 0.01 * c["est_live_bytes"]:
        bad.append("%s: rest %d beyond 4 x %d" % (name, c["est_rest_bytes"], c["est_rest_bytes_stderr"]))
    if not 0 <= c["share"] <= 1 + 4 * c["share_stderr"] or others < 0:
        bad.append("%s: share %.3f, others %d" % (name, c["share"], others))
    if c["sites_shown"] > c["stacks_with_live_bytes"]:
        bad.append("%s: %d shown of %d" % (name, c["sites_shown"], c["stacks_with_live_bytes"]))
for b in bad:
    print(b)
PY

# peak_seen FILE: the --stacks JSON FILE has a peak of all 160,000 blocks
peak_seen() {
    python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["peak"]; sys.exit(not (p and p["live_usable_bytes"] >= int(sys.argv[2])))' "$1" $PEAK
}

for b in $(backends); do
    d="$TMP/$b"
    mkdir -p "$d/shm"
    MALLOCSHIM_CONF="backend:$b,shm_dir:$d/shm,interval_ms:100,seed:7" LD_PRELOAD="$SHIM" \
        "$PF" "$d" >"$d/out" 2>"$d/err" &
    pid=$!
    r=1
    if wait_for "$d/built" 1200; then
        i=0
        while [ $i -lt 600 ]; do
            "$SD" --dir="$d/shm" --stacks --json "$pid" >"$d/p.json" 2>>"$d/err" && peak_seen "$d/p.json" &&
                r=0 && break
            i=$((i + 1))
            sleep 0.1
        done
    fi
    touch "$d/free"
    wait_for "$d/ready" 1200 || r=1
    "$SD" --dir="$d/shm" --stacks --json --top=5 "$pid" >"$d/s.json" 2>>"$d/err" || r=1
    "$SD" --dir="$d/shm" --stacks --top=5 "$pid" >"$d/s.txt" 2>>"$d/err" || r=1
    "$SD" --dir="$d/shm" --json "$pid" >"$d/full.json" 2>>"$d/err" || r=1
    # the fork child: no peak of its own until its first pass, then its own.
    # A live read is as of the moment it sums the counters, and reads the
    # peak after: one that catches the child's first pass under way shows
    # a peak later than itself. The loop waits for a read as of after it.
    touch "$d/fork"
    c=1
    if wait_for "$d/child" 1200; then
        cpid=$(cat "$d/child")
        i=0
        while [ $i -lt 600 ]; do
            "$SD" --dir="$d/shm" --stacks --json --top=5 "$cpid" >"$d/c.json" 2>>"$d/err" &&
                python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(d["peak"] is None or d["peak"]["since_start_s"] > d["uptime_s"])' "$d/c.json" &&
                c=0 && break
            i=$((i + 1))
            sleep 0.1
        done
    fi
    touch "$d/stop"
    wait "$pid" || r=1
    [ $r -eq 0 ] || diag "$d/err"
    ok $r "$b: peakfree ran, and a sampler pass saw its peak before it freed it"
    python3 "$TMP/check.py" "$d/s.json" $PEAK $STEADY >"$d/bad" 2>&1 && [ ! -s "$d/bad" ]
    ok $? "$b: live sites show steady_holder alone, the peak's peak_builder alone, each within 4 errors; coverage adds up" ||
        diag "$d/bad"
    grep -q '^AT THE PEAK OF LIVE BYTES' "$d/s.txt" &&
        grep -A6 '^AT THE PEAK OF LIVE BYTES' "$d/s.txt" | grep -q 'peak_builder' &&
        grep -A2 '^CALL SITES BY LIVE BYTES' "$d/s.txt" | grep -q 'site shown .* live requested'
    ok $? "$b: --stacks shows the coverage and the peak's sites" || diag "$d/s.txt"
    # a saved snapshot read back: the same peak sites
    "$SD" --stacks --json --top=5 "$d/full.json" >"$d/back.json" 2>>"$d/err" &&
        python3 - "$d/s.json" "$d/back.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
key = lambda d: [(s["est_peak_live_bytes"], s["stack"]["id"]) for s in d["by_peak_live_bytes"]]
sys.exit(not (key(a) == key(b) and a["peak"]["t_ns"] == b["peak"]["t_ns"]))
PY
    ok $? "$b: a saved --json snapshot gives the same peak and peak sites"
    [ $c -eq 0 ] && python3 - "$d/c.json" $STEADY <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
fn = lambda s: [f.get("function") or "" for f in s["stack"]["frames"]]
ps = d["by_peak_live_bytes"]
names = [n for s in ps for n in fn(s)]
# its own peak: what it inherited (steady_holder), never its parent's
# peak_builder; after its own start
assert ps and any(n.startswith("steady_holder") for n in fn(ps[0])), names
assert not any(n.startswith("peak_builder") for n in names), names
assert d["peak"]["live_usable_bytes"] < 2 * int(sys.argv[2]), d["peak"]
assert 0 <= d["peak"]["since_start_s"] <= d["uptime_s"], d["peak"]
PY
    ok $? "$b: a fork child's peak is its own (the steady state it inherited), not its parent's"
done
done_testing
