#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# file= is locked for the server's life (issue 25, B5): an open file
# description lock on the whole file, exclusive read-write, shared with
# -r.
#  - the issue's repro: server A (write-cache=volatile) holds unflushed
#    data; server B (no cache) on the same file is refused at start-up in
#    one line naming the file; A's flush then leaves A's data in the file;
#  - the lock outlives connections: still refused after A's clients left;
#  - two read-only (-r) servers share a file; a read-write server beside
#    them is refused, and a read-only one beside a read-write one too.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

img=$tmpdir/disk.img
BLK=4096

# refused NAME [NBDKIT-OPTIONS] -- PARAMS: nbdkit must exit non-zero at
# start-up with the lock message and never serve.
refused () {
    local name=$1; shift
    local opts=()
    while [ "$1" != -- ]; do opts+=("$1"); shift; done; shift
    if "$NBDKIT" "${opts[@]}" -U - "$LARGEBLOCK_PLUGIN" "file=$img" "$@" \
           --run 'echo served' >"$tmpdir/$name.out" 2>&1; then
        cat "$tmpdir/$name.out"; fail "$name: a second server started on $img"
    fi
    grep -q "largeblock: file=$img: in use by another server (locked)" \
        "$tmpdir/$name.out" ||
        { cat "$tmpdir/$name.out"; fail "$name: no clear 'in use' message"; }
    [ "$(grep -c . "$tmpdir/$name.out")" = 1 ] ||
        { cat "$tmpdir/$name.out"; fail "$name: not one line"; }
    ! grep -q served "$tmpdir/$name.out" || fail "$name: served"
}

# The repro: A caches "A" unflushed, B is refused, A flushes.
start_server a "file=$img" size=1M write-cache=volatile
nbdsh -u "$(uri_of a)" -c "h.pwrite(b'A' * $BLK, 0)" ||
    fail "A's write failed"
refused b -- 
nbdsh -u "$(uri_of a)" -c "h.flush()" || fail "A's flush failed"
cmp <(head -c $BLK "$img") <(printf 'A%.0s' $(seq $BLK)) ||
    fail "the file does not hold A's flushed data"
refused b-ro -r --
stop_server "$(cat "$tmpdir/a.pid")"

# Read-only servers share; a writer is refused beside them.
start_nbdkit r1 -r "$LARGEBLOCK_PLUGIN" "file=$img"
start_nbdkit r2 -r "$LARGEBLOCK_PLUGIN" "file=$img"
for r in r1 r2; do
    nbdsh -u "$(uri_of $r)" -c "assert h.is_read_only()
assert h.pread($BLK, 0) == b'A' * $BLK" || fail "$r cannot read the data"
done
refused rw-beside-ro --
stop_server "$(cat "$tmpdir/r1.pid")"
refused rw-beside-one-ro --
stop_server "$(cat "$tmpdir/r2.pid")"

# The last reader gone, a writer starts again.
"$NBDKIT" -U - "$LARGEBLOCK_PLUGIN" "file=$img" --run true ||
    fail "a writer cannot start after the readers left"
echo PASS
