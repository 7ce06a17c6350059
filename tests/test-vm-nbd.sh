#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-vm --attach=nbd: the guest's own nbd driver, through
# nbd-client over virtio-serial: 4096-byte blocks, XFS data kept across a
# remount, a clean disconnect (largeblock-vm fails if nbd-client -d leaves
# /sys/block/nbd0/pid); then the same with two connections.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/vm-functions.sh" || exit 1

# nbd-client -b sets the logical and the physical size
vm_xfs_roundtrip nbd "4096 4096" blksize=16k logical-blksize=4k size=1G

# Two connections: two hardware queues, and data written through both.
lbvm --attach=nbd --connections=2 blksize=4k logical-blksize=4k size=256M -- '
set -e
echo "queues $(ls /sys/block/nbd0/mq | wc -l)"
dd if=/dev/urandom of=/tmp/d bs=1M count=16 status=none
dd if=/tmp/d of=/dev/nbd0 bs=1M oflag=direct status=none
dd if=/dev/nbd0 of=/tmp/e bs=1M count=16 iflag=direct status=none
cmp /tmp/d /tmp/e && echo "two connections intact"'
[ "$rc" -eq 0 ] || fail "largeblock-vm --connections=2 exited with $rc"
expect_out "queues 2"
expect_out "two connections intact"
vm_assert_nothing_left
