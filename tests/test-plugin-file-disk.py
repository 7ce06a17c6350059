# SPDX-License-Identifier: BSD-3-Clause
"""File disks (file=): persistence, size rules, trim/zero/extents on the
host file, direct=on, FUA and flush, and the statistics.

- Created sparse with size=, written across folio boundaries (with FUA and
  a flush), the server stopped and started again on the same file without
  size=: the size comes from the file and a hash over the whole export is
  unchanged.
- size= that differs from an existing file, a missing file without size=,
  a file whose size is not a multiple of logical-blksize, a directory,
  memory-limit with file=, direct= without file=: each refused at startup
  with its one-line message, and no file created or changed.
- Trim deallocates (the file's block count drops) and extents report the
  hole; zero with NO_HOLE keeps the blocks allocated; zero without it
  releases them; all of it reads back as zeros.
- direct=on: aligned and (with misaligned=allow) unaligned reads and writes
  round-trip through the bounce buffers, data verified against a model
  and against the file itself.
- Two connections see each other's writes (multi-conn is advertised).
"""
import errno
import hashlib
import os
import shutil
import subprocess
import tempfile

import nbd

import lbtest

KiB = 1024
MiB = 1024 * KiB


def export_hash(h):
    size, step = h.get_size(), 4 * MiB
    digest = hashlib.sha256()
    for off in range(0, size, step):
        digest.update(h.pread(min(step, size - off), off))
    return digest.hexdigest()


def allocated_bytes(path):
    return os.stat(path).st_blocks * 512


def startup_error(*params):
    """Start nbdkit with params; it must refuse; return its message."""
    r = subprocess.run([lbtest.NBDKIT, "-U", "-", lbtest.PLUGIN] +
                       list(params) + ["--run", "true"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0, "nbdkit accepted %s" % (params,)
    lines = [l for l in r.stderr.splitlines() if "largeblock:" in l]
    assert len(lines) == 1, "expected one error line, got %r" % r.stderr
    return lines[0].split("largeblock: ", 1)[1]


def check_persistence(tmp):
    path = os.path.join(tmp, "persist.img")
    geometry = ["blksize=16k", "logical-blksize=16k"]
    with lbtest.Server("file=" + path, "size=64M", *geometry) as s:
        h = s.connect()
        assert h.get_size() == 64 * MiB
        assert h.get_block_size(nbd.SIZE_MINIMUM) == 16 * KiB
        assert h.can_multi_conn() and h.can_fua() and h.can_flush()
        info = nbd.NBD()
        info.set_full_info(True)
        info.connect_unix(s.socket)
        assert "largeblock file disk" in info.get_export_description()
        lbtest.close(info)
        for i, off in enumerate([0, 48 * KiB, 5 * MiB + 16 * KiB,
                                 64 * MiB - 32 * KiB]):
            h.pwrite(lbtest.pattern(32 * KiB, i), off,
                     nbd.CMD_FLAG_FUA if i % 2 else 0)
        h.flush()
        before = export_hash(h)
    assert os.path.getsize(path) == 64 * MiB
    assert allocated_bytes(path) < 8 * MiB, "the new file is not sparse"

    with lbtest.Server("file=" + path, *geometry) as s:
        h = s.connect()
        assert h.get_size() == 64 * MiB, "size not taken from the file"
        after = export_hash(h)
    assert before == after, "data changed across a restart"
    print("persistence: hash %s... survived a restart" % before[:16])


def check_config_errors(tmp):
    path = os.path.join(tmp, "existing.img")
    with open(path, "wb") as f:
        f.truncate(1 * MiB)
    msg = startup_error("file=" + path, "size=2M")
    assert msg == ("size 2097152 does not match file %s of 1048576 bytes "
                   "(leave size= out to use it; largeblock never truncates "
                   "or grows a file)" % path), msg
    assert os.path.getsize(path) == 1 * MiB
    lbtest.Server("file=" + path, "size=1M").stop()      # a match is fine

    missing = os.path.join(tmp, "missing.img")
    msg = startup_error("file=" + missing)
    assert msg == ("file %s does not exist and no size= was given to "
                   "create it" % missing), msg
    msg = startup_error("file=" + missing, "size=1M", "blksize=3000")
    assert msg == "blksize 3000 is not a power of two", msg
    assert not os.path.exists(missing), "a refused start created the file"

    odd = os.path.join(tmp, "odd.img")
    with open(odd, "wb") as f:
        f.truncate(1000 * 1024)
    msg = startup_error("file=" + odd, "logical-blksize=16k",
                        "blksize=16k")
    assert msg == ("size 1024000 (the size of %s) is not a multiple of "
                   "logical-blksize 16k" % odd), msg

    msg = startup_error("file=" + tmp, "size=1M")
    assert msg == "file %s is not a regular file or a block device" % tmp
    msg = startup_error("file=" + path, "memory-limit=1M")
    assert msg == ("memory-limit 1M applies to RAM disks only, not to "
                   "file=%s" % path), msg
    msg = startup_error("size=1M", "direct=on")
    assert msg == ("direct=on needs file= (a RAM disk has no page cache "
                   "to bypass)"), msg
    print("config errors: all refused with their messages")


def check_trim_zero_extents(tmp):
    path = os.path.join(tmp, "trim.img")
    with lbtest.Server("file=" + path, "size=16M", "blksize=64k",
                       "logical-blksize=4k") as s:
        h = s.connect()
        h.pwrite(lbtest.pattern(4 * MiB, 7), 0)
        h.flush()
        full = allocated_bytes(path)
        assert full >= 4 * MiB, "written data not allocated: %d" % full

        h.trim(1 * MiB, 1 * MiB)
        after_trim = allocated_bytes(path)
        assert after_trim <= full - 1 * MiB, \
            "trim did not deallocate: %d -> %d" % (full, after_trim)
        ext = lbtest.extents(h, 1 * MiB, 1 * MiB)
        assert ext == [(1 * MiB, 1 * MiB, nbd.STATE_HOLE | nbd.STATE_ZERO)], \
            "extents after trim: %r" % ext
        assert h.pread(1 * MiB, 1 * MiB) == bytes(1 * MiB)

        h.zero(1 * MiB, 2 * MiB, nbd.CMD_FLAG_NO_HOLE)
        kept = allocated_bytes(path)
        assert kept >= after_trim, \
            "zero with NO_HOLE released blocks: %d -> %d" % (after_trim, kept)
        assert h.pread(1 * MiB, 2 * MiB) == bytes(1 * MiB)

        h.zero(1 * MiB, 3 * MiB)
        released = allocated_bytes(path)
        assert released <= kept - 1 * MiB, \
            "zero without NO_HOLE kept blocks: %d -> %d" % (kept, released)
        assert h.pread(1 * MiB, 3 * MiB) == bytes(1 * MiB)
        assert h.pread(1 * MiB, 0) == lbtest.pattern(4 * MiB, 7)[:1 * MiB]

        # A hole that does not cover whole logical blocks is data.
        ext = lbtest.extents(h, 16 * MiB, 0)
        for off, length, flags in ext:
            assert off % 4096 == 0 and length % 4096 == 0, ext
            assert off + length <= 16 * MiB
        print("trim/zero: %d -> %d (trim) -> %d (NO_HOLE) -> %d bytes "
              "allocated" % (full, after_trim, kept, released))


def check_direct(tmp):
    path = os.path.join(tmp, "direct.img")
    size = 8 * MiB
    try:
        s = lbtest.Server("file=" + path, "size=8M", "direct=on",
                          "blksize=16k", "logical-blksize=512",
                          "misaligned=allow")
    except RuntimeError as e:
        if "does not support O_DIRECT" in str(e):
            lbtest.skip("this filesystem has no O_DIRECT")
        raise
    model = bytearray(size)
    with s:
        h = s.connect()
        writes = [(0, 64 * KiB), (100 * KiB, 16 * KiB), (1234, 777),
                  (4096 - 100, 300), (size - 513, 513), (3 * MiB + 7, MiB)]
        for i, (off, length) in enumerate(writes):
            data = lbtest.pattern(length, 100 + i)
            h.pwrite(data, off, nbd.CMD_FLAG_FUA if i % 2 else 0)
            model[off:off + length] = data
        h.zero(5000, 2 * MiB + 3)
        model[2 * MiB + 3:2 * MiB + 3 + 5000] = bytes(5000)
        for off, length in writes + [(2 * MiB, 8192), (0, size)]:
            got = h.pread(length, off)
            assert got == model[off:off + length], \
                "direct read of %d at %d differs" % (length, off)
        h.flush()
    with open(path, "rb") as f:
        assert f.read() == model, "the file differs from what was written"
    print("direct=on: unaligned and aligned I/O round-trip")


def check_multi_conn_and_stats(tmp):
    path = os.path.join(tmp, "multi.img")
    stats = os.path.join(tmp, "stats.json")
    with lbtest.Server("file=" + path, "size=4M", "blksize=16k",
                       "logical-blksize=4k", "statsfile=" + stats) as s:
        a, b = s.connect(), s.connect()
        a.pwrite(b"\x5a" * 16 * KiB, 32 * KiB)
        a.flush()
        assert b.pread(16 * KiB, 32 * KiB) == b"\x5a" * 16 * KiB
        b.pwrite(b"\xa5" * 4 * KiB, 32 * KiB)
        assert a.pread(4 * KiB, 32 * KiB) == b"\xa5" * 4 * KiB
        lbtest.expect_errno(errno.EINVAL, "misaligned write", a.pwrite, b"x", 1)
    st = lbtest.read_stats(stats)
    assert st["store"] == "file", st
    assert st["requests"]["write"] == 3 and st["errors"]["write"] == 1, st
    assert st["misaligned"]["write"] == 1, st
    assert st["folios_allocated"] >= 1, st
    print("multi-conn and statistics: ok")


def main():
    tmp = tempfile.mkdtemp(prefix="lbfile.")
    try:
        check_persistence(tmp)
        check_config_errors(tmp)
        check_trim_zero_extents(tmp)
        check_multi_conn_and_stats(tmp)
        check_direct(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


lbtest.run(main)
