#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run on a machine where the kernel nbd driver cannot be used:
# --attach=nbd is refused in one line before any server starts, whatever
# the block size, and leaves nothing behind; --attach=auto says why it
# falls back to loop and works.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
requires mkfs.ext4

# As largeblock-run would: load the module if there is a modprobe.
if [ ! -e /sys/module/nbd ] && command -v modprobe >/dev/null; then
    modprobe nbd 2>/dev/null
fi
if [ -e /sys/module/nbd ] && [ -e /dev/nbd0 ] &&
   command -v nbd-client >/dev/null; then
    skip "the kernel nbd driver is usable here (test-run-nbd-xfs.sh uses it)"
fi

# A server started leaves a mark.
mkdir "$tmpdir/bin"
printf '#!/bin/sh\ntouch "%s/server-started"\nexec "%s" "$@"\n' \
    "$tmpdir" "$(command -v "$NBDKIT")" >"$tmpdir/bin/nbdkit"
chmod +x "$tmpdir/bin/nbdkit"
export NBDKIT="$tmpdir/bin/nbdkit"

expect_refusal () {
    [ "$rc" -eq 1 ] || fail "--attach=nbd $*: expected status 1, got $rc"
    [ "$(wc -l <"$run_err")" -eq 1 ] || fail "--attach=nbd $*: not one line"
    grep -qE '^largeblock-run: --attach=nbd: .+; use --attach=loop$' \
        "$run_err" || fail "--attach=nbd $*: unexpected message"
    [ ! -e "$tmpdir/server-started" ] || fail "--attach=nbd $*: a server started"
    assert_nothing_left
}

lb_run --attach=nbd size=64M -- true
expect_refusal size=64M
if [ ! -e /sys/module/nbd ] && ! command -v modprobe >/dev/null; then
    grep -qxF "largeblock-run: --attach=nbd: the kernel nbd module is not loaded (no /sys/module/nbd) and there is no modprobe to load it; use --attach=loop" \
        "$run_err" || fail "the message does not say the module is missing"
fi
reason=$(sed 's/^largeblock-run: --attach=nbd: \(.*\); use --attach=loop$/\1/' \
         "$run_err")

lb_run --attach=nbd --mkfs=xfs --mount blksize=16k logical-blksize=16k \
      size=64M -- true
expect_refusal logical-blksize=16k

# auto: loop, and --verbose says why not nbd.
lb_run --verbose --mkfs=ext4 --mount blksize=16k logical-blksize=4k size=256M \
      -- sh -c 'case $LARGEBLOCK_DEV in /dev/loop*) ;; *) exit 10;; esac
                [ "$(blockdev --getss "$LARGEBLOCK_DEV")" = 4096 ] || exit 11
                bash "$abs_top_srcdir/tests/write-remount-verify.sh" &&
                exit 42'
[ "$rc" -eq 42 ] || fail "--attach=auto: expected status 42, got $rc"
grep -qxF "largeblock-run: --attach=auto: using loop: $reason" "$run_err" ||
    fail "--attach=auto did not say why it uses loop"
assert_nothing_left
echo "nbd refused where unavailable; auto fell back to loop"
