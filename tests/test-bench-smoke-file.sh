#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The benchmark's file section runs: largeblock file= (two geometries)
# and nbdkit file, the fio rows and the mixed load, with a read p99 for
# each server, and removes its files.  No timing is judged.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/bench-functions.sh"

export LARGEBLOCK_BENCH_TMPFS="$tmpdir"
bench_quick file
bench_heading file "File disks"
bench_check file '
names = {"largeblock-file", "largeblock-file-16k", "nbdkit-file"}
assert d["cells"], "no fio rows"
for c in d["cells"]:
    assert set(c["servers"]) == names, c["servers"].keys()
    for r in c["servers"].values():
        num(r["mibs"], 1e-3); num(r["iops"], 1e-3); num(r["cpu_per_gib"])
assert set(d["mixed"]) == names, d["mixed"].keys()
for r in d["mixed"].values():
    num(r["write_mibs"], 1e-3); num(r["read_mibs"], 1e-3)
    num(r["read_p99_ms"], 1e-6, 60e3)
num(d["load"][0]); num(d["load"][1])
'
if ls -d "$tmpdir"/lbbench-file.* 2>/dev/null; then
    fail "the section left its files behind"
fi
grep -qE '^\| nbdkit-file \| [0-9]+ \| [0-9.]+ \| [0-9.]+ ms \|' \
    "$tmpdir/file.md" || fail "no mixed-load row for nbdkit file"
echo PASS
