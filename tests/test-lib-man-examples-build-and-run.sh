#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The section 3 pages are well-formed POD; largeblock(3) shows
# docs/largeblock-example.c exactly; every page's EXAMPLE compiles
# against the built library without warnings and runs successfully.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/lib-functions.sh"

# A sanitizer build's library needs the sanitizer runtime loaded first in
# every program that uses it, and a program built from outside the tree,
# as here, has none ("ASan runtime does not come first").  The plain and
# valgrind runs check this.
[ -z "${NBDKIT_PRELOAD:-}" ] ||
    skip "liblargeblock is built with sanitizers: outside programs cannot load it"

[ -n "${PODCHECKER:-}" ] && [ -x "$PODCHECKER" ] || requires podchecker
requires "$CC"
lib="$abs_top_builddir/lib/.libs/liblargeblock.so"
[ -f "$lib" ] || fail "$lib is not built"
dir=$(direct_dir)

for page in largeblock lb_geometry lb_align lb_aligned_io lb_pattern; do
    pod="$abs_top_srcdir/docs/$page.pod"
    "${PODCHECKER:-podchecker}" -warnings -warnings "$pod" >"$tmpdir/pc" 2>&1 ||
        { cat "$tmpdir/pc"; fail "podchecker found errors in $pod"; }
    ! grep -q WARNING "$tmpdir/pc" || { cat "$tmpdir/pc"; fail "podchecker warnings in $pod"; }

    pod_example "$pod" >"$tmpdir/$page.c"
    [ -s "$tmpdir/$page.c" ] || fail "$pod has no EXAMPLE program"
    "$CC" -std=gnu11 -Wall -Wextra -Werror -I"$abs_top_srcdir/include" \
        -I"$abs_top_builddir/include" \
        -o "$tmpdir/$page" "$tmpdir/$page.c" "$lib" ||
        fail "the EXAMPLE of $page(3) does not compile"
done

diff -u "$abs_top_srcdir/docs/largeblock-example.c" "$tmpdir/largeblock.c" ||
    fail "largeblock(3)'s EXAMPLE differs from docs/largeblock-example.c"

export LD_LIBRARY_PATH="$abs_top_builddir/lib/.libs"
"$tmpdir/lb_geometry" || fail "lb_geometry(3)'s example failed"
"$tmpdir/lb_align" || fail "lb_align(3)'s example failed"
"$tmpdir/lb_pattern" || fail "lb_pattern(3)'s example failed"
f="$dir/lb-example.$$"
cleanup_fn rm -f "$f"
"$tmpdir/largeblock" "$f" >"$tmpdir/out" || { cat "$tmpdir/out"; fail "largeblock(3)'s example failed"; }
cat "$tmpdir/out"
grep -qx '16 blocks of 16384 bytes: 0 bad' "$tmpdir/out" || fail "unexpected output"
if dd if=/dev/zero of="$f" bs=64k count=1 oflag=direct 2>/dev/null; then
    "$tmpdir/lb_aligned_io" "$f" || fail "lb_aligned_io(3)'s example failed on $f"
else
    echo "$dir refuses O_DIRECT: lb_aligned_io(3)'s example not run"
fi
