#!/bin/sh
# html.sh: shimdump --html. The holder's known heap (sample:1, call stacks)
# under each backend of the build, read live, from a saved segment and from
# --json snapshots side by side; the page is self-contained (nothing
# fetched) and complete, and a broken input leaves one line on stderr and
# nothing on stdout; its figures, read back from it, equal the --json ones.
# Headless Chromium, when installed, loads the page offline: a screenshot
# that is not blank and shows the inputs' colours, no console message, a
# PDF for print, and the same figures read back from the DOM it built.
. "$TOP_SRCDIR/t/lib.sh"

SD="$TOP_BUILDDIR/tools/shimdump"

# The holder under each backend, its pattern allocated, and a --json
# snapshot taken after a sampler pass that saw it. A sample every 10 ms, a
# series of 60 and short tiers: within a second its history has coarse
# points before the series, as a process a week old has.
HIST="interval_ms:10,series:60,history:5x40/20x40"
# coarse_before DIR PID OUT: shimdump --json PID into OUT until its history
# has three tiers, each with points, the coarsest from before the series.
coarse_before() {
    _i=0
    until python3 -c 'import json, sys
h = json.load(open(sys.argv[1]))["history"]
sys.exit(0 if len(h) == 3 and all(t["points"] for t in h) and
         h[2]["points"][0]["t_ns"] < h[0]["points"][0]["t_ns"] else 1)' "$3"; do
        [ $_i -lt 1200 ] || { echo "# coarse_before: no coarse point before the series in 120 s" >&2; return 1; }
        _i=$((_i + 1))
        sleep 0.1
        "$SD" --dir "$1" --json "$2" >"$3" 2>"$TMP/err" || return 1
    done
}
pids="" jsons="" segs=""
for b in $(backends); do
    d="$TMP/$b"
    mkdir -p "$d/shm"
    env MALLOCSHIM_CONF="backend:$b,shm_dir:$d/shm,sample:1,stacks:8,$HIST" LD_PRELOAD="$SHIM" \
        "$T/holder" "$d" >"$d/out" 2>"$d/err" &
    pid=$!
    # A pass after the pattern, then until the series (60 samples) has
    # wrapped and the coarsest tier holds points before it, however slow
    # the sampler runs (a hang guard of 120 s).
    wait_for "$d/base" && touch "$d/go" && wait_for "$d/ready" &&
        snapshot_after "$d/shm" "$pid" "$(sed -n 's/^done //p' "$d/ready")" "$d/snap.json" &&
        coarse_before "$d/shm" "$pid" "$d/snap.json" &&
        cp "$d/shm/mallocshim.$pid" "$d/saved.seg"
    ok $? "$b: the holder's pattern, a --json snapshot and a copy of its segment"
    pids="$pids $pid" jsons="$jsons $d/snap.json" segs="$segs $d/saved.seg"
    eval "pid_$b=$pid"
done
set -- $(backends)
nb=$#

# page_ok FILE: a whole page, that names no resource elsewhere and loads
# no script.
page_ok() {
    head -n 1 "$1" | grep -q '^<!DOCTYPE html>$' && tail -n 1 "$1" | grep -q '^</html>$' &&
        ! grep -Eiq '(src|href|action|xlink:href)[[:space:]]*=[[:space:]]*["'\'']?[[:space:]]*(https?:)?//' "$1" &&
        ! grep -Eiq '@import|url\([^)]*(https?:)?//|<script|<link|<iframe|<img' "$1"
}

check "$SD" --dir "$TMP/$1/shm" --html $pids && cp "$TMP/out" "$TMP/live.html" && page_ok "$TMP/live.html" &&
    [ "$(grep -c '<tr data-input=' "$TMP/live.html")" -eq "$nb" ]
ok $? "--html of $nb live pids: a whole page, one row per input, nothing fetched, no script"
check "$SD" --html $segs && page_ok "$TMP/out" && grep -q 'from a file' "$TMP/out"
ok $? "--html of $nb saved segments"
check "$SD" --html $jsons && cp "$TMP/out" "$TMP/report.html" && page_ok "$TMP/report.html"
ok $? "--html of $nb --json snapshots ($(wc -c <"$TMP/report.html") bytes)"
python3 - $jsons <<'EOF' && grep -q '<figure id="recent">' "$TMP/report.html"
import json, sys
for p in sys.argv[1:]:
    h = json.load(open(p))["history"]
    assert len(h) == 3 and all(t["points"] for t in h), [len(t["points"]) for t in h]
    assert h[2]["points"][0]["t_ns"] < h[0]["points"][0]["t_ns"], "no coarse point before the series"
EOF
ok $? "the snapshots have three tiers, coarse points before the series, and the page a chart of the series"
for s in waterfall over-time allocator classes lifetimes ages sites; do
    grep -q "<section id=\"$s\">" "$TMP/report.html" || { echo "# no section $s" >&2; false; } || break
done
ok $? "the page has every section: waterfall, over time, allocator, size classes, lifetimes, ages, call sites"
check "$SD" --html "$TMP/$1/snap.json" && page_ok "$TMP/out" &&
    grep -q "<h4><span class=\"sw\" style=\"background:#0072B2\"></span>$1</h4>" "$TMP/out"
ok $? "--html of one snapshot: labelled by its backend, in the first colour"

# dom.py HTML JSON...: the figures a page shows, read back from its HTML
# (or the DOM Chromium built from it), against the snapshots it was made
# from, in order.
cat >"$TMP/dom.py" <<'EOF'
import json, sys
from html.parser import HTMLParser

class Dom(HTMLParser):
    """The tables with data-* attributes: table attrs, rows, cells."""
    def __init__(self):
        super().__init__()
        self.tables, self.stack = [], []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            t = {"attrs": a, "rows": []}
            self.tables.append(t)
            self.stack.append(t)
        elif tag == "tr" and self.stack:
            self.stack[-1]["rows"].append({"attrs": a, "cells": []})
        elif tag in ("td", "th") and self.stack and self.stack[-1]["rows"]:
            self.stack[-1]["rows"][-1]["cells"].append(a)
    def handle_endtag(self, tag):
        if tag == "table" and self.stack:
            self.stack.pop()

dom = Dom()
dom.feed(open(sys.argv[1], encoding="utf-8").read())
snaps = [json.load(open(p)) for p in sys.argv[2:]]
checked = 0

def eq(what, got, want):
    global checked
    if got != want:
        sys.exit("%s: page %r, JSON %r" % (what, got, want))
    checked += 1

def tables(kind, i=None):
    return [t for t in dom.tables if t["attrs"].get("data-kind") == kind and
            (i is None or t["attrs"].get("data-input") == str(i))]

def alloc_figs(d):
    s = d["backend_stats"]
    if d["backend"] == "glibc":
        return s["in_use_bytes"] + s["mmap_bytes"], s["arena_bytes"] + s["mmap_bytes"]
    if d["backend"] == "jemalloc":
        return s["active"], s["resident"]
    return s["current_allocated_bytes"], s["heap_size"] - s["pageheap_unmapped_bytes"]

# The waterfall.
wf = {}
for t in dom.tables:
    for r in t["rows"]:
        fig = r["attrs"].get("data-fig")
        for c in r["cells"]:
            if fig and "data-bytes" in c:
                wf[(fig, int(c["data-input"]))] = int(c["data-bytes"])
for i, d in enumerate(snaps):
    in_use, holds = alloc_figs(d)
    want = {"live_req": d["totals"]["live_bytes"], "live_usable": d["totals"]["live_usable_bytes"],
            "alloc_in_use": in_use, "alloc_footprint": holds, "rss": d["rss_bytes"],
            "peak_rss": d["peak_rss_bytes"]}
    for k, v in want.items():
        eq("input %d waterfall %s" % (i, k), wf.get((k, i)), v)

# RSS and live bytes over time: the whole history's extremes and its last point.
for i, d in enumerate(snaps):
    t, = tables("history", i)
    rows = [r["attrs"] for r in t["rows"] if "data-t" in r["attrs"]]
    series = d["series"]
    # every point of every tier: each sample the process kept is in one
    # that the page draws, so the extremes are the same
    pts = [p for tier in d.get("history", []) for p in tier["points"]]
    eq("input %d history: last time" % i, int(rows[-1]["data-t"]), series[-1]["t"])
    eq("input %d history: last RSS" % i, int(rows[-1]["data-rss"]), d["rss_bytes"])
    eq("input %d history: last live bytes" % i, int(rows[-1]["data-live"]), series[-1]["live_bytes"])
    eq("input %d history: highest RSS" % i, max(int(r["data-rss-max"]) for r in rows),
       max([s["rss_bytes"] for s in series] + [p["rss_bytes_max"] for p in pts]))
    eq("input %d history: lowest RSS" % i, min(int(r["data-rss-min"]) for r in rows),
       min([s["rss_bytes"] for s in series] + [p["rss_bytes_min"] for p in pts]))
    eq("input %d history: highest live bytes" % i, max(int(r["data-live-max"]) for r in rows),
       max([s["live_bytes"] for s in series] + [p["live_bytes_max"] for p in pts]))
    # The backend's figures, last row.
    t, = tables("backend", i)
    fields = [c["data-field"] for c in t["rows"][0]["cells"] if "data-field" in c]
    last = dict(zip(fields, (int(c["data-v"]) for c in t["rows"][-1]["cells"] if "data-v" in c)))
    own = {k: v for k, v in series[-1]["backend_stats"].items()
           if k not in ("taken_ns", "live_usable_floor_bytes", "live_usable_ceiling_bytes")}
    eq("input %d backend stats, last point" % i, last, own)

# Size classes, and the two heat maps: every count.
cls_rows = {r["attrs"]["data-class"]: r["cells"] for t in tables("classes") for r in t["rows"]
            if "data-class" in r["attrs"]}
for i, d in enumerate(snaps):
    for c in d["size_classes"]:
        cells = cls_rows.get(str(c["class"]))
        if not cells:
            if c["allocs"] or c["live_count"]:
                sys.exit("input %d: class %d missing from the table" % (i, c["class"]))
            continue
        mine = [x for x in cells if x.get("data-input") == str(i)]
        k = cells.index(mine[0])
        got = (int(cells[k]["data-allocs"]), int(cells[k + 1]["data-live-count"]),
               int(cells[k + 2]["data-live-bytes"]), int(cells[k + 3]["data-live-usable"]))
        eq("input %d class %d" % (i, c["class"]), got,
           (c["allocs"], c["live_count"], c["live_bytes"], c["live_usable_bytes"]))
    for kind, key in (("life", "lifetime_hist"), ("age", "age_hist")):
        t, = tables(kind, i)
        got = {}
        for r in t["rows"]:
            if "data-class" not in r["attrs"]:
                continue
            for b, cell in enumerate(r["cells"][1:22]):
                if "data-count" in cell:
                    got[(int(r["attrs"]["data-class"]), b)] = int(cell["data-count"])
        want = {(c["class"], b): h["count"] for c in d["size_classes"]
                for b, h in enumerate(c[key]) if h["count"]}
        eq("input %d %s heat map" % (i, kind), got, want)

# Call sites: by live bytes, each as the JSON has it.
for i, d in enumerate(snaps):
    t, = tables("stacks", i)
    byid = {s["id"]: s for s in d["call_stacks"]["stacks"]}
    rows = [r["attrs"] for r in t["rows"] if "data-stack" in r["attrs"]]
    assert rows, "input %d: no call site" % i
    for r in rows:
        s = byid[int(r["data-stack"])]
        eq("input %d stack %s live bytes" % (i, r["data-stack"]), int(r["data-tracked-live-bytes"]), s["live_bytes"])
    eq("input %d top stack" % i, int(rows[0]["data-tracked-live-bytes"]), max(s["live_bytes"] for s in byid.values()))
# The call sites at the peak of live bytes, beside them: its time and each
# site's bytes then as the JSON has them (every snapshot has had passes).
for i, d in enumerate(snaps):
    cs = d["call_stacks"]
    t, = tables("peak-stacks", i)
    eq("input %d peak time" % i, int(t["attrs"]["data-peak-ns"]), cs["peak_ns"])
    byid = {s["id"]: s for s in cs["stacks"]}
    rows = [r["attrs"] for r in t["rows"] if "data-stack" in r["attrs"]]
    assert rows, "input %d: no call site at the peak" % i
    for r in rows:
        eq("input %d stack %s peak bytes" % (i, r["data-stack"]), int(r["data-peak-bytes"]),
           byid[int(r["data-stack"])]["peak_live_bytes"])
    eq("input %d top stack at the peak" % i, int(rows[0]["data-peak-bytes"]),
       max(s["peak_live_bytes"] for s in byid.values()))
print("%d figures" % checked)
EOF
check python3 "$TMP/dom.py" "$TMP/report.html" $jsons
ok $? "the page's figures equal the --json snapshots' ($(cat "$TMP/out"))"
# The coverage of the live sites and of the peak's, under their tables,
# their "±" written as such (htmlfmt_esc would make it "?").
[ "$(grep -c 'data-kind="coverage" data-at-peak="[01]"[^<]*live requested bytes' "$TMP/report.html")" -eq $((2 * nb)) ] &&
    ! grep -q 'data-kind="coverage"[^<]*?' "$TMP/report.html"
ok $? "the page says how much of the live bytes the sites hold, now and at the peak, for each input"

# The coarsest tier's first point straddles the series' start, with the
# lowest RSS and the highest live bytes: the page still shows them. Whether
# its nominal span reaches back over the start depends on the sampler's
# timing (1 run in 20, or more on a loaded machine, it did not: a distcheck
# on 2026-12-02), so the point is widened when it does not.
python3 - "$TMP/$1/snap.json" "$TMP/straddle.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
h = d["history"]
t0 = h[0]["points"][0]["t_ns"]
for t in h[1:]:   # the coarse tiers: only the points after the series' start
    kept = [p for p in t["points"] if p["t_ns"] > t0]
    t["dropped"] += len(t["points"]) - len(kept)   # as if their rings let them go
    t["points"] = kept
p = h[2]["points"][0]
span = d["interval_ms"] * 10**6
if p["t_ns"] - p["samples"] * span >= t0:
    # Its nominal span (samples x interval) begins at or after the start:
    # a sampler that ran late, or a start on the tier's boundary. Widen it
    # over the start, so that the case is made, not waited for.
    p["samples"] = (p["t_ns"] - t0) // span + 1
assert p["t_ns"] - p["samples"] * span < t0 < p["t_ns"], "no straddling point"
p["rss_bytes_min"], p["live_bytes_max"] = 1, 1 << 50
json.dump(d, open(sys.argv[2], "w"))
EOF
check "$SD" --html "$TMP/straddle.json" && cp "$TMP/out" "$TMP/straddle.html" &&
    check python3 "$TMP/dom.py" "$TMP/straddle.html" "$TMP/straddle.json"
ok $? "a coarse point that straddles the series' start is drawn, its extremes with it"

# Errors: one line, the documented code, and nothing on stdout.
err_case() {  # err_case WANT-RC PATTERN DESCRIPTION SHIMDUMP-ARGS...
    want=$1 pat=$2 what=$3
    shift 3
    "$SD" "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ $rc -eq "$want" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "^shimdump: .*$pat" "$TMP/err" &&
        [ ! -s "$TMP/out" ]
    r=$?
    [ $r -ne 0 ] && { echo "# rc $rc, want $want; stdout $(wc -c <"$TMP/out") bytes"; diag "$TMP/err"; }
    ok $r "--html, $what: exit $want, one line, nothing on stdout"
}
head -c 3000 "$TMP/$1/snap.json" >"$TMP/cut.json"
printf '{"format_version": 1, "pid": }' >"$TMP/bad.json"
err_case 1 "no such process: 999999999" "a pid that does not exist" --dir "$TMP" --html "$TMP/$1/snap.json" 999999999
err_case 5 "not a shimdump JSON snapshot" "a cut JSON snapshot after a good one" --html "$TMP/$1/snap.json" "$TMP/cut.json"
err_case 5 "bad.json" "bad JSON" --html "$TMP/bad.json"
err_case 2 "--html takes 1 to 8" "nine inputs" --html 1 2 3 4 5 6 7 8 9
err_case 2 "--html takes 1 to 8" "no input" --html

stop_holders() {
    for b in $(backends); do
        eval "pid=\$pid_$b"
        touch "$TMP/$b/stop"
        wait "$pid"
    done
}

# The browser: headless Chromium, offline (every host name fails to
# resolve), its profile in $TMP.
# CHROMIUM= (empty) in the environment skips it.
CHROMIUM=${CHROMIUM-$(command -v chromium || command -v chromium-browser || true)}
browser() {
    timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --user-data-dir="$TMP/chromium" --host-resolver-rules='MAP * ~NOTFOUND' \
        --no-first-run --disable-extensions --enable-logging=stderr --v=0 "$@"
}
if [ -z "$CHROMIUM" ]; then
    for what in "a screenshot that is not blank" "no console message" "the DOM's figures equal the JSON's" \
        "the live page's figures" "a PDF for print"; do
        skip "chromium: $what" "no chromium installed (scripts/deps.sh installs Debian's)"
    done
    stop_holders
    head -c 100000 "$TMP/$1/saved.seg" >"$TMP/cut.seg"
    err_case 5 "truncated segment" "a truncated segment" --html "$TMP/cut.seg"
    done_testing
    exit
fi

# The PNG's colours, read with zlib: how many distinct ones, and whether
# each input's colour is among them (a bar of the waterfall is drawn in it).
cat >"$TMP/png.py" <<'EOF'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, b""
while pos < len(data):
    n, = struct.unpack(">I", data[pos:pos + 4])
    kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
    pos += 12 + n
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
    elif kind == b"IDAT":
        idat += body
assert depth == 8 and ctype in (2, 6), (depth, ctype)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, i, colours = bytearray(stride), 0, set()
for y in range(h):
    ft, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
    i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], prev[x - bpp] if x >= bpp else 0
        if ft == 1: line[x] = (line[x] + a) & 255
        elif ft == 2: line[x] = (line[x] + b) & 255
        elif ft == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif ft == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    colours.update(bytes(line[k:k + 3]) for k in range(0, stride, bpp))
    prev = line
want = [bytes.fromhex(c) for c in sys.argv[2:]]
missing = [c.hex() for c in want if c not in colours]
print("%dx%d, %d colours%s" % (w, h, len(colours), ", missing " + " ".join(missing) if missing else ""))
sys.exit(len(colours) < 200 or bool(missing))
EOF
colours=$(echo "0072B2 E69F00 009E73" | cut -d' ' -f1-"$nb")
browser --screenshot="$TMP/shot.png" --window-size=1280,2400 "file://$TMP/report.html" >/dev/null 2>"$TMP/chromium.err" &&
    check python3 "$TMP/png.py" "$TMP/shot.png" $colours
ok $? "chromium: a screenshot that is not blank: $(cat "$TMP/out")"

browser --dump-dom "file://$TMP/report.html" >"$TMP/dom.html" 2>"$TMP/chromium.err"
rc=$?
[ $rc -eq 0 ] && [ -s "$TMP/dom.html" ] && ! grep -q ':CONSOLE' "$TMP/chromium.err"
r=$?
[ $r -ne 0 ] && { echo "# chromium rc $rc"; grep ':CONSOLE' "$TMP/chromium.err" | head -n 5 | diag; }
ok $r "chromium: the page loads with no console message"

check python3 "$TMP/dom.py" "$TMP/dom.html" $jsons
ok $? "chromium: the DOM's figures equal the --json snapshots' ($(cat "$TMP/out"))"

# The live page, as Chromium built it: its waterfall's live bytes are the
# holders' (which allocate nothing more until stopped).
browser --dump-dom "file://$TMP/live.html" >"$TMP/livedom.html" 2>"$TMP/chromium.err" &&
    check python3 - "$TMP/livedom.html" $jsons <<'EOF'
import json, re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
for i, p in enumerate(sys.argv[2:]):
    d = json.load(open(p))
    m = re.search(r'<tr data-fig="live_req">.*?<td data-input="%d" data-bytes="(\d+)"' % i, dom)
    assert m and int(m.group(1)) == d["totals"]["live_bytes"], (i, m and m.group(1))
EOF
ok $? "chromium: the live page's live bytes are the snapshots'"

pages() {
    grep -aoE '/Type */Page\b' "$1" 2>/dev/null | wc -l
}
browser --print-to-pdf="$TMP/report.pdf" --no-pdf-header-footer "file://$TMP/report.html" >/dev/null 2>&1 &&
    head -c 5 "$TMP/report.pdf" | grep -q '^%PDF-' && [ "$(pages "$TMP/report.pdf")" -ge 1 ]
ok $? "chromium: prints to a PDF ($(pages "$TMP/report.pdf") pages)"

stop_holders
# A truncated segment (its process gone: a live one's would be read live).
head -c 100000 "$TMP/$1/saved.seg" >"$TMP/cut.seg"
err_case 5 "truncated segment" "a truncated segment" --html "$TMP/cut.seg"
done_testing
