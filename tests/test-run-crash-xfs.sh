#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run --crash-test on XFS with 16k blocks: after a power cut
# at a chosen point the filesystem mounts (log recovery), xfs_repair -n
# is clean, and every file the workload fsync'd is intact.
#
# Geometries: 16k blocks on 4k sectors (blksize=16k logical-blksize=4k)
# and on 16k sectors (16k/16k); modes lose, atomic and torn; cut points:
# the workload cuts itself after its Kth fsync while writing on
# (fifo:K), power-cut-after=N (after:N), or largeblock-run cuts once the
# workload ended (end).  The workload is tests/helpers/crash-workload.py;
# its manifest of fsync'd files lives outside the disk.
#
# mkfs and mount make about 70 write, trim and zero requests and the
# workload about 60 more, so after:90 and after:115 cut inside the
# workload.  make check runs a bounded table (fixed seeds that pass);
# make check-crash (CRASH_FULL=1) runs the full one, 30 cut points.  Every
# case runs; failures are listed at the end with the command that
# replays them (same seed, same cut point).
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
requires mkfs.xfs
requires xfs_repair
requires python3
requires sha256sum

workload="$abs_top_srcdir/tests/helpers/crash-workload.py"
manifest="$tmpdir/manifest"
export CRASH_MANIFEST=$manifest
check='[ ! -s "$CRASH_MANIFEST" ] ||
       (cd "$LARGEBLOCK_MNT" && sha256sum --quiet --strict -c "$CRASH_MANIFEST")'

# GEOMETRY MODE SEED CUT
if [ -n "${CRASH_FULL:-}" ]; then
    cases=()
    for geom in 16k/4k 16k/16k; do
        for mode in lose atomic torn; do
            seed=$(( ${#cases[@]} + 101 ))
            for cut in fifo:3 fifo:12 after:90 after:115 end; do
                cases+=("$geom $mode $seed $cut")
            done
        done
    done
else
    cases=(
        "16k/4k torn 11 fifo:5"
        "16k/16k atomic 12 after:100"
        "16k/4k lose 13 end"
    )
fi

failures=()
summaries=()
start=$SECONDS
for c in "${cases[@]}"; do
    read -r geom mode seed cut <<<"$c"
    params=(size=512M "blksize=${geom%/*}" "logical-blksize=${geom#*/}"
            write-cache=volatile "power-cut-mode=$mode"
            "power-cut-seed=$seed")
    env=(CRASH_SEED="$seed" CRASH_FILES=40 CRASH_CUT_AT=0)
    case $cut in
    fifo:*) env+=(CRASH_CUT_AT="${cut#fifo:}") ;;
    after:*) params+=("power-cut-after=${cut#after:}") ;;
    end) ;;
    esac
    : >"$manifest"
    args=(--crash-test --attach=loop --mkfs=xfs --mount --check="$check"
          "${params[@]}" -- env "${env[@]}" python3 "$workload")
    rc=0
    out=$(timeout 300 "$LARGEBLOCK_RUN" "${args[@]}" 2>"$run_err") || rc=$?
    echo "$c: $out (status $rc, $(wc -l <"$manifest") files fsync'd)"
    summaries+=("$c: $out")
    if [ "$rc" -ne 0 ]; then
        cat "$run_err" >&2
        failures+=("$c: status $rc; replay: CRASH_MANIFEST=/tmp/m largeblock-run ${args[*]}")
    fi
    assert_nothing_left
done
echo "${#cases[@]} cut points in $((SECONDS - start)) s"

if [ ${#failures[@]} -gt 0 ]; then
    printf 'FAILED: %s\n' "${failures[@]}" >&2
    fail "${#failures[@]} of ${#cases[@]} crash tests failed"
fi
