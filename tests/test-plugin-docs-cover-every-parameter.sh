#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: the man page is well-formed POD and documents every
# parameter the plugin's config_help lists, in its SYNOPSIS too, and the
# README mentions them.
source "${abs_top_srcdir:?}/tests/functions.sh"

pod="$abs_top_srcdir/docs/nbdkit-largeblock-plugin.pod"
[ -n "${PODCHECKER:-}" ] && [ -x "$PODCHECKER" ] || requires podchecker
"${PODCHECKER:-podchecker}" -warnings -warnings "$pod" >"$tmpdir/pc" 2>&1 ||
  { cat "$tmpdir/pc"; fail "podchecker found errors"; }
grep -q 'WARNING' "$tmpdir/pc" && { cat "$tmpdir/pc"; fail "podchecker warnings"; }

"$NBDKIT" "$LARGEBLOCK_PLUGIN" --help >"$tmpdir/help" 2>&1 ||
  fail "nbdkit --help failed"
# config_help lines look like "[size=]<SIZE> ..." or "blksize=<N> ...".
keys=$(sed -n 's/^\[\{0,1\}\([a-z-]*\)\]\{0,1\}=.*/\1/p' "$tmpdir/help")
[ "$(echo "$keys" | wc -w)" -ge 7 ] || fail "found too few keys in --help: $keys"

sed -n '/^=head1 SYNOPSIS/,/^=head1 DESCRIPTION/p' "$pod" >"$tmpdir/synopsis"
for k in $keys; do
  grep -q "^=item B<\[\{0,1\}$k=" "$pod" ||
    fail "parameter $k is not documented as =item B<$k=...> in $pod"
  grep -q "[[ ]$k=" "$tmpdir/synopsis" ||
    fail "parameter $k is missing from the SYNOPSIS of $pod"
  grep -q "$k=" "$abs_top_srcdir/README.md" ||
    fail "parameter $k has no example in README.md"
done
echo "PASS: documented: $(echo $keys)"
