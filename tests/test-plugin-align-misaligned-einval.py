#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The server itself enforces logical-block alignment and max-request.

With libnbd's own strictness switched off (so only the server can refuse),
on a disk with 16k logical = physical blocks and max-request=64k:

misaligned=error (the default):
- read, write, trim, zero, cache and block_status with a misaligned offset
  and, separately, a misaligned length each fail with EINVAL;
- a refused write, trim or zero leaves the disk byte-for-byte as it was
  (and its allocation unchanged), and the connection keeps working;
- aligned reads and writes larger than max-request fail with EINVAL and
  change nothing, while trim and zero larger than max-request succeed;
- the statsfile's "misaligned" counters equal, type by type, the
  misaligned requests sent (the too-large ones are not counted there).

misaligned=allow:
- the same kinds of misaligned requests succeed and are served exactly
  (checked against a model of the disk: a 512-byte write at offset 1000
  reads back and leaves its neighbours intact, a misaligned trim or zero
  zeroes exactly its range, a misaligned block_status reports extents
  starting at the offset asked and ending inside the range), and they are
  counted in "misaligned" too.
"""
import errno
import os
import shutil
import tempfile

import nbd

import lbtest

KiB = 1024
BLK = 16 * KiB                  # logical = physical block
MAX_REQUEST = 64 * KiB
SIZE = 1024 * KiB
GEOMETRY = ["size=%d" % SIZE, "blksize=16k", "logical-blksize=16k",
            "max-request=%d" % MAX_REQUEST]
TYPES = ["read", "write", "trim", "zero", "cache", "extents", "flush"]


def read_all(h):
    return b"".join(h.pread(MAX_REQUEST, pos)
                    for pos in range(0, SIZE, MAX_REQUEST))


def allocation(h):
    """(offset, length, flags) over the whole disk, in as many calls as
    the server needs."""
    out, pos = [], 0
    while pos < SIZE:
        ext = lbtest.extents(h, SIZE - pos, pos)
        assert ext and ext[0][0] == pos
        out += ext
        pos = ext[-1][0] + ext[-1][1]
    return out


class Disk:
    def __init__(self, h):
        self.h = h
        self.model = bytearray(SIZE)

    def fill(self, seed):
        for pos in range(0, SIZE, MAX_REQUEST):
            data = lbtest.pattern(MAX_REQUEST, seed + pos)
            self.h.pwrite(data, pos)
            self.model[pos:pos + MAX_REQUEST] = data

    def check(self, when):
        got = read_all(self.h)
        if got != self.model:
            first = next(i for i in range(SIZE) if got[i] != self.model[i])
            raise AssertionError("%s: disk differs from the model first at "
                                 "byte %d" % (when, first))


def misaligned_requests(h):
    """Every request type with a misaligned offset, with a misaligned
    length shorter than a block, and with one longer than a block.
    Yields (type, description, callable)."""
    def bs(count, offset):
        return lambda: lbtest.extents(h, count, offset)

    shapes = [("offset (1000)", 1000, BLK),
              ("length (1000)", 2 * BLK, 1000),
              ("length (16k+512)", 4 * BLK, BLK + 512)]
    for what, off, count in shapes:
        yield ("read", what, lambda o=off, c=count: h.pread(c, o))
        yield ("write", what,
               lambda o=off, c=count: h.pwrite(lbtest.pattern(c, o), o))
        yield ("trim", what, lambda o=off, c=count: h.trim(c, o))
        yield ("zero", what, lambda o=off, c=count: h.zero(c, o))
        yield ("cache", what, lambda o=off, c=count: h.cache(c, o))
        yield ("extents", what, bs(count, off))
    # A NO_HOLE zero goes down another path in the store: refused too.
    yield ("zero", "offset (1000, NO_HOLE)",
           lambda: h.zero(BLK, 1000, nbd.CMD_FLAG_NO_HOLE))


def stop_and_read_stats(s, path):
    status = s.stop()
    assert status == 0, "nbdkit exited with status %r" % status
    return lbtest.read_stats(path)


def check_misaligned_counts(st, sent, what):
    got = st["misaligned"]
    for t in TYPES:
        assert got.get(t) == sent.get(t, 0), \
            "%s: statsfile misaligned[%s] = %r, sent %d (all: %r)" % (
                what, t, got.get(t), sent.get(t, 0), got)


def error_policy(tmp):
    stats = os.path.join(tmp, "error.json")
    sent = {}
    with lbtest.Server(*GEOMETRY, "statsfile=" + stats) as s:
        h = s.connect()
        try:
            d = Disk(h)
            d.fill(1)
            # A hole where a wrongly served request would allocate.
            h.trim(BLK, 2 * BLK)
            d.model[2 * BLK:3 * BLK] = bytes(BLK)
            d.check("after the fill")
            alloc_before = allocation(h)
            assert alloc_before[1] == (2 * BLK, BLK, nbd.STATE_HOLE |
                                       nbd.STATE_ZERO), alloc_before

            for t, what, call in misaligned_requests(h):
                lbtest.expect_errno(errno.EINVAL,
                                    "%s with misaligned %s" % (t, what), call)
                sent[t] = sent.get(t, 0) + 1
                if t in ("write", "trim", "zero"):
                    d.check("after the refused %s (%s)" % (t, what))
                    assert allocation(h) == alloc_before, \
                        "refused %s (%s) changed the allocation" % (t, what)
            assert s.alive(), "nbdkit died"

            # The connection still works.
            new = lbtest.pattern(BLK, 99)
            h.pwrite(new, 3 * BLK)
            d.model[3 * BLK:4 * BLK] = new
            assert h.pread(BLK, 3 * BLK) == new
            d.check("after aligned I/O following the refusals")

            # Larger than max-request: read and write refused, data kept.
            big = MAX_REQUEST + BLK
            lbtest.expect_errno(errno.EINVAL, "read of %d at 0" % big,
                                lambda: h.pread(big, 0))
            lbtest.expect_errno(errno.EINVAL, "write of %d at 0" % big,
                                lambda: h.pwrite(lbtest.pattern(big, 7), 0))
            lbtest.expect_errno(
                errno.EINVAL, "write of %d at the end" % big,
                lambda: h.pwrite(lbtest.pattern(big, 8), SIZE - big))
            d.check("after the refused %d-byte write" % big)
            # Exactly max-request is fine.
            assert h.pread(MAX_REQUEST, BLK) == \
                bytes(d.model[BLK:BLK + MAX_REQUEST])
            # Trim and zero larger than max-request are served in full.
            h.trim(4 * MAX_REQUEST, 4 * MAX_REQUEST)
            d.model[4 * MAX_REQUEST:8 * MAX_REQUEST] = bytes(4 * MAX_REQUEST)
            h.zero(4 * MAX_REQUEST + BLK, 8 * MAX_REQUEST)
            d.model[8 * MAX_REQUEST:12 * MAX_REQUEST + BLK] = \
                bytes(4 * MAX_REQUEST + BLK)
            d.check("after trim and zero larger than max-request")
            for off, length, flags in allocation(h):
                if 4 * MAX_REQUEST <= off and \
                        off + length <= 12 * MAX_REQUEST + BLK:
                    assert flags & nbd.STATE_HOLE, \
                        "extent (%d, %d) inside the big trim/zero is not " \
                        "a hole" % (off, length)
        finally:
            h.shutdown()
        st = stop_and_read_stats(s, stats)
    assert st["geometry"]["misaligned"] == "error"
    check_misaligned_counts(st, sent, "misaligned=error")


def allow_policy(tmp):
    stats = os.path.join(tmp, "allow.json")
    sent = {}

    def count(t):
        sent[t] = sent.get(t, 0) + 1

    with lbtest.Server(*GEOMETRY, "misaligned=allow",
                       "statsfile=" + stats) as s:
        h = s.connect()
        try:
            d = Disk(h)
            d.fill(2)

            # 512 bytes at offset 1000: reads back, neighbours intact.
            data = lbtest.pattern(512, 3)
            h.pwrite(data, 1000)
            count("write")
            d.model[1000:1512] = data
            assert h.pread(512, 1000) == data, "512-byte write at 1000 lost"
            count("read")
            assert h.pread(BLK, 0) == bytes(d.model[0:BLK]), \
                "512-byte write at 1000 damaged the rest of block 0"
            d.check("after the 512-byte write at 1000")

            # A misaligned write straddling a block boundary.
            data = lbtest.pattern(3000, 4)
            h.pwrite(data, 2 * BLK - 1000)
            count("write")
            d.model[2 * BLK - 1000:2 * BLK + 2000] = data

            # Misaligned reads, inside one block and across blocks.
            for off, length in [(700, 1000), (BLK - 300, 20000),
                                (5 * BLK + 1, MAX_REQUEST - 1)]:
                assert h.pread(length, off) == \
                    bytes(d.model[off:off + length]), \
                    "misaligned read of %d at %d" % (length, off)
                count("read")

            # Misaligned trim and zero zero exactly their range.
            h.trim(5000, 30000)
            count("trim")
            d.model[30000:35000] = bytes(5000)
            h.zero(7000, 50000)
            count("zero")
            d.model[50000:57000] = bytes(7000)
            h.zero(3 * BLK + 100, 6 * BLK - 50, nbd.CMD_FLAG_NO_HOLE)
            count("zero")
            d.model[6 * BLK - 50:9 * BLK + 50] = bytes(3 * BLK + 100)
            h.cache(1000, 12345)
            count("cache")
            d.check("after misaligned trim and zero")

            # Misaligned block_status: extents start at the offset asked,
            # end inside the range, and show the hole of block 11.
            h.trim(BLK, 11 * BLK)
            d.model[11 * BLK:12 * BLK] = bytes(BLK)
            off, length = 11 * BLK - 1000, BLK + 500
            ext = lbtest.extents(h, length, off)
            count("extents")
            assert ext and ext[0][0] == off, \
                "extents %r do not start at %d" % (ext, off)
            assert ext[-1][0] + ext[-1][1] <= off + length, \
                "extents %r go past the range [%d, %d)" % (
                    ext, off, off + length)
            want = [(off, 1000, 0), (11 * BLK, BLK - 500,
                                     nbd.STATE_HOLE | nbd.STATE_ZERO)]
            assert ext == want, "extents %r, want %r" % (ext, want)
            d.check("at the end")
            assert s.alive(), "nbdkit died"
        finally:
            h.shutdown()
        st = stop_and_read_stats(s, stats)
    assert st["geometry"]["misaligned"] == "allow"
    check_misaligned_counts(st, sent, "misaligned=allow")


def main():
    tmp = tempfile.mkdtemp(prefix="lbtest-align.")
    try:
        error_policy(tmp)
        allow_policy(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


lbtest.run(main)
