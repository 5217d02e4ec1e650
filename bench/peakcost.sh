#!/bin/sh
# peakcost.sh: what keeping the call sites of the peak of live bytes costs
# the shim's sampler thread with the stack table full (bench/peakcost.c):
# its CPU over SECONDS at interval_ms:10 and sample:1 (every block
# tracked: 32768 live blocks of 8192 stacks, 4096 of them stored, the rest
# without a stack), when every pass sees a new peak ("rise": it sums the
# tracked table by stack in the scan it makes for ages anyway, and
# rewrites every entry's peak figures) against none ("flat"), rounds
# interleaved. The difference per pass is the peak's cost. Never asserts.
# Usage: bench/peakcost.sh [ROUNDS] [SECONDS]   (from the build directory)
set -eu
ROUNDS=${1:-3}
SECS=${2:-10}
SHIM=${SHIM:-$PWD/.libs/libmallocshim.so}
BIN=$(mktemp -d "${TMPDIR:-/tmp}/peakcost.XXXXXX")
trap 'rm -rf "$BIN"' EXIT
SRC=$(dirname "$0")
cc -O1 -g -o "$BIN/peakcost" "$SRC/peakcost.c"
mkdir -p "$BIN/shm"
echo "# $(date -u '+%F %T') $(uname -m), $(nproc) cores; interval_ms:10, sample:1, $SECS s a run"
for r in $(seq "$ROUNDS"); do
    for mode in rise flat; do
        MALLOCSHIM_CONF="shm_dir:$BIN/shm,interval_ms:10,sample:1,stacks:16" LD_PRELOAD="$SHIM" \
            "$BIN/peakcost" "$mode" "$SECS" | sed "s/^/round $r: /"
    done
done
