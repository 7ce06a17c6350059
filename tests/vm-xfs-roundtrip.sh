# SPDX-License-Identifier: BSD-3-Clause
# largeblock-vm tests: run inside the guest (by bash).  XFS with 16k
# blocks and 4k sectors on $LARGEBLOCK_DEV: buffered and O_DIRECT writes,
# caches dropped, remount, the data compared; xfs_repair -n clean.
set -eu
dev=$LARGEBLOCK_DEV
name=${dev#/dev/}
echo "geometry $(cat /sys/block/$name/queue/logical_block_size)" \
     "$(cat /sys/block/$name/queue/physical_block_size)"
mkfs.xfs -q -f -b size=16384 -s size=4096 "$dev"
mkdir -p /mnt/t
mount "$dev" /mnt/t
[ "$(stat -f -c %S /mnt/t)" = 16384 ] || { echo "fs block size"; exit 10; }
dd if=/dev/urandom of=/tmp/buffered bs=64k count=64 status=none
dd if=/dev/urandom of=/tmp/direct bs=64k count=64 status=none
cp /tmp/buffered /mnt/t/buffered
dd if=/tmp/direct of=/mnt/t/direct bs=64k oflag=direct status=none
sync
umount /mnt/t
echo 3 >/proc/sys/vm/drop_caches
mount "$dev" /mnt/t
cmp /tmp/buffered /mnt/t/buffered
dd if=/mnt/t/direct of=/tmp/direct.back bs=64k iflag=direct status=none
cmp /tmp/direct /tmp/direct.back
umount /mnt/t
xfs_repair -n "$dev" >/dev/null 2>&1 || { echo "xfs_repair -n found damage"; exit 11; }
echo "data intact"
