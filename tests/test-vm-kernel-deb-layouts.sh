#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-vm --kernel-deb reads the three layouts of Debian's kernel
# packages: boot/vmlinuz-* + lib/modules (up to 6.12), boot/vmlinuz-* +
# usr/lib/modules (6.16-6.18), and 6.19+'s split linux-binary(-unsigned)
# (usr/lib/modules/V/vmlinuz) + linux-modules; a set with no image, no
# modules or two images is refused in one line that names the packages,
# never by a silent exit.  Packages built here with the same paths (the
# real ones boot in make check-vm's docs/vm-testing.md runs), and no
# guest is booted.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
requires dpkg-deb

helper="$abs_top_srcdir/server/vm/largeblock-vm-helper"
v=7.3.4+deb13-cloud-amd64

# deb NAME PATH...: a package NAME holding the files (or, ending in /,
# the directories) PATH.
deb () {
    local name=$1 root="$tmpdir/root-$1" p; shift
    mkdir -p "$root/DEBIAN"
    printf 'Package: %s\nVersion: 1\nArchitecture: amd64\nMaintainer: t <t@t>\nDescription: t\n' \
        "$name" >"$root/DEBIAN/control"
    for p in "$@"; do
        case "$p" in
            */) mkdir -p "$root/$p" ;;
            *) mkdir -p "$root/$(dirname "$p")"; echo x >"$root/$p" ;;
        esac
    done
    dpkg-deb -b -Zgzip "$root" "$tmpdir/$name.deb" >/dev/null || fail "dpkg-deb -b $name"
    echo "$tmpdir/$name.deb"
}

# unpack WANT-IMAGE WANT-MODDIR DEB...: the helper finds those two.
unpack () {
    local image=$1 moddir=$2 dir; shift 2
    dir=$(mktemp -d "$tmpdir/tree.XXXXXX")
    "$helper" unpack-deb "$dir" "$@" >"$tmpdir/out" 2>"$tmpdir/err" ||
        { cat "$tmpdir/err"; fail "unpack-deb $* failed"; }
    [ "$(cat "$tmpdir/out")" = "$dir/$image
$dir/$moddir" ] || { cat "$tmpdir/out"; fail "unpack-deb $*: expected $image and $moddir"; }
    echo "ok: $(basename "$1"): $image, $moddir"
}

# refused MESSAGE DEB...: the helper exits 1 with one line containing
# MESSAGE.
refused () {
    local msg=$1 dir rc=0; shift
    dir=$(mktemp -d "$tmpdir/tree.XXXXXX")
    "$helper" unpack-deb "$dir" "$@" >"$tmpdir/out" 2>"$tmpdir/err" || rc=$?
    cat "$tmpdir/err"
    [ "$rc" -eq 1 ] || fail "unpack-deb $*: exit status $rc, expected 1"
    [ "$(wc -l <"$tmpdir/err")" -eq 1 ] || fail "unpack-deb $*: not one line"
    grep -qF -- "$msg" "$tmpdir/err" || fail "unpack-deb $*: expected '$msg'"
}

old=$(deb linux-image-6.12 boot/vmlinuz-6.12.1 lib/modules/6.12.1/kernel/)
mid=$(deb linux-image-6.18 boot/vmlinuz-6.18.1 usr/lib/modules/6.18.1/kernel/)
bin=$(deb linux-binary usr/lib/modules/$v/vmlinuz)
unsigned=$(deb linux-binary-unsigned usr/lib/modules/$v/vmlinuz.unsigned)
mods=$(deb linux-modules usr/lib/modules/$v/kernel/)
base=$(deb linux-base usr/lib/modules/$v/modules.builtin)
meta=$(deb linux-image-meta usr/share/doc/linux-image-meta/copyright)

unpack boot/vmlinuz-6.12.1 lib/modules/6.12.1 "$old"
unpack boot/vmlinuz-6.18.1 usr/lib/modules/6.18.1 "$mid"
unpack usr/lib/modules/$v/vmlinuz usr/lib/modules/$v "$bin" "$mods" "$base"
unpack usr/lib/modules/$v/vmlinuz.unsigned usr/lib/modules/$v "$unsigned" "$mods"

refused "--kernel-deb=$meta: no kernel image" "$meta"
refused "--kernel-deb=$mods: no kernel image" "$mods"
refused "--kernel-deb=$bin,$base: no modules" "$bin" "$base"
refused "more than one kernel image" "$bin" "$unsigned" "$mods"
refused "modules of more than one kernel" "$mid" "$mods"
refused "--kernel-deb=$tmpdir/none.deb: cannot read it" "$tmpdir/none.deb"
echo nonsense >"$tmpdir/bad.deb"
refused "--kernel-deb=$tmpdir/bad.deb: not a Debian package" "$tmpdir/bad.deb"
