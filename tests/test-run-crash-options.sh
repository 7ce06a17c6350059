#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run --crash-test and --crash-explore refuse options and
# combinations that make no sense, in one line naming the option, the
# value and the rule, before anything starts.
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

# ---- --crash-explore ----
base=(--crash-explore --mkfs=xfs --mount)
params=(size=512M blksize=16k logical-blksize=4k write-cache=volatile)

for junk in junk -3 5-3 1,,2 1, 2x 99999999999999999999; do
    refused "--epochs=$junk: must be epoch numbers and ascending ranges" \
        "${base[@]}" "--epochs=$junk" "${params[@]}" -- true
done
refused "--sample=0: must be 1 to 1000000" \
    "${base[@]}" --sample=0 "${params[@]}" -- true
refused "--seeds=0: must be 1 to 1000000" \
    "${base[@]}" --seeds=0 "${params[@]}" -- true
refused "--seeds=x: must be 1 to 1000000" \
    "${base[@]}" --seeds=x "${params[@]}" -- true
refused "--crash-test and --crash-explore exclude each other" \
    "${base[@]}" --crash-test "${params[@]}" -- true
refused "--epochs and --sample exclude each other" \
    "${base[@]}" --epochs=3 --sample=2 "${params[@]}" -- true
refused "--epochs needs --crash-explore" \
    --mkfs=xfs --mount --epochs=3 size=512M -- true
refused "--seeds needs --crash-explore" \
    --mkfs=xfs --mount --seeds=3 size=512M -- true
refused "--crash-explore needs write-cache=volatile" \
    --crash-explore --mkfs=xfs --mount size=512M -- true
refused "--crash-explore needs --mkfs and --mount" \
    --crash-explore size=512M write-cache=volatile -- true
refused "--crash-explore needs a WORKLOAD command after --" "${base[@]}" \
    "${params[@]}"
refused "--crash-explore: crash-log= is largeblock-run's own" \
    "${base[@]}" "${params[@]}" crash-log="$tmpdir/log" -- true
refused "--crash-explore: power-cut-after=5: the workload runs without a cut" \
    "${base[@]}" "${params[@]}" power-cut-after=5 -- true
touch "$tmpdir/exists"
refused "--keep-log=$tmpdir/exists: already exists" \
    "${base[@]}" --keep-log="$tmpdir/exists" "${params[@]}" -- true
echo PASS
