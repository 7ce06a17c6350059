#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: install the build just made (make install, default prefix,
# the plugin into the plugin directory configure chose: nbdkit's own
# unless --with-plugindir), so that `nbdkit largeblock ...`, largeblock-run,
# largeblock-vm, largeblock-verify and their man pages work by name.
# Says in one line where everything went and how to remove it.
#   DESTDIR  staged install, as for make install (the tests use it)
#   LARGEBLOCK_BUILDDIR  the configured build tree (default: this checkout)
set -euo pipefail
cd "${LARGEBLOCK_BUILDDIR:-$(dirname "$0")/..}"
# Run from make (make check), the parent's flags would make ours print
# "Entering directory" into the directories read below.
unset MAKEFLAGS MFLAGS MAKELEVEL

log=$(mktemp /tmp/largeblock-install.XXXXXX.log)
if ! make install >"$log" 2>&1; then
  cat "$log" >&2
  echo "largeblock: make install failed (log above)" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
[ -n "${DESTDIR:-}" ] || ldconfig   # liblargeblock.so.1 in the default prefix

# The directories as make expanded them.
dirs=$(make -s --no-print-directory -f Makefile -f - print-install-dirs <<'MK'
print-install-dirs:
	@echo '$(plugindir)' '$(bindir)' '$(mandir)'
MK
)
read -r plugindir bindir mandir <<<"$dirs"
echo "largeblock: installed the plugin in ${DESTDIR:-}$plugindir," \
     "largeblock-run, -vm, -verify in ${DESTDIR:-}$bindir, man pages in" \
     "${DESTDIR:-}$mandir; remove with: make -C $PWD uninstall"
