#!/bin/sh
# history.sh: the coarse history tiers, under each backend, on a live
# process (t/integration/spike) with interval_ms:10 so that the tiers fill
# in seconds: a 48 MiB spike of live bytes survives in the coarse tier after
# the fine series has dropped it; every tier's points are whole and agree
# with the series; OVER TIME picks the tier that holds the range (--since)
# and labels its time axis. No timing bound: the test waits for what it
# needs to see (hang guards of 120 s only).
. "$TOP_SRCDIR/t/lib.sh"
distcheck_light   # make check runs it on these sources; distcheck's pass skips it (CI time)

SD="$TOP_BUILDDIR/tools/shimdump"
export NO_COLOR=1
SPIKE=$((48 << 20))

# poll PID DIR OUT PYTHON-CONDITION: shimdump --json PID into OUT until the
# condition (on d, the snapshot) holds; 1200 tries a tenth of a second apart.
poll() {
    _i=0
    while :; do
        "$SD" --dir "$2" --json "$1" >"$3" 2>"$TMP/err" || return 1
        python3 -c "import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if ($4) else 1)" \
            "$3" 2>>"$TMP/err" && return 0
        [ $_i -lt 1200 ] || { echo "# poll: never: $4" >&2; return 1; }
        _i=$((_i + 1))
        sleep 0.1
    done
}

cat >"$TMP/check.py" <<'EOF'
import json, sys
d, spike, backend = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
h = d["history"]
assert [t["step_ms"] for t in h] == [10, 50, 500], [t["step_ms"] for t in h]
steps = [1, 5, 50]
series = {s["t"]: s for s in d["series"]}
assert [p["t_ns"] for p in h[0]["points"]] == sorted(series), "tier 0 is the series"
base = min(s["live_usable_bytes"] for s in d["series"])
# the series has dropped the spike; the coarse tier keeps it
assert all(s["live_usable_bytes"] < base + spike for s in d["series"]), "the series still holds the spike"
kept = [p for p in h[2]["points"] if p["live_usable_bytes_max"] >= base + spike]
assert kept, "no 500 ms point kept the spike of live bytes"
if backend == "glibc":   # its 48 MiB block is an mmap: RSS falls with the free
    assert any(p["rss_bytes_max"] >= spike for p in kept), "no point kept the RSS spike"
    assert h[2]["points"][-1]["rss_bytes_max"] + spike // 2 < max(p["rss_bytes_max"] for p in kept)
for n, (t, step) in enumerate(zip(h, steps)):
    pts = t["points"]
    assert all(a["t_ns"] < b["t_ns"] for a, b in zip(pts, pts[1:])), "tier %d out of order" % n
    assert all(p["samples"] == step for p in pts[:-1]), "tier %d: a point not whole" % n
    assert 1 <= pts[-1]["samples"] <= step
    for p in pts:
        assert p["rss_bytes_min"] <= p["rss_bytes"] <= p["rss_bytes_max"], p
        assert p["live_usable_bytes"] <= p["live_usable_bytes_max"], p
        assert p["live_bytes"] <= p["live_bytes_max"], p
        s = series.get(p["t_ns"])
        if s:   # the point's last sample is that sample
            for k in ("live_count", "live_bytes", "live_usable_bytes", "allocs", "frees",
                      "requested_bytes", "rss_bytes", "rss_anon_bytes", "vsz_bytes", "backend_stats"):
                assert p[k] == s[k], (n, k, p[k], s[k])
# tier 1 has wrapped: its 20 entries, the newest partial (19 while the
# sampler has ended a point and not yet begun the next in its entry); the
# series and tier 1 have let points go, tier 2 none
assert len(h[1]["points"]) in (19, 20), len(h[1]["points"])
assert h[0]["dropped"] > 0 and h[1]["dropped"] > 0 and h[2]["dropped"] == 0, [t["dropped"] for t in h]
print("spike kept in %d of %d 500 ms points; tiers of %s points" %
      (len(kept), len(h[2]["points"]), [len(t["points"]) for t in h]))
EOF

for b in $(backends); do
    d="$TMP/$b"
    mkdir -p "$d"
    env MALLOCSHIM_CONF="backend:$b,shm_dir:$d,sample:1,interval_ms:10,series:60,history:5x20/50x1000" \
        LD_PRELOAD="$SHIM" "$T/spike" "$d" 2>"$TMP/perr" &
    pid=$!
    # the spike, seen by a sample; then dropped, until the series has
    # wrapped past it and 4 points of 500 ms are there (tier 1, 100 samples
    # long, has wrapped too)
    wait_for "$d/base" 1200 && touch "$d/up" && wait_for "$d/high" 1200 &&
        poll $pid "$d" "$TMP/snap" "d['series'] and d['series'][-1]['live_usable_bytes'] >= $SPIKE" &&
        touch "$d/down" && wait_for "$d/low" 1200 &&
        poll $pid "$d" "$TMP/snap" "len(d['series']) == 60 and
             all(s['live_usable_bytes'] < $SPIKE for s in d['series']) and
             len(d['history'][2]['points']) >= 4 and len(d['history'][1]['points']) in (19, 20)"
    rc=$?
    out=""
    [ $rc -eq 0 ] && out=$(python3 "$TMP/check.py" "$TMP/snap" $SPIKE "$b" 2>"$TMP/err")
    ok $? "$b: a 48 MiB spike survives in the 500 ms tier after the series dropped it; every point whole and its last sample the series' ($out)" ||
        diag "$TMP/err"
    # OVER TIME, of the snapshot checked above (the process runs on): the
    # whole life from every tier, each where no finer one reaches (500 ms
    # points, then 50 ms, then the series' 10 ms); --since=300ms from the
    # series; --since=800ms from the series and, where it does not reach,
    # the finest tier whose first span begins 800 ms before the newest point
    # or earlier (the series alone if a slow sampler spread it so)
    want=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
h = d["history"]
end = max(p["t_ns"] for t in h for p in t["points"])
for t in h:
    p = t["points"][0]
    if t["dropped"] == 0 or p["t_ns"] - p["samples"] * d["interval_ms"] * 10**6 <= end - 8 * 10**8:
        break
print("%dms" % t["step_ms"])' "$TMP/snap")
    steps=10ms
    [ "$want" = 10ms ] || steps="10ms-$want"
    "$SD" "$TMP/snap" >"$TMP/v0" 2>&1 &&
        "$SD" --since=300ms "$TMP/snap" >"$TMP/v1" 2>&1 &&
        "$SD" --since=800ms "$TMP/snap" >"$TMP/v2" 2>&1 &&
        grep -q "^OVER TIME  the last .*, [0-9]* points of 10ms-500ms, " "$TMP/v0" &&
        grep -Eq "^OVER TIME  the last 300ms, [0-9]+ points of 10ms, " "$TMP/v1" &&
        grep -Eq "^OVER TIME  the last 800ms, [0-9]+ points of $steps, " "$TMP/v2" &&
        grep -A5 "^OVER TIME" "$TMP/v1" | grep -Eq "^ +-300ms .*[0-9]{2}:[0-9]{2}:[0-9]{2}$"
    ok $? "$b: OVER TIME: the whole life in 10-500 ms points, --since=300ms in the series' 10 ms, --since=800ms in $steps points, the time axis labelled" ||
        diag "$TMP/v0" "$TMP/v1" "$TMP/v2"
    touch "$d/stop"
    wait $pid
    ok $? "$b: the program ran to its end"
done
"$SD" --since=0 1 >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "^shimdump: --since=0: give a duration such as 90m, 12h or 3d$" "$TMP/err"
ok $? "--since=0: a usage error, one line"
done_testing
