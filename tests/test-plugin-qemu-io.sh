#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock works with QEMU as an unmodified client.  On an export with
# 16k logical = physical blocks and misaligned=error (so any misaligned
# request would fail with EINVAL), qemu-io writes 512 bytes of 0xab at
# offset 512 -- QEMU honours the advertised minimum block size and does
# the read-modify-write of the 16k block itself -- reads them back, and
# the rest of that 16k block stays zero.  An independent libnbd client
# sees exactly those bytes.  qemu-img info reports the size, and
# qemu-img map --output=json shows the written block as data and the rest
# of the disk as zero.  The server's statistics show that QEMU never sent
# a misaligned request and no request failed.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

requires qemu-io
requires qemu-img

size=$((16 * 1024 * 1024))
stats="$tmpdir/stats.json"
start_server q size=16M blksize=16k logical-blksize=16k statsfile="$stats"
uri=$(uri_of q)
pid=$(cat "$tmpdir/q.pid")

# qemu-io: exit status 0 only if every command worked; also look for a
# pattern mismatch in its output in case a version exits 0 anyway.
qio () {
    local out rc
    out=$(qemu-io -f raw "$uri" "$@" </dev/null 2>&1) && rc=0 || rc=$?
    echo "$out"
    [ "$rc" -eq 0 ] || { cat "$tmpdir/q.err" >&2; fail "qemu-io $* exited $rc"; }
    ! grep -qi 'verification failed\|error\|failed' <<<"$out" ||
        fail "qemu-io $*: $out"
}

qio -c 'write -P 0xab 512 512'
qio -c 'read -P 0xab 512 512' \
    -c 'read -P 0 0 512' \
    -c 'read -P 0 1024 15360' \
    -c 'read -P 0 16384 16384'

# A failing pattern check must be noticed (so the checks above can fail).
if qemu-io -f raw "$uri" -c 'read -P 0xcd 512 512' </dev/null \
       >"$tmpdir/neg.out" 2>&1 &&
   ! grep -qi 'verification failed' "$tmpdir/neg.out"; then
    fail "qemu-io did not report a wrong pattern: $(cat "$tmpdir/neg.out")"
fi

# The bytes as another client sees them.
nbdsh -u "$uri" -c '
got = h.pread(32768, 0)
want = bytes(512) + b"\xab" * 512 + bytes(32768 - 1024)
assert got == want, "libnbd reads %r... at 0" % got[:1100].hex()
' || fail "libnbd does not see what qemu-io wrote"

# qemu-img info and map.
qemu-img info --output=json "$uri" >"$tmpdir/info.json" 2>&1 || {
    cat "$tmpdir/info.json" >&2; fail "qemu-img info failed"; }
qemu-img map --output=json "$uri" >"$tmpdir/map.json" 2>&1 || {
    cat "$tmpdir/map.json" >&2; fail "qemu-img map failed"; }
"$PYTHON_NBD" - "$tmpdir/info.json" "$tmpdir/map.json" "$size" <<'EOF' ||
import json, sys
info = json.load(open(sys.argv[1]))
entries = json.load(open(sys.argv[2]))
size = int(sys.argv[3])
assert info["virtual-size"] == size, "qemu-img info: %r" % info
pos = 0
for e in entries:
    assert e["start"] == pos, "map not contiguous at %d: %r" % (pos, entries)
    pos += e["length"]
assert pos == size, "map covers %d of %d bytes" % (pos, size)
first = entries[0]
assert first["start"] == 0 and first["length"] == 16384 and \
    first["data"] and not first["zero"], \
    "the written 16k block is not the first map entry as data: %r" % entries
for e in entries[1:]:
    assert e["zero"] and not e["data"], "unwritten area as data: %r" % e
EOF
    fail "qemu-img info/map: $(cat "$tmpdir/info.json" "$tmpdir/map.json")"

# Stop the server: the statsfile is written at exit.
stop_server "$pid"
"$PYTHON_NBD" - "$stats" <<'EOF' || fail "statistics: $(cat "$stats")"
import json, sys
s = json.load(open(sys.argv[1]))
assert not any(s["misaligned"].values()), "misaligned: %r" % s["misaligned"]
assert not any(s["errors"].values()), "errors: %r" % s["errors"]
assert s["requests"]["write"] >= 1, "no write reached the server"
assert s["bytes"]["write"] % 16384 == 0, "write bytes %d" % s["bytes"]["write"]
assert s["folios_allocated"] == 1, "folios_allocated %d" % s["folios_allocated"]
EOF
echo PASS
