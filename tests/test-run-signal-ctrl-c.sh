#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run: Ctrl-C (SIGINT to its whole process group: nbdkit,
# nbdfuse, the helper tool and the COMMAND get it too) tears down cleanly:
# status 130, nothing left, and no false error ("still mounted",
# "cannot ...") about what the group's SIGINT already ended.  Checked
# while COMMAND runs and while mount is held after it mounted.
#
# And a caller reading largeblock-run's stderr to EOF does not hang after
# a signal: no process it leaves keeps that pipe open.  Checked for
# Ctrl-C during COMMAND, SIGTERM while nbdfuse starts and SIGHUP while
# mount is held after it mounted.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
source "$abs_top_srcdir/tests/signal-functions.sh" || exit 1
requires mkfs.xfs
requires setsid

use_slow_tools
slow_ready="$tmpdir/slow-ready"
LB_RUN_BG_PREFIX=(setsid)    # its own session and process group

# no_false_errors NAME: stderr has no message about a failed teardown.
no_false_errors () {
    local msgs
    msgs=$(grep -iE "still mounted|still connected|cannot|ignored SIGTERM" \
           "$run_err")
    [ -z "$msgs" ] ||
        case_extra="false error message: $(tr '\n' ';' <<<"$msgs")"
}

# ctrl_c_case NAME READY: start largeblock-run, wait for READY, SIGINT
# to the whole group.
ctrl_c_case () {
    local name=$1 ready=$2
    rm -f "$tmpdir/ready"
    lb_run_bg "${DISK[@]}" -- "${READY_CMD[@]}"
    if ! wait_ready "$ready"; then
        lb_run_wait
        failures+=("$name: never reached the step (status $rc)")
        nr_cases=$((nr_cases + 1))
        kill_leftovers
        return
    fi
    [ "$(ps -o pgid= -p "$lb_pid" | tr -d ' ')" = "$lb_pid" ] ||
        fail "setsid did not make largeblock-run a group leader"
    kill -INT -- "-$lb_pid"
    lb_run_wait
    unset SLOW_TOOL SLOW_WHEN SLOW_ARG SLOW_READY
    no_false_errors "$name"
    check_case "$name" 130
}

ctrl_c_case "Ctrl-C during command" "$tmpdir/ready"
export SLOW_TOOL=mount SLOW_WHEN=after SLOW_READY=$slow_ready
rm -f "$slow_ready"
ctrl_c_case "Ctrl-C during mount (after)" "$slow_ready"

# ---- stderr read to EOF ----
# stderr_holders READER: "pid command" of each process with the FIFO
# open, but for the reader's cat.
stderr_holders () {
    local fd p ppid
    for fd in /proc/[0-9]*/fd/*; do
        [ "$(readlink "$fd" 2>/dev/null)" = "$tmpdir/err.fifo" ] || continue
        p=${fd#/proc/}; p=${p%%/*}
        read -r _ _ _ ppid _ <"/proc/$p/stat" 2>/dev/null
        [ "$p" = "$1" ] || [ "$ppid" = "$1" ] && continue
        echo "$p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
    done | sort -u | tr '\n' ';' | grep . || echo "(none left: EOF came late)"
}

# eof_case NAME SIG GROUP READY: largeblock-run's stderr is a FIFO that
# a reader copies to $run_err, touching $tmpdir/eof at EOF.  GROUP=yes
# signals the whole process group.  EOF must come within the hang bound
# of the signal.
eof_case () {
    local name=$1 sig=$2 group=$3 ready=$4 i target reader holders
    rm -f "$tmpdir/ready" "$tmpdir/eof" "$tmpdir/err.fifo"
    mkfifo "$tmpdir/err.fifo"
    { cat "$tmpdir/err.fifo" >"$run_err"; touch "$tmpdir/eof"; } &
    reader=$!
    LB_STDERR="$tmpdir/err.fifo"
    lb_run_bg "${DISK[@]}" -- "${READY_CMD[@]}"
    LB_STDERR=
    if ! wait_ready "$ready"; then
        lb_run_wait
        failures+=("$name: never reached the step (status $rc)")
        nr_cases=$((nr_cases + 1))
        kill_leftovers
        wait "$reader"
        return
    fi
    target=$lb_pid
    [ "$group" = yes ] && target="-$lb_pid"
    kill "-$sig" -- "$target"
    for (( i=0; i<HANG_BOUND_S*50; i++ )); do
        [ -e "$tmpdir/eof" ] && break
        sleep 0.02
    done
    if [ ! -e "$tmpdir/eof" ]; then
        holders=$(stderr_holders "$reader")
        if _exited "$lb_pid"; then
            case_extra="stderr not at EOF ${HANG_BOUND_S} s after the signal though largeblock-run exited; held by: $holders"
        else
            case_extra="stderr not at EOF ${HANG_BOUND_S} s after the signal (largeblock-run itself still running); held by: $holders"
        fi
    fi
    lb_run_wait
    unset SLOW_TOOL SLOW_WHEN SLOW_ARG SLOW_READY
    check_case "$name" $((128 + $(sig_number "$sig")))
    # The reader ends once every writer is gone (kill_leftovers ran if
    # the case failed); a last resort so the test cannot hang here.
    [ -e "$tmpdir/eof" ] || { pkill -P "$reader"; kill "$reader"; } 2>/dev/null
    wait "$reader" 2>/dev/null
}

eof_case "stderr EOF after Ctrl-C during command" INT yes "$tmpdir/ready"
export SLOW_TOOL=nbdfuse SLOW_WHEN=before SLOW_READY=$slow_ready
rm -f "$slow_ready"
eof_case "stderr EOF after SIGTERM during nbdfuse start" TERM no "$slow_ready"
export SLOW_TOOL=mount SLOW_WHEN=after SLOW_READY=$slow_ready
rm -f "$slow_ready"
eof_case "stderr EOF after SIGHUP during mount (after)" HUP no "$slow_ready"

check_all
