#!/bin/sh
# demo.sh: install what is missing, build, and show the shim at work: the
# same Python workload under each backend, with the shim's verbose start line
# and each backend's own malloc_stats() report.
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh
sh scripts/build.sh >/dev/null

export MALLOCSHIM_LIB="$PWD/.libs/libmallocshim.so"
export MALLOCSHIM_CONF_FILE=/dev/null
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

workload='
import ctypes
rows = [{"id": i, "name": "row-%d" % i, "blob": bytes(i % 4096)} for i in range(60000)]
kept = rows[::3]
del rows
print("python kept %d rows, %d bytes of blobs" % (len(kept), sum(len(r["blob"]) for r in kept)))
ctypes.CDLL(None).malloc_stats()
'

for b in glibc jemalloc tcmalloc; do
    echo
    echo "=== backend $b: tools/mallocshim --backend=$b --verbose -- python3 ..."
    if [ $b = jemalloc ]; then
        # jemalloc's report runs to hundreds of lines; keep its summary.
        tools/mallocshim --backend=$b --verbose -- "$PY" -c "$workload" 2>&1 |
            grep -E '^(mallocshim|python|___|Version|Allocated|Arenas|Background|  opt\.(narenas|dirty_decay_ms|muzzy_decay_ms|tcache_max):)'
    else
        tools/mallocshim --backend=$b --verbose -- "$PY" -c "$workload" 2>&1 | head -n 20
    fi
done
echo
echo "The first line of each run is the shim's own (verbose:1); the rest of the"
echo "report comes from the backend itself: glibc's arenas, jemalloc's"
echo "malloc_stats_print (its summary lines), tcmalloc's MallocExtension."
