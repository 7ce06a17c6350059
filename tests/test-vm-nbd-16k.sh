#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-vm --attach=nbd on the default guest kernel (>= 6.15): the
# guest's nbd driver takes a 16384-byte logical block (nbd-client -b
# 16384) and the page-size rule no longer applies: a 4 KiB O_DIRECT read
# gets EINVAL, XFS with 16k blocks and 16k sectors keeps buffered and
# O_DIRECT data across a remount with caches dropped, xfs_repair -n is
# clean, the kernel log too, and the server saw no misaligned request.
# Then two connections at 16k: two queues, data intact.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/vm-functions.sh" || exit 1

vm_xfs_roundtrip nbd "16384 16384" blksize=16k logical-blksize=16k size=1G

lb_vm --attach=nbd --connections=2 blksize=16k logical-blksize=16k size=256M -- '
set -e
echo "logical $(cat /sys/block/nbd0/queue/logical_block_size)"
echo "queues $(ls /sys/block/nbd0/mq | wc -l)"
dd if=/dev/urandom of=/tmp/d bs=1M count=16 status=none
dd if=/tmp/d of=/dev/nbd0 bs=1M oflag=direct status=none
dd if=/dev/nbd0 of=/tmp/e bs=1M count=16 iflag=direct status=none
cmp /tmp/d /tmp/e && echo "two connections intact"'
[ "$rc" -eq 0 ] || fail "largeblock-vm --connections=2 exited with $rc"
expect_out "logical 16384"
expect_out "queues 2"
expect_out "two connections intact"
vm_assert_nothing_left
