#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run: a COMMAND that leaves a device mounted elsewhere.
# Teardown names the mount in one line, keeps the device attached and
# never kills its nbdkit under the mounted filesystem, does not retry
# loudly, and exits non-zero.  --cleanup then names the
# same mount while it lasts, and once it is unmounted removes everything.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
source "$abs_top_srcdir/tests/signal-functions.sh" || exit 1
requires mkfs.xfs

# Under $tmpdir, so that the cleanup on failure (kill_leftovers) finds it.
other="$tmpdir/other"
mkdir "$other"
lb_run --disks=2 "${DISK[@]}" -- sh -c \
    'umount "$LARGEBLOCK_MNT1" && mount "$LARGEBLOCK_DEV1" "$1"' sh "$other"
[ "$rc" -ne 0 ] || fail "teardown left a device behind, yet status 0"
grep -q "is still mounted on $other (not by largeblock-run)" "$run_err" ||
    fail "teardown did not name the mount on $other"
grep -q "largeblock-run --cleanup" "$run_err" ||
    fail "teardown did not say how to finish"
grep -qiE "ignored SIGTERM|killing" "$run_err" &&
    fail "teardown killed a server under a mounted filesystem"
lines=$(wc -l <"$run_err")
[ "$lines" -le 2 ] || fail "teardown printed $lines lines, not one"

# Its server was not killed.  (It stops serving all the same once
# largeblock-run exits: nbdkit -f asks the kernel for SIGTERM when its
# parent dies.)
pgrep -f -- "$tmpdir/largeblock-run\..*/disk1.sock" >/dev/null ||
    fail "the server of the still-mounted disk was killed"

# --cleanup leaves it while it is mounted, naming the mount.
lb_run --cleanup
[ "$rc" -eq 1 ] || fail "--cleanup with the device mounted: status $rc"
grep -q "is mounted on $other" "$run_err" ||
    fail "--cleanup did not name the mount on $other"
mountpoint -q "$other" || fail "--cleanup unmounted the user's mount"

umount "$other"
lb_run --cleanup
[ "$rc" -eq 0 ] || fail "--cleanup once unmounted: status $rc"
assert_nothing_left
echo "PASS: a device mounted elsewhere was named, kept with its server, and cleaned later"
