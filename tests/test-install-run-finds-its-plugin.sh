#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The quick start's install (scripts/install-build.sh, which
# scripts/serve-example.sh runs) puts this build's plugin, programs and
# man pages where nbdkit and PATH find them, and says in one line where
# and how to remove them; the installed largeblock-run serves the plugin
# installed with it, by its full path, and --verbose names it.  Staged
# in a DESTDIR, so nothing outside the test's directory changes.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

grep -qx 'scripts/install-build.sh' "$abs_top_srcdir/scripts/serve-example.sh" ||
    fail "scripts/serve-example.sh does not install the build"

dest="$tmpdir/dest"
LARGEBLOCK_BUILDDIR="$abs_top_builddir" DESTDIR="$dest" \
    "$abs_top_srcdir/scripts/install-build.sh" >"$tmpdir/out" 2>&1 ||
    { cat "$tmpdir/out"; fail "scripts/install-build.sh failed"; }
cat "$tmpdir/out"
[ "$(wc -l <"$tmpdir/out")" -eq 1 ] || fail "the install says more than one line"
grep -q "remove with: make -C .* uninstall" "$tmpdir/out" ||
    fail "the install line does not say how to remove it"

for prog in largeblock-run largeblock-vm largeblock-verify; do
    [ -n "$(find "$dest" -path "*/bin/$prog" -perm -u+x)" ] ||
        fail "$prog was not installed in a bin directory"
done
for page in largeblock-run largeblock-vm largeblock-verify nbdkit-largeblock-plugin; do
    [ -n "$(find "$dest" -path "*/man1/$page.1")" ] ||
        fail "the man page $page(1) was not installed"
done

# Without --plugin or LARGEBLOCK_PLUGIN, the installed program names the
# plugin installed with it (an invalid parameter stops it before it
# starts anything).
run=$(find "$dest" -path '*/bin/largeblock-run')
env -u LARGEBLOCK_PLUGIN "$run" --verbose blksize=3k >"$tmpdir/run" 2>&1 || :
cat "$tmpdir/run"
plugin=$(sed -n 's/^largeblock-run: plugin \(.*\) (installed with largeblock-run)$/\1/p' \
             "$tmpdir/run")
[ -n "$plugin" ] || fail "largeblock-run --verbose does not name the installed plugin"
case "$plugin" in
    /*) ;;
    *) fail "largeblock-run uses the plugin '$plugin', not a full path" ;;
esac
[ -f "$dest$plugin" ] || fail "largeblock-run uses $plugin, which the install did not make"
cmp -s "$dest$plugin" "$abs_top_builddir/plugins/largeblock/.libs/nbdkit-largeblock-plugin.so" ||
    fail "the installed $plugin is not this build's plugin"
grep -qF "the plugin in $(dirname "$dest$plugin")," "$tmpdir/out" ||
    fail "the install line does not say where the plugin went"

# --plugin and LARGEBLOCK_PLUGIN still choose, and --verbose says which.
LARGEBLOCK_PLUGIN=/x/env.so "$run" --verbose blksize=3k 2>&1 |
    grep -qx 'largeblock-run: plugin /x/env.so (LARGEBLOCK_PLUGIN)' ||
    fail "LARGEBLOCK_PLUGIN is not used or not named"
"$run" --verbose --plugin=/x/opt.so blksize=3k 2>&1 |
    grep -qx 'largeblock-run: plugin /x/opt.so (--plugin)' ||
    fail "--plugin is not used or not named"
exit 0
