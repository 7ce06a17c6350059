#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run --crash-test warns, in one line, when the power cut
# finds the write cache empty (kept, lost and torn all 0): such a cut
# tested nothing.  A workload that ends with sync(1) leaves the cache
# empty and gets the warning; one whose O_DIRECT writes sit unflushed in
# the cache does not.  The warning does not change the exit status.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
requires mkfs.xfs
requires xfs_repair

warning="the power cut found the write cache empty"
crash=(--crash-test --mkfs=xfs --mount size=512M blksize=16k
       logical-blksize=4k write-cache=volatile power-cut-seed=7)

lb_run "${crash[@]}" -- sh -c 'echo data >"$LARGEBLOCK_MNT/f"; sync'
[ "$rc" -eq 0 ] || fail "a synced workload: status $rc"
[ "$(grep -cF "$warning" "$run_err")" -eq 1 ] ||
    fail "an empty cache at the cut was not warned about, once"
assert_nothing_left

lb_run "${crash[@]}" -- sh -c 'sync; dd if=/dev/urandom bs=64k count=8 \
    oflag=direct of="$LARGEBLOCK_MNT/f" status=none'
[ "$rc" -eq 0 ] || fail "an unflushed workload: status $rc"
! grep -qF "$warning" "$run_err" ||
    fail "warned about an empty cache when the cut found data"
assert_nothing_left
echo PASS
