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
    echo "# making the DB in $1: fillrandom, $2 keys of 400 B, lz4, 16 KiB blocks" >&2
    db_bench --db="$1" --benchmarks=fillrandom --num="$2" --value_size=400 \
        --compression_type=lz4 --block_size=16384 --threads=1 >/dev/null 2>&1
}

# header TITLE: what was measured, when, and on what machine
header() {
    echo "# mallocshim $1: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "# machine: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(uname -r)"
}
