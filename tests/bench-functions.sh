# SPDX-License-Identifier: BSD-3-Clause
# largeblock: helpers for the benchmark smoke tests (sourced after
# functions.sh).  A quick pass of one section of bench/largeblock-bench.py
# is run and its raw JSON checked for fields and sane numbers; no timing
# is judged: the machine is shared and noisy.  Helper names: the words of
# tests/functions.sh.

requires fio

# bench_quick SECTION: run a quick pass of SECTION only; the report is
# $tmpdir/SECTION.md and the raw numbers $tmpdir/SECTION.json.
bench_quick () {
    "$PYTHON_NBD" "$abs_top_srcdir/bench/largeblock-bench.py" --quick \
        --only "$1" --output "$tmpdir/$1.md" --json "$tmpdir/$1.json" \
        2>"$tmpdir/$1.progress" ||
        { cat "$tmpdir/$1.progress"; fail "the bench's $1 section failed"; }
}

# bench_check SECTION CODE: run the Python CODE with d = SECTION's part of
# the raw JSON and num(x, lo=0, hi=inf) asserting a finite number in
# [lo, hi]; an assertion that fails fails the test, naming the value.
bench_check () {
    "$PYTHON_NBD" - "$tmpdir/$1.json" "$1" <<PY ||
import json, math, sys
d = json.load(open(sys.argv[1]))[sys.argv[2]]
def num(x, lo=0, hi=float("inf")):
    assert isinstance(x, (int, float)) and math.isfinite(x) and \
        lo <= x <= hi, "not a number in [%s, %s]: %r" % (lo, hi, x)
    return x
$2
PY
        fail "the $1 section's JSON: see above"
}

# bench_heading SECTION HEADING: the report has the section's heading.
bench_heading () {
    grep -qxF "## $2" "$tmpdir/$1.md" || fail "no '## $2' in the report"
}

# bench_vm_expected: true where the bench's guest rows must run -- what
# make check-vm needs is installed and largeblock-vm's cache holds its
# kernel (the bench fetches nothing).
bench_vm_expected () {
    local t cache=${LARGEBLOCK_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/largeblock-vm}
    for t in qemu-system-x86_64 busybox socat nbd-client; do
        command -v "$t" >/dev/null || return 1
    done
    ls "$cache"/tree-*/.complete >/dev/null 2>&1
}

# bench_check_vm_rows SECTION: SECTION's guest rows (d["vm"]) parse, one
# per path, pattern and server, where they must run; elsewhere the
# report names the reason they were skipped.
bench_check_vm_rows () {
    grep -qxF "### In a guest under TCG (largeblock-vm)" "$tmpdir/$1.md" ||
        fail "no guest subsection in the report"
    if ! bench_vm_expected; then
        grep '^Guest paths skipped: ..*\.$' "$tmpdir/$1.md" ||
            fail "the guest rows were not run and the report says no reason"
        return 0
    fi
    if grep '^Guest paths skipped: ' "$tmpdir/$1.md"; then
        fail "the guest rows skipped although make check-vm can run here"
    fi
    bench_check "$1" '
d = d["vm"]
assert d["cells"], "no guest rows"
# --quick: one path (virtio); the whole bench runs both.
assert {c["attach"] for c in d["cells"]} == {"virtio"}, d["cells"]
assert d["attaches"] == ["virtio"], d["attaches"]
assert d["kernel"], d
for c in d["cells"]:
    assert set(c["servers"]) == {"largeblock", "null"}, c["servers"].keys()
    for n, r in c["servers"].items():
        num(r["mibs"], 1e-3); num(r["iops"], 1e-3)
        for k in ("qemu_main", "qemu_other", "nbdkit"):
            num(r[k + "_cpu_per_gib"])
        num(r["guest_busy_pct"], 0, 100); num(r["guest_user_pct"], 0, 100)
'
    grep -E '^\| virtio \| ' "$tmpdir/$1.md" | head -4
}
