#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-vm's man page is well-formed POD and documents every long
# option that --help lists, its exit statuses and the variables COMMAND
# gets; --version prints the version; and the README shows the tool in
# use.  No guest is booted.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

pod="$abs_top_srcdir/server/vm/largeblock-vm.pod"
vm="$abs_top_builddir/server/vm/largeblock-vm"
check_pod "$pod"
"$vm" --help >"$tmpdir/help" || fail "largeblock-vm --help failed"
options=$(check_pod_items "$pod" "$tmpdir/help" 11) || exit 1
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$abs_top_builddir/config.h")
[ "$("$abs_top_builddir/server/vm/largeblock-vm" --version)" = "largeblock-vm $version" ] ||
    fail "largeblock-vm --version does not print 'largeblock-vm $version'"
for status in 123 124 125; do
    grep -q "^=item B<$status>" "$pod" || fail "exit status $status undocumented"
done
for var in LARGEBLOCK_DEV LARGEBLOCK_LOGICAL_BLKSIZE LARGEBLOCK_PHYSICAL_BLKSIZE \
           LARGEBLOCK_VM_CACHE; do
    grep -q "^=item .*C<$var>" "$pod" || fail "variable $var undocumented"
    [ "$var" = LARGEBLOCK_VM_CACHE ] ||
        grep -q "$var" "$abs_top_srcdir/server/vm/largeblock-vm-init" ||
        fail "$var is documented but the guest's /init never sets it"
done
grep -q 'largeblock-vm --attach=virtio' "$abs_top_srcdir/README.md" ||
    fail "README.md has no largeblock-vm example"
echo "PASS: documented: $options"
