#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Data written by largeblock-verify --write survives a server restart on a
# persistent backend (nbdkit's file plugin): --verify-only with the same
# seed and rounds passes against the new server.  After 4096 bytes at
# 1M are overwritten behind the server's back, --verify-only exits 2 and
# names exactly those eight 512-byte blocks as foreign.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/verify-functions.sh"

disk="$tmpdir/disk.img"
truncate -s 4M "$disk"
check=(--seed 31 --rounds 5 --size 4M)

start_nbdkit first file "$disk"
lb_verify write --write "${check[@]}" "$(uri_of first)"
expect_rc write 0
assert_json write "r['integrity']['block_size'] == 512" \
    "blocks['good'] == 8192"
stop_server "$(cat "$tmpdir/first.pid")"

start_nbdkit second file "$disk"
lb_verify reread --verify-only 31 --rounds 5 --size 4M "$(uri_of second)"
expect_rc reread 0
assert_json reread "r['integrity']['writes'] == 0" "blocks['good'] == 8192"
stop_server "$(cat "$tmpdir/second.pid")"

# 4096 bytes of 0xa5 at 1M, as a disk might return after a bad reboot.
head -c 4096 /dev/zero | tr '\0' '\245' |
    dd of="$disk" bs=4096 seek=256 conv=notrunc status=none
start_nbdkit third file "$disk"
lb_verify changed --verify-only 31 --rounds 5 --size 4M "$(uri_of third)"
expect_rc changed 2
assert_json changed \
    "blocks['foreign'] == 8 and blocks['good'] == 8184" \
    "[e.split(' (')[0] for e in errors] == \
['foreign: block at %d' % (1048576 + 512 * i) for i in range(8)]"

# A different seed finds nothing of its own.
lb_verify other --verify-only 32 --rounds 5 --size 4M "$(uri_of third)"
expect_rc other 2
echo PASS
