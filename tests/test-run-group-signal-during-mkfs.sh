#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run: a signal to its whole process group (Ctrl-C, a
# terminal's SIGHUP) that comes while mkfs.xfs is being started -- after
# fork, before the child has left largeblock-run's process group --
# reaches largeblock-run, not mkfs.xfs behind its back: status 128 +
# the signal, no "mkfs.xfs killed by signal" message, nothing left.
#
# The window is microseconds wide, so the test puts the signal in it:
# tests/helpers/group-signal-at-fork.c, preloaded into largeblock-run,
# sends it from the child right after fork, at the first fork after
# the flag file appears.  The slowed-tool wrapper makes the flag when
# losetup has attached the disk; the next fork is mkfs.xfs's.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
source "$abs_top_srcdir/tests/signal-functions.sh" || exit 1
requires mkfs.xfs
requires setsid

shim="$abs_top_builddir/tests/helpers/.libs/libgroup-signal-at-fork.so"
[ -f "$shim" ] || fail "$shim is missing (make check builds it)"
# Under --enable-sanitizers the sanitizer runtime must come first.
preload="${NBDKIT_PRELOAD:+$NBDKIT_PRELOAD:}$shim"

use_slow_tools
flag="$tmpdir/flag"

group_signal_case () {
    local sig=$1 name="group SIG$1 between fork and mkfs.xfs's own group"
    local msgs
    rm -f "$flag"
    export SLOW_TOOL=losetup SLOW_WHEN=after SLOW_ARG=--find \
        SLOW_READY=$flag SLOW_SECONDS=0
    # setsid: largeblock-run leads a group of its own, so the signal
    # reaches no process of this test.  env: only it loads the shim.
    LB_RUN_BG_PREFIX=(setsid env "LD_PRELOAD=$preload"
                     "LB_GROUP_SIGNAL_FLAG=$flag"
                     "LB_GROUP_SIGNAL=$(sig_number "$sig")")
    lb_run_bg --verbose "${DISK[@]}" -- true
    LB_RUN_BG_PREFIX=()
    lb_run_wait
    unset SLOW_TOOL SLOW_WHEN SLOW_ARG SLOW_READY SLOW_SECONDS
    grep -qF "largeblock-run: running mkfs.xfs" "$run_err" ||
        case_extra="mkfs.xfs never started"
    [ -e "$flag" ] &&
        case_extra="${case_extra:+$case_extra; }the shim never sent the signal"
    msgs=$(grep -F "killed by signal" "$run_err")
    [ -z "$msgs" ] ||
        case_extra="${case_extra:+$case_extra; }the helper got the signal: $msgs"
    check_case "$name" $((128 + $(sig_number "$sig")))
}

group_signal_case INT
group_signal_case HUP
check_all
