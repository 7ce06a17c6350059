#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: fuzz the parsers of lib/ with libFuzzer (clang), and the
# plugin through "nbdkit -s" with AFL++ (scripts/fuzz-session.sh), each
# for FUZZ_SECONDS (default 60), FUZZ_JOBS (default 1) at a time.  Usage, from a configured tree ("make fuzz"):
#   scripts/fuzz.sh [HARNESS...]
# A HARNESS is a libFuzzer harness fuzz/fuzz-HARNESS.c or a session
# target named in fuzz/session-targets (default: all of both).
# Seeds come from fuzz/corpus/HARNESS and fuzz/regressions/HARNESS
# (fuzz/*/session for every session target); new corpus entries and
# crash inputs go under fuzz/work/ in the build tree.  A crash fails the
# run: copy its input into the regressions directory, where "make check"
# replays it from then on.
set -uo pipefail
srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${abs_top_builddir:-$srcdir}
seconds=${FUZZ_SECONDS:-60}
CLANG=${CLANG:-clang}

command -v "$CLANG" >/dev/null || { echo "fuzz: $CLANG is missing (apt-get install clang)"; exit 77; }
[ -f "$builddir/config.h" ] || { echo "fuzz: configure first (no $builddir/config.h)"; exit 1; }

session_targets=$(sed -n 's/^\([a-z][a-z-]*\) .*/\1/p' "$srcdir/fuzz/session-targets")
args=("$@")
if [ ${#args[@]} -eq 0 ]; then
    for f in "$srcdir"/fuzz/fuzz-*.c; do
        h=${f##*/fuzz-}; args+=("${h%.c}")
    done
    # shellcheck disable=SC2206 # one name a line
    args+=($session_targets)
fi
harnesses=() sessions=()
for h in "${args[@]}"; do
    if grep -qxF "$h" <<<"$session_targets"; then sessions+=("$h")
    else harnesses+=("$h"); fi
done

# lib/'s sources as lib/local.mk lists them (print-fuzz-lib-sources).
lib_sources=()
if [ ${#harnesses[@]} -gt 0 ]; then
    for f in $(make -s --no-print-directory -C "$builddir" \
                   print-fuzz-lib-sources); do
        lib_sources+=("$srcdir/$f")
    done
    [ ${#lib_sources[@]} -gt 0 ] ||
        { echo "fuzz: make print-fuzz-lib-sources listed nothing"; exit 1; }
fi

# fuzz_harnesses: each libFuzzer harness in turn; false if one failed.
fuzz_harnesses () {
    local h work bin r status=0
    for h in "${harnesses[@]}"; do
        work="$builddir/fuzz/work/$h"
        bin="$builddir/fuzz/work/fuzz-$h"
        mkdir -p "$work/corpus" "$work/crashes"
        "$CLANG" -g -O1 -fsanitize=fuzzer,address,undefined \
            -fno-sanitize-recover=all -I"$builddir" -I"$srcdir/include" -I"$builddir/include" -I"$srcdir/lib" -I"$srcdir/lib/disk" \
            "$srcdir/fuzz/fuzz-$h.c" "${lib_sources[@]}" -pthread \
            -o "$bin" || { echo "fuzz: cannot build $h"; status=1; continue; }
        echo "fuzz: $h for ${seconds}s"
        "$bin" -max_total_time="$seconds" -print_final_stats=1 \
            -artifact_prefix="$work/crashes/" "$work/corpus" \
            "$srcdir/fuzz/corpus/$h" "$srcdir/fuzz/regressions/$h" \
            >"$work/fuzz.log" 2>&1
        r=$?
        grep -E '^stat::(number_of_executed_units|peak_rss_mb)|^#[0-9]+ *DONE' \
            "$work/fuzz.log" | sed "s/^/fuzz: $h: /"
        if [ $r -ne 0 ]; then
            tail -40 "$work/fuzz.log"
            echo "fuzz: $h FAILED; inputs: $(ls "$work/crashes")"
            status=1
        fi
    done
    return $status
}

# Each fuzzer uses one CPU.  With FUZZ_JOBS=2 or more the libFuzzer
# harnesses and the session targets run side by side (two at a time,
# each still for FUZZ_SECONDS), the harnesses' output shown after.
status=0
if [ "${FUZZ_JOBS:-1}" -gt 1 ] && [ ${#harnesses[@]} -gt 0 ] &&
   [ ${#sessions[@]} -gt 0 ]; then
    mkdir -p "$builddir/fuzz/work"
    fuzz_harnesses >"$builddir/fuzz/work/harnesses.log" 2>&1 &
    harnesses_pid=$!
    "$srcdir/scripts/fuzz-session.sh" "${sessions[@]}" || status=1
    wait "$harnesses_pid" || status=1
    cat "$builddir/fuzz/work/harnesses.log"
else
    fuzz_harnesses || status=1
    if [ ${#sessions[@]} -gt 0 ]; then
        "$srcdir/scripts/fuzz-session.sh" "${sessions[@]}" || status=1
    fi
fi
exit $status
