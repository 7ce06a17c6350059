#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run --attach=nbd, on any machine: device choice, the
# nbd-client command lines, teardown and every failure path, with a stub
# nbd-client first on PATH.  It runs in a private mount namespace whose
# /sys/block, /sys/module and /dev show four fake nbd devices; the stub
# checks that the server really answers on the socket it is given, then
# plays the kernel's part in the fake sysfs (pid, logical_block_size).
# What the real driver does is tested by test-run-nbd-xfs.sh.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
requires unshare
requires nbdinfo

fake="$tmpdir/fake"
stub_log="$tmpdir/stub.log"
mkdir "$tmpdir/bin"

# nbd-client as largeblock-run must call it; STUB_MODE picks a failure.
cat >"$tmpdir/bin/nbd-client" <<'STUB'
#!/bin/sh
echo "nbd-client $*" >>"$STUB_LOG"
if [ "$1" = -d ] && [ $# = 2 ]; then
    rm -f "/sys/block/${2#/dev/}/pid"
    exit 0
fi
[ $# = 5 ] && [ "$1" = -unix ] && [ "$4" = -b ] || { echo "stub: bad args" >&2; exit 2; }
sock=$2 dev=$3 bs=$5 sys=/sys/block/${3#/dev/}
nbdinfo --size "nbd+unix:///?socket=$sock" >/dev/null || exit 3
case ${STUB_MODE:-ok} in
    taken:*)                    # another process connects it first
        if [ "$dev" = "${STUB_MODE#taken:}" ]; then
            echo 999999 >"$sys/pid"
            echo "Error: Failed to setup device, check dmesg" >&2
            exit 1
        fi ;;
    open:*)                     # another process has it open: the
                                # kernel refuses, nothing in sysfs
        if [ "$dev" = "${STUB_MODE#open:}" ]; then
            echo "Error: Failed to setup device, check dmesg" >&2
            exit 1
        fi ;;
    refused)                    # the kernel refuses, nothing connected
        echo "Error: Failed to setup device, check dmesg" >&2
        exit 1 ;;
    killed)                     # connected, then killed
        echo $$ >"$sys/pid"
        kill -KILL $$ ;;
    wrong-bs) bs=512 ;;         # the kernel gives another block size
esac
echo "$bs" >"$sys/queue/logical_block_size"
echo $$ >"$sys/pid"
STUB
# modprobe as a stub too, for the cases where the module is not loaded.
cat >"$tmpdir/bin/modprobe" <<'STUB'
#!/bin/sh
echo "modprobe $*" >>"$STUB_LOG"
[ "$STUB_MODPROBE" = loads ] && mkdir /sys/module/nbd
STUB
chmod +x "$tmpdir/bin/nbd-client" "$tmpdir/bin/modprobe"
export STUB_LOG="$stub_log" PATH="$tmpdir/bin:$PATH"

# reset_fake [unloaded]: nbd0..3, none connected, the nbd module loaded
# (unless "unloaded"), an empty log.
reset_fake () {
    local n q
    rm -rf "$fake"
    mkdir -p "$fake/module" "$fake/dev"
    [ "${1-loaded}" = loaded ] && mkdir "$fake/module/nbd"
    for n in 0 1 2 3; do
        q="$fake/block/nbd$n/queue"
        mkdir -p "$q"
        echo 512 >"$q/logical_block_size"
        echo 1280 >"$q/max_sectors_kb"
    done
    # The real loop devices, for --attach=auto's fallback.
    for q in /sys/block/loop*; do
        ln -s "$(readlink -f "$q")" "$fake/block/${q##*/}"
    done
    : >"$stub_log"
}

# "${fake_ns[@]}" CMD...: CMD in a mount namespace seeing the fake
# devices; CMD keeps the pid, so it can be signalled.  The namespace
# starts with a copy of every mount, other tests' filesystems and FUSE
# mounts on loop devices among them, and a copy keeps a filesystem and
# its device busy after its owner unmounted it (their teardown then
# found the loop device "open exclusively by another namespace"): so
# they are detached from the copy first.
fake_ns=(unshare --mount --propagation private -- /bin/sh -c '
    f=$1; shift
    findmnt -rn -o TARGET,SOURCE,FSTYPE | while read -r t s y; do
        case $s:$y in /dev/loop*|/dev/nbd*|*:fuse*) umount -l "$t" ;; esac
    done 2>/dev/null
    mount --bind "$f/block" /sys/block &&
    mount --bind "$f/module" /sys/module &&
    mount -t tmpfs tmpfs "$f/dev" &&
    mkdir "$f/dev/up" "$f/dev/work" &&
    touch "$f/dev/up/nbd0" "$f/dev/up/nbd1" "$f/dev/up/nbd2" "$f/dev/up/nbd3" &&
    mount -t overlay overlay \
          -o "lowerdir=/dev,upperdir=$f/dev/up,workdir=$f/dev/work" /dev &&
    exec "$@"' sh "$fake")

expect_log () { grep -qxF -- "$1" "$stub_log" || fail "expected call: $1"; }
refute_log () { ! grep -qF -- "$1" "$stub_log" || fail "unexpected call: $1"; }
connected () { [ -e "$fake/block/$1/pid" ]; }
assert_disconnected () {
    local n
    for n in "$@"; do ! connected "$n" || fail "$n left connected"; done
}

reset_fake
"${fake_ns[@]}" sh -c '[ -d /sys/module/nbd ] && [ -e /dev/nbd3 ]' ||
    skip "cannot fake nbd devices in a private mount namespace"
lb_run_prefix=("${fake_ns[@]}")

# nbd0 is someone else's: /dev/nbd1 is used, with -b the logical block
# size, on the server's socket; max-request caps the kernel's requests;
# COMMAND's status comes back; teardown disconnects nbd1 only.
reset_fake
echo 4242 >"$fake/block/nbd0/pid"
lb_run --attach=nbd blksize=16k logical-blksize=4k max-request=1M size=64M \
    -- sh -c 'echo "$LARGEBLOCK_DEV $LARGEBLOCK_SOCKET" >"$TMPDIR/seen"
              [ "$(cat /sys/block/nbd1/queue/max_sectors_kb)" = 1024 ] &&
              exit 7'
[ "$rc" -eq 7 ] || fail "expected COMMAND's status 7, got $rc"
read -r dev sock <"$tmpdir/seen"
[ "$dev" = /dev/nbd1 ] || fail "LARGEBLOCK_DEV is $dev, expected /dev/nbd1"
expect_log "nbd-client -unix $sock /dev/nbd1 -b 4096"
expect_log "nbd-client -d /dev/nbd1"
refute_log "/dev/nbd0"
[ "$(cat "$fake/block/nbd0/pid")" = 4242 ] || fail "nbd0 was touched"
assert_disconnected nbd1
assert_nothing_left

# 16k logical blocks go to nbd-client unchanged (it accepts any multiple
# of 512; the kernel decides); --attach=auto picks nbd and says so.
reset_fake
lb_run --verbose blksize=16k logical-blksize=16k size=64M \
    -- sh -c '[ "$(cat /sys/block/nbd0/queue/logical_block_size)" = 16384 ]'
[ "$rc" -eq 0 ] || fail "16k logical: status $rc"
expect_msg "--attach=auto: using the kernel nbd driver"
grep -qE -- "^nbd-client -unix .* /dev/nbd0 -b 16384$" "$stub_log" ||
    fail "nbd-client was not given -b 16384"
assert_disconnected nbd0
assert_nothing_left

# Another process takes nbd1 between our look and nbd-client: nbd2 is
# used, and nbd1 is not ours to disconnect.
reset_fake
echo 4242 >"$fake/block/nbd0/pid"
STUB_MODE=taken:/dev/nbd1 lb_run --attach=nbd size=64M \
    -- sh -c '[ "$LARGEBLOCK_DEV" = /dev/nbd2 ]'
[ "$rc" -eq 0 ] || fail "after losing nbd1: status $rc"
expect_log "nbd-client -d /dev/nbd2"
refute_log "nbd-client -d /dev/nbd1"
[ "$(cat "$fake/block/nbd1/pid")" = 999999 ] || fail "nbd1 was touched"
assert_disconnected nbd2
assert_nothing_left

# nbd0 is open elsewhere, which the kernel refuses without a trace in
# sysfs: nbd1 is used.
reset_fake
STUB_MODE=open:/dev/nbd0 lb_run --attach=nbd size=64M \
    -- sh -c '[ "$LARGEBLOCK_DEV" = /dev/nbd1 ]'
[ "$rc" -eq 0 ] || fail "after nbd0 was refused: status $rc"
[ -s "$run_err" ] && fail "a refusal that was retried was reported"
expect_log "nbd-client -d /dev/nbd1"
refute_log "nbd-client -d /dev/nbd0"
assert_disconnected nbd0 nbd1
assert_nothing_left

# --disks=2: two devices, disconnected in reverse order.
reset_fake
lb_run --attach=nbd --disks=2 size=64M \
    -- sh -c '[ "$LARGEBLOCK_DEV" = /dev/nbd0 ] &&
              [ "$LARGEBLOCK_DEV1" = /dev/nbd1 ]'
[ "$rc" -eq 0 ] || fail "--disks=2: status $rc"
[ "$(grep -- ' -d ' "$stub_log" | tr '\n' ' ')" = \
  "nbd-client -d /dev/nbd1 nbd-client -d /dev/nbd0 " ] ||
    fail "disks not disconnected in reverse order"
assert_disconnected nbd0 nbd1
assert_nothing_left

# The kernel refuses every device: after a second device, nbd-client's
# message and ours; the server stopped.
reset_fake
STUB_MODE=refused lb_run --attach=nbd size=64M -- true
[ "$rc" -eq 1 ] || fail "refused connection: status $rc"
expect_msg "Error: Failed to setup device, check dmesg"
expect_msg "largeblock-run: --attach=nbd: nbd-client failed with exit status 1 connecting /dev/nbd1 with -b 512"
[ "$(grep -c -- '-unix' "$stub_log")" = 2 ] ||
    fail "expected two devices tried, then a report"
refute_log "nbd-client -d"
assert_nothing_left

# Refused with a logical block above the page size: the kernel is
# blamed (it takes such blocks from Linux 6.15 on) only if it is older.
reset_fake
STUB_MODE=refused lb_run --attach=nbd blksize=16k logical-blksize=16k \
    size=64M -- true
[ "$rc" -eq 1 ] || fail "refused 16k connection: status $rc"
expect_msg "largeblock-run: --attach=nbd: nbd-client failed with exit status 1 connecting /dev/nbd1 with -b 16384"
hint="a logical block size above the page size needs Linux 6.15"
IFS=. read -r kmajor kminor _ <<<"$(uname -r)"
kminor=${kminor%%[!0-9]*}
if (( kmajor < 6 || (kmajor == 6 && kminor < 15) )); then
    expect_msg "$hint or later; this is $(uname -r))"
elif grep -qF "$hint" "$run_err"; then
    fail "Linux $(uname -r) blamed for refusing 16k blocks"
fi
assert_nothing_left

# fails_and_disconnects MODE MESSAGE ARGS...: with STUB_MODE=MODE,
# largeblock-run fails with MESSAGE after connecting /dev/nbd0, which
# teardown disconnects.
fails_and_disconnects () {
    local mode=$1 msg=$2; shift 2
    reset_fake
    STUB_MODE=$mode lb_run --attach=nbd "$@" size=64M -- true
    [ "$rc" -eq 1 ] || fail "$mode: expected status 1, got $rc"
    expect_msg "$msg"
    expect_log "nbd-client -d /dev/nbd0"
    assert_disconnected nbd0
    assert_nothing_left
}
# nbd-client connected, then died: the connection is ours to undo.
fails_and_disconnects killed "largeblock-run: --attach=nbd: nbd-client killed by signal 9 connecting /dev/nbd0 with -b 512; disconnecting it"
# The kernel's logical block size is not ours.
fails_and_disconnects wrong-bs \
    "/dev/nbd0: kernel logical block size is 512, logical-blksize is 4096" \
    logical-blksize=4k

# Every device connected: says so, starts nothing it leaves behind.
reset_fake
for n in 0 1 2 3; do echo 4242 >"$fake/block/nbd$n/pid"; done
lb_run --attach=nbd size=64M -- true
[ "$rc" -eq 1 ] || fail "no free device: status $rc"
expect_msg "largeblock-run: --attach=nbd: no free nbd device; every /dev/nbdN is connected"
refute_log "nbd-client"
assert_nothing_left

# SIGTERM while COMMAND runs: 143, disconnected.
reset_fake
signal_during TERM "$tmpdir/ready" --attach=nbd size=64M \
    -- sh -c 'touch "$TMPDIR/ready"; sleep 60'
[ "$rc" -eq 143 ] || fail "SIGTERM during COMMAND: expected 143, got $rc"
expect_log "nbd-client -d /dev/nbd0"
assert_disconnected nbd0
assert_nothing_left

# Module not loaded: modprobe nbd is tried; if it loads, nbd is used.
reset_fake unloaded
STUB_MODPROBE=loads lb_run --attach=nbd size=64M -- true
[ "$rc" -eq 0 ] || fail "after modprobe: status $rc"
expect_log "modprobe nbd"
expect_log "nbd-client -d /dev/nbd0"
assert_nothing_left

# ... if it does not: --attach=nbd is refused in one line before anything
# starts, and --attach=auto says why it uses loop.
reset_fake unloaded
lb_run --attach=nbd size=64M -- true
[ "$rc" -eq 1 ] || fail "nbd without the module: status $rc"
[ "$(wc -l <"$run_err")" -eq 1 ] || fail "expected a one-line message"
expect_msg "largeblock-run: --attach=nbd: the kernel nbd module is not loaded and modprobe nbd did not load it; use --attach=loop"
refute_log "nbd-client"
assert_nothing_left
lb_run --verbose size=64M -- sh -c 'case $LARGEBLOCK_DEV in /dev/loop*) ;; *) exit 9;; esac'
[ "$rc" -eq 0 ] || fail "auto without the module: status $rc"
expect_msg "--attach=auto: using loop: the kernel nbd module is not loaded and modprobe nbd did not load it"
refute_log "nbd-client"
assert_nothing_left

# A max-request below the page size cannot be imposed on the kernel.
reset_fake
lb_run --attach=nbd blksize=2k logical-blksize=512 max-request=2k size=64M -- true
[ "$rc" -eq 1 ] || fail "max-request 2k: status $rc"
expect_msg "largeblock-run: --attach=nbd: max-request 2048 is below the page size"
refute_log "nbd-client"
assert_nothing_left
# SIGKILL while COMMAND runs, then --cleanup: nbd0 is disconnected while
# the kernel's pid for it is the nbd-client the journal recorded, and
# left alone once another process has connected it.
sigkill_then_cleanup () {
    local pid cmd
    reset_fake
    rm -f "$tmpdir/ready"
    "${fake_ns[@]}" "$LARGEBLOCK_RUN" --attach=nbd size=64M \
        -- sh -c 'echo $$ >"$TMPDIR/cmd.pid"; touch "$TMPDIR/ready"
                  exec sleep 60' 2>"$run_err" &
    pid=$!
    for (( i=0; i<3000; i++ )); do
        [ -e "$tmpdir/ready" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.01
    done
    [ -e "$tmpdir/ready" ] || { cat "$run_err" >&2; fail "COMMAND never started"; }
    kill -KILL "$pid"
    wait "$pid"
    cmd=$(cat "$tmpdir/cmd.pid")
    kill -KILL "$cmd"
    connected nbd0 || fail "the SIGKILLed run left nbd0 unconnected: nothing to prove"
    [ "${1-}" = reconnected ] && echo 4242 >"$fake/block/nbd0/pid"
    lb_run_prefix=("${fake_ns[@]}")
    lb_run --cleanup --verbose
    [ "$rc" -eq 0 ] || fail "--cleanup after SIGKILL: status $rc"
}
sigkill_then_cleanup
expect_log "nbd-client -d /dev/nbd0"
assert_disconnected nbd0
assert_nothing_left
sigkill_then_cleanup reconnected
refute_log "nbd-client -d"
[ "$(cat "$fake/block/nbd0/pid")" = 4242 ] || fail "nbd0, reconnected, was touched"
rm "$fake/block/nbd0/pid"
assert_nothing_left

echo "nbd attach logic checked with a stub nbd-client"
