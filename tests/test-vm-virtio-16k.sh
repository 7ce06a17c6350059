#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-vm --attach=virtio on the default guest kernel (>= 6.15):
# logical blocks above the page size through QEMU's NBD client --
# 16384/65536 (physical above logical) with the XFS round trip of
# vm-xfs-roundtrip.sh, and 65536/65536 with raw O_DIRECT I/O kept intact,
# a 4 KiB O_DIRECT read refused, and what mkfs.xfs says of 64k sectors
# in one line (xfsprogs 6.1 takes at most 32k).
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/vm-functions.sh" || exit 1

vm_xfs_roundtrip virtio "16384 65536" blksize=64k logical-blksize=16k size=1G

lb_vm --attach=virtio blksize=64k logical-blksize=64k size=256M -- '
set -eu
echo "geometry $LARGEBLOCK_LOGICAL_BLKSIZE $LARGEBLOCK_PHYSICAL_BLKSIZE"
dd if=$LARGEBLOCK_DEV of=/dev/null bs=4096 count=1 iflag=direct 2>/dev/null &&
    echo "a 4 KiB O_DIRECT read worked" || echo "4 KiB O_DIRECT read refused"
dd if=/dev/urandom of=/tmp/d bs=64k count=64 status=none
dd if=/tmp/d of=$LARGEBLOCK_DEV bs=64k seek=3 oflag=direct status=none
echo 3 >/proc/sys/vm/drop_caches
dd if=$LARGEBLOCK_DEV of=/tmp/e bs=64k skip=3 count=64 iflag=direct status=none
cmp /tmp/d /tmp/e && echo "raw 64k intact"
if out=$(mkfs.xfs -q -f -b size=65536 -s size=65536 $LARGEBLOCK_DEV 2>&1); then
    echo "mkfs.xfs -s size=65536: made"
else
    echo "mkfs.xfs -s size=65536: $(echo "$out" | head -1)"
fi'
[ "$rc" -eq 0 ] || fail "largeblock-vm 64k/64k exited with $rc"
expect_out "geometry 65536 65536"
expect_out "4 KiB O_DIRECT read refused"
expect_out "raw 64k intact"
grep -q '^mkfs.xfs -s size=65536: .' "$vm_out" || fail "no line on mkfs.xfs with 64k sectors"
vm_assert_nothing_left
