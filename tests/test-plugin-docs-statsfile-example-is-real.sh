#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The statsfile example in nbdkit-largeblock-plugin(1) is what the plugin
# writes: the page's scenario (one 64 KiB write and one 64 KiB read on
# size=512M blksize=16k logical-blksize=16k) is run and its statsfile
# compared with the page's, line by line (metadata_bytes too: it is
# computed from the structures' sizes, so it changes with them).
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

pod="$abs_top_srcdir/docs/nbdkit-largeblock-plugin.pod"
# The verbatim block after "For example, after one 64 KiB write".
sed -n '/^For example, after one 64 KiB write/,/^ }$/p' "$pod" |
    sed -n 's/^ //p' >"$tmpdir/doc.json"
[ -s "$tmpdir/doc.json" ] || fail "no statsfile example found in $pod"

"$NBDKIT" -U - "$LARGEBLOCK_PLUGIN" size=512M blksize=16k logical-blksize=16k \
    statsfile="$tmpdir/stats.json" \
    --run "$PYTHON_NBD"' -m nbd -u "$uri" -c "h.pwrite(b\"x\" * 65536, 0); h.pread(65536, 0)"' ||
    fail "the example's run failed"

diff -u "$tmpdir/doc.json" "$tmpdir/stats.json" ||
    fail "the statsfile example in $pod differs from a real run's (above)"
exit 0
