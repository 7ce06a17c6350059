#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-vm --attach=nbd: the guest's own nbd driver, through
# nbd-client over virtio-serial: 4096-byte blocks, XFS data kept across a
# remount, a clean disconnect (largeblock-vm fails if nbd-client -d leaves
# /sys/block/nbd0/pid).  16k blocks and two connections:
# test-vm-nbd-16k.sh.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/vm-functions.sh" || exit 1

# nbd-client -b sets the logical and the physical size
vm_xfs_roundtrip nbd "4096 4096" blksize=16k logical-blksize=4k size=1G

