# largeblock: helpers for the benchmark smoke tests (sourced after
# functions.sh).  A quick pass of one section of bench/largeblock-bench.py
# is run and its raw JSON checked for fields and sane numbers; no timing
# is judged: the machine is shared and noisy.

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
