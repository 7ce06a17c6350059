#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-vm: SIGTERM, SIGINT or SIGHUP at any step -- starting the
# server, packing the guest, starting QEMU, the guest's command -- ends
# it with status 128+signal and leaves no QEMU, no nbdkit and no private
# directory behind.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/vm-functions.sh" || exit 1

mkdir "$tmpdir/bin"
for tool in nbdkit cpio qemu-system-x86_64; do
    ln -s "$abs_top_srcdir/tests/helpers/slow-tool.sh" "$tmpdir/bin/$tool"
done
export SLOW_NBDKIT_REAL=$NBDKIT NBDKIT="$tmpdir/bin/nbdkit"
export PATH="$tmpdir/bin:$PATH" SLOW_WHEN=before
signum () { kill -l "$1"; }

# check SIG: the last run ended by SIG, with nothing left.
check () {
    [ "$rc" -eq $((128 + $(signum "$1"))) ] ||
        fail "SIG$1 during $2: expected status $((128 + $(signum "$1"))), got $rc"
    vm_assert_nothing_left
    echo "SIG$1 during $2: clean"
}

for step in nbdkit:TERM cpio:INT qemu-system-x86_64:HUP; do
    export SLOW_TOOL=${step%:*} SLOW_READY="$tmpdir/ready"
    signal_vm_during "${step#*:}" "$SLOW_READY" size=64M -- true
    check "${step#*:}" "$SLOW_TOOL"
done
export SLOW_TOOL=none
for sig in TERM INT; do
    signal_vm_during $sig "stdout:ready" size=64M -- 'echo ready; sleep 100'
    check $sig "the guest's command"
done
