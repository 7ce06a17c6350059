#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-vm(1)'s "largeblock-run inside the guest" example quotes
# $LARGEBLOCK_MNT so that largeblock-run's command sees the mount point,
# not the guest shell's empty expansion (with which df lists every
# filesystem).  The example's guest command, taken from the page, is
# run by bash as the guest's /init runs it, with largeblock-run stubbed
# as a function that sets LARGEBLOCK_MNT and runs what follows "--".
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

pod="$abs_top_srcdir/server/vm/largeblock-vm.pod"
# The verbatim paragraph after the example's heading line, joined, and
# its single-quoted guest command.
cmd=$(perl -00 -ne '
    if ($want && /^ /) { s/\\\n\s*/ /g; print "$1\n" if /--\s+\x27(.*)\x27\s*$/s; exit }
    $want = 1 if /^B<largeblock-run> inside the guest/' "$pod")
[ -n "$cmd" ] || fail "no 'largeblock-run inside the guest' example in $pod"
echo "guest command: $cmd"

cat >"$tmpdir/guest" <<'SH'
largeblock-run () {
    while [ "$1" != -- ]; do shift; done
    shift
    LARGEBLOCK_MNT=/stub/mnt "$@"
}
SH
mkdir "$tmpdir/bin"
printf '#!/bin/sh\necho "df args: $*"\n' >"$tmpdir/bin/df"
chmod +x "$tmpdir/bin/df"
printf '%s\n' "$cmd" >>"$tmpdir/guest"
out=$(env -u LARGEBLOCK_MNT PATH="$tmpdir/bin:$PATH" bash "$tmpdir/guest" 2>&1) || { echo "$out"; fail "the example failed"; }
echo "$out"
[ "$out" = "df args: /stub/mnt" ] ||
    fail "the example's df does not get largeblock-run's \$LARGEBLOCK_MNT"
exit 0
