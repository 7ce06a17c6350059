#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run --crash-test runs the read-only checker only once its
# unmount has really let the device go.  A mount namespace made while
# the filesystem is mounted (a test or a daemon beside us) keeps a copy
# of the mount: our umount(2) then returns at once while the filesystem
# lives on in the copy, and a checker run at that moment found it busy,
# or its log dirty.  Here the --check makes such a copy that lives two
# seconds; the run must wait for it and pass.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
requires mkfs.xfs
requires xfs_repair
requires unshare
requires setsid

holder_pid="$tmpdir/holder.pid"
stop_holder () {
    [ -s "$holder_pid" ] && kill "$(cat "$holder_pid")" 2>/dev/null
    return 0
}
cleanup_fn stop_holder

# setsid: out of largeblock-run's reach for the check's process group,
# so the copy outlives the check; its pid is ours to stop.  Then a
# change the filesystem logs: while the copy holds it, its log is dirty.
check='setsid unshare --mount --propagation private sleep 3 \
    </dev/null >/dev/null 2>&1 & echo $! >"'"$holder_pid"'"; sleep 0.5
    echo more >"$LARGEBLOCK_MNT/g"; sync'
lb_run --crash-test --mkfs=xfs --mount --check="$check" size=512M \
    blksize=16k logical-blksize=4k write-cache=volatile power-cut-seed=3 \
    -- sh -c 'echo data >"$LARGEBLOCK_MNT/f"; sync'
[ -s "$holder_pid" ] || fail "the check did not start the namespace copy"
[ "$rc" -eq 0 ] || fail "a device held by a namespace copy failed the run: status $rc"
assert_nothing_left
echo PASS
