#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Every public header (include/largeblock/*.h) compiles on its own, first
# in a translation unit, as strict C11 without warnings, and carries no
# sentinel enumerator (LB_..._COUNT-style "__" names): a count in a public
# enum is a number users compile in, which then changes when a value is
# added.  Each includes only the C library and other public headers.
# Each also compiles as C++, its functions with C linkage, when a C++
# compiler is here.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/lib-functions.sh"

requires "$CC"
inc=("-I$abs_top_srcdir/include" "-I$abs_top_builddir/include")
headers=$(cd "$abs_top_srcdir/include" && ls largeblock/*.h | grep -v "^largeblock/version.h$")
[ -f "$abs_top_builddir/include/largeblock/version.h" ] ||
    fail "include/largeblock/version.h is not generated (run configure)"
headers="$headers largeblock/version.h"

n=0
for h in $headers; do
    printf '#include <%s>\nint lb_header_only_test;\n' "$h" >"$tmpdir/h.c"
    "$CC" -std=c11 -pedantic -Wall -Wextra -Werror "${inc[@]}" \
        -c "$tmpdir/h.c" -o "$tmpdir/h.o" || fail "<$h> does not compile on its own"
    n=$((n + 1))
done
echo "$n headers compile on their own"

# The boundary: a public header includes only the C library and other
# public headers, never lib/ or the engine in lib/disk/.
if grep -n '#include' "$abs_top_srcdir"/include/largeblock/*.h |
        grep -vE '#include <(std[a-z]*|largeblock/[a-z-]*)\.h>'; then
    fail "a public header above includes a private header"
fi

if grep -nE '\bLB_[A-Z0-9_]*__[A-Z0-9_]*\b' "$abs_top_srcdir"/include/largeblock/*.h; then
    fail "a public header above has a sentinel enumerator"
fi

cxx=${CXX:-c++}
if command -v "$cxx" >/dev/null 2>&1; then
    for h in $headers; do
        printf '#include <%s>\nint main () { return 0; }\n' "$h" >"$tmpdir/h.cc"
        "$cxx" -std=c++11 -Wall -Wextra -Werror "${inc[@]}" -c "$tmpdir/h.cc" \
            -o "$tmpdir/h.o" || fail "<$h> does not compile as C++"
    done
    # A header included alone gives its functions C linkage, so a C++
    # program calling one links against the C library.
    printf '#include <largeblock/geometry.h>\nint main () { return lb_parse_size ("1M", 0, 0, 0, 0) != 0; }\n' \
        >"$tmpdir/h.cc"
    "$cxx" -std=c++11 "${inc[@]}" -c "$tmpdir/h.cc" -o "$tmpdir/h.o" ||
        fail "a C++ call of lb_parse_size does not compile"
    nm "$tmpdir/h.o" | grep -qE ' U lb_parse_size$' ||
        fail "<largeblock/geometry.h> gives lb_parse_size C++ linkage"
    echo "each header compiles as C++ with C linkage"
else
    echo "no C++ compiler: the C++ part is not run"
fi
