#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-verify --write never writes to a mounted block device: on a
# loop device holding a mounted XFS it exits 5 with one line saying the
# device is in use, also with --force, and the filesystem is intact
# afterwards (it mounts again and a file written before reads back).
# --verify-only, which only reads, still runs.  Root only.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/verify-functions.sh"

[ "$(id -u)" -eq 0 ] || skip "needs root (a loop device and a mount)"
requires losetup
requires mkfs.xfs
loop_device_usable || skip "no loop device (/dev/loop-control) or none free"

# The backing file lives on /var/tmp, sparse (mkfs.xfs wants 300 MB).
vartmp=$(mktemp -d /var/tmp/lbverify.XXXXXX)
cleanup_fn rm -rf "$vartmp"
disk="$vartmp/disk.img"
truncate -s 320M "$disk"
loop=$(losetup --find --show "$disk") || fail "losetup failed"
cleanup_fn detach_loop_of "$loop" "$disk"
mkfs.xfs -q "$loop" || fail "mkfs.xfs failed"
mnt="$tmpdir/mnt"
mkdir "$mnt"
mount "$loop" "$mnt" || fail "cannot mount $loop"
cleanup_fn "! mountpoint -q '$mnt' || umount -l '$mnt'"
head -c 1M /dev/urandom >"$mnt/before"
cp "$mnt/before" "$tmpdir/before"
sync -f "$mnt/before"

# The default region, 64M: enough to reach the file's data if written.
in_use="largeblock-verify: $loop is in use (mounted or held by another program): refusing to write it"
for force in "" --force; do
    name=mounted${force:+-force}
    lb_verify "$name" --write $force "$loop"
    expect_rc "$name" 5
    [ "$(cat "$tmpdir/$name.verr")" = "$in_use" ] ||
        fail "$name: not the one in-use line: $(cat "$tmpdir/$name.verr")"
    [ ! -s "$tmpdir/$name.json" ] || fail "$name: a report was printed"
done

# Reading is allowed: the region is XFS metadata, not stamped blocks.
lb_verify read-only --verify-only 1 --size 1M "$loop"
[ "$rc" -ne 5 ] && [ "$rc" -ne 4 ] || fail "--verify-only was refused: $rc"
assert_json read-only "r['integrity']['writes'] == 0"

# Intact: it mounts again from what is on the device, and the file is
# the one written before.
umount "$mnt" || fail "cannot unmount $mnt"
mount "$loop" "$mnt" || fail "the filesystem no longer mounts"
cmp -s "$tmpdir/before" "$mnt/before" ||
    fail "the file written before the runs differs"
echo PASS
