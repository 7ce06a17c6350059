#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run --crash-test refuses combinations that make no sense,
# in one line naming the option and the rule, before anything starts.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

run="$abs_top_builddir/server/run/largeblock-run"
export TMPDIR=$tmpdir
geom=(size=512M blksize=16k logical-blksize=4k)

# refused MESSAGE ARGS...: largeblock-run ARGS fails with status 1 and
# exactly one line of stderr containing MESSAGE, creating nothing.
refused () {
    local msg=$1; shift
    local rc=0
    "$run" "$@" >"$tmpdir/out" 2>"$tmpdir/err" || rc=$?
    [ "$rc" -eq 1 ] || { cat "$tmpdir/err"; fail "$*: status $rc, expected 1"; }
    [ "$(wc -l <"$tmpdir/err")" -eq 1 ] ||
        { cat "$tmpdir/err"; fail "$*: expected one line of stderr"; }
    grep -qF -- "$msg" "$tmpdir/err" ||
        { cat "$tmpdir/err"; fail "$*: expected: $msg"; }
    ! ls -d "$tmpdir"/largeblock-run.* 2>/dev/null ||
        fail "$*: a private directory was created"
}

refused "--crash-test needs write-cache=volatile" \
    --crash-test --mkfs=xfs --mount "${geom[@]}" -- true
refused "--crash-test needs write-cache=volatile" \
    --crash-test --mkfs=xfs --mount "${geom[@]}" write-cache=none -- true
refused "--crash-test needs --mkfs and --mount" \
    --crash-test --mkfs=xfs "${geom[@]}" write-cache=volatile -- true
refused "--crash-test: --disks=2: must be 1" \
    --crash-test --disks=2 --mkfs=xfs --mount "${geom[@]}" \
    write-cache=volatile -- true
refused "--crash-test needs a WORKLOAD command after --" \
    --crash-test --mkfs=xfs --mount "${geom[@]}" write-cache=volatile
refused "--check needs --crash-test" \
    --check=true --mkfs=xfs --mount "${geom[@]}" -- true
# The plugin's own rules still apply to what a crash test passes on.
refused "power-cut-mode" \
    --crash-test --mkfs=xfs --mount "${geom[@]}" write-cache=volatile \
    power-cut-mode=sometimes -- true
echo PASS
