#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run --disks=2 --mount=DIR creates DIR when it is missing, as
# --mount=DIR does with one disk, and removes only what it created: a
# DIR it made goes at teardown, one that existed stays.  After a SIGKILL,
# --cleanup removes DIR/0, DIR/1 and DIR too.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
source "$abs_top_srcdir/tests/signal-functions.sh" || exit 1
requires mkfs.xfs
requires mountpoint

geometry=(--mkfs=xfs blksize=16k logical-blksize=16k size=512M)

new="$tmpdir/new"
lb_run --disks=2 --mount="$new" "${geometry[@]}" -- sh -c \
    'mountpoint -q "$LARGEBLOCK_MNT" && mountpoint -q "$LARGEBLOCK_MNT1" &&
     [ "$LARGEBLOCK_MNT1" = "$1/1" ]' sh "$new"
[ "$rc" -eq 0 ] || fail "--disks=2 --mount=DIR with DIR missing: status $rc"
[ ! -e "$new" ] || fail "$new was made by the run but not removed"
assert_nothing_left

old="$tmpdir/old"
mkdir "$old"
lb_run --disks=2 --mount="$old" "${geometry[@]}" -- true
[ "$rc" -eq 0 ] || fail "--disks=2 --mount=DIR with DIR there: status $rc"
[ -d "$old" ] || fail "$old existed before the run, which removed it"
[ -z "$(ls -A "$old")" ] || fail "the run left $(ls -A "$old") in $old"
assert_nothing_left

# SIGKILL, then --cleanup: the journal names DIR as made by the run.
rm -f "$tmpdir/ready"
lb_run_bg --disks=2 --mount="$new" "${geometry[@]}" -- "${READY_CMD[@]}"
wait_ready "$tmpdir/ready" || { lb_run_wait; fail "COMMAND never started"; }
kill -KILL "$lb_pid"
lb_run_wait
cmd_pid=$(our_command_pid) || fail "no COMMAND pid"
kill -KILL "$cmd_pid"
while kill -0 "$cmd_pid" 2>/dev/null; do sleep 0.05; done
mountpoint -q "$new/1" || fail "the SIGKILLed run left no mount: nothing to prove"
lb_run --cleanup --verbose
[ "$rc" -eq 0 ] || fail "--cleanup: status $rc"
[ ! -e "$new" ] || fail "--cleanup left $new: $(ls -A "$new")"
assert_nothing_left
echo "PASS: --mount=DIR with --disks=2 made and removed DIR, also by --cleanup"
