#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Every fuzz seed and every input that once crashed a harness
# (fuzz/corpus/*, fuzz/regressions/*) still passes its harness's checks,
# replayed without libFuzzer by the ordinary build.
source "${abs_top_srcdir:?}/tests/functions.sh"

n=0
for src in "$abs_top_srcdir"/fuzz/fuzz-*.c; do
    h=${src##*/fuzz-}; h=${h%.c}
    bin="$abs_top_builddir/fuzz/fuzz-$h-replay"
    [ -x "$bin" ] || fail "$bin was not built"
    # shellcheck disable=SC2086 # LB_VALGRIND is a command line
    ${LB_VALGRIND:-} "$bin" "$abs_top_srcdir/fuzz/corpus/$h" \
        "$abs_top_srcdir/fuzz/regressions/$h" ||
        fail "harness $h failed on its corpus or regressions"
    n=$((n + 1))
done
[ $n -ge 3 ] || fail "found only $n harnesses"
echo PASS
