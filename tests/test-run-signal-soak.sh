#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run: whenever a SIGTERM, SIGINT or SIGHUP comes, it exits
# 0 (COMMAND finished first) or 128+signal, promptly, leaving nothing.
#
# Randomized soak: LB_SIGNAL_SOAK_RUNS runs (default 50; 5 under
# valgrind or sanitizers, which are slow) of an XFS-mounted disk with a
# short COMMAND, each sent a random signal after a random 0-1.5 s, so the
# signal lands anywhere in set-up, COMMAND or teardown.  The seed is
# printed; LB_SIGNAL_SOAK_SEED=N replays a run.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
source "$abs_top_srcdir/tests/signal-functions.sh" || exit 1
requires mkfs.xfs

if [ -n "${LB_VALGRIND:-}${NBDKIT_PRELOAD:-}" ]; then
    runs=${LB_SIGNAL_SOAK_RUNS:-5}
else
    runs=${LB_SIGNAL_SOAK_RUNS:-50}
fi
seed=${LB_SIGNAL_SOAK_SEED:-$(( ($$ * 7919 + $(date +%s)) % 32768 ))}
echo "soak: $runs runs, seed $seed (replay with LB_SIGNAL_SOAK_SEED=$seed)"
RANDOM=$seed

# Stop after this many failing runs: each may cost the hang bound.
max_failures=5
signals=(TERM INT HUP)
signalled=0 completed=0
for (( run=1; run<=runs; run++ )); do
    sig=${signals[RANDOM % 3]}
    delay_ms=$(( RANDOM % 1500 ))
    delay=$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))
    lb_run_bg "${DISK[@]}" -- sleep 0.3
    sleep "$delay"
    _exited "$lb_pid" || kill "-$sig" "$lb_pid"
    lb_run_wait
    name="run $run (SIG$sig after $delay s, seed $seed)"
    case $rc in
    0) completed=$((completed + 1)); check_case "$name" 0 ;;
    *) signalled=$((signalled + 1))
       check_case "$name" $((128 + $(sig_number "$sig"))) ;;
    esac
    [ "${#failures[@]}" -lt "$max_failures" ] || {
        echo "soak: stopping after $max_failures failing runs" >&2; break; }
done
echo "$nr_cases runs: $signalled signalled, $completed completed (seed $seed)"
check_all
