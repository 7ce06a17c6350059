#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/run-tests.sh prints make check's failures, skips and summary,
# not a PASS line per test (about 1,650 of them), and still ends with
# "N passed, M failed" and make check's status.  Run on a copy with a
# fake make (and stub dependency and build scripts), so nothing is built.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1

top=$tmpdir/tree
mkdir -p "$top/scripts" "$tmpdir/bin"
cp "$abs_top_srcdir/scripts/run-tests.sh" "$top/scripts/"
printf '#!/bin/sh\nexit 0\n' >"$top/scripts/install-deps.sh"
printf '#!/bin/sh\nexit 0\n' >"$top/scripts/build.sh"
chmod +x "$top/scripts/"*.sh
cat >"$tmpdir/bin/make" <<'SCRIPT'
#!/bin/bash
# make check: 500 passes, one skip, one failure, and their log.
case " $* " in
  *" check "*)
    for i in $(seq 500); do echo "PASS: tests/t$i.sh"; done
    echo "SKIP: tests/skipped.sh"
    echo "FAIL: tests/failed.sh"
    printf '# TOTAL: 502\n# PASS:  500\n# SKIP:  1\n# XFAIL: 0\n# FAIL:  1\n# XPASS: 0\n# ERROR: 0\n' >test-suite.log
    echo "FAIL: tests/failed.sh" >>test-suite.log
    exit 2 ;;
esac
exit 0
SCRIPT
chmod +x "$tmpdir/bin/make"

rc=0
# Without LB_HARDEN, which CI's own run-tests.sh exports to every test:
# the copy would run the hardening phases, which are not in it.
PATH=$tmpdir/bin:$PATH env -u LB_HARDEN "$top/scripts/run-tests.sh" \
    >"$tmpdir/out" 2>&1 || rc=$?
cat "$tmpdir/out"
[ "$rc" -eq 2 ] || fail "status $rc, not make check's 2"
! grep -q '^PASS: ' "$tmpdir/out" || fail "PASS lines were printed"
grep -q '^SKIP: tests/skipped.sh' "$tmpdir/out" || fail "the skip was not printed"
grep -q '^FAIL: tests/failed.sh' "$tmpdir/out" || fail "the failure was not printed"
[ "$(tail -1 "$tmpdir/out")" = "500 passed, 1 failed" ] ||
    fail "the last line is not the summary"
echo PASS
