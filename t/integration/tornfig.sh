#!/bin/sh
# tornfig.sh: a sample never carries an allocator figure torn below its
# floor. tcmalloc reads its central lists unlocked before its page heap,
# so a figure read while a thread moves blocks between its caches can fall
# below the live bytes of any one moment (jemalloc's was not seen to; the
# rule is the same for every backend); kept in a history point, such a figure failed every later
# shimdump under SHIMDUMP_CHECK (peaksites.sh's flakes). Under each
# backend, churn (one thread holding and freeing 100,000 blocks of 1000
# bytes over and over) with a pass every 10 ms, two busy loops beside it,
# until 300 passes; then every snapshot in the samples of the series
# and every point of the history holds in use >= its floor (or the floor
# is unknown, 0), the floor is known in most, and shimdump --check passes.
. "$TOP_SRCDIR/t/lib.sh"

SD="$TOP_BUILDDIR/tools/shimdump"
busy_loops 2

cat >"$TMP/torn.py" <<'PY'
# torn.py SNAPSHOT.JSON: the figures are never below their floor; prints
# how many samples were judged.
import json, sys
d = json.load(open(sys.argv[1]))
inuse = {"glibc": lambda b: b["in_use_bytes"] + b["mmap_bytes"],
         "jemalloc": lambda b: b["active"],
         "tcmalloc": lambda b: b["current_allocated_bytes"]}[d["backend"]]
samples = list(d["series"]) + [p for t in d["history"] for p in t["points"]]
taken = {}
for s in samples:   # each snapshot once (a sample carries the latest)
    if s["backend_stats"]["taken_ns"]:
        taken[s["backend_stats"]["taken_ns"]] = s["backend_stats"]
fresh = list(taken.values())
known = [b for b in fresh if b["live_usable_floor_bytes"]]
below = [b for b in known if inuse(b) < b["live_usable_floor_bytes"]]
assert not below, below[:3]
assert len(fresh) >= 10 and 2 * len(known) >= len(fresh), (len(fresh), len(known))
print("%d snapshots, %d with a floor" % (len(fresh), len(known)))
PY

for b in $(backends); do
    d="$TMP/$b"
    mkdir -p "$d/shm"
    MALLOCSHIM_CONF="backend:$b,shm_dir:$d/shm,interval_ms:10" LD_PRELOAD="$SHIM" \
        "$T/churn" "$d" >"$d/out" 2>"$d/err" &
    pid=$!
    r=1
    if wait_for "$d/started" 600; then
        # until 300 passes (3 s; a hang guard of 120 s)
        i=0
        while [ $i -lt 1200 ]; do
            SHIMDUMP_CHECK=0 "$SD" --dir="$d/shm" --json "$pid" >"$d/s.json" 2>>"$d/err" &&
                python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(len(d["series"]) < 300)' "$d/s.json" && r=0 && break
            i=$((i + 1))
            sleep 0.1
        done
    fi
    "$SD" --dir="$d/shm" --json "$pid" >"$d/s.json" 2>"$d/check" || r=1
    touch "$d/stop"
    wait "$pid" || r=1
    [ $r -eq 0 ] || diag "$d/err" "$d/check"
    ok $r "$b: churn ran, and shimdump read it with every invariant held"
    out=$(python3 "$TMP/torn.py" "$d/s.json" 2>&1)
    ok $? "$b: no sample's in-use figure below its floor ($out)" || echo "$out" | diag
done
kill $BUSY 2>/dev/null
done_testing
