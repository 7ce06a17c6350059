#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run without COMMAND prints each disk's device and mount
# point, as "DEV MNT" on stdout and labelled on stderr, and ends with
# status 0 on the Ctrl-C (SIGINT) it asks for, tearing everything down;
# SIGTERM still gives 128 + 15.  And
# --cleanup --verbose says so when it finds nothing to clean.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
source "$abs_top_srcdir/tests/signal-functions.sh" || exit 1
requires mkfs.xfs

out="$tmpdir/out"

# start_no_command ARGS...: start it with stdout in $out; wait for the
# summary it prints when set up.
start_no_command () {
    : >"$out"
    lb_run_bg "$@" >"$out"
    local i
    for (( i=0; i<3000; i++ )); do
        grep -q "press Ctrl-C" "$run_err" && return 0
        _exited "$lb_pid" && break
        sleep 0.01
    done
    lb_run_wait
    fail "largeblock-run never said it was ready (status $rc)"
}

start_no_command --disks=2 "${DISK[@]}"
kill -INT "$lb_pid"
lb_run_wait
cat "$out"
[ "$rc" -eq 0 ] || fail "the Ctrl-C it asks for: status $rc, not 0"
grep -qE '^/dev/loop[0-9]+ /.*/mnt1$' "$out" || fail "no 'DEV MNT' line for disk 1"
expect_msg "largeblock-run: disk 0: device /dev/loop"
grep -qE "^largeblock-run: disk 1: device /dev/loop[0-9]+, mounted on /.*/mnt1$" \
    "$run_err" || fail "no labelled line for disk 1"
assert_nothing_left

start_no_command size=64M
kill -TERM "$lb_pid"
lb_run_wait
[ "$rc" -eq 143 ] || fail "SIGTERM: status $rc, not 143"
grep -qE '^/dev/loop[0-9]+$' "$out" ||
    fail "no 'DEV' line for a disk without a mount: $(cat "$out")"
assert_nothing_left

lb_run --cleanup --verbose
[ "$rc" -eq 0 ] || fail "--cleanup with nothing to do: status $rc"
expect_msg "largeblock-run: --cleanup: no dead runs found in $tmpdir"
echo "PASS: no-command mode: DEV MNT lines, labelled ones, Ctrl-C gives 0, SIGTERM 143"
