#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Startup is O(1) in size: the largest disks start at once in a few MiB.
# For size=7E (default 4k/512 geometry), size=9223372036854710272 (2^63 -
# 64k, the largest multiple of 64k) with blksize=64k logical-blksize=64k,
# and size=7E with blksize=512: the server starts, nbdinfo reports the
# exact size and the advertised block sizes, the server's resident memory
# right after start (VmRSS of the pid in the pid file) is below 16 MiB,
# and a write of the last logical block of the disk reads back (with the
# block before it still zero) -- still below 16 MiB afterwards.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

requires nbdinfo

limit_kib=$((16 * 1024))
# Under make check-valgrind the resident memory is mostly valgrind's own.
[ -z "${LB_VALGRIND:-}" ] || limit_kib=$((1024 * 1024))

rss_kib () {
    awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

# check NAME SIZE LOGICAL PHYSICAL PARAM...
check () {
    local name=$1 size=$2 logical=$3 physical=$4; shift 4
    local uri pid rss got

    start_server "$name" "$@"
    uri=$(uri_of "$name")
    pid=$(cat "$tmpdir/$name.pid")
    [ -d "/proc/$pid" ] || fail "$name: pid $pid from the pid file is not running"

    rss=$(rss_kib "$pid")
    [ -n "$rss" ] && [ "$rss" -lt "$limit_kib" ] ||
        fail "$name ($*): VmRSS ${rss:-?} KiB right after start, limit $limit_kib KiB"

    got=$(nbdinfo --size "$uri") || fail "$name: nbdinfo --size failed"
    [ "$got" = "$size" ] || fail "$name: nbdinfo --size says $got, want $size"
    nbdinfo --json "$uri" >"$tmpdir/$name.json" ||
        fail "$name: nbdinfo --json failed"
    "$PYTHON_NBD" - "$tmpdir/$name.json" "$size" "$logical" "$physical" <<'EOF' ||
import json, sys
e = json.load(open(sys.argv[1]))["exports"][0]
size, logical, physical = map(int, sys.argv[2:])
assert e["export-size"] == size, "export-size %r" % e["export-size"]
assert e["block_size_minimum"] == logical, "minimum %r" % e["block_size_minimum"]
assert e["block_size_preferred"] == physical, \
    "preferred %r" % e["block_size_preferred"]
EOF
        fail "$name: nbdinfo --json: $(cat "$tmpdir/$name.json")"

    nbdsh -u "$uri" -c "
size = h.get_size()
lb = h.get_block_size(nbd.SIZE_MINIMUM)
assert size == $size and lb == $logical, (size, lb)
buf = bytes(range(1, 256)) * (lb // 255) + b'\x77' * (lb % 255)
h.pwrite(buf, size - lb)
assert h.pread(lb, size - lb) == buf, 'last logical block does not read back'
assert h.pread(lb, size - 2 * lb) == bytes(lb), 'block before the last is not zero'
assert h.pread(lb, 0) == bytes(lb), 'first block is not zero'
" || fail "$name: write/read of the last logical block failed"

    rss=$(rss_kib "$pid")
    [ -n "$rss" ] && [ "$rss" -lt "$limit_kib" ] ||
        fail "$name: VmRSS ${rss:-?} KiB after one write, limit $limit_kib KiB"
    kill -0 "$pid" 2>/dev/null || fail "$name: server died"
    stop_server "$pid"
    echo "$name: ok ($*)"
}

check e7 8070450532247928832 512 4096 size=7E
check max64k 9223372036854710272 65536 65536 \
    size=9223372036854710272 blksize=64k logical-blksize=64k
check e7b512 8070450532247928832 512 512 size=7E blksize=512

echo PASS
