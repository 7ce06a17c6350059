#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-vm: bad input gets one clear line and leaves nothing running
# -- a missing kernel, a kernel that does not boot, bad options and
# parameters; a failing command's status comes back; a timeout stops the
# guest with status 124; a guest kernel panic is named.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/vm-functions.sh" || exit 1

# expect_failure STATUS MESSAGE ARGS...
expect_failure () {
    local want=$1 msg=$2; shift 2
    lb_vm "$@"
    [ "$rc" -eq "$want" ] || fail "$*: expected status $want, got $rc"
    expect_err "$msg"
    vm_assert_nothing_left
}

expect_failure 125 "largeblock-vm: --kernel=$tmpdir/none: cannot read it" \
    --kernel="$tmpdir/none" size=64M -- true
head -c 1048576 /dev/urandom >"$tmpdir/garbage"
expect_failure 125 "largeblock-vm: the guest ended before the command did" \
    --kernel="$tmpdir/garbage" size=64M -- true
expect_failure 125 "largeblock: logical-blksize 3000 is not a power of two" \
    logical-blksize=3000 size=64M -- true
expect_failure 125 "largeblock-vm: --attach=scsi: must be virtio or nbd" \
    --attach=scsi size=64M -- true
expect_failure 125 "largeblock-vm: --connections=2 needs --attach=nbd" \
    --connections=2 size=64M -- true
expect_failure 125 "largeblock-vm: --kernel-release=6.13: must be lbs or 6.12" \
    --kernel-release=6.13 size=64M -- true
LARGEBLOCK_STOP_TIMEOUT=0 expect_failure 125 \
    "largeblock-vm: LARGEBLOCK_STOP_TIMEOUT=0: must be whole seconds from 1 to 3600" \
    size=64M -- true
expect_failure 125 "largeblock-vm: --kernel-release=6.12 chooses a kernel to fetch: not with --kernel or --kernel-deb" \
    --kernel-release=6.12 --kernel="$tmpdir/none" size=64M -- true
expect_failure 125 "largeblock-vm: --modules needs --kernel" \
    --modules=/lib/modules size=64M -- true
expect_failure 125 "largeblock-vm: no COMMAND after --" size=64M
expect_failure 125 "largeblock-vm: the guest kernel panicked: Kernel panic - not syncing: sysrq triggered crash" \
    size=64M -- 'echo 1 >/proc/sys/kernel/sysrq; echo c >/proc/sysrq-trigger'
expect_failure 7 "failing on purpose" size=64M -- 'echo failing on purpose >&2; exit 7'
expect_failure 124 "largeblock-vm: --timeout=3 reached; the guest was stopped" \
    --timeout=3 size=64M -- 'sleep 100'
