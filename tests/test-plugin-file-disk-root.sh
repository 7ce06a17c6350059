#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# File disks where the host has to cooperate (root only; a read-only
# filesystem and a mounted device: test-plugin-file-refuses-mounted-device-and-ro-fs.sh):
#  - a file on a full filesystem: writes get ENOSPC, the data written
#    before is intact and the server keeps answering;
#  - a file whose reads fail with EIO (nbdkit's error filter behind
#    nbdfuse): the client gets EIO, writes still work, the server stays;
#  - a loop device with 4096-byte sectors as file=: logical-blksize=512
#    refused with both numbers, 4096 and 16k accepted;
#  - the kernel path: XFS with 16k blocks and 16k sectors made on a file
#    disk (nbdfuse + losetup --sector-size 16384 --direct-io=on), the
#    server stopped and started again on the same file, the filesystem
#    mounts again and every file's checksum matches.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

[ "$(id -u)" = 0 ] || skip "needs root (mounts and loop devices)"
requires losetup
requires nbdfuse
requires fusermount3
requires mkfs.xfs
[ -c /dev/fuse ] || skip "/dev/fuse is missing"
loop_device_usable || skip "no loop device (/dev/loop-control) or none free"

py () { "$PYTHON_NBD" - "$@"; }

# mount_tmpfs DIR SIZE: a private tmpfs, unmounted on exit.
mount_tmpfs () {
    mkdir -p "$1"
    mount -t tmpfs -o "size=$2" lbtest "$1" || fail "cannot mount tmpfs on $1"
    cleanup_fn "umount -l '$1'"
}

full_filesystem () {
    local dir="$tmpdir/full"
    mount_tmpfs "$dir" 1M
    start_server full "file=$dir/disk.img" size=8M blksize=16k \
        logical-blksize=4k
    py "$tmpdir/full.sock" <<'EOF' || fail "ENOSPC handling failed"
import errno, random, sys, nbd
h = nbd.NBD()
h.connect_unix(sys.argv[1])
chunk, written = 128 << 10, []
for i in range(64):
    data = random.Random(i).randbytes(chunk)
    try:
        h.pwrite(data, i * chunk)
    except nbd.Error as e:
        assert e.errnum == errno.ENOSPC, "expected ENOSPC, got %s" % e
        break
    written.append(data)
else:
    raise AssertionError("8M of writes fitted into a 1M filesystem")
assert 2 <= len(written) <= 8, "%d chunks written" % len(written)
for i, data in enumerate(written):
    assert h.pread(chunk, i * chunk) == data, "chunk %d changed" % i
h.flush()
print("ENOSPC after %d KiB; earlier data intact" % (len(written) * 128))
h.shutdown()
EOF
    kill -0 "$(cat "$tmpdir/full.pid")" || fail "the server died on ENOSPC"
}

eio_from_host () {
    local fuse="$tmpdir/eio.fuse"
    mkdir -p "$fuse"
    "$NBDKIT" -f -U "$tmpdir/bad.sock" -P "$tmpdir/bad.pid" \
        --filter=error memory 4M error=EIO error-pread-rate=100% \
        2>"$tmpdir/bad.err" &
    cleanup_fn stop_server $!
    for _ in $(seq 3000); do [ -s "$tmpdir/bad.pid" ] && break; sleep 0.01; done
    nbdfuse "$fuse/disk" --unix "$tmpdir/bad.sock" &
    cleanup_fn "mountpoint -q '$fuse' && fusermount3 -u '$fuse'"
    for _ in $(seq 1000); do [ -e "$fuse/disk" ] && break; sleep 0.01; done
    [ -e "$fuse/disk" ] || fail "nbdfuse did not start"

    start_server eio "file=$fuse/disk" logical-blksize=4k
    py "$tmpdir/eio.sock" <<'EOF' || fail "EIO was not passed on"
import errno, sys, nbd
h = nbd.NBD()
h.connect_unix(sys.argv[1])
for attempt in range(2):
    try:
        h.pread(4096, 8192)
        raise AssertionError("a read of a failing file succeeded")
    except nbd.Error as e:
        assert e.errnum == errno.EIO, "expected EIO, got %s" % e
h.pwrite(b"\x11" * 4096, 0)
h.flush()
h.shutdown()
EOF
    kill -0 "$(cat "$tmpdir/eio.pid")" || fail "the server died on EIO"
    stop_server "$(cat "$tmpdir/eio.pid")"
    fusermount3 -u "$fuse"
    echo "EIO from the host: passed on, the server kept serving"
}

loop_block_device () {
    truncate -s 64M "$tmpdir/backing.img"
    local loop
    loop=$(losetup --find --show --sector-size 4096 "$tmpdir/backing.img") ||
        fail "losetup failed"
    cleanup_fn "detach_loop_of '$loop' '$tmpdir/backing.img'"

    local out
    out=$("$NBDKIT" -U - "$LARGEBLOCK_PLUGIN" "file=$loop" \
          logical-blksize=512 --run true 2>&1) &&
        fail "logical-blksize=512 on a 4096-byte-sector device was accepted"
    echo "$out" | grep -q "logical-blksize 512 is smaller than the logical sector of block device $loop (4096 bytes" ||
        fail "unclear error: $out"

    local lbs
    for lbs in 4096 16384; do
        out=$("$NBDKIT" -U - "$LARGEBLOCK_PLUGIN" "file=$loop" blksize=16k \
              "logical-blksize=$lbs" --run 'nbdinfo "$uri"' 2>&1) ||
            fail "logical-blksize=$lbs refused: $out"
        echo "$out" | grep -q "block_size_minimum: $lbs" ||
            fail "minimum block size is not $lbs: $out"
        echo "$out" | grep -q "export-size: $((64 << 20))" ||
            fail "size is not the device's: $out"
    done
    echo "loop device: 512 refused, 4096 and 16384 accepted"
}

# attach NAME: the server NAME as a 16k-sector loop device in $dev.
attach () {
    local name=$1 fuse="$tmpdir/$1.fuse"
    mkdir -p "$fuse"
    nbdfuse "$fuse/disk" --unix "$tmpdir/$name.sock" &
    cleanup_fn "mountpoint -q '$fuse' && fusermount3 -u '$fuse'"
    for _ in $(seq 1000); do [ -e "$fuse/disk" ] && break; sleep 0.01; done
    [ -e "$fuse/disk" ] || fail "nbdfuse did not start"
    dev=$(losetup --find --show --sector-size 16384 --direct-io=on \
          "$fuse/disk") || fail "losetup on the FUSE file failed"
    cleanup_fn "detach_loop_of '$dev' '$fuse/disk'"
    [ "$(blockdev --getss "$dev")" = 16384 ] || fail "$dev is not 16k-sector"
}

detach () {
    local name=$1
    losetup -d "$dev"
    fusermount3 -u "$tmpdir/$name.fuse"
    stop_server "$(cat "$tmpdir/$name.pid")"
}

kernel_xfs_survives_restart () {
    local img="$tmpdir/xfs16k.img" mnt="$tmpdir/mnt"
    mkdir -p "$mnt"

    start_server xfs1 "file=$img" size=512M blksize=16k logical-blksize=16k
    attach xfs1
    mkfs.xfs -q -b size=16384 -s size=16384 "$dev" || fail "mkfs.xfs failed"
    mount "$dev" "$mnt" || fail "mounting the 16k XFS failed"
    cleanup_fn "mountpoint -q '$mnt' && umount '$mnt'"
    for i in 1 2 3; do
        head -c $((i * 3 << 20)) /dev/urandom >"$mnt/file$i"
    done
    (cd "$mnt" && sha256sum file1 file2 file3) >"$tmpdir/sums"
    sync
    umount "$mnt"
    detach xfs1

    start_server xfs2 "file=$img" blksize=16k logical-blksize=16k
    attach xfs2
    mount "$dev" "$mnt" || fail "the XFS did not mount after a restart"
    (cd "$mnt" && sha256sum -c --quiet "$tmpdir/sums") ||
        fail "checksums differ after a restart"
    umount "$mnt"
    detach xfs2
    echo "kernel: 16k XFS on a file disk mounts and verifies after a restart"
}

full_filesystem
eio_from_host
loop_block_device
kernel_xfs_survives_restart
echo PASS
