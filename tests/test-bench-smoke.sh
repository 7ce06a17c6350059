#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The benchmark runs: a quick pass of bench/largeblock-bench.py (a few
# seconds of each of the sections below against largeblock and its peers)
# produces a report with every section and a row for every server (the
# write-cache section's too); the file, trim, limit and kernel sections
# have tests of their own (test-bench-smoke-*.sh).  No timing is judged here: the machine is
# shared and noisy.  It serves the built plugin and says so, also when
# run by hand without LARGEBLOCK_PLUGIN.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

requires fio
requires nbdinfo
requires nbdcopy

report="$tmpdir/performance.md"
"$PYTHON_NBD" "$abs_top_srcdir/bench/largeblock-bench.py" --quick \
    --only matrix --only memory --only scale --only huge --only copy \
    --only wcache \
    --output "$report" --json "$tmpdir/raw.json" 2>"$tmpdir/progress" ||
    { cat "$tmpdir/progress"; fail "the benchmark failed"; }

for heading in "## Targets" "## Throughput" "## Memory" "## Scale" \
               "## Huge pages" "## The RAM store's own cost" \
               "## The volatile write cache"; do
    grep -qF "$heading" "$report" || fail "no '$heading' section in the report"
done
for server in memory-sparse memory-malloc null memory+blocksize-policy \
              largeblock-16k/4k; do
    grep -qE "^\| randwrite \| 16k \| 1 \| ${server/+/\\+} \| [0-9]+ \|" "$report" ||
        fail "no randwrite row for $server"
done
grep -qxF "largeblock-bench: serving the plugin $(realpath "$LARGEBLOCK_PLUGIN")" \
    "$tmpdir/progress" || fail "the benchmark did not say which plugin it serves"
# nbdkit's threads by default: 2 per CPU, within 4 to 16.
threads=$(( $(nproc) * 2 )); (( threads < 4 )) && threads=4
(( threads > 16 )) && threads=16
grep -qF "nbdkit ran with \`--threads=$threads\` (2 x $(nproc) CPUs" "$report" ||
    fail "the report does not say nbdkit ran with --threads=$threads"
for server in "largeblock write-cache=none" "largeblock write-cache=volatile"; do
    grep -qE "^\| randwrite 16k, flush every 16 \| 1 \| $server \| [0-9]+ \|" \
        "$report" || fail "no flush-every-16 row for $server"
done
grep -qE '^\| 7E \| [0-9.]+ ms \| [0-9]+ KiB \|' "$report" ||
    fail "no startup row for 7E"
"$PYTHON_NBD" -c 'import json, sys; d = json.load(open(sys.argv[1]));
assert len(d["cells"]) == 2 and len(d["copy_cost"]) == 4' "$tmpdir/raw.json" ||
    fail "the raw JSON is incomplete"
# Without LARGEBLOCK_PLUGIN (run by hand), the plugin built in this
# checkout, never nbdkit's "largeblock" by name.
if [ "$abs_top_srcdir" -ef "$abs_top_builddir" ]; then
    env -u LARGEBLOCK_PLUGIN "$PYTHON_NBD" \
        "$abs_top_srcdir/bench/largeblock-bench.py" --quick --only scale \
        --output "$tmpdir/default.md" 2>"$tmpdir/default.progress" ||
        { cat "$tmpdir/default.progress"; fail "the default plugin run failed"; }
    grep -qxF "largeblock-bench: serving the plugin $(realpath "$LARGEBLOCK_PLUGIN")" \
        "$tmpdir/default.progress" ||
        { cat "$tmpdir/default.progress"; fail "not the built plugin by default"; }
fi
echo PASS
