#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""memory-limit= caps folio memory; going over is ENOSPC and changes nothing.

With memory-limit=256k and blksize=16k (16 folios) on a 1M disk with 4k
logical blocks:
- writes that allocate up to exactly 16 folios succeed;
- a write needing one more folio fails with ENOSPC, and the whole disk
  (every byte and the allocation map) is as before;
- a multi-folio write that would partly fit -- over an allocated folio and
  then new ones, or wholly over new folios with fewer free than needed --
  is refused whole: its first folios are not written (they read back as
  zeros or their old data);
- refused writes do not leak their reservation: exactly the free folios
  can still be allocated afterwards;
- overwriting allocated folios (whole or partial) works at the limit;
- a partial trim frees nothing, a trim or a plain zero of whole folios
  frees them, and writes succeed again;
- a NO_HOLE zero needing a new folio is ENOSPC too (and changes nothing),
  while a NO_HOLE zero of allocated folios works at the limit;
- the statsfile written at exit has folios_peak = 16 (never above the
  limit), folios_allocated and bytes_resident of the final state, and one
  error per refused write or zero.
"""
import errno
import os
import shutil
import tempfile

import nbd

import lbtest

KiB = 1024
SIZE = 1024 * KiB
FOLIO = 16 * KiB
LG = 4 * KiB
LIMIT_FOLIOS = 16


class Disk:
    def __init__(self, h):
        self.h = h
        self.model = bytearray(SIZE)
        self.folios = set()
        self.refused = {"write": 0, "zero": 0}
        self.seed = 0

    def data(self, length):
        self.seed += 1
        return lbtest.pattern(length, self.seed)

    def write(self, off, length):
        data = self.data(length)
        self.h.pwrite(data, off)
        self.model[off:off + length] = data
        self.folios.update(range(off // FOLIO,
                                 (off + length - 1) // FOLIO + 1))

    def release(self, off, length, op):
        op(length, off)
        self.model[off:off + length] = bytes(length)
        first = -(-off // FOLIO)
        self.folios.difference_update(range(first, (off + length) // FOLIO))

    def snapshot(self):
        return (bytes(self.h.pread(SIZE, 0)), lbtest.extents(self.h, SIZE, 0))

    def verify(self, what):
        got = self.h.pread(SIZE, 0)
        if got != self.model:
            bad = next(i for i in range(SIZE) if got[i] != self.model[i])
            raise AssertionError("%s: disk differs from the model at byte %d "
                                 "(folio %d)" % (what, bad, bad // FOLIO))
        allocated = set()
        for off, length, flags in lbtest.extents(self.h, SIZE, 0):
            if not flags & nbd.STATE_HOLE:
                allocated.update(range(off // FOLIO, (off + length) // FOLIO))
        assert allocated == self.folios, \
            "%s: allocated folios %s, want %s" % (
                what, sorted(allocated), sorted(self.folios))
        assert len(allocated) <= LIMIT_FOLIOS, \
            "%s: %d folios allocated, limit %d" % (
                what, len(allocated), LIMIT_FOLIOS)

    def refused_write(self, off, length, what):
        before = self.snapshot()
        lbtest.expect_errno(errno.ENOSPC, what, self.h.pwrite,
                            self.data(length), off)
        self.refused["write"] += 1
        after = self.snapshot()
        assert after[1] == before[1], \
            "%s: refused write changed the allocation map:\n%r\n->\n%r" % (
                what, before[1], after[1])
        if after[0] != before[0]:
            bad = next(i for i in range(SIZE) if after[0][i] != before[0][i])
            raise AssertionError("%s: refused write changed byte %d "
                                 "(folio %d)" % (what, bad, bad // FOLIO))
        self.verify(what)

    def refused_zero(self, off, length, what):
        before = self.snapshot()
        lbtest.expect_errno(errno.ENOSPC, what, self.h.zero, length, off,
                            nbd.CMD_FLAG_NO_HOLE)
        self.refused["zero"] += 1
        assert self.snapshot() == before, \
            "%s: refused NO_HOLE zero changed the disk" % what
        self.verify(what)


def exercise(disk):
    h = disk.h
    # Fill to exactly the limit: 12 folios in one write, 2 by sub-folio
    # writes, 2 by one write straddling folios 14/15.
    disk.write(0, 12 * FOLIO)
    disk.write(12 * FOLIO + LG, LG)
    disk.write(13 * FOLIO + 3 * LG, LG)
    disk.write(14 * FOLIO + 2 * LG, FOLIO)
    assert len(disk.folios) == LIMIT_FOLIOS, "test bug"
    disk.verify("filled to the limit")

    # One folio more: refused.
    disk.refused_write(20 * FOLIO, LG, "4k into a new folio at the limit")
    disk.refused_write(63 * FOLIO, FOLIO, "whole new last folio at the limit")
    # Partly fits (folio 15 is allocated, 16..18 are not): refused whole,
    # folio 15 keeps its old data.
    disk.refused_write(15 * FOLIO, 4 * FOLIO,
                       "write over folio 15 and new folios 16..18")
    disk.refused_write(14 * FOLIO + LG, 2 * FOLIO + LG,
                       "write ending 4k into new folio 16")
    # NO_HOLE zero of a free folio: refused, nothing changes.
    disk.refused_zero(30 * FOLIO, FOLIO, "NO_HOLE zero of a free folio")
    disk.refused_zero(10 * FOLIO, 8 * FOLIO,
                      "NO_HOLE zero over allocated and free folios")

    # Overwriting what is allocated still works at the limit.
    disk.write(0, 16 * FOLIO)
    disk.write(5 * FOLIO + LG, 2 * LG)
    h.zero(2 * FOLIO, 3 * FOLIO, nbd.CMD_FLAG_NO_HOLE)
    disk.model[3 * FOLIO:5 * FOLIO] = bytes(2 * FOLIO)
    disk.verify("overwrites at the limit")

    # A partial trim frees nothing.
    h.trim(2 * LG, 8 * FOLIO + LG)
    disk.model[8 * FOLIO + LG:8 * FOLIO + 3 * LG] = bytes(2 * LG)
    disk.refused_write(40 * FOLIO, LG, "after a partial trim")

    # Trim 4 folios (4..7): 4 free.  A 5-folio write does not fit and
    # its first 4 folios stay unwritten; then exactly 4 fit.
    disk.release(4 * FOLIO, 4 * FOLIO, h.trim)
    disk.verify("after trimming folios 4..7")
    disk.refused_write(40 * FOLIO, 5 * FOLIO, "5 new folios with 4 free")
    disk.refused_write(4 * FOLIO, 13 * FOLIO,
                       "free folios 4..7, allocated 8..15, new 16: 5 needed,"
                       " 4 free")
    disk.write(40 * FOLIO + LG, 4 * FOLIO - 2 * LG)     # folios 40..43
    disk.verify("4 new folios after the trim")
    disk.refused_write(44 * FOLIO, LG, "full again")

    # A plain zero (may trim) of two whole folios frees them.
    disk.release(40 * FOLIO, 2 * FOLIO, h.zero)
    disk.write(50 * FOLIO, 2 * FOLIO)
    disk.refused_write(52 * FOLIO, LG, "full again after zero")
    # A trim whose partial ends are in allocated folios and which wholly
    # covers folios 9 and 10.
    disk.release(8 * FOLIO + LG, 3 * FOLIO, h.trim)
    disk.write(60 * FOLIO, FOLIO)
    disk.write(61 * FOLIO, LG)
    disk.refused_write(62 * FOLIO, LG, "full after the last refill")
    disk.verify("end")


def main():
    tmp = tempfile.mkdtemp(prefix="lbtest-memlimit.")
    statsfile = os.path.join(tmp, "stats.json")
    try:
        with lbtest.Server("size=1M", "blksize=16k", "logical-blksize=4k",
                           "memory-limit=256k",
                           "statsfile=" + statsfile) as s:
            h = s.connect()
            try:
                disk = Disk(h)
                exercise(disk)
            finally:
                lbtest.close(h)
            assert s.stop() == 0, "nbdkit exited with %r: %s" % (
                s.proc.returncode, s.last_stderr)

        stats = lbtest.read_stats(statsfile)
        assert stats["folios_peak"] == LIMIT_FOLIOS, \
            "folios_peak %d, want exactly the limit %d" % (
                stats["folios_peak"], LIMIT_FOLIOS)
        assert stats["folios_allocated"] == len(disk.folios), \
            "folios_allocated %d, want %d" % (stats["folios_allocated"],
                                              len(disk.folios))
        assert stats["bytes_resident"] == len(disk.folios) * FOLIO, \
            "bytes_resident %d" % stats["bytes_resident"]
        for op, n in disk.refused.items():
            assert stats["errors"][op] == n, \
                "errors.%s = %d, want %d (one per refusal)" % (
                    op, stats["errors"][op], n)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


lbtest.run(main)
