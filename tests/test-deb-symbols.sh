#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# debian/liblargeblock1.symbols is what debian/symbols-from-map makes of
# the library's version script: a function added to lib/liblargeblock.syms
# without regenerating the symbols file fails here, before a package build
# (where dh_makeshlibs -c4 would fail on it too).
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

[ -f "$abs_top_srcdir/debian/liblargeblock1.symbols" ] ||
    skip "no debian/ directory in this tree"
"$abs_top_srcdir/debian/symbols-from-map" "$abs_top_srcdir/lib/liblargeblock.syms" \
    >"$tmpdir/symbols" || fail "debian/symbols-from-map failed"
grep -q '^ lb_parse_size@LARGEBLOCK_1.0 ' "$tmpdir/symbols" ||
    fail "debian/symbols-from-map printed no lb_parse_size@LARGEBLOCK_1.0"
diff -u "$abs_top_srcdir/debian/liblargeblock1.symbols" "$tmpdir/symbols" ||
    fail "debian/liblargeblock1.symbols is stale: run debian/symbols-from-map lib/liblargeblock.syms >debian/liblargeblock1.symbols"

# A version node without a first upstream version is refused by name.
printf 'LARGEBLOCK_9.9 {\n  global:\n    lb_new;\n} LARGEBLOCK_1.0;\n' >"$tmpdir/new.syms"
if "$abs_top_srcdir/debian/symbols-from-map" "$tmpdir/new.syms" \
       >/dev/null 2>"$tmpdir/err"; then
    fail "a node with no first version was accepted"
fi
grep -q 'LARGEBLOCK_9.9' "$tmpdir/err" || { cat "$tmpdir/err"; fail "the error does not name the node"; }
echo "PASS"
