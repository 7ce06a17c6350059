#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's and the plugin page's example 2 show what
# `blockdev --getss --getpbsz "$loop"` prints on a loop device with
# 16 KiB sectors: this makes one (over a small file, as root) and checks
# that both pages show its real output, one number per line.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root for a loop device"
requires losetup
requires blockdev

img=$(mktemp /var/tmp/lb-docs-blockdev.XXXXXX)
cleanup_fn rm -f "$img"
truncate -s 1M "$img"
loop=$(losetup --find --show --sector-size 16384 "$img" 2>"$tmpdir/err") ||
    skip "no loop device with 16k sectors: $(cat "$tmpdir/err")"
cleanup_fn detach_loop_of "$loop" "$img"

out=$(blockdev --getss --getpbsz "$loop")
echo "$out"
[ "$(echo "$out" | wc -l)" -eq 2 ] || fail "blockdev did not print two lines"
shown="# $(echo "$out" | sed -n 1p), then $(echo "$out" | sed -n 2p) (two lines)"
for doc in README.md docs/nbdkit-largeblock-plugin.pod; do
    line=$(grep 'blockdev --getss --getpbsz "$loop"' "$abs_top_srcdir/$doc") ||
        fail "$doc has no blockdev example for \$loop"
    [[ $line == *"$shown" ]] || fail "$doc shows '${line#*#}', blockdev prints '$shown'"
done
exit 0
