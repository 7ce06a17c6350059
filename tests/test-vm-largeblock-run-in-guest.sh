#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run inside a guest, against the guest kernel's real nbd
# driver (nbdkit and the plugin run in the guest too): --attach=auto
# chooses nbd there, XFS is made and mounted on a device with 16384-byte
# logical blocks (the default guest kernel, >= 6.15, takes them), and
# SIGTERM during the command tears everything down (nbd disconnected,
# nothing mounted).
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/vm-functions.sh" || exit 1

lb_vm --memory=2G size=64M -- '
set -u
connected () { ls /sys/block/nbd*/pid 2>/dev/null | wc -l; }
largeblock-run --attach=auto --verbose --mkfs=xfs --mount \
    blksize=16k logical-blksize=16k size=512M -- sh -c "
      echo dev=\$LARGEBLOCK_DEV
      echo sector=\$(blockdev --getss \$LARGEBLOCK_DEV)
      echo fsblock=\$(stat -f -c %S \$LARGEBLOCK_MNT)
      echo hello >\$LARGEBLOCK_MNT/f && sync"
echo "first run: $?"
echo "connected after: $(connected)"

largeblock-run --attach=nbd --mkfs=xfs --mount blksize=16k \
    logical-blksize=16k size=512M -- sh -c "touch /tmp/ready; exec sleep 60" &
pid=$!
i=0; while [ ! -e /tmp/ready ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
echo "mounted before: $(grep -c " xfs " /proc/mounts)"
kill -TERM $pid; wait $pid
echo "signalled run: $?"
echo "mounted after: $(grep -c " xfs " /proc/mounts)"
echo "connected after: $(connected)"
'
[ "$rc" -eq 0 ] || fail "largeblock-vm exited with $rc"
expect_err "--attach=auto: using the kernel nbd driver"
grep -qE '^dev=/dev/nbd[0-9]+$' "$vm_out" || fail "not an nbd device"
expect_out "sector=16384"
expect_out "fsblock=16384"
expect_out "first run: 0"
expect_out "mounted before: 1"
expect_out "signalled run: 143"
expect_out "mounted after: 0"
[ "$(grep -c '^connected after: 0$' "$vm_out")" -eq 2 ] ||
    fail "an nbd device stayed connected"
vm_assert_nothing_left
