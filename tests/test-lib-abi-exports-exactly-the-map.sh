#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# liblargeblock's ABI: the .so exports exactly the symbols of
# lib/liblargeblock.syms, each at the version node the map puts it in
# (LARGEBLOCK_1.0, LARGEBLOCK_1.1 ...), its SONAME is
# liblargeblock.so.1, and the map lists exactly the functions (not static
# inline) that the public headers declare and that the section 3 group
# pages name (each then gets its own "man FUNCTION", lib/man3-links.sh).
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

# The map's global names, each with its node (comments and "local: *;"
# aside): name@@LARGEBLOCK_1.0.
sed -e 's|/\*.*\*/||g' "$map" |
    awk '/^LARGEBLOCK_[0-9.]+ *\{/ { node = $1; sub(/\{.*/, "", node); next }
         /global:/ { on = 1; next } /local:|\}/ { on = 0 }
         on { gsub(/[ \t;]/, ""); if ($0 != "") print $0 "@@" node }' |
    sort >"$tmpdir/map-versioned"
[ -s "$tmpdir/map-versioned" ] || fail "no symbols in $map"
sed 's/@@.*//' "$tmpdir/map-versioned" | sort >"$tmpdir/map"

# What the library exports, with versions: each at the node the map
# lists it under.
nm -D --defined-only "$so" | awk '$2 != "A" { print $3 }' | sort >"$tmpdir/nm"
diff -u "$tmpdir/map-versioned" "$tmpdir/nm" ||
    fail "the exported symbols and their versions (+) differ from the map (-)"

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
# What the group pages name, each of which gets a page of its own.
pods=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$abs_top_srcdir/lib/local.mk" |
           sed -n 's/^lib_man3_pods = //p')
[ -n "$pods" ] || fail "no lib_man3_pods in lib/local.mk"
# shellcheck disable=SC2086 # one word per page
sh "$abs_top_srcdir/lib/man3-links.sh" "$abs_top_srcdir" $pods |
    awk '{ print $1 }' | sort >"$tmpdir/paged"
diff -u "$tmpdir/map" "$tmpdir/paged" ||
    fail "the functions the man pages name (+) differ from the map (-)"

echo "$(wc -l <"$tmpdir/map") symbols:"
sed 's/.*@@//' "$tmpdir/map-versioned" | sort | uniq -c
