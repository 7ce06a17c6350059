#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The benchmark stopped by a signal in its kernel section -- while fio
# writes to the four devices it attached (largeblock-run's, two nbdfuse +
# loop over its own nbdkit, a loop device over a tmpfs file) -- undoes
# everything it made and exits 128+N: no loop device on its files, no
# FUSE mount, no server, nbdfuse, largeblock-run or fio, no temporary
# directory (lbbench.* and lbbench-kernel.*).  Loop devices are found by
# their backing file's device and inode, which outlive its path.  SIGTERM
# and SIGHUP go to the bench alone; SIGINT goes to its whole process
# group, as Ctrl-C does, so every child sees it too.  A fio wrapper marks the moment: on
# a kernel device it says so and runs until it is stopped.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/run-functions.sh"
source "$abs_top_srcdir/tests/bench-functions.sh"

# group_members PGID: the live processes of group PGID.  A zombie is
# not one: a dead child of a killed member waits there for init.
group_members () {
    ps -e -o pgid=,stat=,pid=,args= | awk -v g="$1" '$1 == g && $2 !~ /^Z/'
}
# group_empty PGID: true once the group has no live member (a member
# killed a moment ago may take a while to go: up to 10 s).
group_empty () {
    local i
    for (( i=0; i<1000; i++ )); do
        [ -z "$(group_members "$1")" ] && return 0
        sleep 0.01
    done
    return 1
}

export LARGEBLOCK_RUN LARGEBLOCK_BENCH_TMPFS="$tmpdir"
ready="$tmpdir/fio-on-a-device"
real_fio=$(command -v fio)
mkdir "$tmpdir/bin"
# The wrapper also notes each loop device on a file under $tmpdir while
# all four are attached: a device left on a lazily unmounted FUSE file
# shows that file's path as seen from the mount ("/disk"), so the path
# alone would not find it afterwards.
loops="$tmpdir/loops-attached"
cat >"$tmpdir/bin/fio" <<EOF
#!/bin/sh
case " \$* " in
*" --filename=/dev/"*)
    losetup --list --noheadings -O NAME,BACK-FILE |
        grep -F '$tmpdir/' >'$loops'
    touch '$ready'
    exec '$real_fio' "\$@" --time_based --runtime=600s ;;
esac
exec '$real_fio' "\$@"
EOF
chmod +x "$tmpdir/bin/fio"
# left_on_our_files LIST: print and succeed if a device of LIST ("NAME
# PATH" lines) is still on PATH, or on PATH's last component under a
# mount gone lazily ("/disk").
left_on_our_files () {
    losetup --list --noheadings -O NAME,BACK-FILE |
        awk 'NR == FNR { ours[$1] = $2; next }
             ($1 in ours) {
                 p = ours[$1]; sub(/.*\//, "/", p)
                 if ($2 == ours[$1] || $2 == p) { print; found = 1 } }
             END { exit !found }' "$1" -
}
bench_pid=
# On a failure half-way: its group gets SIGTERM, then SIGKILL.
stop_bench_group () {
    local i
    [ -n "$bench_pid" ] || return 0
    kill -TERM -- "-$bench_pid" 2>/dev/null
    for (( i=0; i<300; i++ )); do
        pgrep -g "$bench_pid" >/dev/null || return 0
        sleep 0.1
    done
    kill -KILL -- "-$bench_pid" 2>/dev/null
}
cleanup_fn stop_bench_group

# stop_at_kernel SIG TARGET: run the bench's kernel section (in a
# session of its own, so that its process group is only what it
# started), signal TARGET ("pid" or "group") with SIG once fio runs on a
# kernel device, and check the exit status and that nothing is left.
stop_at_kernel () {
    local sig=$1 target=$2 pid i rc=0
    rm -f "$ready"
    PATH="$tmpdir/bin:$PATH" setsid "$PYTHON_NBD" \
        "$abs_top_srcdir/bench/largeblock-bench.py" --quick --only kernel \
        --output "$tmpdir/kernel.md" 2>"$tmpdir/progress" &
    pid=$!
    # Its group is ours while it is unreaped or has members left.
    bench_pid=$pid
    for (( i=0; i<6000; i++ )); do
        [ -e "$ready" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.01
    done
    [ -e "$ready" ] || { cat "$tmpdir/progress" >&2
                         fail "the bench never ran fio on a kernel device"; }
    if [ "$target" = group ]; then kill "-$sig" -- "-$pid"
    else kill "-$sig" "$pid"; fi
    wait "$pid" || rc=$?
    cat "$tmpdir/progress" >&2
    if ! group_empty "$pid"; then
        group_members "$pid" >&2
        fail "SIG$sig: a process the bench started remains"
    fi
    bench_pid=
    [ "$rc" -eq $((128 + $(kill -l "$sig"))) ] ||
        fail "SIG$sig to the bench's $target: exit status $rc"
    assert_nothing_left
    [ "$(wc -l <"$loops")" -ge 3 ] ||
        fail "SIG$sig: the fio wrapper saw $(wc -l <"$loops") of our loop devices"
    if left=$(left_on_our_files "$loops"); then
        echo "$left" >&2
        # They are ours (name and file match): detach before failing.
        awk '{print $1}' <<<"$left" | xargs -r -n1 losetup -d
        fail "SIG$sig: loop devices on the bench's files remain"
    fi
    if ls -d "$tmpdir"/lbbench* 2>/dev/null; then
        fail "SIG$sig: the bench's temporary directories remain"
    fi
    if pgrep -f -- "$tmpdir/" >/dev/null; then
        pgrep -af -- "$tmpdir/" >&2
        fail "SIG$sig: a process the bench started remains"
    fi
    [ ! -e "$tmpdir/kernel.md" ] || fail "SIG$sig: a report was written"
}

stop_at_kernel TERM pid
stop_at_kernel INT group
stop_at_kernel HUP pid
echo PASS
