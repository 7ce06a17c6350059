# SPDX-License-Identifier: BSD-3-Clause
# largeblock: helpers for the largeblock-run signal tests (sourced after
# functions.sh and run-functions.sh).
#
# A case starts largeblock-run in the background (lb_run_bg), waits until
# a slowed tool or the COMMAND says it is at the step (wait_ready), sends
# the signal, and waits for the exit with a generous hang bound
# (lb_run_wait).  check_case then asserts the status and that nothing is
# left; a failing case is recorded, cleaned up after, and the test goes
# on so that one run lists every case that fails (check_all at the end).
# Helper names: the words of tests/functions.sh.

# Hang detector only: a correct run exits within a couple of seconds
# (under valgrind, within LARGEBLOCK_STOP_TIMEOUT of each server stop).
if [ -n "${LB_VALGRIND:-}" ]; then
    HANG_BOUND_S=${LB_SIGNAL_HANG_BOUND:-60}
else
    HANG_BOUND_S=${LB_SIGNAL_HANG_BOUND:-15}
fi

# The disk every case uses (mkfs.xfs refuses less than 300 MB).
DISK=(--mkfs=xfs --mount blksize=16k logical-blksize=16k size=512M)

sig_number () { kill -l "$1"; }

# use_slow_tools: put the slow-tool wrapper first on PATH for every tool
# largeblock-run runs, nbdkit included ($NBDKIT points at it and the
# wrapper runs the real $NBDKIT).  Unless SLOW_TOOL is set the wrapper
# only execs the real tool.
use_slow_tools () {
    local t
    mkdir -p "$tmpdir/bin"
    for t in nbdkit nbdfuse losetup mkfs.xfs mount fusermount3 xfs_repair; do
        ln -sf "$abs_top_srcdir/tests/helpers/slow-tool.sh" "$tmpdir/bin/$t"
    done
    export SLOW_NBDKIT_REAL="$NBDKIT"
    export NBDKIT="$tmpdir/bin/nbdkit"
    export PATH="$tmpdir/bin:$PATH"
    unset SLOW_TOOL SLOW_ARG SLOW_NTH SLOW_WHEN SLOW_READY SLOW_SECONDS
}

# The running largeblock-run (empty once reaped, so that a reused pid is
# never signalled) and the COMMAND's pid, if it wrote it to
# $tmpdir/cmd.pid, are what the emergency cleanup kills.
lb_pid=

# lb_run_bg ARGS...: start largeblock-run ARGS... in the background with
# stderr in $run_err (or $LB_STDERR); sets lb_pid.  LB_RUN_BG_PREFIX (an
# array) goes before it, e.g. setsid; it must exec, keeping the pid.
LB_RUN_BG_PREFIX=()
LB_STDERR=
lb_run_bg () {
    local i
    rm -f "$tmpdir/cmd.pid"
    "${LB_RUN_BG_PREFIX[@]}" "$LARGEBLOCK_RUN" "$@" \
        2>"${LB_STDERR:-$run_err}" &
    lb_pid=$!
    # Until the background job has become largeblock-run, it is a copy
    # of this shell with its traps: a signal then would run this test's
    # own exit trap (and remove $tmpdir) instead of reaching the program.
    for (( i=0; i<1000; i++ )); do
        [ "$(readlink "/proc/$lb_pid/exe" 2>/dev/null)" = \
          "$(readlink -f "$LARGEBLOCK_RUN")" ] && return 0
        _exited "$lb_pid" && return 0
        sleep 0.005
    done
}

# The COMMAND every case runs: says where it is, then sleeps as its own
# pid (exec), so the signal largeblock-run forwards reaches the sleep.
READY_CMD=(sh -c 'echo $$ >"$TMPDIR/cmd.pid"; touch "$TMPDIR/ready"; exec sleep 60')

# our_command_pid: the pid in $tmpdir/cmd.pid if that process is still
# the COMMAND a case of ours started (its environment has our TMPDIR).
our_command_pid () {
    local p
    [ -s "$tmpdir/cmd.pid" ] || return 1
    p=$(cat "$tmpdir/cmd.pid")
    [ -r "/proc/$p/environ" ] || return 1
    tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" |
        grep -qxF "TMPDIR=$tmpdir" || return 1
    echo "$p"
}

# wait_ready FILE: until FILE exists; false if largeblock-run ended
# first or 30 s passed.
wait_ready () {
    local i
    for (( i=0; i<3000; i++ )); do
        [ -e "$1" ] && return 0
        _exited "$lb_pid" && { [ -e "$1" ]; return; }
        sleep 0.01
    done
    return 1
}

# _exited PID: our child PID has exited (a zombie not yet reaped counts;
# kill -0 would still succeed on it).
_exited () {
    local state
    [ -r "/proc/$1/stat" ] || return 0
    read -r _ _ state _ <"/proc/$1/stat" 2>/dev/null || return 0
    [ "$state" = Z ]
}

# lb_run_wait: wait for largeblock-run to exit, at most $HANG_BOUND_S s from
# now.  Sets rc and elapsed_ms; on a hang it SIGKILLs it and sets
# rc=hang.  Echoes its stderr.
lb_run_wait () {
    local start now
    start=$(date +%s%N)
    while ! _exited "$lb_pid"; do
        now=$(date +%s%N)
        if (( (now - start) / 1000000000 >= HANG_BOUND_S )); then
            kill -KILL "$lb_pid" 2>/dev/null
            wait "$lb_pid" 2>/dev/null
            lb_pid=
            rc=hang
            elapsed_ms=$(( (now - start) / 1000000 ))
            cat "$run_err" >&2
            return 0
        fi
        sleep 0.02
    done
    rc=0; wait "$lb_pid" || rc=$?
    lb_pid=
    elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
    cat "$run_err" >&2
}

# leftovers: print what a run left behind (nothing if clean); the checks
# of assert_nothing_left, as text, so that a failing case can be
# recorded rather than end the test.
leftovers () {
    local dev
    losetup -a | grep -F "$tmpdir/" | sed 's/^/loop device: /'
    grep -F " $tmpdir/" /proc/mounts | sed 's/^/mount: /'
    pgrep -af -- "$tmpdir/largeblock-run" | sed 's/^/process: /'
    our_command_pid >/dev/null &&
        echo "process: COMMAND $(our_command_pid)"
    ls -d "$tmpdir"/largeblock-run.* 2>/dev/null | sed 's/^/directory: /'
    for dev in $(connected_nbd_devices); do
        grep -qxF -- "$dev" <<<"$_nbd_connected_at_start" ||
            echo "nbd: $dev still connected"
    done
}

# kill_leftovers: end what a failed case left, so the next case starts
# clean: largeblock-run if still running, the COMMAND whose pid it wrote,
# processes whose command line names our private directories (only
# largeblock-run's nbdkit and nbdfuse, which we started through it);
# then the filesystem mount, the loop devices (found by their FUSE file's
# path, so before that FUSE mount goes: once it is lazily unmounted the
# path no longer names it), the FUSE mounts, and the directories.
kill_leftovers () {
    local p loops
    p=$(our_command_pid) && kill -KILL "$p" 2>/dev/null
    if [ -n "$lb_pid" ]; then
        kill -KILL "$lb_pid" 2>/dev/null
        wait "$lb_pid" 2>/dev/null
        lb_pid=
    fi
    loops=$(losetup -a | grep -F "$tmpdir/" | cut -d: -f1)
    grep -F " $tmpdir/" /proc/mounts | grep -v "^/dev/fuse " |
        awk '{print $2}' | sort -r |
        while read -r p; do umount "$p" 2>/dev/null || umount -l "$p"; done
    for p in $loops; do losetup -d "$p"; done
    for p in $(pgrep -f -- "$tmpdir/largeblock-run\."); do
        kill -KILL "$p" 2>/dev/null
    done
    sleep 0.2
    grep -F " $tmpdir/" /proc/mounts | awk '{print $2}' | sort -r |
        while read -r p; do fusermount3 -uz "$p" 2>/dev/null ||
                            umount -l "$p" 2>/dev/null; done
    _run_emergency_cleanup
    rm -rf "$tmpdir"/largeblock-run.* 2>/dev/null
    rm -f "$tmpdir/cmd.pid"
}
cleanup_fn kill_leftovers

# case_never_reached NAME WHAT: the case's largeblock-run ended (or
# hung) before it reached WHAT: a failed case, cleaned up after.
case_never_reached () {
    lb_run_wait
    failures+=("$1: never reached $2 (status $rc)")
    nr_cases=$((nr_cases + 1))
    echo "CASE FAILED: $1: never reached $2" >&2
    kill_leftovers
}

# check_case NAME EXPECTED_RC: the last case exited with EXPECTED_RC
# within the hang bound and left nothing.  A failure is recorded in
# $failures and cleaned up after.  A test's own finding about the case
# (a message it should not have printed, say) goes in $case_extra first.
case_extra=
failures=()
nr_cases=0
check_case () {
    local name=$1 want=$2 left why=$case_extra
    case_extra=
    nr_cases=$((nr_cases + 1))
    left=$(leftovers)
    if [ "$rc" = hang ]; then
        why="${why:+$why; }hang: still running ${HANG_BOUND_S} s after the signal"
    elif [ "$rc" != "$want" ]; then
        why="${why:+$why; }exit status $rc, expected $want"
    fi
    # After a hang largeblock-run was SIGKILLed: what is left is the
    # SIGKILL's doing, not worth listing.
    if [ -n "$left" ] && [ "$rc" != hang ]; then
        why="${why:+$why; }left behind: $(tr '\n' ';' <<<"$left")"
    fi
    if [ -n "$why" ]; then
        echo "CASE FAILED: $name: $why" >&2
        failures+=("$name: $why")
        kill_leftovers
    else
        echo "case ok: $name: status $rc after ${elapsed_ms} ms"
    fi
}

# check_all: fail the test if any case failed, listing them.
check_all () {
    local f
    if [ "${#failures[@]}" -gt 0 ]; then
        echo "${#failures[@]} of $nr_cases cases failed:" >&2
        for f in "${failures[@]}"; do echo "  $f" >&2; done
        fail "${#failures[@]} of $nr_cases cases failed"
    fi
    echo "all $nr_cases cases passed"
}
