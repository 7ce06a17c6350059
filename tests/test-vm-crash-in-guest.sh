#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run --crash-test --attach=nbd inside a guest on the default
# kernel (>= 6.15), against the guest kernel's real nbd driver: power
# cuts in torn mode on XFS with a 16384-byte logical block (16k/16k) and
# with 16k blocks on 4k sectors (16k/4k), five cuts in all, some during
# the workload (power-cut-after=N requests) and some after it.  Every
# one must recover: the filesystem mounts again and xfs_repair -n is
# clean.  The workload (dd: the guest has no python) fsyncs every third
# file and writes the others with O_DIRECT and no flush, so a cut finds
# writes in the volatile cache to tear; most cuts must have had some.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/vm-functions.sh" || exit 1

# Under TCG the guest's nbdkit can take more than largeblock-run's
# default 5 s to stop after a cut (it flushes nothing, but the emulated
# CPU is slow), so the guest's runs give it 30 s.
lb_vm --memory=2G size=64M -- '
export LARGEBLOCK_STOP_TIMEOUT=30
workload="i=0; while [ \$i -lt 24 ]; do
  if [ \$((i % 3)) -eq 0 ]; then sync=conv=fsync; else sync=oflag=direct; fi
  dd if=/dev/urandom of=\$LARGEBLOCK_MNT/f\$i bs=16k count=3 \$sync status=none || exit 1
  i=\$((i+1)); done"
for c in 16k:16k:80:1 16k:16k:100:2 16k:16k:end:3 16k:4k:90:4 16k:4k:end:5; do
  IFS=: read blk logical cut seed <<CUT
$c
CUT
  after=""; [ "$cut" = end ] || after="power-cut-after=$cut"
  out=$(largeblock-run --crash-test --attach=nbd --mkfs=xfs --mount \
      size=512M blksize=$blk logical-blksize=$logical write-cache=volatile \
      power-cut-mode=torn power-cut-seed=$seed $after -- sh -c "$workload" 2>/tmp/err)
  echo "$blk/$logical cut=$cut: $out (status $?)"
  grep -v "^Warning\|^This method\|^Negotiation\|^Connected\|Input/output error\|small data volume" /tmp/err | sed "s/^/  /"
done
echo "connected after: $(ls /sys/block/nbd*/pid 2>/dev/null | wc -l)"
dmesg | grep -qE "WARNING|BUG|Call Trace" && echo "dmesg has complaints" || echo "dmesg clean"'
[ "$rc" -eq 0 ] || fail "largeblock-vm exited with $rc"
[ "$(grep -c '^16k/16k cut=.*mode=torn .*mount=ok .*fsck=ok (status 0)$' "$vm_out")" -eq 3 ] &&
[ "$(grep -c '^16k/4k cut=.*mode=torn .*mount=ok .*fsck=ok (status 0)$' "$vm_out")" -eq 2 ] ||
    fail "not every cut recovered with xfs_repair -n clean"
# A cut that found the cache empty tested nothing (kept, lost, torn all
# 0); at 16k/16k a block has one logical block, so it is kept or lost,
# never torn.
tested=$(grep ' cut=.*crash-test: ' "$vm_out" | grep -vc ' kept=0 lost=0 torn=0 ')
[ "$tested" -ge 3 ] || fail "only $tested of 5 cuts found unflushed blocks"
expect_out "connected after: 0"
expect_out "dmesg clean"
vm_assert_nothing_left
