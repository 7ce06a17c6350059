#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Every recorded NBD session (fuzz/corpus/session) and every session that
# once crashed or hung the plugin (fuzz/regressions/session) is served by
# "nbdkit -s" with the normal plugin build, in every configuration the
# session fuzzer drives (fuzz/session-targets), as scripts/fuzz-session.sh
# runs it: nbdkit exits by itself, in time, with status 0 or 1, killed
# by no signal, with no sanitizer report (and, under make check-valgrind,
# no valgrind error).  nbdkit < 1.33.10's own hang-up abort
# (docs/testing.md) is accepted and named.
source "${abs_top_srcdir:?}/tests/functions.sh"

known_core_abort="raw_send_socket: Assertion \`sock >= 0' failed"
inputs=("$abs_top_srcdir"/fuzz/corpus/session/* \
        "$abs_top_srcdir"/fuzz/regressions/session/*)
[ ${#inputs[@]} -ge 10 ] || fail "found only ${#inputs[@]} session inputs"

n=0
while read -r target params; do
    case $target in ''|'#'*) continue ;; esac
    # shellcheck disable=SC2206 # the parameters are words
    params=(${params//FILE/$tmpdir/disk.img})
    for f in "${inputs[@]}"; do
        [ -f "$f" ] || continue
        rm -f "$tmpdir/disk.img"
        err="$tmpdir/$target-${f##*/}.err"
        timeout -k 5 120 "$NBDKIT" -s -t 1 "$LARGEBLOCK_PLUGIN" \
            "${params[@]}" <"$f" >/dev/null 2>"$err"
        r=$?
        what="$target: ${f#"$abs_top_srcdir"/}"
        if grep -qF "$known_core_abort" "$err"; then
            echo "$what: nbdkit's known hang-up abort (not ours)"
        elif [ $r -gt 1 ]; then
            cat "$err" >&2
            fail "$what: nbdkit exited with status $r"
        fi
        check_sanitizer_reports "$err" || fail "$what: sanitizer report"
        n=$((n + 1))
    done
done <"$abs_top_srcdir/fuzz/session-targets"
[ $n -ge 30 ] || fail "replayed only $n sessions"
echo "replayed $n sessions"
echo PASS
