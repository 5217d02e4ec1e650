#!/bin/sh
# schema.sh: the JSON schema has one source. What `shimdump --json-schema`
# prints (the tables that the writer and the reader follow) must be exactly
# the keys of a full snapshot (every object present: sample:1 and stacks,
# under each backend), and every key must be named in shimdump(1)'s JSON
# section, which names no other. And the reader must refuse a snapshot
# that lacks any key the schema has (exit 5, naming it), holds one of the
# wrong type, or a frame's file without its line (or the reverse).
. "$TOP_SRCDIR/t/lib.sh"

SD="$TOP_BUILDDIR/tools/shimdump"
check "$SD" --json-schema && cp "$TMP/out" "$TMP/schema"
ok $? "--json-schema prints the schema ($(wc -l <"$TMP/schema") objects)"

# keys.py SNAPSHOT...: the keys each kind of object has in the snapshots,
# in the schema's terms, one "name: key..." line per object, sorted.
cat >"$TMP/keys.py" <<'PY'
import json, sys
seen = {}
def add(name, obj):
    seen.setdefault(name, set()).update(obj.keys())
for path in sys.argv[1:]:
    d = json.load(open(path))
    if "by_live_bytes" in d:   # --stacks --json
        add("stacks_json", d)
        for r in ("by_live_bytes", "by_long_lived_bytes", "by_alloc_rate", "by_peak_live_bytes"):
            for e in d[r]:
                add("sites", e)
        if d["coverage"] is not None:
            add("coverage", d["coverage"])
        if d["peak"] is not None:
            add("peak", d["peak"])
            if d["peak"]["coverage"] is not None:
                add("coverage", d["peak"]["coverage"])
        continue
    add("root", d)
    add("figures", d["figures"])
    for w in d["figures"]["waterfall"]:
        add("waterfall", w)
    for e in d["figures"]["invariants_failed"]:
        add("invariants_failed", e)
    add("memory", d["figures"]["memory"])
    for e in d["figures"]["memory"]["classes"]:
        add("memory_classes", e)
    for e in d["figures"]["memory"]["parts"]:
        add("memory_parts", e)
    for e in d["figures"]["diagnosis"]:
        add("diagnosis", e)
    if d.get("process_memory") is not None:
        add("process_memory", d["process_memory"])
    add("sampling", d["sampling"])
    add("totals", d["totals"])
    add("backend_stats." + d["backend"], d["backend_stats"])
    for c in d["size_classes"]:
        add("size_classes", c)
        for h in ("lifetime_hist", "age_hist"):
            for e in c[h]:
                add(h, e)
    for s in d["series"]:
        add("series", s)
        add("backend_stats." + d["backend"], s["backend_stats"])
    cs = d["call_stacks"]
    add("call_stacks", cs)
    for o in cs["objects"]:
        add("objects", o)
    for s in cs["stacks"]:
        add("stacks", s)
        for h in ("lifetime_hist", "age_hist", "age_bytes_hist"):
            for e in s[h]:
                add(h, e)
        for f in s["frames"]:
            add("frames", f)
for name in sorted(seen):
    print("%s: %s" % (name, " ".join(sorted(seen[name]))))
PY
sort_schema() {
    python3 -c '
import sys
for l in sorted(sys.stdin):
    name, keys = l.split(":", 1)
    print("%s: %s" % (name, " ".join(sorted(keys.split()))))'
}

snaps=""
for b in $(backends); do
    d="$TMP/$b"
    mkdir -p "$d/shm"
    env MALLOCSHIM_CONF="backend:$b,shm_dir:$d/shm,sample:1,stacks:8" LD_PRELOAD="$SHIM" \
        "$T/holder" "$d" >"$d/out" 2>"$d/err" &
    pid=$!
    wait_for "$d/base" && touch "$d/go" && wait_for "$d/ready"
    # The first sampler pass after the pattern: a series entry, and ages.
    snapshot_after "$d/shm" "$pid" "$(sed -n 's/^done //p' "$d/ready")" "$d/snap.json"
    r=$?
    "$SD" --dir "$d/shm" --stacks --json "$pid" >"$d/sites.json" || r=1
    touch "$d/stop"
    wait $pid
    [ $r -eq 0 ] && check python3 "$TMP/keys.py" "$d/snap.json"
    ok $? "$b: a full snapshot (sample:1, stacks) has every kind of object"
    snaps="$snaps $d/snap.json $d/sites.json"
done

# The schema's objects that these snapshots hold (all but the backends
# this build lacks) against the keys the snapshots have.
python3 "$TMP/keys.py" $snaps >"$TMP/have"
names=$(cut -d: -f1 "$TMP/have" | tr '\n' '|')
sort_schema <"$TMP/schema" | grep -E "^(${names%|}):" >"$TMP/want"
diff "$TMP/want" "$TMP/have" >"$TMP/diff"
r=$?
[ $r -eq 0 ] || diag "$TMP/diff"
ok $r "the snapshots' keys are the schema's, object by object ($(wc -l <"$TMP/have") objects)"

# shimdump(1): the JSON section names every key of the schema, and in its
# {key, ...} lists no key the schema lacks.
man="$TOP_SRCDIR/doc/shimdump.1"
check python3 - "$man" "$TMP/schema" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
sec = text[text.index(".SH JSON"):text.index(".SH EXIT STATUS")]
sec = re.sub(r"\\f[BIRP]", "", sec).replace("\\-", "-")
words = set(re.findall(r"[a-z_][a-z0-9_]*", sec))
keys = set()
for l in open(sys.argv[2]):
    keys.update(l.split(":", 1)[1].split())
missing = sorted(keys - words)
listed = set()
for group in re.findall(r"\{([^{}]*)\}", sec):
    for k in re.sub(r"\([^()]*\)", "", group).split(","):
        k = k.strip().split(":")[0].split(" ")[0]
        if re.fullmatch(r"[a-z_][a-z0-9_]*", k):
            listed.add(k)
extra = sorted(listed - keys)
print("%d keys; not in the man page: %s; listed there but not in the schema: %s"
      % (len(keys), missing or "none", extra or "none"))
sys.exit(1 if missing or extra else 0)
PY
ok $? "shimdump(1) follows the schema: $(cat "$TMP/out")"

# The reader: a snapshot without any one key of the schema is refused,
# naming the key, with exit 5; call_stacks and process_memory alone may be
# absent.
set -- $(backends)
full="$TMP/$1/snap.json"
check python3 - "$full" "$TMP/cut" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
out = sys.argv[2]
n = 0
def cuts(obj, path):
    if isinstance(obj, dict):
        for k in obj:
            yield path + [k]
            yield from cuts(obj[k], path + [k])
    elif isinstance(obj, list) and obj:
        yield from cuts(obj[0], path + [0])
seen = set()
for p in cuts(d, []):
    shape = tuple(x for x in p if x != 0)
    if shape in seen:
        continue
    seen.add(shape)
    doc = json.loads(json.dumps(d))
    o = doc
    for x in p[:-1]:
        o = o[x]
    del o[p[-1]]
    with open("%s.%03d" % (out, n), "w") as f:
        json.dump(doc, f)
    with open("%s.%03d.key" % (out, n), "w") as f:
        f.write(str(p[-1]))
    with open("%s.%03d.path" % (out, n), "w") as f:
        f.write(".".join(str(x) for x in p))
    n += 1
print(n)
PY
ncut=$(cat "$TMP/out")
bad=0
for f in "$TMP"/cut.[0-9][0-9][0-9]; do
    key=$(cat "$f.key")
    "$SD" "$f" >/dev/null 2>"$TMP/err"
    rc=$?
    path=$(cat "$f.path")
    if [ "$key" = call_stacks ] || [ "$key" = process_memory ]; then
        [ $rc -eq 0 ] || { bad=$((bad + 1)); echo "# without $key: rc $rc" >&2; }
    elif [ "${path#figures.}" != "$path" ]; then
        # figures' own keys are made again by the reader, not read
        [ $rc -eq 0 ] || { bad=$((bad + 1)); echo "# without $path: rc $rc" >&2; }
    elif [ "$key" = format_version ]; then
        [ $rc -eq 5 ] && grep -q "no format_version$" "$TMP/err" || bad=$((bad + 1))
    elif [ $rc -ne 5 ] || ! grep -q "^shimdump: .*: corrupt JSON snapshot: no \"$key\" field$" "$TMP/err"; then
        [ $bad -lt 20 ] && echo "# without $key: rc $rc: $(cat "$TMP/err")" >&2
        bad=$((bad + 1))
    fi
done
ok $bad "each of the $ncut keys removed in turn: exit 5, naming the key, but figures' own ($bad not)"

# A key of the wrong type, in each kind of object.
for k in pid sample live_usable_bytes rss_bytes depth; do
    python3 - "$full" "$TMP/typed.json" "$k" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
k = sys.argv[3]
for o in (d, d["sampling"], d["totals"], d["series"][0], d["call_stacks"]):
    if k in o:
        o[k] = "12"
        break
json.dump(d, open(sys.argv[2], "w"))
PY
    "$SD" "$TMP/typed.json" >/dev/null 2>"$TMP/err"
    [ $? -eq 5 ] && grep -q "field \"$k\" has the wrong type" "$TMP/err"
    ok $? "\"$k\" as a string: exit 5, naming it"
done

# A frame's file and line: both null or both set, the line from 1.
for c in "file-only" "line-only" "line-0"; do
    python3 - "$full" "$TMP/pair.json" "$c" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = d["call_stacks"]["stacks"][0]["frames"][0]
f["file"], f["line"] = {"file-only": ("/src/a.c", None), "line-only": (None, 7),
                        "line-0": ("/src/a.c", 0)}[sys.argv[3]]
json.dump(d, open(sys.argv[2], "w"))
PY
    "$SD" "$TMP/pair.json" >/dev/null 2>"$TMP/err"
    [ $? -eq 5 ] && grep -q 'field "line" has the wrong type' "$TMP/err"
    ok $? "a frame's file and line ($c): exit 5, naming \"line\""
done
done_testing
