# SPDX-License-Identifier: BSD-3-Clause
# largeblock-vm tests: run inside the guest (by bash).  XFS with 16k
# blocks and sectors of the device's logical block (xfsprogs takes at
# most 32k) on $LARGEBLOCK_DEV: buffered and O_DIRECT writes, caches
# dropped, remount, the data compared; xfs_repair -n clean; a 4 KiB
# O_DIRECT read refused with EINVAL when the logical block is larger;
# nothing alarming in the kernel log.
set -eu
dev=$LARGEBLOCK_DEV
name=${dev#/dev/}
logical=$(cat /sys/block/$name/queue/logical_block_size)
echo "geometry $logical $(cat /sys/block/$name/queue/physical_block_size)"
if [ "$logical" -gt 4096 ]; then
    if out=$(dd if="$dev" of=/dev/null bs=4096 count=1 iflag=direct 2>&1); then
        echo "a 4 KiB O_DIRECT read worked"
    elif echo "$out" | grep -q "Invalid argument"; then
        echo "4 KiB O_DIRECT read: EINVAL"
    else
        echo "a 4 KiB O_DIRECT read failed otherwise: $out"
    fi
fi
mkfs.xfs -q -f -b size=16384 -s size="$logical" "$dev"
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
if dmesg | grep -E 'WARNING|BUG|I/O error|Call Trace|blk_update_request'; then
    echo "dmesg has complaints"
else
    echo "dmesg clean"
fi
