#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The installed library works from what is installed alone: install the
# library, its headers, largeblock.pc and its section 3 pages (one per
# function, as links) into a DESTDIR (make install-lib),
# then build docs/largeblock-example.c -- the largeblock(3) example --
# with nothing but pkg-config's flags, against the shared library and
# against the static archive, and run both on an O_DIRECT file and the
# shared one on a loop device with 16k logical sectors.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/lib-functions.sh"

# A sanitizer build's library needs the sanitizer runtime loaded first in
# every program that uses it, and a program built from outside the tree,
# as here, has none ("ASan runtime does not come first").  The plain and
# valgrind runs check this.
[ -z "${NBDKIT_PRELOAD:-}" ] ||
    skip "liblargeblock is built with sanitizers: outside programs cannot load it"

requires "$CC"
requires pkg-config
dest="$tmpdir/dest"
"${MAKE:-make}" -s -C "$abs_top_builddir" install-lib DESTDIR="$dest" \
    >"$tmpdir/install.log" 2>&1 || { cat "$tmpdir/install.log"; fail "make install-lib failed"; }

pc=$(find "$dest" -name largeblock.pc)
[ -n "$pc" ] || fail "largeblock.pc was not installed"
[ -n "$(find "$dest" -path '*/include/largeblock/largeblock.h')" ] ||
    fail "largeblock.h was not installed under \$includedir/largeblock"

# Only DESTDIR's largeblock.pc, with its paths moved into DESTDIR.
export PKG_CONFIG_LIBDIR="$(dirname "$pc")" PKG_CONFIG_PATH=
export PKG_CONFIG_SYSROOT_DIR="$dest"
cflags=$(pkg-config --cflags largeblock) || fail "pkg-config --cflags"
libs=$(pkg-config --libs largeblock) || fail "pkg-config --libs"
echo "cflags: $cflags"
echo "libs:   $libs"
case "$cflags $libs" in
    *"$abs_top_srcdir"*|*"$abs_top_builddir"*) fail "pkg-config points into the tree" ;;
esac
# Our headers are reached as <largeblock/...> only: with pkg-config's
# flags a generic name like <geometry.h> must not find one of ours.
for h in geometry align pattern aligned-io largeblock; do
    if echo "#include <$h.h>" | "$CC" $cflags -E -x c - >"$tmpdir/pp" 2>/dev/null &&
        grep -qF "$dest" "$tmpdir/pp"; then
        fail "#include <$h.h> finds the installed largeblock header"
    fi
done
libdir=$(pkg-config --variable=libdir largeblock)
libdir="$dest${libdir#"$dest"}"

cp "$abs_top_srcdir/docs/largeblock-example.c" "$tmpdir/example.c"
cd "$tmpdir"
"$CC" -std=gnu11 -Wall -Wextra -Werror example.c $cflags $libs -o ex-shared ||
    fail "the example does not build against the installed library"
"$CC" -std=gnu11 -Wall -Wextra -Werror example.c $cflags \
    "$libdir/liblargeblock.a" -pthread -o ex-static ||
    fail "the example does not build against the installed static archive"

# The version: the headers' macros are AC_INIT's, and lb_version() of the
# installed library agrees with them.
cat >version.c <<'EOF_C'
#include <stdio.h>
#include <string.h>
#include <largeblock/largeblock.h>

int
main (void)
{
  char parts[32];

  snprintf (parts, sizeof parts, "%d.%d.%d", LARGEBLOCK_VERSION_MAJOR,
            LARGEBLOCK_VERSION_MINOR, LARGEBLOCK_VERSION_MICRO);
  printf ("%s %s %s %06x\n", lb_version (), LARGEBLOCK_VERSION_STRING, parts,
          LARGEBLOCK_VERSION_NUMBER);
  return strcmp (lb_version (), LARGEBLOCK_VERSION_STRING) != 0
         || strcmp (parts, LARGEBLOCK_VERSION_STRING) != 0;
}
EOF_C
"$CC" -std=gnu11 -Wall -Wextra -Werror version.c $cflags $libs -o version ||
    fail "a program calling lb_version() does not build against the installed library"
LD_LIBRARY_PATH="$libdir" ./version >version.out || { cat version.out; fail "lb_version() disagrees with <largeblock/version.h>"; }
cat version.out
version=$(sed -n 's/^AC_INIT(\[largeblock\], \[\([^]]*\)\].*/\1/p' "$abs_top_srcdir/configure.ac")
read -r running _ _ number <version.out
[ "$running" = "$version" ] || fail "lb_version() is $running, configure.ac says $version"
IFS=. read -r major minor micro <<<"$version"
[ "$number" = "$(printf '%02x%02x%02x' "$major" "$minor" "$micro")" ] ||
    fail "LARGEBLOCK_VERSION_NUMBER $number does not encode $version"

# The shared build must load DESTDIR's library, not one in the tree.
LD_LIBRARY_PATH="$libdir" ldd ./ex-shared >ldd.out
grep -q "liblargeblock.so.1 => $libdir/liblargeblock.so.1" ldd.out ||
    { cat ldd.out; fail "ex-shared does not load $libdir/liblargeblock.so.1"; }
if readelf -d ex-static | grep NEEDED | grep -q liblargeblock; then
    fail "ex-static depends on the shared library"
fi

# Every exported function has a man page of its own: a ".so" link to an
# installed group page, and man follows it.
man3=$(find "$dest" -type d -name man3)
[ -n "$man3" ] || fail "no man3 directory was installed"
nm -D --defined-only "$libdir/liblargeblock.so.1" |
    awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' >exported
[ -s exported ] || fail "no functions in $libdir/liblargeblock.so.1"
while read -r fn; do
    [ -f "$man3/$fn.3" ] || fail "$fn(3) was not installed"
    target=$(sed -n 's|^\.so man3/||p' "$man3/$fn.3")
    [ -z "$target" ] || [ -f "$man3/$target" ] ||
        fail "$fn(3) points to man3/$target, which was not installed"
done <exported
echo "$(wc -l <exported) functions, each with a page"
if command -v man >/dev/null 2>&1; then
    MANWIDTH=80 man -M "$(dirname "$man3")" -P cat 3 lb_pread_full >man.out 2>&1 ||
        { cat man.out; fail "man lb_pread_full fails"; }
    grep -q 'lb_pread_full' man.out || { cat man.out; fail "man lb_pread_full shows another page"; }
fi

dir=$(direct_dir)
f="$dir/lb-install-example.$$"
cleanup_fn rm -f "$f"
for ex in ex-shared ex-static; do
    rm -f "$f"
    LD_LIBRARY_PATH="$libdir" ./$ex "$f" >out 2>&1 || { cat out; fail "$ex failed"; }
    cat out
    grep -qx '16 blocks of 16384 bytes: 0 bad' out || fail "$ex: unexpected output"
done
grep -q "no O_DIRECT" out && echo "note: $dir refuses O_DIRECT; ran through the page cache"

# And on a kernel device with 16k logical sectors, through O_DIRECT: a
# loop device over a file (root and a free loop device only).
if [ "$(id -u)" -ne 0 ]; then
    echo "16k device part skipped: not root"
else
    img="$dir/lb-install-device.$$"
    cleanup_fn rm -f "$img"
    truncate -s 1M "$img"
    if ! loop=$(losetup --find --show --sector-size 16384 --direct-io=on \
                        "$img" 2>losetup.err); then
        echo "16k device part skipped: $(cat losetup.err)"
    else
        cleanup_fn detach_loop_of "$loop" "$img"
        [ "$(blockdev --getss "$loop")" = 16384 ] ||
            fail "$loop does not have 16k sectors"
        LD_LIBRARY_PATH="$libdir" ./ex-shared "$loop" >out 2>&1 ||
            { cat out; fail "ex-shared failed on $loop"; }
        cat out
        grep -q "no O_DIRECT" out && fail "$loop refused O_DIRECT"
        grep -qx '16 blocks of 16384 bytes: 0 bad' out ||
            fail "ex-shared on $loop: unexpected output"
    fi
fi
exit 0
