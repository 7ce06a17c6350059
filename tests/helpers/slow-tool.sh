#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: a PATH wrapper that holds one of largeblock-run's helper
# tools at a known point, so a test can signal largeblock-run exactly
# while that step runs.
#
# A test links $tmpdir/bin/NAME to this script and puts $tmpdir/bin first
# on PATH.  Run as NAME, it finds the real NAME in the PATH directories
# after its own (for nbdkit, $SLOW_NBDKIT_REAL if set, since largeblock-run
# runs $NBDKIT) and, unless this call is the one to slow, execs it.
#
#   SLOW_TOOL     the NAME to slow (no other tool is touched)
#   SLOW_ARG      only calls with this exact argument (losetup: --find for
#                 attach, -d for detach)
#   SLOW_NTH      only the Nth matching call (counted in $SLOW_READY.calls)
#   SLOW_WHEN     before: create $SLOW_READY, sleep, then exec the tool;
#                 after: run the tool, create $SLOW_READY, sleep, then
#                 exit with the tool's status
#   SLOW_READY    the file created when the slow point is reached; it
#                 holds this wrapper's pid
#   SLOW_SECONDS  how long to sleep (default 30)
#
# The sleep runs in the background and the wrapper waits for it, so
# SIGTERM, SIGINT or SIGHUP end the wrapper at once (status 128+signal)
# and take the sleep with it.  The sleep holds none of the wrapper's
# descriptors and no directory, so even if the wrapper is SIGKILLed the
# orphaned sleep keeps no pipe open and no mount busy.

name=${0##*/}
self_dir=$(cd "${0%/*}" && pwd -P) || exit 127

real=
if [ "$name" = nbdkit ] && [ -n "${SLOW_NBDKIT_REAL:-}" ]; then
    real=$SLOW_NBDKIT_REAL
else
    seen_self=false
    IFS=: read -r -a path_dirs <<<"$PATH"
    for dir in "${path_dirs[@]}"; do
        d=$(cd "${dir:-.}" 2>/dev/null && pwd -P) || continue
        if [ "$d" = "$self_dir" ]; then seen_self=true; continue; fi
        $seen_self || continue
        if [ -x "$d/$name" ] && [ ! -d "$d/$name" ]; then
            real=$d/$name
            break
        fi
    done
fi
[ -n "$real" ] || { echo "slow-tool.sh: no real $name on PATH" >&2; exit 127; }

# Is this the call to slow?
slow=false
if [ "$name" = "${SLOW_TOOL:-}" ] && [ -n "${SLOW_READY:-}" ]; then
    slow=true
    if [ -n "${SLOW_ARG:-}" ]; then
        slow=false
        for a in "$@"; do [ "$a" = "$SLOW_ARG" ] && slow=true; done
    fi
    if $slow && [ -n "${SLOW_NTH:-}" ]; then
        calls=$(( $(cat "$SLOW_READY.calls" 2>/dev/null || echo 0) + 1 ))
        echo "$calls" >"$SLOW_READY.calls"
        [ "$calls" -eq "$SLOW_NTH" ] || slow=false
    fi
fi
$slow || exec "$real" "$@"

sleep_pid=
stop_sleep () {
    [ -z "$sleep_pid" ] || kill "$sleep_pid" 2>/dev/null
    sleep_pid=
}
for sig in TERM INT HUP; do
    # shellcheck disable=SC2064 # expand $sig now
    trap "stop_sleep; trap - $sig EXIT; kill -$sig \$\$; exit 1" "$sig"
done
trap stop_sleep EXIT

# Say we are ready, then sleep interruptibly: a trap runs as soon as
# "wait" is interrupted.
slow_sleep () {
    (cd / && exec sleep "${SLOW_SECONDS:-30}") </dev/null >/dev/null 2>&1 &
    sleep_pid=$!
    echo $$ >"$SLOW_READY"
    wait "$sleep_pid"
    sleep_pid=
}

case "${SLOW_WHEN:-before}" in
before)
    slow_sleep
    trap - TERM INT HUP EXIT
    exec "$real" "$@"
    ;;
after)
    # In the foreground, so that it sees the signals it would see
    # without this wrapper (a background job would ignore SIGINT).
    status=0
    "$real" "$@" || status=$?
    slow_sleep
    exit "$status"
    ;;
*)
    echo "slow-tool.sh: SLOW_WHEN=$SLOW_WHEN: must be before or after" >&2
    exit 127
    ;;
esac
