#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-verify catches a deliberately broken server (the test plugin
# tests/helpers/broken-plugin.c, 4096-byte blocks) and names each bug with its
# offsets, exiting with 2 (data error):
#  - misdirect: the block written for 12288 lands at 4096, so 4096 holds
#    "the block stamped for 12288" and 12288 was never written;
#  - tear: writes to the block at 8192 drop sectors 1 and 3 (mask 10);
#  - stale: after a good run, writes are acknowledged and lost, so every
#    block the second run overwrote still holds generation 1.
# The same plugin without a bug (mode=good) passes: exit 0.  Misaligned
# requests refused with EIO instead of EINVAL, or misaligned writes
# acknowledged and lost, are non-conformant (exit 1) with the data intact.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/verify-functions.sh"

[ -f "$BROKEN_PLUGIN" ] || fail "$BROKEN_PLUGIN was not built"
# One connection, one request in flight, one sequential round: the order
# of writes, and so what a misdirected write overwrites, is fixed.
serial=(--write --seed 3 --rounds 1 --connections 1 --depth 1)

start_nbdkit good "$BROKEN_PLUGIN" size=1M mode=good
lb_verify good "${serial[@]}" "$(uri_of good)"
expect_rc good 0
assert_json good "r['misaligned_policy'] == 'refuse'" "blocks['good'] == 256"

start_nbdkit mis "$BROKEN_PLUGIN" size=1M mode=misdirect target=12288 \
    dest=4096
lb_verify mis "${serial[@]}" "$(uri_of mis)"
expect_rc mis 2
assert_json mis \
    "r['result'] == 'data error'" \
    "blocks == {'good': 254, 'never-written': 1, 'stale': 0, \
'misdirected': 1, 'torn': 0, 'foreign': 0}" \
    "'misdirected: block at 4096 holds the block stamped for 12288 \
(generation 1, intact)' in errors" \
    "'never-written: block at 12288 (expected generation 1)' in errors" \
    "probes['write 1048576 (maximum)']['detail'] == 'read back differs'"

start_nbdkit tear "$BROKEN_PLUGIN" size=1M mode=tear target=8192 sectors=10
lb_verify tear "${serial[@]}" "$(uri_of tear)"
expect_rc tear 2
assert_json tear \
    "blocks['torn'] == 1 and blocks['good'] == 255" \
    "errors == ['torn: block at 8192 generation 1, sectors 1,3 of 8 differ']"

freeze="$tmpdir/freeze"
start_nbdkit stale "$BROKEN_PLUGIN" size=1M mode=stale freeze="$freeze"
lb_verify stale1 --write --seed 5 --rounds 1 "$(uri_of stale)"
expect_rc stale1 0
touch "$freeze"
lb_verify stale2 --write --seed 5 --rounds 2 "$(uri_of stale)"
expect_rc stale2 2
assert_json stale2 \
    "blocks['stale'] > 0 and blocks['good'] + blocks['stale'] == 256" \
    "r['integrity']['errors_total'] == blocks['stale']" \
    "all(e.startswith('stale: block at ') and \
e.endswith(' holds generation 1, expected 2') for e in errors)"
start_nbdkit eio "$BROKEN_PLUGIN" size=1M misaligned=eio
lb_verify eio --write --seed 4 "$(uri_of eio)"
expect_rc eio 1
assert_json eio \
    "r['result'] == 'non-conformant' and r['misaligned_policy'] == 'broken'" \
    "len(failed) == 4 and blocks['good'] == 256" \
    "probes['write 4096 at +2048 (misaligned offset)']['detail'] == \
'refused with a wrong errno: Input/output error (expected EINVAL)'"

start_nbdkit drop "$BROKEN_PLUGIN" size=1M misaligned=drop
lb_verify drop --write --seed 4 "$(uri_of drop)"
expect_rc drop 1
assert_json drop \
    "failed == ['write 4096 at +2048 (misaligned offset)', \
'write 6144 at +0 (misaligned length)']" \
    "probes['write 6144 at +0 (misaligned length)']['detail'] == \
'succeeded with wrong data'" \
    "probes['read 4096 at +2048 (misaligned offset)']['detail'] == \
'served correctly'"
echo PASS
