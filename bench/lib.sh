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

# header TITLE: what was measured, when, and on what machine
header() {
    echo "# mallocshim $1: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "# machine: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(uname -r)"
}
