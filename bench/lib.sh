# lib.sh: helpers shared by the benchmark scripts. Sourced.

# stats: numbers on stdin -> "median min max"
stats() {
    sort -g | awk '{ v[NR] = $1 } END {
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.3f %.3f %.3f", m, v[1], v[NR] }'
}

# med: numbers on stdin -> "median (min..max)"
med() {
    stats | awk '{ printf "%s (%s..%s)", $1, $2, $3 }'
}

# dbbench_db DB NUM: makes db_bench's DB in DB unless it is there, one way
# for every script (bench/dbbench.sh, capture.sh, fidelity.sh), so that
# their figures are of the same DB: fillrandom, NUM keys of 400 B, lz4,
# 16 KiB blocks. A DB without a table file (db_bench run on a missing DB
# makes an empty one) is made again. Returns db_bench's status.
dbbench_db() {
    if [ -e "$1/CURRENT" ]; then
        ls "$1"/*.sst >/dev/null 2>&1 && return 0
        echo "# $1 holds no table file: made again" >&2
        rm -rf "$1"
    fi
    # compacted at the end: fillrandom leaves files in level 0 that a
    # read-only open never compacts, and a read then looks in each (about
    # 189,000 instructions a read under callgrind against 39,000 compacted)
    echo "# making the DB in $1: fillrandom, $2 keys of 400 B, lz4, 16 KiB blocks, compacted" >&2
    db_bench --db="$1" --benchmarks=fillrandom,compact --num="$2" --value_size=400 \
        --compression_type=lz4 --block_size=16384 --threads=1 >/dev/null 2>&1
}

# header TITLE: what was measured, when, and on what machine
header() {
    echo "# mallocshim $1: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "# machine: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(uname -r)"
}

# bare_lib BACKEND: what to preload to run BACKEND bare (nothing for glibc).
# Needs $libdir.
bare_lib() {
    case $1 in
    jemalloc) echo "$libdir/libjemalloc.so.2" ;;
    tcmalloc) echo "$libdir/libtcmalloc_minimal.so.4" ;;
    esac
}

# cg_table PER: the rows of an instruction count's table (bench/cgdbbench.sh,
# bench/cgmyrocks.sh): for each backend in $backends, bare, then the shim
# with record:off, untracked (sample:2^30, sample_bytes:0), stacks:0, by counts
# alone (sample_bytes:0) and the default
# sampling, each counted by `PER PRELOAD CONF` (a number per unit of work),
# with what the shim adds and bare / run. Needs $shim, $libdir and $W/shm.
# RUNS (environment) picks the shim's rows, in that order, among those and
# bytes:2m (the default sampling with sample_bytes:2m, tcmalloc's mean).
# ROUNDS (1) measures each backend's bare and rows that many times in turn,
# each round's rows against its own bare: MariaDB's count moved by 2,400
# instructions a query between runs of bench/cgmyrocks.sh on 2026-12-06,
# and by some 60 within one run (bench/results/floor-2026-12-06.txt).
cg_table() {
    for b in $backends; do
      for round in $(seq "${ROUNDS:-1}"); do
        if [ "${ROUNDS:-1}" -gt 1 ]; then echo "# $b, round $round"; fi
        x=$($1 "$(bare_lib $b)" "") || exit 1
        printf '%-9s %-20s %12s %8s %8s\n' $b bare "$x" "" ""
        rec="backend:$b,record:on,shm_dir:$W/shm,seed:1"
        for run in ${RUNS:-off untracked stacks:0 by-counts default}; do
            case $run in
            bytes:2m) c="$rec,sample_bytes:2m" ;;
            off) c="backend:$b,record:off" ;;
            untracked) c="$rec,sample:1073741824,sample_bytes:0" ;;
            stacks:0) c="$rec,stacks:0" ;;
            by-counts) c="$rec,sample_bytes:0" ;;   # 1 in 256 whatever the size
            default) c="$rec" ;;
            esac
            y=$($1 "$shim" "$c") || exit 1
            printf '%-9s %-20s %12s %8s %8s\n' $b "shim ($run)" "$y" \
                "$(awk -v x="$x" -v y="$y" 'BEGIN { printf "%+d", y - x }')" \
                "$(awk -v x="$x" -v y="$y" 'BEGIN { printf "%.4f", x / y }')"
        done
      done
    done
}
