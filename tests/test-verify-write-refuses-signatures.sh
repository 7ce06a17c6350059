#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-verify --write refuses a device or file that holds a
# filesystem or partition-table signature, unless --force, and never
# writes through a symbolic link to a regular file: (1) a file holding
# ext4 and (2) a file holding a DOS partition table are refused with
# exit 5 and one line naming what was found, left byte for byte as they
# were; --verify-only still reads them and --force overwrites them;
# (3) a link to a clean file is refused, the file itself is accepted,
# and again after it holds the tool's own stamps; (4) an unmounted XFS
# on a loop device, also through a link to it, is refused and keeps its
# signature (blkid), and --force overwrites it (root only).
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/verify-functions.sh"

requires mkfs.ext4
requires blkid

# tmpfs may refuse O_DIRECT: the files live on /var/tmp.
vartmp=$(mktemp -d /var/tmp/lbverify.XXXXXX)
cleanup_fn rm -rf "$vartmp"

# expect_refused NAME PATH LINE: --write on PATH exited 5 with exactly
# LINE on stderr and printed no report.
expect_refused () {
    local name=$1 path=$2 line=$3
    lb_verify "$name" --write --size 4M "$path"
    expect_rc "$name" 5
    [ "$(cat "$tmpdir/$name.verr")" = "$line" ] ||
        fail "$name: expected \"$line\", got: $(cat "$tmpdir/$name.verr")"
    [ ! -s "$tmpdir/$name.json" ] || fail "$name: a report was printed"
}

# sum_of FILE: its sha256; unchanged FILE SUM: FILE still has it.
sum_of () { sha256sum <"$1" | cut -d' ' -f1; }
unchanged () { [ "$(sum_of "$1")" = "$2" ] || fail "$1 was changed"; }
refusal () { echo "largeblock-verify: $1 holds $2; refusing to overwrite it (use --force)"; }

# (1) ext4 in a file.
ext4="$vartmp/ext4.img"
truncate -s 16M "$ext4"
mkfs.ext4 -q -F "$ext4" || fail "mkfs.ext4 failed"
sum=$(sum_of "$ext4")
expect_refused ext4 "$ext4" "$(refusal "$ext4" "a filesystem (ext4)")"
unchanged "$ext4" "$sum"
lb_verify ext4-read --verify-only 1 --size 1M "$ext4"
[ "$rc" -ne 5 ] && [ "$rc" -ne 4 ] || fail "--verify-only was refused: $rc"
lb_verify ext4-force --write --force --size 4M "$ext4"
expect_rc ext4-force 0
! blkid -p "$ext4" >/dev/null || fail "ext4 survived --force"

# (2) A DOS partition table: one Linux partition at sector 2048, and the
# 0x55 0xaa boot signature.
table="$vartmp/table.img"
truncate -s 16M "$table"
printf '\0\0\0\0\203\0\0\0\0\10\0\0\0\20\0\0' |
    dd of="$table" bs=1 seek=446 conv=notrunc status=none
printf '\125\252' | dd of="$table" bs=1 seek=510 conv=notrunc status=none
blkid -p "$table" | grep -q 'PTTYPE="dos"' ||
    fail "blkid finds no dos table: $(blkid -p "$table")"
sum=$(sum_of "$table")
expect_refused table "$table" "$(refusal "$table" "a partition table (dos)")"
unchanged "$table" "$sum"

# (3) A symbolic link to a clean file, then the file itself, twice.
clean="$vartmp/clean.img"
truncate -s 16M "$clean"
sum=$(sum_of "$clean")
ln -s "$clean" "$vartmp/link"
expect_refused link "$vartmp/link" "largeblock-verify: $vartmp/link is a symbolic link to something other than a block device: refusing to write through it (name the file itself)"
unchanged "$clean" "$sum"
lb_verify clean --write --size 4M "$clean"
expect_rc clean 0
lb_verify clean-again --write --size 4M "$clean"
expect_rc clean-again 0

# --force is only for --write on a path.
lb_verify force-alone --force --verify-only 1 "$clean"
expect_rc force-alone 3

# (4) An unmounted XFS on a loop device.
if [ "$(id -u)" -ne 0 ]; then
    echo "loop device part skipped: not root"
elif ! command -v mkfs.xfs >/dev/null || ! command -v losetup >/dev/null ||
        ! loop_device_usable; then
    echo "loop device part skipped: no mkfs.xfs, losetup or free loop device"
else
    xfs="$vartmp/xfs.img"
    truncate -s 320M "$xfs"  # mkfs.xfs wants 300 MB; sparse
    loop=$(losetup --find --show "$xfs") || fail "losetup failed"
    cleanup_fn detach_loop_of "$loop" "$xfs"
    mkfs.xfs -q "$loop" || fail "mkfs.xfs failed"
    expect_refused xfs "$loop" "$(refusal "$loop" "a filesystem (xfs)")"
    ln -s "$loop" "$vartmp/loop-link"
    expect_refused xfs-link "$vartmp/loop-link" \
        "$(refusal "$vartmp/loop-link" "a filesystem (xfs)")"
    [ "$(blkid -p -s TYPE -o value "$loop")" = xfs ] ||
        fail "the XFS signature is gone: $(blkid -p "$loop")"
    lb_verify xfs-force --write --force --size 4M "$loop"
    expect_rc xfs-force 0
    assert_json xfs-force "not failed" "r['integrity']['errors_total'] == 0"
    ! blkid -p "$loop" >/dev/null || fail "XFS survived --force"
fi
echo PASS
