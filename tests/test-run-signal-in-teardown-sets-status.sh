#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run: a signal that comes during teardown, after COMMAND
# succeeded, still makes the exit status 128 + that signal, and the
# teardown it arrived in runs to the end and leaves nothing.
#
# The COMMAND leaves a process in the mount and exits 0, so the umount
# is retried while the mount is busy.  Once largeblock-run says
# (--verbose) that it is unmounting, it gets the signal; the mount is
# kept busy a little longer (the signal must not cut the retry short),
# then the test ends that process, the retry succeeds, and the status
# must be 128 + the signal, not COMMAND's 0.  SIGTERM and SIGINT.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
source "$abs_top_srcdir/tests/signal-functions.sh" || exit 1
requires mkfs.xfs

# The process left in the mount writes its pid where kill_leftovers (the
# emergency cleanup) and this test find it: $TMPDIR/cmd.pid.  It writes
# it once its working directory is in the mount, and COMMAND waits for
# that, so the mount is busy before COMMAND exits.
BUSY_CMD=(sh -c 'sh -c '\''cd "$LARGEBLOCK_MNT" &&
                         echo $$ >"$TMPDIR/cmd.pid.new" &&
                         mv "$TMPDIR/cmd.pid.new" "$TMPDIR/cmd.pid" &&
                         exec sleep 60'\'' </dev/null >/dev/null 2>&1 &
                 while [ ! -s "$TMPDIR/cmd.pid" ]; do sleep 0.05; done')

# wait_for_msg TEXT: until largeblock-run's stderr has TEXT; false if it
# exited first or 30 s passed.
wait_for_msg () {
    local i
    for (( i=0; i<3000; i++ )); do
        grep -qF -- "$1" "$run_err" && return 0
        _exited "$lb_pid" && return 1
        sleep 0.01
    done
    return 1
}

signal_in_teardown_case () {
    local sig=$1 name="SIG$1 during the busy umount after COMMAND exited 0"
    local busy
    lb_run_bg --verbose "${DISK[@]}" -- "${BUSY_CMD[@]}"
    wait_for_msg "largeblock-run: unmounting " ||
        { case_never_reached "$name" "the umount"; return; }
    busy=$(our_command_pid) || fail "$name: the busy process wrote no pid"
    kill "-$sig" "$lb_pid"
    # Not a timing assertion: a while for the signal to land in the retry.
    sleep 0.5
    _exited "$lb_pid" &&
        case_extra="largeblock-run ended while the mount was busy"
    kill "$busy"
    lb_run_wait
    grep -qF "largeblock-run: caught signal $(sig_number "$sig") during teardown" \
        "$run_err" ||
        case_extra="${case_extra:+$case_extra; }no \"caught signal during teardown\" message"
    check_case "$name" $((128 + $(sig_number "$sig")))
}

signal_in_teardown_case TERM
signal_in_teardown_case INT
check_all
