#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: make check runs every lib/ Check suite: each suite that
# tests/unit/check-lib knows has its own test, tests/unit-lib-SUITE.tap
# (with "_" spelt "-"), listed in tests/local.mk, and there is no such
# test for a suite it does not know.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

: "${abs_top_builddir:?run through make check}"
runner="$abs_top_builddir/tests/unit/check-lib"
"$runner" --list >"$tmpdir/suites" || fail "check-lib --list failed"
[ -s "$tmpdir/suites" ] || fail "check-lib --list listed no suite"
n=0
while read -r suite; do
    t="tests/unit-lib-${suite//_/-}.tap"
    [ -f "$abs_top_srcdir/$t" ] || fail "suite $suite has no test $t"
    grep -qE "(^|[[:space:]])$t([[:space:]]|\\\\|\$)" \
        "$abs_top_srcdir/tests/local.mk" ||
        fail "$t is not listed in tests/local.mk"
    grep -qE "check-lib\" $suite\$" "$abs_top_srcdir/$t" ||
        fail "$t does not run suite $suite"
    n=$((n + 1))
done <"$tmpdir/suites"
for t in "$abs_top_srcdir"/tests/unit-lib-*.tap; do
    suite=${t##*/unit-lib-}; suite=${suite%.tap}
    grep -qxF "${suite//-/_}" "$tmpdir/suites" ||
        fail "${t#"$abs_top_srcdir"/} runs no suite check-lib knows"
done
"$runner" no-such-suite >"$tmpdir/out" 2>&1 && fail "an unknown suite ran"
grep -q "no suite named 'no-such-suite'" "$tmpdir/out" ||
    fail "unknown suite: $(cat "$tmpdir/out")"
echo "PASS: $n suites, each its own test"
