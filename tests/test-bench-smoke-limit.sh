#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The benchmark's memory-limit section runs: peak RSS of a RAM disk at
# memory-limit=64M and of nbdkit memory under the same concurrent load,
# with the documented bound.  No timing is judged, and no peak either
# (nbdkit's buffers depend on how many requests happen to overlap).
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/bench-functions.sh"
requires nbdcopy

bench_quick limit
bench_heading limit "Peak memory under memory-limit"
bench_check limit '
assert d["rows"], "no rows"
for r in d["rows"]:
    num(r["bs"], 512)
    for n in ("largeblock", "memory-sparse"):
        num(r[n + "_start_kib"], 1)
        num(r[n + "_hwm_kib"], r[n + "_start_kib"])
    # The bound is the start, the limit and every possible buffer.
    num(r["bound_kib"], r["largeblock_start_kib"] + d["limit"] / 1024)
'
echo PASS
