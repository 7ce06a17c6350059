#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The benchmark's trim section runs: largeblock at blksize 4k, 16k and
# 64k and nbdkit memory with both allocators, each writing, trimming,
# writing and zeroing, with RSS at each step and the time until a flush
# says the memory is back.  No timing is judged.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/bench-functions.sh"

bench_quick trim
bench_heading trim "Trim and zero"
bench_check trim '
names = {"largeblock-4k", "largeblock-16k", "largeblock-64k",
         "memory-sparse", "memory-malloc"}
assert set(d["servers"]) == names, d["servers"].keys()
num(d["data"], 1)
for n, r in d["servers"].items():
    num(r["trim_s"], 1e-9); num(r["zero_s"], 1e-9)
    # Memory is back when the flush after the second reply returns.
    num(r["trim_back_s"], r["trim_s"]); num(r["zero_back_s"], r["zero_s"])
    for k in ("cold_kib", "start_kib", "written_kib", "trimmed_kib", "zeroed_kib"):
        num(r[k], 1)
    if n.startswith("largeblock-"):
        # The folios written are resident: RSS grew by about the data.
        assert r["written_kib"] - r["start_kib"] >= d["data"] / 1024 / 2, r
        # ...and after the flush that follows the trim, it is gone again.
        assert r["trimmed_kib"] - r["start_kib"] < d["data"] / 1024 / 2, r
'
echo PASS
