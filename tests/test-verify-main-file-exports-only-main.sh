#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-verify's main file defines no function but main that other
# files could call: the modules never call back into it, so no two of its
# files call each other in a loop (issue 28; json_string once lived there,
# used by verify-power-cut.c).
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

requires nm
obj="$abs_top_builddir/tools/largeblock_verify-largeblock-verify.o"
[ -f "$obj" ] || fail "$obj is not built"
nm --defined-only "$obj" | awk '$2 ~ /^[TDBR]$/ && $3 != "main" { print $3 }' \
    >"$tmpdir/exported"
if [ -s "$tmpdir/exported" ]; then
    cat "$tmpdir/exported"
    fail "tools/largeblock-verify.c exports the above besides main; move them to a module"
fi
echo "tools/largeblock-verify.c exports only main"
