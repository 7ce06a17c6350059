# SPDX-License-Identifier: BSD-3-Clause
# largeblock: helpers for the largeblock-verify tests (sourced after
# tests/functions.sh).  Helper names: the words of tests/functions.sh
# (lb_verify runs largeblock-verify).

: "${abs_top_builddir:?run through make check}"
VERIFY="$abs_top_builddir/tools/largeblock-verify"
BROKEN_PLUGIN="$abs_top_builddir/tests/helpers/.libs/nbdkit-broken-plugin.so"

# lb_verify NAME ARG...: largeblock-verify --json; the report goes to
# $tmpdir/NAME.json, stderr to $tmpdir/NAME.verr, the exit status to $rc.
lb_verify () {
    local name=$1; shift
    "$VERIFY" --json "$@" >"$tmpdir/$name.json" 2>"$tmpdir/$name.verr" &&
        rc=0 || rc=$?
}

# expect_rc NAME CODE: the last lb_verify exited with CODE.
expect_rc () {
    [ "$rc" -eq "$2" ] ||
        fail "$1: exit status $rc, expected $2: $(cat "$tmpdir/$1.json" \
             "$tmpdir/$1.verr")"
}

# json_holds NAME EXPR: EXPR (as for assert_json) holds; fails nothing.
json_holds () {
    "$PYTHON_NBD" - "$tmpdir/$1.json" "$2" <<'PY' 2>/dev/null
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}

# assert_json NAME EXPR...: every Python expression holds for the report
# r of run NAME (probes: the probes by name; blocks: r's block classes;
# pc: the --power-cut report).
assert_json () {
    local name=$1; shift
    "$PYTHON_NBD" - "$tmpdir/$name.json" "$@" <<'PY' ||
import json, sys
r = json.load(open(sys.argv[1]))
probes = {p["name"]: p for p in r.get("probes", [])}
failed = [p["name"] for p in r.get("probes", []) if p["result"] == "fail"]
blocks = r.get("integrity", {}).get("blocks", {})
errors = r.get("integrity", {}).get("errors", [])
pc = r.get("power_cut", {})
for expr in sys.argv[2:]:
    assert eval(expr), "does not hold: " + expr
PY
        fail "$name: $(cat "$tmpdir/$name.json" "$tmpdir/$name.verr")"
}
