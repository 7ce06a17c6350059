#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run: XFS with 16k blocks on 16k logical sectors keeps data
# across unmount and mount; the server runs with no capabilities; env
# vars reach COMMAND and its exit status comes back.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
requires mkfs.xfs

cat >"$tmpdir/check.sh" <<'SCRIPT'
set -eu
[ "$(stat -f -c %S "$LARGEBLOCK_MNT")" = 16384 ] || { echo "bad fs block size"; exit 10; }
[ "$LARGEBLOCK_LOGICAL_BLKSIZE" = 16384 ] && [ "$LARGEBLOCK_PHYSICAL_BLKSIZE" = 16384 ]
[ "$(blockdev --getss "$LARGEBLOCK_DEV")" = 16384 ]
case $LARGEBLOCK_URI in nbd+unix:///\?socket=$LARGEBLOCK_SOCKET) ;; *) exit 11;; esac
pid=$(cat "$(dirname "$LARGEBLOCK_SOCKET")/disk0.pid")
capeff=$(awk '/^CapEff/ {print $2}' /proc/$pid/status)
[ "$capeff" = 0000000000000000 ] || { echo "server CapEff=$capeff"; exit 12; }
bash "$abs_top_srcdir/tests/write-remount-verify.sh"
exit 42
SCRIPT

lb_run --mkfs=xfs --mount blksize=16k logical-blksize=16k size=2G \
      -- bash "$tmpdir/check.sh"
[ "$rc" -eq 42 ] || fail "expected COMMAND's status 42, got $rc"
assert_nothing_left

# 64k filesystem blocks; 64k sectors if xfsprogs allows (XFS sectors
# stop at 32k), else the largest it allows.
if mkfs.xfs -N -f -b size=65536 -s size=65536 -d file,name=/dev/null,size=1g \
        >/dev/null 2>&1; then sect=65536
else
    echo "xfsprogs refuses 64k sectors; using 32k sectors with 64k blocks"
    sect=32768
fi
lb_run --mkfs=xfs --mount blksize=64k logical-blksize=$sect size=2G \
      -- sh -c '[ "$(stat -f -c %S "$LARGEBLOCK_MNT")" = 65536 ] &&
                echo data >"$LARGEBLOCK_MNT/x" && sync'
[ "$rc" -eq 0 ] || fail "XFS 64k blocks / ${sect} sectors: status $rc"
assert_nothing_left
