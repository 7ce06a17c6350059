# SPDX-License-Identifier: BSD-3-Clause
# largeblock: shared helpers for the shell tests (sourced).
#
# Tests run under automake with LARGEBLOCK_PLUGIN, NBDKIT and PYTHON_NBD
# set by Makefile.am.  Every test that starts something registers its
# cleanup with cleanup_fn, which runs on any exit, including failures and
# signals; servers are stopped by the PID we started, never by name.
#
# The helpers' words, the same in the shell helpers and tests/lbtest.py:
#   requires PROGRAM    skip (exit 77) unless PROGRAM is installed;
#                       requires_THING skips unless THING is available
#   skip REASON, fail MESSAGE
#   lb_PROGRAM ARGS...  run one of ours to its end, setting $rc:
#                       lb_run (largeblock-run), lb_vm (largeblock-vm),
#                       lb_verify (largeblock-verify); lb_run_bg starts
#                       it in the background, lb_run_wait waits for it
#   start_THING / stop_THING   a server or process a test keeps running;
#                       Python's is lbtest.Server
#   expect_THING / check_THING / assert_THING   fail unless it holds
# Names starting with _ are internal.

set -u

: "${LARGEBLOCK_PLUGIN:?run through make check}"
: "${NBDKIT:=nbdkit}"
: "${PYTHON_NBD:=/usr/bin/python3}"

# nbdsh from Debian runs "python3 -m nbd"; make sure it is the Python that
# has the bindings, whatever python3 is first on PATH.
nbdsh () { "$PYTHON_NBD" -m nbd "$@"; }

_cleanup_fns=()
cleanup_fn () { _cleanup_fns+=("$*"); }
_run_cleanups () {
    local status=$? i
    for (( i=${#_cleanup_fns[@]}-1; i>=0; i-- )); do
        eval "${_cleanup_fns[$i]}" || :
    done
    # A sanitizer report from any server we started fails the test.
    if [ -n "${tmpdir:-}" ] && [ "$status" -ne 1 ]; then
        check_sanitizer_reports "$tmpdir"/*.err || status=1
    fi
    [ -z "${tmpdir:-}" ] || rm -rf "$tmpdir"
    exit "$status"
}

# check_sanitizer_reports FILE...: fail if an ASan/UBSan/TSan report is
# in any of the files (the servers' stderr logs).
check_sanitizer_reports () {
    local f
    for f in "$@"; do
        [ -f "$f" ] || continue
        if grep -qE "$_sanitizer_report_re" "$f"; then
            echo "FAIL: sanitizer report in $f:" >&2
            cat "$f" >&2
            return 1
        fi
    done
}
_sanitizer_report_re='ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer|ThreadSanitizer: |runtime error: '

trap _run_cleanups EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail () { echo "FAIL: $*" >&2; exit 1; }
skip () { echo "SKIP: $*"; exit 77; }
requires () { command -v "$1" >/dev/null 2>&1 || skip "$1 is not installed"; }
# loop_device_usable: a loop device can be set up here.  "losetup -f"
# alone only reads /sys/block, which a chroot or container can show
# while its /dev has no loop nodes (scripts/check-distro.sh's chroots).
loop_device_usable () {
    [ -e /dev/loop-control ] && losetup -f >/dev/null 2>&1
}

# check_pod POD: podchecker finds neither errors nor warnings in POD.
check_pod () {
    [ -n "${PODCHECKER:-}" ] && [ -x "$PODCHECKER" ] || requires podchecker
    "${PODCHECKER:-podchecker}" -warnings -warnings "$1" >"$tmpdir/pc" 2>&1 ||
        { cat "$tmpdir/pc"; fail "podchecker found errors in $1"; }
    ! grep -q WARNING "$tmpdir/pc" || { cat "$tmpdir/pc"; fail "podchecker warnings in $1"; }
}

# check_pod_items POD HELP MIN: every long option HELP (a --help output
# file) names, at least MIN of them, is an =item of POD; prints them.
check_pod_items () {
    local pod=$1 options o
    options=$(grep -o -- '--[a-z][a-z-]*' "$2" | sort -u)
    [ "$(echo "$options" | wc -w)" -ge "$3" ] || fail "too few options: $options"
    for o in $options; do
        grep -qE "^=item B<$o(=|>)" "$pod" || fail "option $o is not an =item in $pod"
    done
    echo $options
}

# A private directory removed on exit (last, after every cleanup_fn).
tmpdir=$(mktemp -d "${TMPDIR:-/tmp}/lbtest.XXXXXX")

# start_bg NAME CMD...: run CMD in the background (stderr in
# $tmpdir/NAME.err), stop it on exit, and wait until it has written its
# pid file $tmpdir/NAME.pid.
start_bg () {
    local name=$1; shift
    local pidfile="$tmpdir/$name.pid" i
    "$@" 2>"$tmpdir/$name.err" &
    local pid=$!
    cleanup_fn stop_server "$pid"
    for (( i=0; i<3000; i++ )); do
        [ -s "$pidfile" ] && return 0
        kill -0 "$pid" 2>/dev/null || {
            cat "$tmpdir/$name.err" >&2; fail "$name ($1) did not start"; }
        sleep 0.01
    done
    fail "$name ($1) did not start in 30 s"
}

# start_nbdkit NAME [FILTERS] PLUGIN PARAM...: any nbdkit on
# $tmpdir/NAME.sock with pid file $tmpdir/NAME.pid; stopped on exit.
start_nbdkit () {
    local name=$1; shift
    start_bg "$name" "$NBDKIT" -f -U "$tmpdir/$name.sock" \
        -P "$tmpdir/$name.pid" "$@"
}

# start_server NAME PARAM...: the built largeblock plugin, as above.
start_server () {
    local name=$1; shift
    start_nbdkit "$name" "$LARGEBLOCK_PLUGIN" "$@"
}

stop_server () {
    local pid=$1
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null || :
}

# detach_loop_of DEV FILE: detach loop device DEV if it is still attached
# to FILE.  For cleanups: once detached, DEV may be another test's device
# (tests run in parallel and losetup --find hands out the lowest free one),
# and detaching that one breaks the other test.
detach_loop_of () {
    local back file
    back=$(losetup -n -O BACK-FILE "$1" 2>/dev/null) || return 0
    file=$(readlink -m -- "$2")  # losetup shows the absolute path
    case $back in
        "$file" | "$file (deleted)") losetup -d "$1" ;;
    esac
}

uri_of () { echo "nbd+unix:///?socket=$tmpdir/$1.sock"; }
