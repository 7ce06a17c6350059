#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-verify's man page is well-formed POD and documents every
# long option that --help lists, and the README shows the tool in use.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/verify-functions.sh"

pod="$abs_top_srcdir/tools/largeblock-verify.pod"
check_pod "$pod"
"$VERIFY" --help >"$tmpdir/help" || fail "largeblock-verify --help failed"
options=$(check_pod_items "$pod" "$tmpdir/help" 12) || exit 1
grep -q 'largeblock-verify --write' "$abs_top_srcdir/README.md" ||
    fail "README.md has no largeblock-verify example"
echo "PASS: documented: $options"
