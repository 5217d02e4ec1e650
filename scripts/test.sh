#!/bin/sh
# test.sh: install what is missing, build, and run the whole test suite:
# `make check` (unit tests with Check, integration and CLI tests under every
# backend), then `make distcheck`, then the Debian package (as root). Ends
# with one summary line.
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh
sh scripts/build.sh >/dev/null

status=0
make -j"$(nproc)" check || status=1
if [ "${SKIP_DISTCHECK:-0}" != 1 ]; then
    # The package's own build runs the suite again, with a quarter of the
    # fuzz inputs (make check ran the full count on this build) and without
    # the MariaDB test and the longest others (minutes each: seeds under
    # every backend, the scrape endpoint's abuse, the diagnosis programs,
    # forks under load, the replays, thousands of threads; make check ran
    # them on this build; t/lib.sh, distcheck_light).
    MALLOCSHIM_DISTCHECK=1 FUZZ_RUNS=1500 FUZZ_LF_RUNS=500 make -j"$(nproc)" distcheck >distcheck.log 2>&1 ||
        { status=1; tail -n 40 distcheck.log; }
    echo "distcheck: $(grep -c 'archives ready for distribution' distcheck.log) archive(s) ready (log: distcheck.log)"
fi
# The Debian package (t/pkg/deb.sh): built from a clean copy of the
# distribution, linted, installed with apt, run and purged, leaving the
# system as it was. It installs into the system, so it skips unless root.
make check TESTS=t/pkg/deb.sh TEST_SUITE_LOG=t/pkg/test-suite.log >/dev/null 2>&1 ||
    { status=1; tail -n 40 t/pkg/deb.log; }
echo "package: $(sed -n 's/^:test-result: //p' t/pkg/deb.trs | sort | uniq -c | xargs) (log: t/pkg/deb.log)"
passed=$(cat t/*/*.trs | grep -c '^:test-result: \(PASS\|XFAIL\)' || true)
failed=$(cat t/*/*.trs | grep -c '^:test-result: \(FAIL\|ERROR\|XPASS\)' || true)
skipped=$(cat t/*/*.trs | grep -c '^:test-result: SKIP' || true)
[ "$failed" -eq 0 ] || status=1
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit $status
