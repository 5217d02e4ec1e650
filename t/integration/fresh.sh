#!/bin/sh
# fresh.sh: the allocator's figures are fresh, and say when they are not.
# bcsim (4 threads, a 64 MiB cache, full within about a second) under each
# backend, with two busy loops beside it on this 2-core machine (a snapshot
# preempted midway must not freeze the figures): read at 6 s, every point of
# its history holds the allocator's in-use figure at or above the live
# usable bytes at the moment of its figures, the figures (cheap on this
# heap: well under the 1% of a CPU that sets how often) were taken at least
# every 5 samples, not frozen as a preempted snapshot once froze them, and
# they moved while the cache filled. Then a snapshot
# whose allocator figures are made 10 s old: the view, the page, the JSON's
# figures and Prometheus each say so. No timing bound: the test waits for
# the process's own uptime, with a hang guard.
. "$TOP_SRCDIR/t/lib.sh"

SD="$TOP_BUILDDIR/tools/shimdump"
export NO_COLOR=1

busy_loops 2

cat >"$TMP/fresh.py" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
series, start = d["series"], d["started_ns"]
inuse = {"glibc": lambda b: b["in_use_bytes"] + b["mmap_bytes"],
         "jemalloc": lambda b: b["active"],
         "tcmalloc": lambda b: b["current_allocated_bytes"]}[d["backend"]]
late = [s for s in series if s["t"] >= start + 10**9]
assert len(late) >= 4, "%d samples after the first second" % len(late)
for s in late:
    b = s["backend_stats"]
    assert b["taken_ns"] > 0 and inuse(b) >= b["live_usable_floor_bytes"], s
assert d["figures"]["invariants_failed"] == [], d["figures"]["invariants_failed"]
taken = sorted({s["backend_stats"]["taken_ns"] for s in series})
assert len(taken) * 5 >= len(series), "%d snapshots for %d samples" % (len(taken), len(series))
moved = len({inuse(s["backend_stats"]) for s in series})
assert moved >= 2, "the in-use figure never moved"
last = late[-1]
print("%d samples, %d snapshots, in use / live usable at the last %.3f" % (
    len(series), len(taken), inuse(last["backend_stats"]) / last["live_usable_bytes"]))
PY

for b in $(backends); do
    d="$TMP/$b"
    mkdir -p "$d/shm"
    MALLOCSHIM_CONF="backend:$b,shm_dir:$d/shm" LD_PRELOAD="$SHIM" \
        "$TOP_BUILDDIR/tools/bcsim" --threads=4 --cache=64M --duration=600 --json >"$d/bc" 2>"$d/err" &
    pid=$!
    # until the process has run 6 s by its own segment's clock
    i=0
    until "$SD" --dir "$d/shm" --json "$pid" >"$d/snap.json" 2>"$d/sderr" &&
        python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(0 if d["series"] and d["series"][-1]["t"] - d["started_ns"] >= 6 * 10**9 else 1)' "$d/snap.json"; do
        [ $i -lt 1200 ] && kill -0 $pid 2>/dev/null || break
        i=$((i + 1))
        sleep 0.1
    done
    out=$(python3 "$TMP/fresh.py" "$d/snap.json" 2>"$d/py")
    ok $? "$b beside two busy loops: every sample after the first second holds in use >= live usable then; figures taken every 5 samples at least, and moving ($out)" ||
        diag "$d/py" "$d/sderr"
    "$SD" --dir "$d/shm" --check "$pid" >"$d/check"
    ok $? "$b: shimdump --check: $(tail -n 1 "$d/check")" || diag "$d/check"
    kill $pid
    wait $pid 2>/dev/null
done
kill $BUSY 2>/dev/null

# A snapshot whose allocator figures were taken 10 s before it: each
# output says so. And one of 32 samples whose last carries figures 31 s
# old: --check finds it breaks the invariant that they are taken every 30
# samples.
set -- $(backends)
python3 - "$TMP/$1/snap.json" "$TMP/old.json" "$TMP/old31.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["snapshot_ns"] - 10 * 10**9
d["backend_stats"]["taken_ns"] = d["series"][-1]["backend_stats"]["taken_ns"] = t
d["series"][-1]["t"] = d["snapshot_ns"] - 10**8    # the sample itself is fresh
json.dump(d, open(sys.argv[2], "w"))
last, now = d["series"][-1], d["snapshot_ns"]
d["series"] = [dict(last, t=now - (31 - i) * 10**9 - 10**8,
                    backend_stats=dict(last["backend_stats"], taken_ns=now - (31 - i) * 10**9 - 10**8))
               for i in range(32)]
d["series"][-1]["backend_stats"]["taken_ns"] = d["series"][0]["t"] - 1
d["backend_stats"] = d["series"][-1]["backend_stats"]
json.dump(d, open(sys.argv[3], "w"))
PY
"$SD" --check "$TMP/old31.json" >"$TMP/check"
[ $? -eq 7 ] && grep -q ": allocator figures refreshed every 30 samples: sample 31 of the series carries figures taken before sample 1's time" "$TMP/check"
ok $? "--check: exit 7, the figures older than 30 samples named" || diag "$TMP/check"
export SHIMDUMP_CHECK=0
"$SD" "$TMP/old.json" >"$TMP/view" 2>"$TMP/err" &&
    grep -Eq "^  $1 (in use|active|allocated).* taken 10s ago$" "$TMP/view" &&
    grep -q "note: the allocator's own figures were taken 10 s before these" "$TMP/view" &&
    ! grep -Eq "^  process RSS .*taken" "$TMP/view"
ok $? "the view says the allocator's figures were taken 10s ago, and not the RSS's" || diag "$TMP/view" "$TMP/err"
"$SD" --json "$TMP/old.json" >"$TMP/old2.json" &&
    python3 -c 'import json, sys
w = {s["step"]: s for s in json.load(open(sys.argv[1]))["figures"]["waterfall"]}
assert w["alloc_in_use"]["age_ns"] == 10 * 10**9 and w["alloc_in_use"]["stale"], w["alloc_in_use"]
assert not w["rss"]["stale"] and not w["live_usable"]["stale"], w' "$TMP/old2.json"
ok $? "the JSON's figures give the allocator's age, 10 s, and call it stale"
"$SD" --html "$TMP/old.json" >"$TMP/page.html" &&
    grep -q 'data-fig="alloc_in_use".*data-age-ns="10000000000".*taken 10 s ago' "$TMP/page.html"
ok $? "the page says the allocator's figures were taken 10 s ago"
"$SD" --prometheus "$TMP/old.json" >"$TMP/prom" &&
    grep -q '^mallocshim_backend_stats_age_seconds{.*} 10$' "$TMP/prom"
ok $? "Prometheus: mallocshim_backend_stats_age_seconds 10"
done_testing
