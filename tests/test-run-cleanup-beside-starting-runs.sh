#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run --cleanup never takes a live run for a dead one.  First
# an empty look-alike directory (what a run has the instant mkdtemp made
# it) is left alone.  Then --cleanup runs in a loop while
# LB_CLEANUP_RUNS runs (30; 6 under valgrind) of "largeblock-run --attach=loop size=16M
# -- true" start and end, three at a time: every run must succeed,
# --cleanup must clean up nothing, and nothing may be left.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1

# Under valgrind and the sanitizers only nbdkit is instrumented, which
# the race is not about: fewer runs there.
if [ -n "${LB_VALGRIND:-}${NBDKIT_PRELOAD:-}" ]; then
    runs=${LB_CLEANUP_RUNS:-6}
else
    runs=${LB_CLEANUP_RUNS:-30}
fi
parallel=3
cleanup_log="$tmpdir/cleanup.log"

# ---- a directory that has no journal yet ----
look=$(mktemp -d "$tmpdir/largeblock-run.XXXXXX")
lb_run --cleanup --verbose
[ -d "$look" ] || fail "--cleanup removed a directory with no journal (a run starting)"
[ "$rc" = 0 ] || fail "--cleanup exited $rc"
rmdir "$look"

# ---- --cleanup in a loop beside starting runs ----
looper=
stop_looper () {
    [ -n "$looper" ] || return 0
    touch "$tmpdir/stop"
    wait "$looper"
    looper=
}
cleanup_fn stop_looper
(
    while [ ! -e "$tmpdir/stop" ]; do
        timeout 60 "$LARGEBLOCK_RUN" --cleanup --verbose >>"$cleanup_log" 2>&1 ||
            echo "--cleanup exited $?" >>"$cleanup_log"
    done
) &
looper=$!

broken=0
pids=()
for (( n=0; n<runs; n++ )); do
    timeout 120 "$LARGEBLOCK_RUN" --attach=loop size=16M -- true \
        2>"$tmpdir/run$n.err" &
    pids+=("$!")
    (( ${#pids[@]} < parallel && n < runs - 1 )) && continue
    for p in "${pids[@]}"; do
        wait "$p" && continue
        broken=$((broken + 1))
    done
    pids=()
done
stop_looper
cat "$tmpdir"/run*.err >&2
echo "--cleanup's messages:"
grep -v "left alone" "$cleanup_log"
cleaned=$(grep -c "cleaning up" "$cleanup_log")
echo "$runs runs beside $(grep -c '^' "$cleanup_log") lines of --cleanup: $broken broken, $cleaned cleaned up"
[ "$broken" = 0 ] || fail "$broken of $runs runs failed beside --cleanup"
[ "$cleaned" = 0 ] || fail "--cleanup cleaned up $cleaned live runs"
grep -q "exited" "$cleanup_log" && fail "--cleanup failed"
assert_nothing_left
