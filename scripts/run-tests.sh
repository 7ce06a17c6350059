#!/bin/bash
# largeblock: install dependencies, build, run the whole test suite
# ("make check"), and end with one line "N passed, M failed" taken from
# automake's results (skips are counted on the line before).  Exit status is make check's.
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh || exit 1
scripts/build.sh >build.log 2>&1 || { cat build.log; echo "build failed"; exit 1; }

make -j"$(nproc)" check
status=$?

count () { sed -n "s/^# $1: *//p" test-suite.log 2>/dev/null | head -1; }
if [ ! -f test-suite.log ]; then
  echo "0 passed, 1 failed (make check produced no test-suite.log)"
  exit 1
fi
[ $status -ne 0 ] && sed -n '/^FAIL\|^ERROR/,$p' test-suite.log | head -200
pass=$(count PASS); fail=$(count FAIL); error=$(count ERROR)
xpass=$(count XPASS); skip=$(count SKIP)
failed=$(( ${fail:-0} + ${error:-0} + ${xpass:-0} ))
echo "${skip:-0} skipped"
echo "${pass:-0} passed, ${failed} failed"
exit $status
