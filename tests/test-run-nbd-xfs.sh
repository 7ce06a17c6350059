#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run --attach=nbd with the real kernel nbd driver: XFS on a
# 4k-logical nbd device keeps data across unmount and mount, and
# teardown disconnects the device; with Linux 6.15 or later also 16k
# logical blocks.  Skips where the nbd driver cannot be used.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
requires mkfs.xfs
requires nbd-client

if [ ! -e /sys/module/nbd ] && command -v modprobe >/dev/null; then
    modprobe nbd 2>/dev/null
fi
[ -e /sys/module/nbd ] ||
    skip "the kernel nbd module is not available (no /sys/module/nbd)"
[ -e /dev/nbd0 ] || skip "the nbd module is loaded but /dev/nbd0 is missing"

# COMMAND: checks the device, writes, remounts, verifies; records the
# device so that a failing test's cleanup can disconnect it.
cat >"$tmpdir/check.sh" <<'SCRIPT'
set -eu
echo "$LARGEBLOCK_DEV" >>"$TMPDIR/nbd-devices"
case $LARGEBLOCK_DEV in /dev/nbd[0-9]*) ;; *) echo "not nbd"; exit 10;; esac
[ -e "/sys/block/${LARGEBLOCK_DEV#/dev/}/pid" ] || { echo "not connected"; exit 11; }
[ "$(blockdev --getss "$LARGEBLOCK_DEV")" = "$LARGEBLOCK_LOGICAL_BLKSIZE" ] ||
    { echo "wrong logical block size"; exit 12; }
bash "$abs_top_srcdir/tests/write-remount-verify.sh"
exit 42
SCRIPT

lb_run --attach=nbd --mkfs=xfs --fs-blksize=4096 --mount \
      blksize=16k logical-blksize=4k size=1G -- bash "$tmpdir/check.sh"
[ "$rc" -eq 42 ] || fail "XFS on 4k nbd: expected status 42, got $rc"
assert_nothing_left

# Logical blocks above the page size: the block layer takes them from
# Linux 6.15 on; nbd-client passes -b through.
IFS=. read -r major minor _ <<<"$(uname -r)"
if (( major > 6 || (major == 6 && minor >= 15) )); then
    lb_run --attach=nbd --mkfs=xfs --mount blksize=16k logical-blksize=16k \
          size=1G -- bash "$tmpdir/check.sh"
    [ "$rc" -eq 42 ] || fail "XFS on 16k nbd: expected status 42, got $rc"
    assert_nothing_left
else
    echo "Linux $(uname -r) is older than 6.15: 16k logical blocks not tried"
fi
echo "XFS on the kernel nbd driver kept its data; nothing left"
