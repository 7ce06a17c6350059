#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-verify gives the largeblock plugin a clean bill in several
# geometries: the advertised sizes are reported as given, every probe
# passes, the misaligned policy is "refuse" with misaligned=error and
# "serve" with misaligned=allow, and every stamped block verifies.  It
# also refuses to write without --write or to a read-only export, and
# rejects a bad region.  Where the maximum request is the minimum, the
# tool's own set-up keeps to it too.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/verify-functions.sh"

# Under valgrind every request is slow, and the geometries repeat the
# plugin's paths with other shifts, so there one of each kind runs: 512
# logical in 4k (the defaults), the 1M maximum request whose probes are
# checked below, misaligned=allow, and a maximum request of one block.
vg_geometries=" g512 g16k allow16k max8k "

# name | plugin parameters | min pref max | policy
while IFS='|' read -r name params sizes policy; do
    if [ -n "${LB_VALGRIND:-}" ] && [[ $vg_geometries != *" $name "* ]]; then
        continue
    fi
    read -r min pref max <<<"$sizes"
    # shellcheck disable=SC2086
    start_server "$name" $params
    lb_verify "$name" --write --seed 11 --connections 2 --depth 4 \
        "$(uri_of "$name")"
    expect_rc "$name" 0
    assert_json "$name" \
        "r['result'] == 'ok' and not failed" \
        "r['block_size'] == {'minimum': $min, 'preferred': $pref, \
'maximum': $max}" \
        "r['misaligned_policy'] == '$policy'" \
        "r['disconnects'] == 0" "r['direct_io'] is None" \
        "blocks['good'] * max($min, 512) == r['integrity']['size']" \
        "r['integrity']['writes'] > 0 and r['integrity']['failed_requests'] == 0"
    # the data stays verifiable
    lb_verify "$name-again" --verify-only 11 "$(uri_of "$name")"
    expect_rc "$name-again" 0
done <<'TABLE'
g512|size=8M blksize=4k|512 4096 33554432|refuse
g4k|size=8M blksize=16k logical-blksize=4k|4096 16384 33554432|refuse
g16k|size=16M blksize=16k logical-blksize=16k max-request=1M|16384 16384 1048576|refuse
g64k|size=8M blksize=64k logical-blksize=64k max-request=2M|65536 65536 2097152|refuse
allow4k|size=8M blksize=16k logical-blksize=4k misaligned=allow|4096 16384 33554432|serve
allow16k|size=8M blksize=64k logical-blksize=16k max-request=1M misaligned=allow|16384 65536 1048576|serve
max4k|size=8M blksize=4k logical-blksize=4k max-request=4k|4096 4096 4096|refuse
max8k|size=8M blksize=8k logical-blksize=4k max-request=8k|4096 8192 8192|refuse
max64k|size=8M blksize=64k logical-blksize=64k max-request=64k|65536 65536 65536|refuse
TABLE

# The largest request and one above it are probed where they fit.
assert_json g16k \
    "probes['write 1048576 (maximum)']['result'] == 'pass'" \
    "probes['write 1064960 (above maximum)']['result'] == 'pass'" \
    "probes['read 1064960 (above maximum)']['result'] == 'pass'"

# Without --write nothing is written, and the tool says why.
uri=$(uri_of g512)
"$VERIFY" "$uri" >"$tmpdir/nowrite.out" 2>&1 && rc=0 || rc=$?
[ "$rc" -eq 3 ] || fail "without --write: exit $rc, expected 3"
grep -q "refusing to write.*pass --write" "$tmpdir/nowrite.out" ||
    fail "without --write: $(cat "$tmpdir/nowrite.out")"

# A region the export cannot hold is a usage error naming the value.
"$VERIFY" --write --offset 1000 "$uri" >"$tmpdir/off.out" 2>&1 && rc=0 ||
    rc=$?
[ "$rc" -eq 3 ] && grep -q -- "--offset 1000 is not a multiple" \
    "$tmpdir/off.out" || fail "--offset 1000: exit $rc: $(cat "$tmpdir/off.out")"
"$VERIFY" --write --size 16M "$uri" >"$tmpdir/size.out" 2>&1 && rc=0 ||
    rc=$?
[ "$rc" -eq 3 ] || fail "--size 16M on 8M: exit $rc: $(cat "$tmpdir/size.out")"
# A read-only export is not written to, and not merely by failing.
start_nbdkit ro -r memory 1M
lb_verify ro --write "$(uri_of ro)"
expect_rc ro 3
grep -q "is read-only: --write cannot write to it" "$tmpdir/ro.verr" ||
    fail "read-only: $(cat "$tmpdir/ro.verr")"

# Nothing listening: the tool could not run.
lb_verify nobody --write "nbd+unix:///?socket=$tmpdir/nobody.sock"
expect_rc nobody 4
grep -q "cannot connect to nbd+unix:///?socket=$tmpdir/nobody.sock" \
    "$tmpdir/nobody.verr" || fail "no connection: $(cat "$tmpdir/nobody.verr")"
echo PASS
