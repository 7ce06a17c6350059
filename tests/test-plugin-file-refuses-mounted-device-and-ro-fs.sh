#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# file= refuses at start-up, in one line, what it could only break or
# fail on later (issue 25, B5 and W5; root only):
#  - a mounted block device: opened O_EXCL for read-write, the kernel
#    says it is busy and nbdkit exits; once unmounted it is served;
#  - a file on a read-only filesystem without -r: "file=X is on a
#    read-only filesystem: serve it with nbdkit -r" before any client
#    (it used to start and fail every handshake); with -r it serves the
#    data read-only.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

[ "$(id -u)" = 0 ] || skip "needs root (mounts and loop devices)"
requires losetup
requires mkfs.ext4
loop_device_usable || skip "no loop device (/dev/loop-control) or none free"

# refused NAME MESSAGE NBDKIT-ARGS...: nbdkit exits non-zero at start-up
# with MESSAGE as its one line, never running its --run command.
refused () {
    local name=$1 msg=$2; shift 2
    if "$NBDKIT" -U - "$@" --run 'echo served' >"$tmpdir/$name.out" 2>&1; then
        cat "$tmpdir/$name.out"; fail "$name: served"
    fi
    [ "$(cat "$tmpdir/$name.out")" = "nbdkit: error: largeblock: $msg" ] ||
        { cat "$tmpdir/$name.out"; fail "$name: not the one line: $msg"; }
}

mounted_block_device () {
    local img=$tmpdir/dev.img mnt=$tmpdir/mnt loop
    truncate -s 8M "$img"
    mkfs.ext4 -q "$img" || fail "mkfs.ext4 failed"
    loop=$(losetup --find --show "$img") || fail "losetup failed"
    cleanup_fn "detach_loop_of '$loop' '$img'"
    mkdir "$mnt"
    mount "$loop" "$mnt" || fail "cannot mount $loop"
    cleanup_fn "umount '$mnt' 2>/dev/null"
    echo data >"$mnt/file"
    sync

    refused mounted "file=$loop: block device is in use (mounted, or opened exclusively by another program): refusing to write to it" \
        "$LARGEBLOCK_PLUGIN" "file=$loop"
    umount "$mnt"
    "$NBDKIT" -U - "$LARGEBLOCK_PLUGIN" "file=$loop" --run 'nbdinfo --size "$uri"' \
        >"$tmpdir/unmounted.out" 2>&1 ||
        { cat "$tmpdir/unmounted.out"; fail "the unmounted device was refused"; }
    echo "mounted block device: refused; unmounted: served"
}

read_only_filesystem () {
    local dir=$tmpdir/ro want
    mkdir "$dir"
    mount -t tmpfs -o size=4M lbtest "$dir" || fail "cannot mount tmpfs on $dir"
    cleanup_fn "umount -l '$dir'"
    head -c 1M /dev/urandom >"$dir/disk.img"
    want=$(sha256sum <"$dir/disk.img" | cut -d' ' -f1)
    mount -o remount,ro "$dir" || fail "cannot remount $dir read-only"

    refused rofs "file=$dir/disk.img is on a read-only filesystem: serve it with nbdkit -r" \
        "$LARGEBLOCK_PLUGIN" "file=$dir/disk.img" logical-blksize=4k
    start_nbdkit ro -r "$LARGEBLOCK_PLUGIN" "file=$dir/disk.img" \
        logical-blksize=4k
    nbdsh -u "$(uri_of ro)" -c "
import hashlib
assert h.is_read_only()
assert hashlib.sha256(h.pread(1 << 20, 0)).hexdigest() == '$want'
" || fail "the file was not served with -r"
    stop_server "$(cat "$tmpdir/ro.pid")"
    echo "read-only filesystem: refused without -r, served with -r"
}

mounted_block_device
read_only_filesystem
echo PASS
