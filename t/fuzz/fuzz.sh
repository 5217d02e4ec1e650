#!/bin/sh
# fuzz.sh: shimdump's parsers against hostile input: the driver (random
# and mutated segments and JSON, under ASan and UBSan where the compiler
# has them), then libFuzzer when clang built its target; then the same for
# shimreplay's trace reader and planner (trace_driver, fuzz_trace). Each
# runs a fixed number of inputs from a fixed seed (FUZZ_RUNS,
# FUZZ_TRACE_RUNS, FUZZ_LF_RUNS, FUZZ_SEED), so that a run finds the same
# thing on any machine; scripts/fuzz-long.sh runs millions.
# Every input that parses must also survive the JSON round trip:
# JSON(d) == JSON(read(JSON(d))).
. "$TOP_SRCDIR/t/lib.sh"

runs=${FUZZ_RUNS:-6000}      # about 20 s each here
lfruns=${FUZZ_LF_RUNS:-2000}
seed=${FUZZ_SEED:-1}
check "$TOP_BUILDDIR/t/fuzz/driver" --runs "$runs" --seed "$seed"
ok $? "the driver: $(cat "$TMP/out")"

lf="$TOP_BUILDDIR/t/fuzz/fuzz_dump"
if [ -x "$lf" ]; then
    mkdir -p "$TMP/corpus"
    "$TOP_BUILDDIR/t/fuzz/driver" --seeds "$TMP/corpus"
    "$lf" -runs="$lfruns" -seed="$seed" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$TMP/" -print_final_stats=1 "$TMP/corpus" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ $rc -ne 0 ]; then
        tail -n 30 "$TMP/err" | sed 's/^/# /' >&2
        for a in "$TMP"/crash-* "$TMP"/timeout-* "$TMP"/leak-* "$TMP"/oom-*; do
            [ -e "$a" ] && cp "$a" "$TOP_BUILDDIR/" && echo "# kept $TOP_BUILDDIR/$(basename "$a")" >&2
        done
    fi
    ok $rc "libFuzzer, seed $seed: $(sed -n 's/^stat::number_of_executed_units: *//p' "$TMP/err") inputs, no crash, hang or leak"
else
    skip "libFuzzer" "clang with -fsanitize=fuzzer not found"
fi

# The trace reader and shimreplay's planner (fuzz_trace.c): every trace
# that reads must give a plan that replays without deadlock, never making
# a block into a full slot or freeing an empty one.
if [ "${HAVE_ZSTD:-no}" = yes ]; then
    truns=${FUZZ_TRACE_RUNS:-10000}
    check "$TOP_BUILDDIR/t/fuzz/trace_driver" --runs "$truns" --seed "$seed"
    ok $? "the trace driver: $(cat "$TMP/out")"
    lf="$TOP_BUILDDIR/t/fuzz/fuzz_trace"
    if [ -x "$lf" ]; then
        mkdir -p "$TMP/tcorpus"
        "$TOP_BUILDDIR/t/fuzz/trace_driver" --seeds "$TMP/tcorpus"
        "$lf" -runs="$lfruns" -seed="$seed" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
            -artifact_prefix="$TMP/trace-" -print_final_stats=1 "$TMP/tcorpus" >"$TMP/out" 2>"$TMP/err"
        rc=$?
        if [ $rc -ne 0 ]; then
            tail -n 30 "$TMP/err" | sed 's/^/# /' >&2
            for a in "$TMP"/trace-*; do
                [ -e "$a" ] && cp "$a" "$TOP_BUILDDIR/" && echo "# kept $TOP_BUILDDIR/$(basename "$a")" >&2
            done
        fi
        ok $rc "libFuzzer on traces, seed $seed: $(sed -n 's/^stat::number_of_executed_units: *//p' "$TMP/err") inputs, no crash, hang or leak"
    else
        skip "libFuzzer on traces" "clang with -fsanitize=fuzzer not found"
    fi
else
    skip "the trace driver" "built without libzstd"
fi
done_testing
