#!/bin/sh
# bybytes.sh: sampling by bytes sees the biggest holder. bigsmall holds ten
# 8 MiB blocks from big_holder (80 MiB) and 100,000 blocks of 1000 bytes
# from small_holder (95.4 MiB). Under each backend and ten seeds, at the
# defaults, `shimdump --stacks --json` shows the big site at 80 MiB within
# 10% in at least 9 seeds and the small one at 95.4 MiB within 10% in every
# seed, and each estimate lies within 4 of its own standard errors of the
# truth (seeded: the same blocks are tracked on any machine, so the check
# passes or fails the same way). With sample_bytes:0 (counts alone, 1 in
# 256), the big site is missed or shown about 256 times too large: the
# reason for the default.
. "$TOP_SRCDIR/t/lib.sh"
distcheck_light

SD="$TOP_BUILDDIR/tools/shimdump"
BS="$TOP_BUILDDIR/t/integration/bigsmall"

cat >"$TMP/sites.py" <<'PY'
# sites.py JSON: "BIG_EST BIG_ERR SMALL_EST SMALL_ERR" (bytes; 0 0 for a
# site not shown) from shimdump --stacks --json
import json, sys
d = json.load(open(sys.argv[1]))
got = {"big_holder": (0, 0), "small_holder": (0, 0)}
for s in d["by_live_bytes"]:
    for f in s["stack"]["frames"]:
        fn = f.get("function") or ""
        for k in got:
            if fn.startswith(k):
                got[k] = (s["est_live_bytes"], s["est_live_bytes_stderr"])
print(*got["big_holder"], *got["small_holder"])
PY

# run CONF: bigsmall under the shim with CONF; its sites into $TMP/got
run() {
    rm -rf "$TMP/d"
    mkdir -p "$TMP/d"
    MALLOCSHIM_CONF="$1,shm_dir:$TMP/d" LD_PRELOAD="$SHIM" "$BS" "$TMP/d" >"$TMP/out" 2>"$TMP/err" &
    bpid=$!
    wait_for "$TMP/d/ready" 1200 || { kill "$bpid"; return 1; }
    "$SD" --dir="$TMP/d" --stacks --json --top=10 "$bpid" >"$TMP/s.json" 2>>"$TMP/err"
    rc=$?
    touch "$TMP/d/stop"
    wait "$bpid"
    [ $rc -eq 0 ] && python3 "$TMP/sites.py" "$TMP/s.json" >"$TMP/got"
}

BIG=$((10 * 8 * 1048576))
SMALL=$((100000 * 1000))
# within PCT EST TRUE: |EST - TRUE| <= PCT% of TRUE
within() { awk -v p="$1" -v e="$2" -v t="$3" 'BEGIN { d = e - t; if (d < 0) d = -d; exit !(d <= t * p / 100) }'; }
# held EST ERR TRUE: |EST - TRUE| <= 4 ERR (an error of 0: exactly)
held() { awk -v e="$1" -v s="$2" -v t="$3" 'BEGIN { d = e - t; if (d < 0) d = -d; exit !(d <= 4 * s + 0.5) }'; }

for b in $(backends); do
    bigok=0 smallok=0 heldok=0 runs=0 line=""
    for seed in 1 2 3 4 5 6 7 8 9 10; do
        run "backend:$b,seed:$seed" || { diag "$TMP/err"; continue; }
        runs=$((runs + 1))
        set -- $(cat "$TMP/got")
        within 10 "$1" $BIG && bigok=$((bigok + 1))
        within 10 "$3" $SMALL && smallok=$((smallok + 1))
        held "$1" "$2" $BIG && held "$3" "$4" $SMALL && heldok=$((heldok + 1))
        line="$line $(awk -v a="$1" -v b="$3" 'BEGIN { printf "%.1f/%.1f", a / 1048576, b / 1048576 }')"
    done
    [ $runs -eq 10 ] && [ $bigok -ge 9 ] && [ $smallok -ge 9 ]
    ok $? "$b: big site within 10% of 80 MiB in $bigok of 10 seeds, small within 10% of 95.4 MiB in $smallok (MiB:$line)"
    [ $heldok -eq $runs ] && [ $runs -eq 10 ]
    ok $? "$b: every estimate within 4 of its standard errors of the truth ($heldok of $runs seeds)"
done

# Counts alone: what sampling by bytes is for.
miss=0
for seed in 1 2 3 4; do
    run "backend:glibc,seed:$seed,sample_bytes:0" || continue
    set -- $(cat "$TMP/got")
    within 50 "$1" $BIG || miss=$((miss + 1))
done
[ $miss -ge 3 ]
ok $? "sample_bytes:0 (1 in 256 by counts): the 80 MiB site missed or far off in $miss of 4 seeds"
done_testing
