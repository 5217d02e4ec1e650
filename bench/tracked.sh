#!/bin/sh
# tracked.sh: how many blocks the default sampling tracks per size class in
# a minute of a busy program (issue 33): the lifetimes and ages of a class
# rest on them, and the view marks a row that rests on fewer than 30
# (figures.h, FIG_FEW_TRACKED). bcsim (16 threads, RocksDB's block-cache
# pattern) and db_bench readrandom (16 threads, 64 MB cache), each at the
# defaults for SECS seconds (60), read with shimdump --json just before the
# end. Usage: bench/tracked.sh [SECS]   (from the build directory)
set -eu
build=${BUILDDIR:-$PWD}
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
shim="$build/.libs/libmallocshim.so"
[ -r "$shim" ] || { echo "tracked.sh: $shim: build first" >&2; exit 2; }
. "$top/bench/lib.sh"
export MALLOCSHIM_CONF_FILE=/dev/null
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir "$W/shm"

table() {  # table JSON: per class, tracked blocks freed per minute and live
    python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
up = (d["snapshot_ns"] - d["started_ns"]) / 1e9
print("# %.0f s up; sample:%d, sample_bytes:%d" % (up, d["sampling"]["sample"], d["sampling"]["sample_bytes"]))
print("%-14s %12s %14s %12s %12s" % ("class", "allocs/min", "tracked/min", "tracked live", "rows < 30"))
few = 0
for c in d["size_classes"]:
    if not c["allocs"]:
        continue
    per = 60.0 / up
    rough = [n for n, v in (("life", c["tracked_freed"]), ("age", c["tracked_live"])) if v < 30 and v >= 0]
    if c["tracked_freed"] < 30:
        few += 1
    print("%6d-%-7d %12.0f %14.0f %12d %12s" % (c["min_size"], c["max_size"], c["allocs"] * per,
          c["tracked_freed"] * per, c["tracked_live"], ",".join(rough) or "-"))
print("# classes whose lifetimes rest on fewer than 30 tracked frees: %d" % few)
PY
}

header "tracked blocks per size class in ${secs} s at the defaults"
echo "## bcsim -t 16 -c 256M"
MALLOCSHIM_CONF="shm_dir:$W/shm" LD_PRELOAD="$shim" "$build/tools/bcsim" -t 16 -d $((secs + 5)) >/dev/null 2>&1 &
p=$!
sleep "$secs"
"$build/tools/shimdump" --dir "$W/shm" --json "$p" >"$W/bc.json"
wait $p || true
table "$W/bc.json"

if command -v db_bench >/dev/null; then
    db=${DBBENCH_DB:-/var/tmp/mallocshim-dbbench}
    dbbench_db "$db" 2000000
    echo "## db_bench readrandom, 16 threads, 64 MB cache, $db"
    MALLOCSHIM_CONF="shm_dir:$W/shm" LD_PRELOAD="$shim" db_bench --db="$db" --use_existing_db=1 \
        --benchmarks=readrandom --duration=$((secs + 5)) --num=2000000 --cache_size=67108864 \
        --threads=16 --block_size=16384 --compression_type=lz4 --statistics=0 >/dev/null 2>&1 &
    p=$!
    sleep "$secs"
    "$build/tools/shimdump" --dir "$W/shm" --json "$p" >"$W/db.json"
    wait $p || true
    table "$W/db.json"
else
    echo "## db_bench: not installed (Debian: rocksdb-tools)"
fi
