#!/bin/sh
# promrules.sh: the Prometheus rules in doc/prometheus pass promtool check
# rules, and their unit tests (mallocshim.rules.test.yml) pass promtool test
# rules: each alert fires on the series it is for and stays quiet on its near
# misses. Every metric the rules read is one that shimdump --prometheus
# exports for a running bcsim (with stacks on), and the rules and metrics
# agree on the labels they match on. Without promtool (Debian: prometheus)
# the checks skip.
. "$TOP_SRCDIR/t/lib.sh"

SD="$TOP_BUILDDIR/tools/shimdump"
RULES="$TOP_SRCDIR/doc/prometheus/mallocshim.rules.yml"
TESTS="$TOP_SRCDIR/doc/prometheus/mallocshim.rules.test.yml"

if ! command -v promtool >/dev/null; then
    for what in "promtool check rules" "promtool test rules" "the rules read only exported metrics"; do
        skip "$what" "promtool not installed (Debian: prometheus)"
    done
    done_testing
    exit
fi

promtool check rules "$RULES" >"$TMP/out" 2>&1
ok $? "promtool check rules: $(grep -o 'SUCCESS.*' "$TMP/out")" || diag "$TMP/out"

# promtool resolves rule_files from the test file's directory.
(cd "$(dirname "$TESTS")" && promtool test rules "$(basename "$TESTS")") >"$TMP/out" 2>&1
ok $? "promtool test rules: every alert fires on its series and not on the near misses" ||
    diag "$TMP/out"

# The metrics of a running process under the shim, as exported.
MALLOCSHIM_CONF="backend:glibc,stacks:8,shm_dir:$TMP/shm" LD_PRELOAD="$SHIM" \
    "$TOP_BUILDDIR/tools/bcsim" --threads=1 --cache=4M --duration=60 >/dev/null 2>&1 &
bpid=$!
wait_for "$TMP/shm/mallocshim.$bpid"
sleep 1
"$SD" --dir "$TMP/shm" --prometheus "$bpid" >"$TMP/metrics" 2>"$TMP/err"
rc=$?
kill "$bpid"
wait "$bpid" 2>/dev/null
used=$(grep -o 'mallocshim_[a-z_]*' "$RULES" | sort -u)
missing=""
for m in $used; do
    grep -q "^# TYPE $m " "$TMP/metrics" || missing="$missing $m"
done
[ $rc -eq 0 ] && [ -n "$used" ] && [ -z "$missing" ]
ok $? "the rules read only exported metrics ($(echo $used | wc -w) of them)${missing:+; not exported:$missing}" ||
    diag "$TMP/err"

done_testing
