#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-verify on the kernel device largeblock-run attaches, the
# whole kernel path a fixture user gets: a clean bill at 16k/16k and at
# 4k logical / 16k physical, with the kernel's logical block size as the
# reported minimum, and --verify-only after a detach and reattach of
# the same file disk.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
source "$abs_top_srcdir/tests/verify-functions.sh" || exit 1

# verify_on GEOMETRY-NAME LOGICAL VERIFY-ARGS... -- PARAMS...: run
# largeblock-verify VERIFY-ARGS on largeblock-run's device.
verify_on () {
    local name=$1 logical=$2; shift 2
    local vargs=()
    while [ "$1" != -- ]; do vargs+=("$1"); shift; done
    shift
    lb_run --attach=loop "$@" -- sh -c \
        '"$0" --json "$@" "$LARGEBLOCK_DEV"' "$VERIFY" "${vargs[@]}" \
        >"$tmpdir/$name.json" 2>/dev/null
    cp "$run_err" "$tmpdir/$name.verr"
    expect_rc "$name" 0
    assert_json "$name" "not failed" \
        "r['block_size']['minimum'] == $logical" \
        "r['misaligned_policy'] == 'refuse'" \
        "r['integrity']['errors_total'] == 0"
    assert_nothing_left
}

verify_on g16k 16384 --write --seed 51 --size 16M \
    -- blksize=16k logical-blksize=16k size=512M
verify_on g4k16k 4096 --write --seed 52 --size 16M \
    -- blksize=16k logical-blksize=4k size=512M

# A file disk survives a detach: verify its stamps on a new attachment.
img="$tmpdir/disk.img"
verify_on file-write 16384 --write --seed 53 --size 16M \
    -- blksize=16k logical-blksize=16k size=256M file="$img"
verify_on file-reread 16384 --verify-only 53 --size 16M \
    -- blksize=16k logical-blksize=16k size=256M file="$img"
assert_json file-reread "r['integrity']['writes'] == 0"
echo PASS
