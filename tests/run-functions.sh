# SPDX-License-Identifier: BSD-3-Clause
# largeblock: helpers for the largeblock-run tests (sourced after
# functions.sh).  Skips only where root, /dev/fuse or loop devices are
# really missing; asserts that a run left nothing behind.  Helper names:
# the words of tests/functions.sh (lb_run runs largeblock-run).

[ "$(id -u)" -eq 0 ] || skip "largeblock-run tests need root"
[ -c /dev/fuse ] || skip "/dev/fuse is missing"
[ -e /dev/loop-control ] || skip "loop devices are missing (/dev/loop-control)"
requires nbdfuse
requires fusermount3
requires losetup

LARGEBLOCK_RUN="$abs_top_builddir/server/run/largeblock-run"
export TMPDIR="$tmpdir"     # largeblock-run's private directory goes here

# The last run's stderr, for assertions on messages.
run_err="$tmpdir/run.err"

# expect_msg TEXT: the last run's stderr contains TEXT.
expect_msg () { grep -qF -- "$1" "$run_err" || fail "expected message: $1"; }

# A command line put before largeblock-run by lb_run and signal_during,
# for a test that runs it in a namespace, say; it must exec its
# arguments, so that largeblock-run keeps its pid.
lb_run_prefix=()

# lb_run ARGS...: run largeblock-run with a 120 s guard; stderr is kept
# in $run_err and echoed.  Sets $rc.
lb_run () {
    rc=0
    "${lb_run_prefix[@]}" timeout 120 "$LARGEBLOCK_RUN" "$@" 2>"$run_err" ||
        rc=$?
    cat "$run_err" >&2
}

# signal_during SIG READY ARGS...: start largeblock-run ARGS..., wait
# until the file READY exists (its COMMAND or a fake tool makes it), then
# send it SIG.  stderr as lb_run; sets $rc.
signal_during () {
    local sig=$1 ready=$2; shift 2
    rm -f "$ready"
    "${lb_run_prefix[@]}" "$LARGEBLOCK_RUN" "$@" 2>"$run_err" &
    local pid=$! i
    for (( i=0; i<3000; i++ )); do
        [ -e "$ready" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.01
    done
    [ -e "$ready" ] || { cat "$run_err" >&2; fail "never reached the point to signal"; }
    kill "-$sig" "$pid"
    rc=0; wait "$pid" || rc=$?
    cat "$run_err" >&2
}

# connected_nbd_devices: /dev/nbdN for each nbd device connected now
# (the kernel shows /sys/block/nbdN/pid while it is), one a line.
connected_nbd_devices () {
    local p
    for p in /sys/block/nbd*/pid; do
        [ -e "$p" ] || continue
        p=${p%/pid}
        echo "/dev/${p##*/}"
    done
}
_nbd_connected_at_start=$(connected_nbd_devices)

# assert_nothing_left: no loop device on a file under $tmpdir, no mount
# under $tmpdir, no process with a pid file there, no private directory,
# no nbd device connected that was not connected when the test started.
assert_nothing_left () {
    local dev
    if losetup -a | grep -F "$tmpdir/"; then
        fail "a loop device backed by our FUSE file remains"
    fi
    if grep -F " $tmpdir/" /proc/mounts; then
        fail "a mount under $tmpdir remains"
    fi
    if pgrep -f -- "$tmpdir/largeblock-run" >/dev/null; then
        pgrep -af -- "$tmpdir/largeblock-run" >&2
        fail "a process we started (nbdkit or nbdfuse) remains"
    fi
    if ls -d "$tmpdir"/largeblock-run.* 2>/dev/null; then
        fail "the private directory remains"
    fi
    for dev in $(connected_nbd_devices); do
        grep -qxF -- "$dev" <<<"$_nbd_connected_at_start" ||
            fail "$dev was connected during the test and still is"
    done
}

# Last resort if a test fails half-way: undo what a leak check would flag.
# nbd devices are disconnected only if a test's COMMAND listed them in
# $tmpdir/nbd-devices, so that nobody else's device is touched.
_run_emergency_cleanup () {
    local m d
    # Filesystems first, then the loop devices (while their backing
    # files still show our paths), then the FUSE mounts under them.
    grep -F " $tmpdir/" /proc/mounts | grep -v ' fuse' | awk '{print $2}' |
        sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
    losetup -a | grep -F "$tmpdir/" | cut -d: -f1 |
        while read -r d; do losetup -d "$d"; done
    grep -F " $tmpdir/" /proc/mounts | awk '{print $2}' | sort -r |
        while read -r m; do umount -l "$m" 2>/dev/null ||
                            fusermount3 -uz "$m" 2>/dev/null; done
    [ -s "$tmpdir/nbd-devices" ] || return 0
    sort -u "$tmpdir/nbd-devices" | while read -r d; do
        [ -e "/sys/block/${d#/dev/}/pid" ] && nbd-client -d "$d"
    done
}
cleanup_fn _run_emergency_cleanup
