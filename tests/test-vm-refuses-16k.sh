#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-vm --kernel-release=6.12: a 6.12 guest kernel cannot take a 16384-byte logical
# block (bs > ps needs 6.15): both attach kinds say so in one line and
# exit with status 123, without running the command.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/vm-functions.sh" || exit 1
requires_kernel_release 6.12

for attach in virtio nbd; do
    lb_vm --kernel-release=6.12 --attach=$attach blksize=16k logical-blksize=16k size=256M \
         -- 'echo the command ran'
    [ "$rc" -eq 123 ] || fail "--attach=$attach: expected status 123, got $rc"
    grep -qE '^largeblock-vm: guest kernel 6\.12\.[^ ]* refuses a 16384-byte logical block size \(needs 6\.15\)$' \
        "$vm_err" || fail "--attach=$attach: no one-line refusal"
    ! grep -q "the command ran" "$vm_out" || fail "the command ran"
    vm_assert_nothing_left
done
