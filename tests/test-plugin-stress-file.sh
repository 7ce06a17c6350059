#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The multi-connection race test (test-plugin-stress-multiconn.py) against file
# disks: once through the page cache and once with direct=on, each on a
# fresh sparse file, so trim/zero racing reads and writes on a real
# filesystem never corrupt or crash either.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

for mode in "" "direct=on"; do
    img="$tmpdir/stress.img"
    rm -f "$img"
    LB_STRESS_PARAMS="file=$img $mode" \
        "$PYTHON_NBD" "$abs_top_srcdir/tests/test-plugin-stress-multiconn.py" ||
        fail "stress on a file disk${mode:+ with $mode} failed"
done
echo PASS
