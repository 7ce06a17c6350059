#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run --cleanup: after largeblock-run was SIGKILLed with a
# mounted XFS disk, removes what it left under $TMPDIR (mount, loop
# device, FUSE mount, nbdkit and nbdfuse, private directory), after which
# a normal run works; and it leaves a run whose largeblock-run is alive
# alone.  The same after a crash test SIGKILLed once it had re-attached
# the post-cut disk, and after a crash exploration SIGKILLed in a crash
# state.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
source "$abs_top_srcdir/tests/signal-functions.sh" || exit 1
requires mkfs.xfs

# lb_cleanup: largeblock-run --cleanup --verbose under a guard; sets
# cleanup_rc, stderr in $run_err and echoed.  TMPDIR is our $tmpdir
# (run-functions.sh), so it can only find our runs.
lb_cleanup () {
    cleanup_rc=0
    timeout 60 "$LARGEBLOCK_RUN" --cleanup --verbose 2>"$run_err" ||
        cleanup_rc=$?
    cat "$run_err" >&2
}

# cleanup_after_kill WHAT: end the killed run's command (its pid is the
# one it wrote; our_command_pid checks it is ours: --cleanup leaves the
# user's command alone), run --cleanup, and record a failed case if it
# failed or left anything.
cleanup_after_kill () {
    local what=$1
    cmd_pid=$(our_command_pid) || fail "$what: no command pid"
    kill -KILL "$cmd_pid"
    while kill -0 "$cmd_pid" 2>/dev/null; do sleep 0.05; done
    lb_cleanup
    left=$(leftovers)
    if [ "$cleanup_rc" -ne 0 ] || [ -n "$left" ]; then
        echo "CASE FAILED: --cleanup after a SIGKILLed $what: status $cleanup_rc; left: $left" >&2
        failures+=("--cleanup after a SIGKILLed $what: status $cleanup_rc; left behind: $(tr '\n' ';' <<<"$left")")
        kill_leftovers
    else
        echo "case ok: --cleanup removed everything the SIGKILLed $what left"
    fi
    nr_cases=$((nr_cases + 1))
}

# ---- a SIGKILLed run ----
rm -f "$tmpdir/ready"
lb_run_bg "${DISK[@]}" -- "${READY_CMD[@]}"
wait_ready "$tmpdir/ready" || { lb_run_wait; fail "COMMAND never started"; }
kill -KILL "$lb_pid"
lb_run_wait
[ "$rc" = 137 ] || fail "SIGKILLed largeblock-run: status $rc"

# Prove there is something to clean.
left=$(leftovers)
echo "left by the SIGKILLed run:"; echo "$left"
for what in "loop device: " "mount: /dev/loop" "mount: /dev/fuse" \
            "process: [0-9]* .*nbdkit.* -f -U " "process: [0-9]* [^ ]*nbdfuse " \
            "process: COMMAND" "directory: "; do
    grep -q "^$what" <<<"$left" ||
        fail "the SIGKILLed run left no '$what': nothing to prove"
done

cleanup_after_kill run

# The next normal run works.
lb_run "${DISK[@]}" -- true
rc_next=$rc
[ "$rc_next" -eq 0 ] || failures+=("next run after --cleanup: status $rc_next")
assert_nothing_left
nr_cases=$((nr_cases + 1))

# ---- a crash test SIGKILLed after the re-attach ----
# During --check the post-cut disk is attached again (a second nbdfuse
# and loop device) and mounted; the power-cut FIFO and the statsfile are
# in the private directory.  --cleanup removes all of it.  The same for
# a crash exploration SIGKILLed during its first state's --check: the
# replay server, the state's nbdfuse, loop device and mount, and the
# crash log in the private directory.
# killed_during_check WHAT ARGS...: SIGKILL largeblock-run ARGS once
# its --check runs, then --cleanup must remove everything.
killed_during_check () {
    local what=$1; shift
    rm -f "$tmpdir/ready"
    lb_run_bg "$@" \
        --check='echo $$ >"$TMPDIR/cmd.pid"; touch "$TMPDIR/ready"; exec sleep 60' \
        "${DISK[@]}" write-cache=volatile -- true
    wait_ready "$tmpdir/ready" || { lb_run_wait; fail "$what: --check never started"; }
    kill -KILL "$lb_pid"
    lb_run_wait
    left=$(leftovers)
    echo "left by the SIGKILLed $what:"; echo "$left"
    grep -q "^mount: /dev/loop" <<<"$left" ||
        fail "the SIGKILLed $what left no mount: nothing to prove"
    cleanup_after_kill "$what"
}
killed_during_check "crash test" --crash-test
killed_during_check "crash exploration" --crash-explore

# ---- a live run is left alone ----
rm -f "$tmpdir/ready" "$tmpdir/finish"
lb_run_bg "${DISK[@]}" -- sh -c 'echo "$LARGEBLOCK_MNT" >"$TMPDIR/mnt"
    touch "$TMPDIR/ready"
    while [ ! -e "$TMPDIR/finish" ]; do sleep 0.1; done'
wait_ready "$tmpdir/ready" || { lb_run_wait; fail "live run: COMMAND never started"; }
mnt=$(cat "$tmpdir/mnt")
before=$(leftovers | sort)
lb_cleanup
after=$(leftovers | sort)
why=
grep -qF " $mnt xfs " /proc/mounts || why="its XFS mount is gone"
_exited "$lb_pid" && why="${why:+$why; }largeblock-run died"
[ "$before" = "$after" ] ||
    why="${why:+$why; }what it holds changed: $(diff <(echo "$before") <(echo "$after") | tr '\n' ';')"
touch "$tmpdir/finish"
lb_run_wait
[ -z "$why" ] || case_extra="--cleanup touched a live run: $why"
check_case "live run left alone by --cleanup, then ends normally" 0

check_all
