#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: install dependencies, build, run the whole test suite
# ("make check"), and end with one line "N passed, M failed" taken from
# automake's results (skips are counted on the line before).  Exit status
# is make check's (or 1 if a hardening check below failed).
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh || exit 1
scripts/build.sh >build.log 2>&1 || { cat build.log; echo "build failed"; exit 1; }

# CI (LB_HARDEN=1, set by .ci/run) also runs the hardening checks of
# docs/testing.md first: the suite under valgrind, ASan+UBSan and TSan
# builds, 10 s of fuzzing per harness (two at a time) and a 20 s soak.
# Their tests are counted in the summary like the others (fuzz and soak
# as one each), and a check that fails beyond its tests (a valgrind log,
# a broken build) counts as one more failure; any failure makes the exit
# status non-zero.  The plain "make check" runs last, so test-suite.log
# is its own.
#
# How many tests make runs at once: the instrumented tests mostly compute
# (valgrind), one more than the CPUs fills the gaps while a test waits;
# the others mostly wait on servers, mounts and signals, twice the CPUs.
ncpu=$(nproc)
export LB_TEST_JOBS=${LB_TEST_JOBS:-$((2 * ncpu))}
hlogs=()
hstatus=0
extra_passed=0
extra_failed=0
# harden NAME LOG CMD...: run a hardening check whose automake results
# are in LOG, or that counts as a single test when LOG is "-".
harden () {
    local name=$1 log=$2 start=$SECONDS; shift 2
    echo "== $name"
    if "$@" >"$name.log" 2>&1; then
        [ "$log" = - ] && extra_passed=$((extra_passed + 1))
    else
        hstatus=1
        tail -100 "$name.log"
        # automake's suite log holds each failing test's own log: the
        # only record of why, once the CI machine is gone.
        [ "$log" != - ] && [ -f "$log" ] &&
            sed -n '/^\(FAIL\|ERROR\):/,$p' "$log" | head -300
        echo "== $name FAILED"
        if [ "$log" = - ]; then extra_failed=$((extra_failed + 1))
        elif [ -f "$log" ] && grep -q '^# FAIL: *0$' "$log" &&
             grep -q '^# ERROR: *0$' "$log"; then
            extra_failed=$((extra_failed + 1))
        fi
    fi
    [ "$log" != - ] && [ -f "$log" ] && hlogs+=("$log")
    tail -1 "$name.log"
    echo "== $name took $((SECONDS - start)) s"
}
if [ "${LB_HARDEN:-0}" = 1 ]; then
  harden check-valgrind test-suite-valgrind.log \
      sh -c 'make -j'$((ncpu + 1))' check-valgrind; s=$?; cp test-suite.log test-suite-valgrind.log; exit $s'
  harden check-sanitizers /dev/null scripts/check-sanitizers.sh
  for r in asan tsan; do
      if [ -f "test-suite-$r.log" ]; then hlogs+=("test-suite-$r.log")
      else extra_failed=$((extra_failed + 1)); fi
  done
  harden fuzz - make fuzz FUZZ_SECONDS=10 FUZZ_JOBS="$ncpu"
  harden soak - make soak SOAK_SECONDS=20
fi

# Always: make check-vm boots guest kernels under QEMU (largeblock-vm,
# docs/vm-testing.md); counted like the hardening checks.
harden check-vm test-suite-vm.log make -j"$ncpu" check-vm
# Always: make check-crash, the full XFS power-cut table of largeblock-run
# --crash-test (docs/crash-testing.md; its time is printed below).
harden check-crash test-suite-crash.log make check-crash
# Always: make check-deb builds the Debian packages from a clean copy and
# checks them (debian/, docs/testing.md).
harden check-deb test-suite-deb.log make check-deb

# Only what needs reading: automake prints a PASS line per test and per
# unit test point (about 1,650); failures, skips and the summary stay.
make -j"$LB_TEST_JOBS" check 2>&1 | grep -Ev '^(PASS|XFAIL): '
status=${PIPESTATUS[0]}

count () {
  local v
  v=$(sed -n "s/^# $1: *//p" "${2:-test-suite.log}" 2>/dev/null | head -1)
  echo "${v:-0}"
}
if [ ! -f test-suite.log ]; then
  echo "0 passed, 1 failed (make check produced no test-suite.log)"
  exit 1
fi
[ $status -ne 0 ] && sed -n '/^FAIL\|^ERROR/,$p' test-suite.log | head -200
pass=$extra_passed failed=$extra_failed skip=0
for log in test-suite.log "${hlogs[@]}"; do
  pass=$(( pass + $(count PASS "$log") ))
  failed=$(( failed + $(count FAIL "$log") + $(count ERROR "$log") +
             $(count XPASS "$log") ))
  skip=$(( skip + $(count SKIP "$log") ))
done
[ $status -eq 0 ] && status=$hstatus
echo "$skip skipped"
echo "$pass passed, $failed failed"
exit $status
