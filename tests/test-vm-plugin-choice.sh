#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-vm serves the plugin installed with it, by its full path, as
# largeblock-run does (server/common/plugin-choice.c) -- never the bare name,
# which nbdkit would look up in its own plugin directory -- unless
# --plugin or LARGEBLOCK_PLUGIN says otherwise; --verbose names it and
# where the choice came from.  An invalid parameter stops it before it
# starts anything, so no guest is booted.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

vm="$abs_top_builddir/server/vm/largeblock-vm"
plugindir=$(sed -n 's/^plugindir = //p' "$abs_top_builddir/Makefile")
[ -n "$plugindir" ] || fail "no plugindir in the Makefile"

# check WANT ARGS...: largeblock-vm --verbose ARGS... names WANT.
check () {
    local want=$1; shift
    "$vm" --verbose "$@" blksize=3k -- true >"$tmpdir/out" 2>&1 || :
    grep -qxF "largeblock-vm: plugin $want" "$tmpdir/out" ||
        { cat "$tmpdir/out"; fail "expected: largeblock-vm: plugin $want"; }
    echo "ok: $want"
}
( unset LARGEBLOCK_PLUGIN
  check "$plugindir/nbdkit-largeblock-plugin.so (installed with largeblock-vm)"
  check "/x/p.so (--plugin)" --plugin=/x/p.so ) || exit 1
LARGEBLOCK_PLUGIN=/y/p.so check "/y/p.so (LARGEBLOCK_PLUGIN)"
LARGEBLOCK_PLUGIN=/y/p.so check "/x/p.so (--plugin)" --plugin=/x/p.so
