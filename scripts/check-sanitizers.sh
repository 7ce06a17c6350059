#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: build a separate copy of the tree with sanitizers and run the
# tests there: the whole "make check" under ASan+UBSan, then the
# concurrency tests (unit suites, stress-ramstore, the multi-connection
# and file-disk stress tests) under TSan.
#
# The checkout itself is configured in-tree, so each build happens in a
# fresh copy of the working tree's files (tracked and untracked, not
# ignored) under a temporary directory, removed on exit unless
# LB_KEEP_SANITIZER_BUILD=1.  Usage:
#   scripts/check-sanitizers.sh [asan|tsan]...   (default: both)
# Exit status 0 only if every selected run passed.  Each run's
# test-suite.log is copied to test-suite-asan.log / test-suite-tsan.log
# at the top of the checkout.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

runs=("$@")
[ ${#runs[@]} -eq 0 ] && runs=(asan tsan)

work=$(mktemp -d "${TMPDIR:-/tmp}/lb-sanitizers.XXXXXX")
cleanup () {
    if [ "${LB_KEEP_SANITIZER_BUILD:-0}" = 1 ]; then
        echo "check-sanitizers: builds kept in $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

# copy_tree DIR: the tree's sources into DIR, and the files autoreconf
# made at the top if it ran there (scripts/build.sh): each build then
# skips its own autoreconf (15 to 45 s).  tar keeps their times, so make's
# rebuild rules still redo them if configure.ac or a Makefile.am is newer.
copy_tree () {
    mkdir -p "$1"
    git -C "$top" ls-files -z --cached --others --exclude-standard |
        (cd "$top" && tar --null -T - -cf - 2>/dev/null) | tar -C "$1" -xf -
    [ -x "$top/configure" ] || return 0
    (cd "$top" && find configure aclocal.m4 config.h.in Makefile.in \
        build-aux m4 -type f -print0) |
        (cd "$top" && tar --null -T - -cf -) | tar -C "$1" -xf -
}

# build DIR SANITIZERS [TARGET]: configure a copy in DIR and make TARGET
# there (default: all).
build () {
    local dir=$1 san=$2 target=${3:-all}
    copy_tree "$dir" || return 1
    (cd "$dir" && { [ -x configure ] || autoreconf -fi; } && \
        ./configure --enable-sanitizers="$san" CFLAGS="-O1 -g" &&
        make -j"$(nproc)" "$target") \
        >"$dir.build.log" 2>&1 || {
            tail -50 "$dir.build.log"
            echo "check-sanitizers: $san build failed"; return 1; }
}

# The tests wait on servers, mounts and signals more than they compute,
# so twice as many run at once as there are CPUs (LB_TEST_JOBS).
jobs=${LB_TEST_JOBS:-$((2 * $(nproc)))}

# check DIR TARGET: make TARGET in DIR: check-instrumented, the suite but
# the bench's smoke tests (tests/local.mk), or check-concurrency
# (tests/harden.mk).
check () {
    local dir=$1 target=$2
    # Check's per-test timeouts are stretched as for valgrind, less: on a
    # loaded machine, instrumented pattern round trips took more than the
    # default 4 s.
    (cd "$dir" && CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-10} \
        make -j"$jobs" "$target")
    local status=$?
    [ $status -ne 0 ] && sed -n '/^FAIL\|^ERROR/,$p' "$dir/test-suite.log" | head -200
    # Keep the results where scripts/run-tests.sh counts them.
    cp "$dir/test-suite.log" "$top/test-suite-$(basename "$dir").log"
    grep -E '^# (TOTAL|PASS|SKIP|FAIL|ERROR):' "$dir/test-suite.log"
    return $status
}

status=0
for run in "${runs[@]}"; do rm -f "$top/test-suite-$run.log"; done
for run in "${runs[@]}"; do
    case $run in
    asan)
        echo "check-sanitizers: make check under address,undefined"
        build "$work/asan" address,undefined &&
            check "$work/asan" check-instrumented ||
            status=1
        ;;
    tsan)
        echo "check-sanitizers: concurrency tests under thread"
        # TSan's lock-order checker cannot track more than 64 locks held
        # at once, and the file store takes every range-lock stripe a large
        # request covers (in order); data race detection stays on.
        build "$work/tsan" thread concurrency-programs &&
        TSAN_OPTIONS="detect_deadlocks=0:${TSAN_OPTIONS:-}" \
            check "$work/tsan" check-concurrency || status=1
        ;;
    *)  echo "check-sanitizers: unknown run $run (asan or tsan)" >&2
        exit 2 ;;
    esac
done
echo "check-sanitizers: $([ $status -eq 0 ] && echo passed || echo FAILED)"
exit $status
