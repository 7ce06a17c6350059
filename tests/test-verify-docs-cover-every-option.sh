#!/bin/bash
# largeblock-verify's man page is well-formed POD and documents every
# long option that --help lists, and the README shows the tool in use.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/verify-functions.sh"

pod="$abs_top_srcdir/docs/largeblock-verify.pod"
[ -n "${PODCHECKER:-}" ] && [ -x "$PODCHECKER" ] || requires podchecker
"${PODCHECKER:-podchecker}" -warnings -warnings "$pod" >"$tmpdir/pc" 2>&1 ||
    { cat "$tmpdir/pc"; fail "podchecker found errors in $pod"; }
! grep -q WARNING "$tmpdir/pc" || { cat "$tmpdir/pc"; fail "podchecker warnings"; }

"$VERIFY" --help >"$tmpdir/help" || fail "largeblock-verify --help failed"
options=$(grep -o -- '--[a-z-]*' "$tmpdir/help" | sort -u)
[ "$(echo "$options" | wc -w)" -ge 12 ] || fail "too few options: $options"
for o in $options; do
    grep -q "^=item B<$o>" "$pod" || fail "option $o is not an =item in $pod"
done
grep -q 'largeblock-verify --write' "$abs_top_srcdir/README.md" ||
    fail "README.md has no largeblock-verify example"
echo "PASS: documented: $(echo $options)"
