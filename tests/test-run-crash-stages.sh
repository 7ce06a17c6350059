#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run --crash-test: each stage that fails gives its own exit
# status and summary, and leaves nothing behind.  The workload fails
# before the cut (10); a tool fails on its call after the cut -- the
# re-attach's losetup --find, the third losetup call after set-up's and
# the detach's (12), the recovery mount (13) -- through a PATH
# wrapper that fails its Nth call; --check fails (14); xfs_repair -n
# fails (15), and its output is then shown.  A workload that cuts the
# power itself and ends at once gets exactly one cut.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
requires mkfs.xfs
requires xfs_repair

# A wrapper: run as $FAIL_TOOL, its $FAIL_NTH-th call fails (status 1,
# after printing a line); every other call runs the real tool.
mkdir -p "$tmpdir/bin"
cat >"$tmpdir/bin/fail-nth" <<'SCRIPT'
#!/bin/bash
name=${0##*/}
real=$(PATH=${PATH#*:} command -v "$name") || exit 127
if [ "$name" = "${FAIL_TOOL:-}" ]; then
    n=$(( $(cat "$FAIL_COUNT" 2>/dev/null || echo 0) + 1 ))
    echo "$n" >"$FAIL_COUNT"
    if [ "$n" -eq "$FAIL_NTH" ]; then
        echo "fail-nth: $name call $n fails" >&2
        exit 1
    fi
fi
exec "$real" "$@"
SCRIPT
chmod +x "$tmpdir/bin/fail-nth"
for t in losetup mount xfs_repair; do ln -s fail-nth "$tmpdir/bin/$t"; done
export PATH="$tmpdir/bin:$PATH" FAIL_COUNT="$tmpdir/fail-count"

crash=(--crash-test --attach=loop --mkfs=xfs --mount size=512M blksize=16k
       logical-blksize=4k write-cache=volatile power-cut-seed=5)

# stage NAME STATUS SUMMARY TOOL NTH ARGS...: the run ends with STATUS,
# its stdout matches SUMMARY (empty: no summary line), nothing is left.
stage () {
    local name=$1 want=$2 summary=$3
    export FAIL_TOOL=$4 FAIL_NTH=$5; shift 5
    rm -f "$FAIL_COUNT"
    rc=0
    timeout 120 "$LARGEBLOCK_RUN" "$@" >"$tmpdir/out" 2>"$run_err" || rc=$?
    cat "$tmpdir/out"; cat "$run_err" >&2
    [ "$rc" -eq "$want" ] || fail "$name: status $rc, expected $want"
    if [ -n "$summary" ]; then
        grep -qE "$summary" "$tmpdir/out" ||
            fail "$name: summary does not match $summary"
    else
        [ ! -s "$tmpdir/out" ] || fail "$name: unexpected output"
    fi
    assert_nothing_left
}

stage "workload fails" 10 "" "" 0 "${crash[@]}" -- false
expect_msg "the workload failed (status 1) before the power cut"
stage "re-attach fails" 12 \
    "seed=5 cuts=1 .* reattach=failed mount=skipped check=none fsck=skipped" \
    losetup 3 "${crash[@]}" -- true
stage "recovery mount fails" 13 \
    "reattach=ok mount=failed check=skipped fsck=skipped" \
    mount 2 --check=true "${crash[@]}" -- true
stage "check fails" 14 "mount=ok check=failed fsck=skipped" \
    "" 0 --check='exit 3' "${crash[@]}" -- true
stage "fsck fails" 15 "mount=ok check=ok fsck=failed" \
    xfs_repair 1 --check=true "${crash[@]}" -- true
expect_msg "fail-nth: xfs_repair call 1 fails"
expect_msg "xfs_repair -n -P -o bhash=128 /dev/loop"
# A workload that cuts and ends at once: its "cut 1", still in the FIFO
# or being carried out, and largeblock-run's own "cut 1" make one cut;
# so does a plain "cut" (the FIFO keeps the order: it comes first), and
# so do two "cut 1" from the workload.
stage "workload cuts and ends" 0 "cuts=1 .* mount=ok check=none fsck=ok" \
    "" 0 "${crash[@]}" -- sh -c 'echo cut 1 >"$LARGEBLOCK_CUT"'
stage "workload cuts twice" 0 "cuts=1 .* mount=ok check=none fsck=ok" \
    "" 0 "${crash[@]}" -- \
    sh -c 'echo cut 1 >"$LARGEBLOCK_CUT"; echo cut 1 >"$LARGEBLOCK_CUT"'
stage "workload cuts the old way" 0 "cuts=1 .* mount=ok check=none fsck=ok" \
    "" 0 "${crash[@]}" -- sh -c 'echo cut >"$LARGEBLOCK_CUT"'
stage "all pass" 0 "mode=lose seed=5 cuts=1 .* mount=ok check=ok fsck=ok" \
    "" 0 --check=true "${crash[@]}" -- true
# A clean xfs_repair -n says nothing without --verbose.
[ ! -s "$run_err" ] || ! grep -q "Phase" "$run_err" ||
    fail "xfs_repair's progress shown although it passed"
echo PASS
