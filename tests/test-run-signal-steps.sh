#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run: a signal at any step of set-up, or a second signal
# during teardown, still tears everything down.
#
# Set-up: each step (nbdkit starting, nbdfuse starting, losetup attaching
# before and after it attached, mkfs.xfs before and after it wrote,
# mount before and after it mounted, COMMAND running; with --crash-test
# the workload, the re-attach's nbdfuse, losetup and mount, the --check
# command and xfs_repair -n; with --crash-explore the same steps of its
# first crash state, the replay server's start and the state's FUSE
# unmount) is held by a slowed
# tool (tests/helpers/slow-tool.sh) or by the COMMAND itself, and
# largeblock-run gets SIGTERM, SIGINT and SIGHUP there (every pair).
# Teardown: SIGx during COMMAND, then a second signal while teardown's
# "losetup -d" or "fusermount3 -u" is held for 2 s, or while the umount
# is retried because a process the COMMAND left keeps the mount busy for
# 2 s; teardown must finish anyway.  Every case: status 128+(first)
# signal, exit within the hang bound, nothing left.  All cases run; the
# failures are listed at the end.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
source "$abs_top_srcdir/tests/signal-functions.sh" || exit 1
requires mkfs.xfs
requires setsid

use_slow_tools
slow_ready="$tmpdir/slow-ready"

# slow TOOL WHEN [ARG]: hold TOOL's call (with ARG among its arguments)
# before or after the real tool runs.
slow () {
    export SLOW_TOOL=$1 SLOW_WHEN=$2 SLOW_ARG=${3:-} SLOW_READY=$slow_ready
    rm -f "$slow_ready" "$slow_ready.calls"
}
no_slow () { unset SLOW_TOOL SLOW_WHEN SLOW_ARG SLOW_READY SLOW_SECONDS SLOW_NTH; }

# ---- set-up steps ----
steps=(
    "nbdkit before"
    "nbdfuse before"
    "losetup before --find"
    "losetup after --find"
    "mkfs.xfs before"
    "mkfs.xfs after"
    "mount before"
    "mount after"
    "command"
)
# Every signal at every step; under valgrind or the sanitizers, where
# each start is slow, one signal a step, in rotation (largeblock-run
# itself is the same program).
#
# Under valgrind only the servers are memchecked (largeblock-run is not:
# the ASan run instruments it at every step), and most steps give the
# plugin nothing that a later step does not.  There only the steps where
# what the plugin has served differs run: nothing yet (nbdfuse before),
# mkfs's writes (mkfs.xfs after), the whole set-up (command); of the
# crash test, the cut (workload) and the whole re-attach (xfs_repair
# before); and the first case of each second-signal kind.
all_signals=(TERM INT HUP)
vg_steps=("nbdfuse before" "mkfs.xfs after" "command" "workload"
          "xfs_repair before 1")
# runs_here STEP: false if valgrind leaves STEP out (above).
runs_here () {
    [ -z "${LB_VALGRIND:-}" ] && return 0
    printf '%s\n' "${vg_steps[@]}" | grep -qxF "$1"
}
step_nr=0
for step in "${steps[@]}"; do
    if [ -n "${LB_VALGRIND:-}${NBDKIT_PRELOAD:-}" ]; then
        signals_now=("${all_signals[step_nr % 3]}")
    else
        signals_now=("${all_signals[@]}")
    fi
    step_nr=$((step_nr + 1))
    runs_here "$step" || continue
    for sig in "${signals_now[@]}"; do
        rm -f "$tmpdir/ready"
        if [ "$step" = command ]; then
            no_slow
            ready="$tmpdir/ready"
        else
            # shellcheck disable=SC2086 # the step is TOOL WHEN [ARG]
            slow $step
            ready=$slow_ready
        fi
        name="SIG$sig during $step"
        lb_run_bg "${DISK[@]}" -- "${READY_CMD[@]}"
        if ! wait_ready "$ready"; then
            lb_run_wait
            failures+=("$name: never reached the step (status $rc)")
            nr_cases=$((nr_cases + 1))
            echo "CASE FAILED: $name: never reached the step" >&2
            kill_leftovers
            continue
        fi
        kill "-$sig" "$lb_pid"
        lb_run_wait
        no_slow
        check_case "$name" $((128 + $(sig_number "$sig")))
    done
done

# ---- the steps of a crash test after the power cut ----
# --crash-test re-attaches the same server's disk: the second nbdfuse,
# losetup and mount calls are held (SLOW_NTH=2), then the --check
# command and xfs_repair -n; the workload is a step too.  One signal a
# step, in rotation.
CRASH_CHECK='if [ -n "${CRASH_HOLD_CHECK:-}" ]; then
  echo $$ >"$TMPDIR/cmd.pid"; touch "$TMPDIR/ready"; exec sleep 60; fi'
CRASH=(--crash-test --check="$CRASH_CHECK" "${DISK[@]}" write-cache=volatile)
crash_steps=(
    "workload"
    "nbdfuse before"
    "losetup before --find"
    "losetup after --find"
    "mount before"
    "mount after"
    "check"
    "xfs_repair before 1"
)
# held_cases WHAT NTH STEPS...: a case for each step of a run of
# "${RUN_ARGS[@]}" after set-up, one signal a step in rotation.  The
# workload and check steps are held by the commands themselves; a
# tool's step by its NTH call, or the N its name ends with
# ("xfs_repair before 1").  A teardown step (fusermount3 -u) runs to
# its end whatever the signal, so it is held for 2 s only.
held_cases () {
    local what=$1 nth=$2 step n; shift 2
    for step in "$@"; do
        sig=${all_signals[step_nr % 3]}
        step_nr=$((step_nr + 1))
        runs_here "$step" || continue
        rm -f "$tmpdir/ready"
        unset CRASH_HOLD_CHECK
        workload=(true)
        case $step in
        workload) no_slow; ready="$tmpdir/ready"; workload=("${READY_CMD[@]}") ;;
        check) no_slow; ready="$tmpdir/ready"; export CRASH_HOLD_CHECK=1 ;;
        fusermount3*)
            # shellcheck disable=SC2086 # the step is TOOL WHEN [ARG]
            slow $step; export SLOW_NTH=$nth SLOW_SECONDS=2
            ready=$slow_ready ;;
        *" "[0-9])
            n=${step##* }
            # shellcheck disable=SC2086 # the step is TOOL WHEN [ARG] N
            slow ${step% *}; export SLOW_NTH=$n; ready=$slow_ready ;;
        *)
            # shellcheck disable=SC2086 # the step is TOOL WHEN [ARG]
            slow $step; export SLOW_NTH=$nth; ready=$slow_ready ;;
        esac
        name="SIG$sig during $what's $step"
        lb_run_bg "${RUN_ARGS[@]}" -- "${workload[@]}"
        if ! wait_ready "$ready"; then
            case_never_reached "$name" "the step"
            continue
        fi
        kill "-$sig" "$lb_pid"
        lb_run_wait
        no_slow
        unset CRASH_HOLD_CHECK
        check_case "$name" $((128 + $(sig_number "$sig")))
    done
}
RUN_ARGS=("${CRASH[@]}")
held_cases "crash test" 2 "${crash_steps[@]}"

# ---- the steps of a crash exploration after the workload ----
# --crash-explore stops the first server, starts the replay server (the
# second nbdkit) and attaches, mounts, checks, unmounts, checks
# read-only and detaches each crash state: the second nbdkit, nbdfuse,
# losetup and mount calls are the first state's, as is the second
# fusermount3 -u (the first is phase 1's teardown).
RUN_ARGS=(--crash-explore --check="$CRASH_CHECK" "${DISK[@]}"
          write-cache=volatile)
held_cases "crash exploration" 2 "${crash_steps[@]}" "nbdkit before" \
    "fusermount3 before -u"

# ---- a second signal during teardown ----
# second_signal_case NAME FIRST SECOND READY2 COMMAND...: SIGFIRST once
# the COMMAND is ready, SIGSECOND once READY2 exists (empty READY2: 0.5 s
# later, with the mount still busy).
second_signal_case () {
    local name=$1 first=$2 second=$3 ready2=$4; shift 4
    rm -f "$tmpdir/ready"
    lb_run_bg "${DISK[@]}" -- "$@"
    if ! wait_ready "$tmpdir/ready"; then
        lb_run_wait
        failures+=("$name: COMMAND never started (status $rc)")
        nr_cases=$((nr_cases + 1))
        kill_leftovers
        return
    fi
    kill "-$first" "$lb_pid"
    if [ -n "$ready2" ]; then
        wait_ready "$ready2" ||
            echo "$name: teardown's slowed helper never ran" >&2
    else
        sleep 0.5
        grep -qF " $tmpdir/largeblock-run." /proc/mounts ||
            echo "$name: the mount was gone before the second signal" >&2
    fi
    _exited "$lb_pid" || kill "-$second" "$lb_pid"
    lb_run_wait
    no_slow
    check_case "$name" $((128 + $(sig_number "$first")))
}

# The COMMAND leaves a process in the mount for 2 s, so the first
# umount attempts fail with EBUSY.
BUSY_CMD=(sh -c '(cd "$LARGEBLOCK_MNT" && exec sleep 2) \
                   </dev/null >/dev/null 2>&1 &
                 echo $$ >"$TMPDIR/cmd.pid"; touch "$TMPDIR/ready"
                 exec sleep 60')

# pairs FIRST SECOND: pair_list, the pairs of signals of one kind (the
# first alone under valgrind, above).
pairs () { pair_list=("$1"); [ -n "${LB_VALGRIND:-}" ] || pair_list+=("$2"); }
pairs "TERM TERM" "INT HUP"
for pair in "${pair_list[@]}"; do
    set -- $pair
    slow losetup before -d; export SLOW_SECONDS=2
    second_signal_case "SIG$1 during command, SIG$2 during losetup -d" \
        "$1" "$2" "$slow_ready" "${READY_CMD[@]}"
done
pairs "HUP INT" "TERM HUP"
for pair in "${pair_list[@]}"; do
    set -- $pair
    slow fusermount3 before -u; export SLOW_SECONDS=2
    second_signal_case "SIG$1 during command, SIG$2 during fusermount3 -u" \
        "$1" "$2" "$slow_ready" "${READY_CMD[@]}"
done
pairs "INT TERM" "HUP HUP"
for pair in "${pair_list[@]}"; do
    set -- $pair
    no_slow
    second_signal_case "SIG$1 during command, SIG$2 during busy umount" \
        "$1" "$2" "" "${BUSY_CMD[@]}"
done

check_all
