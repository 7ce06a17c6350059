#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Least privilege: a root nbdkit serving largeblock runs with no effective
# or permitted capabilities once it serves (every thread, checked while a
# client is connected), keeps only cap_dac_override with statsfile=, keeps
# everything with keep-capabilities=yes, and a file disk opened before the
# drop still reads and writes afterwards.
source "${abs_top_srcdir:?}/tests/functions.sh"

[ "$(id -u)" -eq 0 ] || skip "needs root (capabilities to drop)"
self_eff=$(sed -n 's/^CapEff:\t*//p' /proc/self/status)
[ "$((16#$self_eff))" -ne 0 ] || skip "this root has no capabilities"
[ -n "${LB_VALGRIND:-}" ] && skip "valgrind's own threads are not ours"

DAC_OVERRIDE=$((1 << 1))

# caps_of PID FIELD: the hex mask of FIELD (CapEff, CapPrm) of every
# thread of PID, one per line.
caps_of () {
    local t
    for t in /proc/"$1"/task/*; do
        sed -n "s/^$2:\t*//p" "$t/status"
    done
}

# expect_caps NAME MASK: every thread of server NAME has exactly MASK in
# CapEff and CapPrm (MASK in decimal).
expect_caps () {
    local pid field m
    pid=$(cat "$tmpdir/$1.pid")
    for field in CapEff CapPrm; do
        for m in $(caps_of "$pid" $field); do
            [ "$((16#$m))" -eq "$2" ] ||
                fail "$1: $field of a thread is $m, expected $(printf %x "$2")"
        done
    done
}

# with_client NAME CMD...: run CMD while an nbdsh client holds a
# connection to server NAME open (so its worker threads exist).
with_client () {
    local name=$1; shift
    rm -f "$tmpdir/$name.connected"
    nbdsh -u "$(uri_of "$name")" \
        -c "open('$tmpdir/$name.connected', 'w').close()" \
        -c "import time" \
        -c "while not __import__('os').path.exists('$tmpdir/$name.done'): time.sleep(0.01)" &
    local client=$!
    cleanup_fn "kill $client 2>/dev/null"
    while [ ! -e "$tmpdir/$name.connected" ]; do
        kill -0 $client 2>/dev/null || fail "$name: client failed"
        sleep 0.01
    done
    "$@"
    touch "$tmpdir/$name.done"
    wait $client || fail "$name: client failed"
}

start_server ram size=16M
with_client ram expect_caps ram 0

start_server stats size=16M statsfile="$tmpdir/stats.json"
with_client stats expect_caps stats $DAC_OVERRIDE

start_server keep size=16M keep-capabilities=yes
pid=$(cat "$tmpdir/keep.pid")
[ "$(caps_of "$pid" CapEff | sort -u)" = "$self_eff" ] ||
    fail "keep-capabilities=yes: CapEff $(caps_of "$pid" CapEff | sort -u)," \
         "expected $self_eff"

# A file disk, opened before the drop, still works after it.
start_server file file="$tmpdir/disk.img" size=16M blksize=16k
with_client file expect_caps file 0
nbdsh -u "$(uri_of file)" -c "
buf = bytes(range(256)) * 64
h.pwrite(buf, 16384)
h.flush()
h.trim(16384, 65536)
assert h.pread(16384, 16384) == buf, 'file disk data lost after the drop'
" || fail "the file disk does not work after the drop"

# The drop is logged at debug level.
"$NBDKIT" -v -U - "$LARGEBLOCK_PLUGIN" size=1M --run true \
    2>"$tmpdir/debug.log" || fail "nbdkit -v failed"
grep -q 'largeblock: dropped capabilities, kept: none' "$tmpdir/debug.log" ||
    { cat "$tmpdir/debug.log"; fail "the drop is not logged"; }
echo PASS
