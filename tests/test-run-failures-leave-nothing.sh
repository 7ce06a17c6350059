#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run: every failure path tears down and leaves nothing:
# invalid PARAM (plugin's message, nothing attached), unknown --attach
# method, a bad LARGEBLOCK_STOP_TIMEOUT, unknown filesystem, an XFS
# sector size above 32k (refused in one line before anything starts),
# failing mkfs option, failing and killed COMMAND, SIGTERM to
# largeblock-run during COMMAND and during mkfs.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
requires mkfs.xfs
requires mkfs.ext4

# Invalid parameter: the plugin's own message, nothing attached.
msg=$("$NBDKIT" -f -U "$tmpdir/x.sock" "$LARGEBLOCK_PLUGIN" blksize=3k \
      size=1M 2>&1 | grep -o 'largeblock: .*' | head -1)
[ -n "$msg" ] || fail "nbdkit gave no message for blksize=3k"
lb_run --mkfs=xfs blksize=3k size=1M -- true
[ "$rc" -ne 0 ] || fail "invalid parameter accepted"
expect_msg "$msg"
assert_nothing_left

# Without CAP_SYS_ADMIN: says which capability, attaches nothing.
if command -v capsh >/dev/null; then
    rc=0
    capsh --drop=cap_sys_admin -- -c \
        "exec '$LARGEBLOCK_RUN' size=64M -- true" 2>"$run_err" || rc=$?
    cat "$run_err" >&2
    [ "$rc" -ne 0 ] || fail "ran without CAP_SYS_ADMIN"
    expect_msg "missing capability CAP_SYS_ADMIN"
    assert_nothing_left
else
    echo "capsh not installed: capability check not tested"
fi

lb_run --attach=floppy size=64M -- true
[ "$rc" -eq 1 ] || fail "unknown --attach accepted"
expect_msg "largeblock-run: --attach=floppy: must be auto, nbd or loop"
assert_nothing_left

# A stop timeout that is not whole seconds 1..3600: one line, nothing starts.
for bad in 0 abc 5s 3601; do
    LARGEBLOCK_STOP_TIMEOUT=$bad lb_run size=64M -- true
    [ "$rc" -eq 1 ] || fail "LARGEBLOCK_STOP_TIMEOUT=$bad: status $rc"
    [ "$(wc -l <"$run_err")" -eq 1 ] ||
        fail "LARGEBLOCK_STOP_TIMEOUT=$bad: expected one line"
    expect_msg "largeblock-run: LARGEBLOCK_STOP_TIMEOUT=$bad: must be whole seconds from 1 to 3600"
    assert_nothing_left
done

lb_run --mkfs=zfs size=64M -- true
[ "$rc" -ne 0 ] || fail "unknown filesystem accepted"
expect_msg "unknown filesystem"
assert_nothing_left

# A sector size mkfs.xfs does not take: one line, before anything starts
# (not mkfs.xfs's usage text).
lb_run --mkfs=xfs --mount blksize=64k logical-blksize=64k size=512M -- true
[ "$rc" -eq 1 ] || fail "64k XFS sectors: expected status 1, got $rc"
[ "$(wc -l <"$run_err")" -eq 1 ] || fail "64k XFS sectors: expected one line"
expect_msg "largeblock-run: --mkfs=xfs: logical-blksize=65536 is above XFS's largest sector size (32768)"
assert_nothing_left

lb_run --mkfs=xfs --mkfs-options=--no-such-option --mount size=64M -- true
[ "$rc" -ne 0 ] || fail "failing mkfs gave status 0"
expect_msg "mkfs.xfs failed"
assert_nothing_left

# ext4 on 4k logical / 16k physical; a failing COMMAND's status comes back.
# (A loop device reports physical = logical whatever the file's server
# prefers, so only the exported variable carries the 16k.)
lb_run --mkfs=ext4 --mount blksize=16k logical-blksize=4k size=256M \
      -- sh -c '[ "$(blockdev --getss "$LARGEBLOCK_DEV")" = 4096 ] &&
                [ "$LARGEBLOCK_PHYSICAL_BLKSIZE" = 16384 ] &&
                echo hi >"$LARGEBLOCK_MNT/f" && sync && exit 3'
[ "$rc" -eq 3 ] || fail "ext4 4k/16k: expected status 3, got $rc"
assert_nothing_left

lb_run size=64M -- sh -c 'kill -KILL $$'
[ "$rc" -eq 137 ] || fail "killed COMMAND: expected 137, got $rc"
assert_nothing_left

# --disks=2: two distinct devices.
lb_run --disks=2 blksize=16k logical-blksize=16k size=64M \
      -- sh -c '[ -b "$LARGEBLOCK_DEV" ] && [ -b "$LARGEBLOCK_DEV1" ] &&
                [ "$LARGEBLOCK_DEV" != "$LARGEBLOCK_DEV1" ]'
[ "$rc" -eq 0 ] || fail "--disks=2: status $rc"
assert_nothing_left

# SIGTERM / SIGINT to largeblock-run while COMMAND runs, and during mkfs
# (a fake mkfs.xfs first on PATH that sleeps).
signal_during TERM "$tmpdir/ready" --mkfs=xfs --mount size=512M \
    -- sh -c 'touch "$TMPDIR/ready"; sleep 60'
[ "$rc" -eq 143 ] || fail "SIGTERM during COMMAND: expected 143, got $rc"
assert_nothing_left
signal_during INT "$tmpdir/ready" size=64M \
    -- sh -c 'touch "$TMPDIR/ready"; sleep 60'
[ "$rc" -eq 130 ] || fail "SIGINT during COMMAND: expected 130, got $rc"
assert_nothing_left

# Without COMMAND: prints the device and mount point, waits for a signal.
"$LARGEBLOCK_RUN" --mkfs=xfs --mount size=512M >"$tmpdir/summary" \
    2>"$run_err" &
pid=$!
for (( i=0; i<3000; i++ )); do
    [ -s "$tmpdir/summary" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
done
read -r dev mnt <"$tmpdir/summary" || fail "no summary printed"
[ -b "$dev" ] && grep -qF " $mnt xfs " /proc/mounts ||
    fail "summary '$dev $mnt' is not a mounted device"
kill -HUP "$pid"
rc=0; wait "$pid" || rc=$?
[ "$rc" -eq 129 ] || fail "SIGHUP while waiting: expected 129, got $rc"
assert_nothing_left

mkdir "$tmpdir/bin"
printf '#!/bin/sh\ntouch "%s/ready"\nexec sleep 60\n' "$tmpdir" \
    >"$tmpdir/bin/mkfs.xfs"
chmod +x "$tmpdir/bin/mkfs.xfs"
PATH="$tmpdir/bin:$PATH" signal_during TERM "$tmpdir/ready" \
    --mkfs=xfs --mount size=64M -- true
[ "$rc" -eq 143 ] || fail "SIGTERM during mkfs: expected 143, got $rc"
assert_nothing_left
echo "all failure paths left nothing behind"
