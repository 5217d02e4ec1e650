#!/bin/sh
# real.sh: real programs give the same output with the shim as without it,
# under each backend: python3, bash, sort (with threads) and the C++
# compiler proper (cc1plus).
. "$TOP_SRCDIR/t/lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
export PYTHONHASHSEED=0

cat >"$TMP/alloc.py" <<'PYEOF'
import hashlib, json
d = {}
for i in range(200000):
    d["k%d" % i] = [i, str(i) * (i % 7), {"x": i % 13}]
for i in range(0, 200000, 3):
    del d["k%d" % i]
blob = json.dumps(d, sort_keys=True)
parts = sorted(blob[i:i + 97] for i in range(0, len(blob), 97))
print(len(d), len(blob), hashlib.sha256("".join(parts).encode()).hexdigest())
PYEOF

cat >"$TMP/work.sh" <<'SHEOF'
declare -A h
s=""
for i in $(seq 1 20000); do
    h[k$i]=$((i * i % 9973))
    s="$s$((i % 10))"
done
n=0
for k in "${!h[@]}"; do n=$((n + h[$k])); done
echo "${#h[@]} $n ${#s} $(printf '%s' "$s" | md5sum | cut -c1-12)"
SHEOF

awk 'BEGIN { x = 12345; for (i = 0; i < 400000; i++) {
        x = (x * 1103515245 + 12345) % 2147483648;
        printf "%08x line %d %s\n", x, x % 100000, substr("abcdefghijklmnop", 1 + x % 16) } }' \
    >"$TMP/lines.txt"

cat >"$TMP/prog.cc" <<'CCEOF'
#include <map>
#include <regex>
#include <string>
#include <vector>
std::map<std::string, std::vector<int>> index_words(const std::vector<std::string> &w)
{
    std::map<std::string, std::vector<int>> m;
    std::regex re("[a-z]+");
    for (int i = 0; i < (int)w.size(); i++)
        if (std::regex_match(w[i], re))
            m[w[i]].push_back(i);
    return m;
}
CCEOF

run_all() {  # run_all PREFIX-COMMAND...: every workload, outputs into $TMP/$tag.*
    tag=$1     # (and each one's exit status into $TMP/$tag.W.rc)
    shift
    "$@" "$PY" "$TMP/alloc.py" >"$TMP/$tag.py" 2>"$TMP/$tag.py.err"
    echo $? >"$TMP/$tag.py.rc"
    "$@" bash "$TMP/work.sh" >"$TMP/$tag.bash" 2>"$TMP/$tag.bash.err"
    echo $? >"$TMP/$tag.bash.rc"
    "$@" sort -S 64M --parallel=2 -k3,3n -k1,1 "$TMP/lines.txt" >"$TMP/$tag.sort.out"
    echo $? >"$TMP/$tag.sort.rc"
    md5sum <"$TMP/$tag.sort.out" >"$TMP/$tag.sort"
    rm -f "$TMP/$tag.sort.out"
    "$@" ${CXX:-g++} -O1 -S -o "$TMP/$tag.cc.out" "$TMP/prog.cc" 2>"$TMP/$tag.cc.err"
    echo $? >"$TMP/$tag.cc.rc"
    md5sum <"$TMP/$tag.cc.out" >"$TMP/$tag.cc"
}

# Each workload must work without the shim first: two runs that fail alike
# would compare equal.
run_all bare env
for w in py bash sort cc; do
    [ "$(cat "$TMP/bare.$w.rc")" = 0 ] && [ -s "$TMP/bare.$w" ]
    ok $? "bare: the $w workload runs, exit 0, with output"
done
for b in $(backends); do
    run_all "$b" env MALLOCSHIM_CONF="backend:$b,verbose:1" LD_PRELOAD="$SHIM"
    grep -q "backend $b " "$TMP/$b.py.err"
    ok $? "$b: python3 ran under $b"
    cmp -s "$TMP/bare.py" "$TMP/$b.py" && cmp -s "$TMP/bare.py.rc" "$TMP/$b.py.rc"
    ok $? "$b: python3 allocation-heavy script, same output and status ($(cat "$TMP/$b.py" | cut -c1-40))"
    cmp -s "$TMP/bare.bash" "$TMP/$b.bash" && cmp -s "$TMP/bare.bash.rc" "$TMP/$b.bash.rc"
    ok $? "$b: bash script with arrays and strings, same output and status"
    cmp -s "$TMP/bare.sort" "$TMP/$b.sort" && cmp -s "$TMP/bare.sort.rc" "$TMP/$b.sort.rc"
    ok $? "$b: sort of 400000 lines with 2 threads, same output and status"
    cmp -s "$TMP/bare.cc" "$TMP/$b.cc" && cmp -s "$TMP/bare.cc.rc" "$TMP/$b.cc.rc" &&
        grep -q "backend $b " "$TMP/$b.cc.err"
    ok $? "$b: g++ (cc1plus, a C++ program) compiles to the same assembly, same status"
done
done_testing
