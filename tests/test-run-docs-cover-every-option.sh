#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run's man page is well-formed POD and documents every long
# option that --help lists, the crash test's exit statuses and the
# variables its commands get; --version prints the version; and the
# README shows a crash loop and a crash exploration.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

pod="$abs_top_srcdir/server/run/largeblock-run.pod"
check_pod "$pod"
"$abs_top_builddir/server/run/largeblock-run" --help >"$tmpdir/help" ||
    fail "largeblock-run --help failed"
options=$(check_pod_items "$pod" "$tmpdir/help" 11) || exit 1
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$abs_top_builddir/config.h")
[ "$("$abs_top_builddir/server/run/largeblock-run" --version)" = "largeblock-run $version" ] ||
    fail "largeblock-run --version does not print 'largeblock-run $version'"
for status in 10 11 12 13 14 15; do
    grep -q "^=item B<$status>" "$pod" || fail "exit status $status undocumented"
    grep -qE "= $status, " "$abs_top_srcdir/server/run/crash.c" ||
        fail "exit status $status is documented but crash.c has no such stage"
done
grep -q "^=item B<16>" "$pod" || fail "exit status 16 undocumented"
grep -qE "= 16, " "$abs_top_srcdir/server/run/explore.c" ||
    fail "exit status 16 is documented but explore.c has no such status"
for var in LARGEBLOCK_DEV LARGEBLOCK_MNT LARGEBLOCK_CUT LARGEBLOCK_STATS; do
    grep -q "^=item .*C<$var>" "$pod" || fail "variable $var undocumented"
done
grep -q 'largeblock-run --crash-test' "$abs_top_srcdir/README.md" ||
    fail "README.md has no largeblock-run --crash-test example"
grep -q 'largeblock-run --crash-explore' "$abs_top_srcdir/README.md" ||
    fail "README.md has no largeblock-run --crash-explore example"
echo "PASS: documented: $options"
