#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: make check runs every Check suite.  A suite is a file,
# tests/unit/check-NAME.c, ending in LB_UNIT_SUITE; listing it in
# tests/local.mk builds it into its runner and makes its test
# tests/unit/check-NAME.tap.  So this fails when a suite file is not
# listed (no runner knows NAME), when a file lacks its LB_UNIT_SUITE line,
# or when a suite's generated test does not run it.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

: "${abs_top_builddir:?run through make check}"
for runner in check-lib check-server; do
    "$abs_top_builddir/tests/unit/$runner" --list >"$tmpdir/$runner" ||
        fail "$runner --list failed"
    [ -s "$tmpdir/$runner" ] || fail "$runner --list listed no suite"
done
n=0
for f in "$abs_top_srcdir"/tests/unit/check-*.c; do
    suite=${f##*/check-}; suite=${suite%.c}
    [ "$(grep -c '^LB_UNIT_SUITE (' "$f")" = 1 ] ||
        fail "${f#"$abs_top_srcdir"/} has no single LB_UNIT_SUITE line"
    runner=$(grep -lxF "$suite" "$tmpdir"/check-lib "$tmpdir"/check-server) ||
        fail "suite $suite is in no runner: list tests/unit/check-$suite.c in tests/local.mk"
    [ "$(echo "$runner" | wc -l)" = 1 ] || fail "suite $suite is in both runners"
    t="$abs_top_builddir/tests/unit/check-$suite.tap"
    [ -x "$t" ] || fail "suite $suite has no test tests/unit/check-$suite.tap"
    grep -qE "/${runner##*/}\" $suite\$" "$t" || fail "$t does not run suite $suite"
    n=$((n + 1))
done
listed=$(cat "$tmpdir"/check-lib "$tmpdir"/check-server | wc -l)
[ "$listed" = "$n" ] || fail "the runners list $listed suites, tests/unit has $n"
"$abs_top_builddir/tests/unit/check-lib" no-such-suite >"$tmpdir/out" 2>&1 &&
    fail "an unknown suite ran"
grep -q "no suite named 'no-such-suite'" "$tmpdir/out" ||
    fail "unknown suite: $(cat "$tmpdir/out")"
echo "PASS: $n suites, each its own test"
