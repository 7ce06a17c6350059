#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-vm --attach=virtio: the guest sees the export's 4096-byte
# logical and 16384-byte physical blocks through QEMU's NBD client; XFS
# with 16k blocks and 4k sectors keeps buffered and O_DIRECT data across
# a remount with caches dropped; the server saw no misaligned request and
# no error.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/vm-functions.sh" || exit 1

vm_xfs_roundtrip virtio "4096 16384" blksize=16k logical-blksize=4k size=1G
