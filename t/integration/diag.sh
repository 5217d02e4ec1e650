#!/bin/sh
# diag.sh: shimdump's diagnosis (figures.h, fig_diagnose), each rule held to
# a program made to show it (t/integration/diagprog.c), under the backends
# where the rule applies, by its stable id in --json; the healthy program
# gets no alarm under any backend. And RSS class by class: the parts of a
# running process sum to its RSS exactly, its own mapping is found, and a
# snapshot without them says they are not known.
. "$TOP_SRCDIR/t/lib.sh"
distcheck_light

SD="$TOP_BUILDDIR/tools/shimdump"

# run CASE BACKEND: runs diagprog CASE under the shim and leaves in
# $TMP/CASE.BACKEND.json a snapshot taken once the allocator's figures are
# newer than the end of the case. Fails, saying why, when it cannot.
run() {
    d="$TMP/$1.$2"
    mkdir -p "$d/shm"
    MALLOCSHIM_CONF="backend:$2,shm_dir:$d/shm,interval_ms:100,sample:1,stacks:8" LD_PRELOAD="$SHIM" \
        "$T/diagprog" "$1" "$d" >"$d/out" 2>"$d/err" &
    pid=$!
    wait_for "$d/ready" || { echo "# $1 $2: no ready" >&2; kill $pid; wait $pid; return 1; }
    done_ns=$(sed -n 's/^done //p' "$d/ready")
    r=1
    i=0
    while [ $i -lt 300 ]; do
        "$SD" --dir "$d/shm" --json "$pid" >"$TMP/$1.$2.json" 2>"$d/sderr" || break
        if python3 - "$TMP/$1.$2.json" "$done_ns" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["series"]
sys.exit(0 if s and (s[-1]["backend_stats"]["taken_ns"] or 0) > int(sys.argv[2]) else 1)
PY
        then r=0; break; fi
        i=$((i + 1))
        sleep 0.1
    done
    [ $r -eq 0 ] || { echo "# $1 $2: no fresh snapshot" >&2; diag "$d/sderr"; }
    touch "$d/stop"
    wait $pid
    return $r
}

# findings FILE: the snapshot's findings, one "id severity confidence: what" a line.
findings() {
    python3 - "$1" <<'PY'
import json, sys
for f in json.load(open(sys.argv[1]))["figures"]["diagnosis"]:
    print("%s %s %s: %s" % (f["id"], f["severity"], f["confidence"], f["what"]))
PY
}

# has FILE ID [TEXT]: the snapshot has finding ID as an alarm, its words
# holding TEXT.
has() {
    findings "$1" >"$TMP/f"
    grep -q "^$2 \(warn\|bad\) [a-z]*: .*${3:-}" "$TMP/f" || { diag "$TMP/f"; return 1; }
}

alarms() {
    findings "$1" | grep -v '^[a-z_]* info ' | grep -c .
}

# glibc: 8 arenas with holes on this machine's CPUs
if run frag glibc; then
    has "$TMP/frag.glibc.json" alloc_free_held "glibc holds .* free in [0-9]* arenas on [0-9]* CPUs"
    ok $? "frag, glibc: alloc_free_held names the free bytes, the arenas and the CPUs"
    python3 - "$TMP/frag.glibc.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = [x for x in d["figures"]["diagnosis"] if x["id"] == "alloc_free_held"][0]
ok = ("`arenas = " in f["fix"] and "`backend = jemalloc`" in f["fix"] and
      "shimdump --capture=20" in f["check"] and "shimreplay --all" in f["check"])
sys.exit(0 if ok else 1)
PY
    ok $? "frag, glibc: the fix is arenas = N or backend = jemalloc, checked with --capture and shimreplay --all"
else
    ok 1 "frag, glibc: ran"
fi

for b in $(backends); do
    if run leak "$b"; then
        if [ "$HAVE_LIBUNWIND" = yes ] && [ "$HAVE_LIBELF" = yes ]; then
            has "$TMP/leak.$b.json" leak_suspect "leak_one"
            ok $? "leak, $b: leak_suspect, naming leak_one as a site that only grows"
        else
            has "$TMP/leak.$b.json" leak_suspect
            ok $? "leak, $b: leak_suspect (no stacks in this build: no site named)"
        fi
    else
        ok 1 "leak, $b: ran"
    fi
    if run outside "$b"; then
        has "$TMP/outside.$b.json" outside_heap "other anonymous"
        ok $? "outside, $b: outside_heap, the most of it other anonymous"
        python3 - "$TMP/outside.$b.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = d["figures"]["memory"]
parts = {p["part"]: p["bytes"] for p in m["parts"]}
ok = (m["known"] and sum(parts.values()) == m["rss_bytes"] == d["process_memory"]["rss_bytes"]
      and sum(c["bytes"] for c in m["classes"]) == m["rss_bytes"]
      and parts["anon_other"] >= 90 << 20 and parts["shim_segment"] > 0
      and parts["program_libraries"] > 0)
print("# parts %s" % parts)
sys.exit(0 if ok else 1)
PY
        ok $? "outside, $b: RSS class by class sums to RSS exactly, the 96 MiB mapping in other anonymous, the shim's segment and the code found"
    else
        ok 1 "outside, $b: ran"
    fi
    if run healthy "$b"; then
        n=$(alarms "$TMP/healthy.$b.json")
        findings "$TMP/healthy.$b.json" >"$TMP/f"
        [ "$n" -eq 0 ] && grep -q "^healthy info " "$TMP/f"
        r=$?
        [ $r -eq 0 ] || diag "$TMP/f"
        ok $r "healthy, $b: no alarm, one healthy line"
    else
        ok 1 "healthy, $b: ran"
    fi
done

# Rounding: jemalloc and tcmalloc round 4097 B up to a class; glibc does not.
for b in $(backends); do
    if run round "$b"; then
        if [ "$b" = glibc ]; then
            findings "$TMP/round.glibc.json" | grep -q "^class_rounding "
            [ $? -ne 0 ]
            ok $? "round, glibc: no class_rounding (glibc rounds to 16 bytes)"
        else
            has "$TMP/round.$b.json" class_rounding "4-5K blocks"
            ok $? "round, $b: class_rounding, the most in the 4-5K class"
        fi
    else
        ok 1 "round, $b: ran"
    fi
done

# A snapshot without process_memory (written before it existed), and one
# of a gone process: not known, said plainly, in every output.
python3 - "$TMP/outside.glibc.json" "$TMP/old.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["process_memory"]
json.dump(d, open(sys.argv[2], "w"))
PY
"$SD" "$TMP/old.json" >"$TMP/view" 2>"$TMP/err" &&
    grep -q "RSS class by class: not known: only a running process's /proc tells it" "$TMP/view"
ok $? "a snapshot without process_memory: the view says it is not known"
"$SD" --json "$TMP/old.json" >"$TMP/old2.json" &&
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); m=d["figures"]["memory"]; sys.exit(0 if d["process_memory"] is None and not m["known"] and m["why"].startswith("not known") else 1)' "$TMP/old2.json"
ok $? "... and --json writes process_memory null and memory.known false, with why"
"$SD" --html "$TMP/old.json" >"$TMP/old.html" && grep -q "not known: only a running process&#39;s /proc tells it\|not known: only a running process's /proc tells it" "$TMP/old.html" &&
    grep -q 'data-finding="outside_heap"' "$TMP/old.html"
ok $? "... and the page says so, and still has the diagnosis from the sample (outside_heap, low confidence)"
"$SD" --html "$TMP/outside.glibc.json" >"$TMP/outside.html" &&
    python3 - "$TMP/outside.html" "$TMP/outside.glibc.json" <<'PY'
import json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
m = json.load(open(sys.argv[2]))["figures"]["memory"]
want = {p["part"]: p["bytes"] for p in m["parts"]}
want.update({c["class"]: c["bytes"] for c in m["classes"]})
want["rss"] = m["rss_bytes"]
got = {k: int(v) for k, v in re.findall(r'<tr data-mem="([a-z_]+)">.*?data-bytes="([0-9]+)"', page)}
print("# page %s" % got)
sys.exit(0 if got == want and 'data-finding="outside_heap"' in page else 1)
PY
ok $? "the page's RSS class by class equals the snapshot's, and it has the finding"
"$SD" "$TMP/outside.glibc.json" >"$TMP/view" && grep -q "other anonymous .*~ *9[0-9].* MiB" "$TMP/view" &&
    grep -q "^DIAGNOSIS" "$TMP/view" && grep -q "outside_heap (high)" "$TMP/view"
ok $? "a snapshot with process_memory: the view shows RSS class by class and the diagnosis"
"$SD" --prometheus "$TMP/outside.glibc.json" >"$TMP/prom" 2>"$TMP/err" &&
    grep -q '^mallocshim_finding{.*,id="outside_heap",severity="warn",confidence="high"} 1$' "$TMP/prom" &&
    grep -q '^mallocshim_rss_part_bytes{.*,class="anon",part="anon_other"} [0-9]*$' "$TMP/prom"
ok $? "--prometheus: the findings and RSS class by class"
if command -v promtool >/dev/null; then
    promtool check metrics <"$TMP/prom" >"$TMP/lint" 2>&1
    ok $? "promtool check metrics finds nothing to say" || diag "$TMP/lint"
fi

done_testing
