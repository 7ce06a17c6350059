#!/bin/bash
# liblargeblock's ABI: the .so exports exactly the symbols of
# lib/liblargeblock.syms, each at version LARGEBLOCK_1.0, its SONAME is
# liblargeblock.so.1, and the map lists exactly the functions (not static
# inline) that the public headers declare.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/lib-functions.sh"

requires nm
requires objdump
requires "$CC"
so="$abs_top_builddir/lib/.libs/liblargeblock.so"
map="$abs_top_srcdir/lib/liblargeblock.syms"
[ -f "$so" ] || fail "$so is not built"

objdump -p "$so" | grep -Eq 'SONAME +liblargeblock\.so\.1$' ||
    { objdump -p "$so" | grep SONAME; fail "SONAME is not liblargeblock.so.1"; }

# The map's global names (comments and "local: *;" aside).
sed -e 's|/\*.*\*/||g' "$map" |
    awk '/global:/ { on = 1; next } /local:/ { on = 0 }
         on { gsub(/[ \t;]/, ""); if ($0 != "") print }' | sort >"$tmpdir/map"
[ -s "$tmpdir/map" ] || fail "no symbols in $map"

# What the library exports, with versions.
nm -D --defined-only "$so" | awk '$2 != "A" { print $3 }' | sort >"$tmpdir/nm"
grep -v '@@LARGEBLOCK_1\.0$' "$tmpdir/nm" && fail "symbols above are not at LARGEBLOCK_1.0"
sed 's/@@.*//' "$tmpdir/nm" >"$tmpdir/exported"
diff -u "$tmpdir/map" "$tmpdir/exported" ||
    fail "the exported symbols (+) differ from the map (-)"

# What the public headers declare: gcc's -aux-info lists every function
# prototype with the file it came from; keep the non-static ones from
# include/largeblock/.
echo '#include <largeblock/largeblock.h>' >"$tmpdir/h.c"
"$CC" -I"$abs_top_srcdir/include" -I"$abs_top_builddir/include" \
    -aux-info "$tmpdir/aux" -c "$tmpdir/h.c" -o "$tmpdir/h.o" ||
    fail "largeblock.h does not compile on its own"
grep -F -e "$abs_top_srcdir/include/largeblock/" \
    -e "$abs_top_builddir/include/largeblock/" "$tmpdir/aux" |
    grep -v '\*/ static ' |
    grep -o '\blb_[a-z0-9_]* (' | tr -d ' (' | sort -u >"$tmpdir/declared"
diff -u "$tmpdir/map" "$tmpdir/declared" ||
    fail "the functions the headers declare (+) differ from the map (-)"
echo "$(wc -l <"$tmpdir/map") symbols, all at LARGEBLOCK_1.0"
