#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run --crash-explore on XFS with 16k blocks on 4k sectors,
# torn: the workload (tests/helpers/explore-workload.sh: creates,
# renames and overwrites, with and without fsync) runs once, then crash
# states of its log are mounted and checked (tests/helpers/
# explore-check.sh):
#
# - a check that demands only what was fsync'd passes in every state
#   (6 epochs x 2 seeds), xfs_repair -n too, and --keep-log keeps the
#   log;
# - a check that demands the unflushed data too fails in some states
#   (status 16, FAILED lines), yet passes in the last epoch (after the
#   unmount's flush), so it fails for what it demands; the log of the
#   failing run is kept and the replay command printed for a failing
#   state rebuilds an image that xfs_repair -n reads.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
requires mkfs.xfs
requires xfs_repair
requires xfs_io
requires sha256sum
requires nbdcopy

export EXPLORE_VERSIONS=$tmpdir/versions EXPLORE_UNSYNCED=$tmpdir/unsynced
workload=$abs_top_srcdir/tests/helpers/explore-workload.sh
check=$abs_top_srcdir/tests/helpers/explore-check.sh
disk=(--mkfs=xfs --mount size=512M blksize=16k logical-blksize=4k
      write-cache=volatile power-cut-mode=torn)
out=$tmpdir/out

# explore ARGS...: largeblock-run --crash-explore ARGS; stdout in $out.
explore () {
    rc=0
    timeout 300 "$LARGEBLOCK_RUN" --crash-explore "$@" >"$out" \
        2>"$run_err" || rc=$?
    cat "$out"
    cat "$run_err" >&2
}
states () { grep '^crash-explore: epoch=' "$out"; }

# ---- only what was fsync'd: every state passes ----
explore --sample=6 --seeds=2 --keep-log="$tmpdir/kept.log" \
    --check="$check synced" "${disk[@]}" -- "$workload"
[ "$rc" -eq 0 ] || fail "the fsync'd-data check: status $rc, expected 0"
[ "$(states | wc -l)" -eq 12 ] || fail "expected 12 state lines"
! states | grep -v ' mount=ok check=ok fsck=ok ' ||
    fail "a state failed the fsync'd-data check"
grep -q '^crash-explore: states=12 failed=0 ' "$out" ||
    fail "no summary line with 12 states and no failure"
[ "$(head -c 8 "$tmpdir/kept.log")" = LBCRLOG1 ] ||
    fail "--keep-log did not keep the crash log"
assert_nothing_left

# ---- the unflushed data too: some states fail ----
explore --sample=5 --check="$check all" "${disk[@]}" -- "$workload"
[ "$rc" -eq 16 ] || fail "the all-data check: status $rc, expected 16"
states | grep -q ' check=failed .*FAILED$' ||
    fail "no state failed the check that demands unflushed data"
states | tail -n 1 | grep -q ' check=ok fsck=ok ' ||
    fail "the last epoch (everything flushed) failed the all-data check"
kept=$(sed -n 's/^crash-explore: the log is kept as //p' "$out")
[ -s "$kept" ] || fail "the failing run's log was not kept ($kept)"
replay=$(grep -m1 '^crash-explore: replay epoch=' "$out" | sed 's/^[^:]*: [^:]*: //')
[ -n "$replay" ] || fail "no replay command for a failing state"
(cd "$tmpdir" && eval "$replay") || fail "the replay command failed: $replay"
xfs_repair -n -f "$tmpdir/state.img" >"$tmpdir/repair.out" 2>&1 ||
    { cat "$tmpdir/repair.out"; fail "xfs_repair -n of the replayed state"; }
assert_nothing_left
echo PASS
