# SPDX-License-Identifier: BSD-3-Clause
# largeblock: helpers for the largeblock-run --cleanup tests (sourced
# after functions.sh and run-functions.sh).
#
# They act as the local user `nobody` against root's --cleanup: $shared
# is a TMPDIR like /tmp (mode 1777) inside the test's own directory,
# which becomes traversable (0711) for that.  Helper names: the words of
# tests/functions.sh.

requires setpriv
id nobody >/dev/null 2>&1 || skip "there is no user nobody"

chmod 0711 "$tmpdir"
shared="$tmpdir/shared"
mkdir -m 1777 "$shared"

# as_user USER CMD...: run CMD as USER (root: as it is).
as_user () {
    local user=$1; shift
    if [ "$user" = root ]; then
        "$@"
    else
        setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" \
            --clear-groups -- "$@"
    fi
}

# look_alike USER: a new $shared/largeblock-run.XXXXXX of USER (0700),
# printed.
look_alike () { as_user "$1" mktemp -d "$shared/largeblock-run.XXXXXX"; }

# cleanup_shared: root's largeblock-run --cleanup --verbose with TMPDIR
# $shared; sets cleanup_rc, its stderr in $run_err and echoed.
cleanup_shared () {
    cleanup_rc=0
    TMPDIR=$shared timeout 120 "$LARGEBLOCK_RUN" --cleanup --verbose \
        2>"$run_err" || cleanup_rc=$?
    cat "$run_err" >&2
}

# start_time PID: field 22 of /proc/PID/stat (the command name of the
# processes asked about here has no spaces).
start_time () { awk '{print $22}' "/proc/$1/stat"; }

# alive PID: PID is running and not a zombie.
alive () {
    local state
    read -r _ _ state _ <"/proc/$1/stat" 2>/dev/null || return 1
    [ "$state" != Z ]
}
