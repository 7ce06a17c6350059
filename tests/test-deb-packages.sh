#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The Debian packages (debian/, make check-deb): build them with
# dpkg-buildpackage -us -uc -b from a clean copy of the checkout (its
# tracked files as they are now, nothing built), then check what each
# .deb holds and depends on, and run them from a tree extracted with
# dpkg-deb -x -- never dpkg -i on this host: nbdkit serves a 16k disk
# with the plugin found in nbdkit's own plugin directory, pkg-config
# finds largeblock and a program builds and runs against the library,
# the programs run, and the man pages are man pages.  lintian, when
# installed, must report no errors.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

requires dpkg-buildpackage
requires dh
requires git
requires nbdinfo
requires pkg-config
requires "${CC:-cc}"
git -C "$abs_top_srcdir" rev-parse --git-dir >/dev/null 2>&1 ||
    skip "not a git checkout: the packages are built from its tracked files"
dpkg-checkbuilddeps "$abs_top_srcdir/debian/control" 2>"$tmpdir/deps" ||
    skip "$(cat "$tmpdir/deps")"

src="$tmpdir/largeblock"
mkdir "$src"
git -C "$abs_top_srcdir" ls-files -z |
    tar -C "$abs_top_srcdir" --null -T - -cf - | tar -C "$src" -xf - ||
    fail "copying the checkout's tracked files"

echo "== dpkg-buildpackage -us -uc -b"
(cd "$src" && DEB_BUILD_OPTIONS="parallel=2 noddebs" \
    dpkg-buildpackage -us -uc -b) >"$tmpdir/build.log" 2>&1 ||
    { tail -50 "$tmpdir/build.log"; fail "dpkg-buildpackage failed (log above)"; }

version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -q DEB_HOST_MULTIARCH)
deb () { echo "$tmpdir/${1}_${version}_${arch}.deb"; }
for p in nbdkit-plugin-largeblock largeblock-tools liblargeblock1 liblargeblock-dev; do
    [ -f "$(deb $p)" ] || fail "no package $p was built: $(ls "$tmpdir")"
done

# contains PACKAGE PATH...: the package holds each path (a glob).
contains () {
    local p=$1 f; shift
    dpkg-deb -c "$(deb "$p")" | awk '{print $6}' | sed 's|^\./|/|' >"$tmpdir/$p.list"
    for f in "$@"; do
        grep -qx "$f" "$tmpdir/$p.list" ||
            { cat "$tmpdir/$p.list"; fail "$p does not hold $f"; }
    done
}
plugindir=$(pkg-config --variable=plugindir nbdkit)
contains nbdkit-plugin-largeblock "$plugindir/nbdkit-largeblock-plugin.so" \
    /usr/share/man/man1/nbdkit-largeblock-plugin.1.gz
contains largeblock-tools /usr/bin/largeblock-run /usr/bin/largeblock-vm \
    /usr/bin/largeblock-verify /usr/libexec/largeblock/largeblock-vm-helper \
    /usr/libexec/largeblock/largeblock-vm-init \
    /usr/lib/systemd/system/largeblock.service \
    /usr/lib/systemd/system/largeblock.socket \
    /usr/share/man/man1/largeblock-run.1.gz \
    /usr/share/man/man1/largeblock-vm.1.gz \
    /usr/share/man/man1/largeblock-verify.1.gz
contains liblargeblock1 "/usr/lib/$multiarch/liblargeblock.so.1"
contains liblargeblock-dev /usr/include/largeblock/largeblock.h \
    "/usr/lib/$multiarch/liblargeblock.so" \
    "/usr/lib/$multiarch/pkgconfig/largeblock.pc" \
    /usr/share/man/man3/largeblock.3.gz /usr/share/man/man3/lb_geometry.3.gz
# The library is in the library package alone.
grep -q 'liblargeblock\.so\.1' "$tmpdir/liblargeblock-dev.list" &&
    fail "liblargeblock-dev holds the shared library itself"

# field PACKAGE FIELD REGEX: the control field matches.
field () {
    local v
    v=$(dpkg-deb -f "$(deb "$1")" "$2")
    grep -qE "$3" <<<"$v" || fail "$1's $2 is \"$v\", expected to match $3"
}
field nbdkit-plugin-largeblock Depends '(^|, )nbdkit(,|$| )'
field largeblock-tools Depends "nbdkit-plugin-largeblock \\(= $version\\)"
field liblargeblock-dev Depends "liblargeblock1 \\(= $version\\)"
field liblargeblock1 Depends 'libc6'
# The symbols file made from the version script went in.
dpkg-deb -e "$(deb liblargeblock1)" "$tmpdir/ctrl"
grep -q '^ lb_pattern_check@LARGEBLOCK_1.0 ' "$tmpdir/ctrl/symbols" ||
    fail "liblargeblock1 has no symbols file with lb_pattern_check@LARGEBLOCK_1.0"

root="$tmpdir/root"
for p in nbdkit-plugin-largeblock largeblock-tools liblargeblock1 liblargeblock-dev; do
    dpkg-deb -x "$(deb "$p")" "$root"
done

echo "== nbdkit serves a 16k disk with the packaged plugin"
nbdkit -U - "$root$plugindir/nbdkit-largeblock-plugin.so" size=64M blksize=16k \
    --run 'nbdinfo --json "$uri"' >"$tmpdir/info.json" 2>"$tmpdir/nbdkit.err" ||
    { cat "$tmpdir/nbdkit.err"; fail "nbdkit with the packaged plugin failed"; }
grep -q '"block_size_preferred": 16384' "$tmpdir/info.json" ||
    { cat "$tmpdir/info.json"; fail "the packaged plugin does not serve 16k blocks"; }

echo "== pkg-config and a program against the packaged library"
export PKG_CONFIG_LIBDIR="$root/usr/lib/$multiarch/pkgconfig" PKG_CONFIG_PATH=
export PKG_CONFIG_SYSROOT_DIR="$root"
cflags=$(pkg-config --cflags largeblock) || fail "pkg-config --cflags largeblock"
libs=$(pkg-config --libs largeblock) || fail "pkg-config --libs largeblock"
"${CC:-cc}" -o "$tmpdir/example" "$abs_top_srcdir/docs/largeblock-example.c" \
    $cflags $libs || fail "the largeblock(3) example does not build from the packages"
LD_LIBRARY_PATH="$root/usr/lib/$multiarch" "$tmpdir/example" "$tmpdir/example.img" \
    >"$tmpdir/example.out" 2>&1 ||
    { cat "$tmpdir/example.out"; fail "the largeblock(3) example failed"; }
grep -qx '16 blocks of 16384 bytes: 0 bad' "$tmpdir/example.out" ||
    { cat "$tmpdir/example.out"; fail "the largeblock(3) example printed the wrong result"; }
LD_LIBRARY_PATH="$root/usr/lib/$multiarch" ldd "$tmpdir/example" |
    grep -q "$root/usr/lib/$multiarch/liblargeblock.so.1" ||
    fail "the example is not linked against the packaged liblargeblock.so.1"

echo "== the programs run"
for prog in largeblock-run largeblock-vm largeblock-verify; do
    "$root/usr/bin/$prog" --version >"$tmpdir/version" 2>&1 ||
        { cat "$tmpdir/version"; fail "$prog --version failed"; }
    grep -q "$version" "$tmpdir/version" ||
        { cat "$tmpdir/version"; fail "$prog --version does not say $version"; }
done

echo "== the man pages"
for page in man1/nbdkit-largeblock-plugin.1 man1/largeblock-run.1 \
            man1/largeblock-vm.1 man1/largeblock-verify.1 man3/largeblock.3; do
    zcat "$root/usr/share/man/$page.gz" | grep -q '^\.TH ' ||
        fail "$page.gz is not a man page"
done
if command -v man >/dev/null; then
    MANWIDTH=80 man -l "$root/usr/share/man/man1/nbdkit-largeblock-plugin.1.gz" 2>&1 |
        grep -q 'nbdkit-largeblock-plugin' || fail "man cannot show nbdkit-largeblock-plugin(1)"
fi

if command -v lintian >/dev/null; then
    echo "== lintian"
    lintian --tag-display-limit 0 "$tmpdir"/*.changes >"$tmpdir/lintian.log" 2>&1
    cat "$tmpdir/lintian.log"
    grep -q '^E: ' "$tmpdir/lintian.log" && fail "lintian reports errors"
fi
echo "PASS"
