#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# fstests itself through largeblock-run --fstests, when FSTESTS_DIR names
# a built fstests checkout (docs/fstests.md): a small subset on XFS with
# 16k blocks and 16k sectors, with no local.config, must pass.
# FSTESTS_TESTS overrides the subset.  Without FSTESTS_DIR: skipped (77).
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
[ -n "${FSTESTS_DIR:-}" ] ||
    skip "FSTESTS_DIR is not set: point it at a built fstests checkout (docs/fstests.md)"
[ -x "$FSTESTS_DIR/check" ] && [ -x "$FSTESTS_DIR/ltp/fsstress" ] ||
    fail "FSTESTS_DIR=$FSTESTS_DIR is not a built fstests checkout (no check or ltp/fsstress)"
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
requires mkfs.xfs

tests=${FSTESTS_TESTS:-generic/001 generic/002 generic/005 generic/006 generic/007}
# fstests writes its results under RESULT_BASE: ours, not the checkout's.
export RESULT_BASE="$tmpdir/results"
cd "$FSTESTS_DIR"
rc=0
timeout 1800 "$LARGEBLOCK_RUN" --fstests --mkfs=xfs blksize=16k \
    logical-blksize=16k size=4G -- ./check $tests >"$tmpdir/check.out" \
    2>"$run_err" || rc=$?
cat "$tmpdir/check.out" "$run_err"
[ "$rc" -eq 0 ] || fail "fstests through --fstests failed (status $rc)"
grep -q '^Passed all' "$tmpdir/check.out" || fail "fstests did not say \"Passed all\""
assert_nothing_left
echo PASS
