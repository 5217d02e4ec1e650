#!/bin/sh
# fuzz.sh: shimdump's parsers against hostile input, for a bounded time:
# the driver (random and mutated segments and JSON, under ASan and UBSan
# where the compiler has them), then libFuzzer when clang built its target.
# FUZZ_SECONDS (20) bounds each.
. "$TOP_SRCDIR/t/lib.sh"

secs=${FUZZ_SECONDS:-20}
check "$TOP_BUILDDIR/t/fuzz/driver" --seconds "$secs" --seed "$(date +%s)"
ok $? "the driver: $(cat "$TMP/out")"

lf="$TOP_BUILDDIR/t/fuzz/fuzz_dump"
if [ -x "$lf" ]; then
    mkdir -p "$TMP/corpus"
    "$TOP_BUILDDIR/t/fuzz/driver" --seeds "$TMP/corpus"
    "$lf" -max_total_time="$secs" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$TMP/" -print_final_stats=1 "$TMP/corpus" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ $rc -ne 0 ]; then
        tail -n 30 "$TMP/err" | sed 's/^/# /' >&2
        for a in "$TMP"/crash-* "$TMP"/timeout-* "$TMP"/leak-* "$TMP"/oom-*; do
            [ -e "$a" ] && cp "$a" "$TOP_BUILDDIR/" && echo "# kept $TOP_BUILDDIR/$(basename "$a")" >&2
        done
    fi
    ok $rc "libFuzzer for ${secs} s: $(sed -n 's/^stat::number_of_executed_units: *//p' "$TMP/err") inputs, no crash, hang or leak"
else
    skip "libFuzzer" "clang with -fsanitize=fuzzer not found"
fi
done_testing
