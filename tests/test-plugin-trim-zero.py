#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Trim and zero release whole folios, zero partial ends, honour NO_HOLE
and refuse a FAST_ZERO that cannot be fast.

On a disk of 64k folios with 4k logical blocks whose last folio is partial
(size=1040k), checked after every step against a model of the data and of
which folios are allocated (base:allocation extents, whole-disk reads):
- trim of whole folios releases them (holes), and the statsfile written at
  exit shows folios_allocated dropped below folios_peak, by exactly the
  model's count, with bytes_resident = folios_allocated x blksize;
- trim and zero of a range with partial-folio ends zero only the partial
  parts, keep those folios allocated and keep the rest of their data;
- zero without flags releases whole folios; zero with NO_HOLE keeps or
  allocates them (data extents that read as zeros);
- FAST_ZERO succeeds without NO_HOLE, and with NO_HOLE fails with ENOTSUP
  leaving the data untouched;
- trim and zero of a hole are harmless (no error, nothing allocated);
- a trim reaching the end of the disk releases its partial last folio;
- one trim and one zero, each larger than max-request, release everything;
- a trim and a zero of 2^32-1 bytes on an 8G disk are done completely.
"""
import errno
import os
import shutil
import tempfile

import nbd

import lbtest

KiB = 1024
F = 64 * KiB                    # blksize: the folio
L = 4 * KiB                     # logical-blksize
SIZE = 1040 * KiB               # 16 whole folios + one of 16k
NR_FOLIOS = (SIZE + F - 1) // F
MAX_REQUEST = 256 * KiB


def folio_holes(h, size, folio):
    """base:allocation over the whole disk as one bool per folio (True:
    hole), checking that every extent is inside the request, that holes
    also read as zero, and that no folio is split between states."""
    state = [None] * ((size + folio - 1) // folio)
    pos = 0
    while pos < size:
        ext = lbtest.extents(h, size - pos, pos)
        assert ext, "block_status at %d returned no extents" % pos
        assert ext[0][0] == pos, "extents start at %d, asked %d" % (
            ext[0][0], pos)
        for off, length, flags in ext:
            assert length > 0 and off + length <= size, \
                "extent (%d, %d) goes outside the disk" % (off, length)
            hole = bool(flags & nbd.STATE_HOLE)
            if hole:
                assert flags & nbd.STATE_ZERO, \
                    "hole at %d is not reported as zero" % off
            for idx in range(off // folio, (off + length - 1) // folio + 1):
                assert state[idx] in (None, hole), \
                    "folio %d is partly hole and partly data" % idx
                state[idx] = hole
            pos = off + length
    return state


def folios_touched(offset, length):
    return set(range(offset // F, (offset + length - 1) // F + 1))


class Disk:
    def __init__(self, h):
        self.h = h
        self.data = bytearray(SIZE)
        self.allocated = set()
        self.peak = 0

    def note(self):
        self.peak = max(self.peak, len(self.allocated))

    def write(self, offset, length, seed):
        data = lbtest.pattern(length, seed)
        for pos in range(0, length, MAX_REQUEST):
            self.h.pwrite(data[pos:pos + MAX_REQUEST], offset + pos)
        self.data[offset:offset + length] = data
        self.allocated |= folios_touched(offset, length)
        self.note()

    def released(self, offset, length):
        """Model of trim / zero(MAY_TRIM): whole folios go (the last
        folio counts as whole when the range reaches the disk's end),
        partial ends are zeroed."""
        end = offset + length
        self.data[offset:end] = bytes(length)
        first_whole = (offset + F - 1) // F
        end_whole = NR_FOLIOS if end == SIZE else end // F
        self.allocated -= set(range(first_whole, end_whole))

    def zeroed_no_hole(self, offset, length):
        self.data[offset:offset + length] = bytes(length)
        self.allocated |= folios_touched(offset, length)
        self.note()

    def check(self, when):
        got = b"".join(self.h.pread(min(MAX_REQUEST, SIZE - pos), pos)
                       for pos in range(0, SIZE, MAX_REQUEST))
        if got != self.data:
            first = next(i for i in range(SIZE) if got[i] != self.data[i])
            raise AssertionError("%s: data differs from the model first at "
                                 "byte %d (folio %d, +%d)" % (
                                     when, first, first // F, first % F))
        holes = folio_holes(self.h, SIZE, F)
        want = [i not in self.allocated for i in range(NR_FOLIOS)]
        for i in range(NR_FOLIOS):
            assert holes[i] == want[i], \
                "%s: folio %d reported as %s, want %s (holes %s)" % (
                    when, i, "hole" if holes[i] else "data",
                    "hole" if want[i] else "data",
                    "".join("." if x else "D" for x in holes))


def connect(s):
    h = s.connect()
    assert h.get_size() == SIZE
    assert h.can_trim() and h.can_zero() and h.can_fast_zero()
    return h


def steps(d):
    h = d.h
    d.write(0, SIZE, 1)
    d.check("after filling the disk")

    # Trim of whole folios 2-3: released.
    h.trim(2 * F, 2 * F)
    d.released(2 * F, 2 * F)
    d.check("trim of folios 2-3")

    # Trim with partial ends: [5F+4k, 7F+12k) zeroes the tail of folio 5
    # and the head of folio 7 (both stay allocated, rest kept) and
    # releases folio 6.
    h.trim(2 * F + 8 * KiB, 5 * F + 4 * KiB)
    d.released(5 * F + 4 * KiB, 2 * F + 8 * KiB)
    d.check("trim with partial ends")

    # Trim inside one folio: zeroed, folio kept.
    h.trim(8 * KiB, 8 * F + 16 * KiB)
    d.released(8 * F + 16 * KiB, 8 * KiB)
    d.check("trim inside folio 8")

    # Zero without flags of a whole folio: released.
    h.zero(F, 9 * F)
    d.released(9 * F, F)
    d.check("zero of folio 9")

    # Zero without flags with partial ends, across folios 10-11.
    h.zero(F, 10 * F + 12 * KiB)
    d.released(10 * F + 12 * KiB, F)
    d.check("zero with partial ends across folios 10-11")

    # Zero with NO_HOLE of an allocated folio: stays allocated, zeros.
    h.zero(F, 12 * F, nbd.CMD_FLAG_NO_HOLE)
    d.zeroed_no_hole(12 * F, F)
    d.check("zero NO_HOLE of folio 12")

    # Zero with NO_HOLE of holes (folios 2-3): allocated, zeros.
    h.zero(2 * F, 2 * F, nbd.CMD_FLAG_NO_HOLE)
    d.zeroed_no_hole(2 * F, 2 * F)
    d.check("zero NO_HOLE of the holes at folios 2-3")

    # FAST_ZERO without NO_HOLE: releasing is fast, so it is done.
    h.zero(F, 13 * F, nbd.CMD_FLAG_FAST_ZERO)
    d.released(13 * F, F)
    d.check("zero FAST_ZERO of folio 13")

    # FAST_ZERO with NO_HOLE: would need a memset, so ENOTSUP, and the
    # data stays exactly as it was.
    flags = nbd.CMD_FLAG_FAST_ZERO | nbd.CMD_FLAG_NO_HOLE
    lbtest.expect_errno(errno.ENOTSUP, "FAST_ZERO|NO_HOLE of folio 14",
                        h.zero, F, 14 * F, flags)
    lbtest.expect_errno(errno.ENOTSUP, "FAST_ZERO|NO_HOLE of 8k in folio 14",
                        h.zero, 8 * KiB, 14 * F + 4 * KiB, flags)
    d.check("refused FAST_ZERO|NO_HOLE on folio 14")

    # Trim and zero of holes: harmless, nothing gets allocated.
    for what, fn, args in [
            ("trim of hole folio 6", h.trim, (F, 6 * F)),
            ("partial trim of hole folio 6",
             h.trim, (8 * KiB, 6 * F + 4 * KiB)),
            ("zero of hole folio 9", h.zero, (F, 9 * F)),
            ("partial zero of hole folio 13", h.zero, (4 * KiB, 13 * F + L)),
    ]:
        fn(*args)
        d.released(args[1], args[0])
        d.check(what)

    # The partial last folio is released by a trim reaching the end.
    last = (NR_FOLIOS - 1) * F
    assert (NR_FOLIOS - 1) in d.allocated
    h.trim(SIZE - last, last)
    d.released(last, SIZE - last)
    assert (NR_FOLIOS - 1) not in d.allocated
    d.check("trim of the partial last folio")

    # And a zero reaching the end, starting mid-folio, releases it too
    # after a write brings it back.
    d.write(last, SIZE - last, 2)
    d.write(last - F, F, 3)
    h.zero(SIZE - last + F - L, last - F + L)
    d.released(last - F + L, SIZE - last + F - L)
    d.check("zero from folio 15 to the end of the disk")


def read_stats_after_stop(s, path):
    status = s.stop()
    assert status == 0, "nbdkit exited with status %r" % status
    assert os.path.exists(path), "the statsfile was not written"
    return lbtest.read_stats(path)


def check_stats(st, folios_now, folios_peak, what):
    assert st["folios_allocated"] == folios_now, \
        "%s: folios_allocated %r, want %d" % (
            what, st["folios_allocated"], folios_now)
    assert st["folios_peak"] == folios_peak, \
        "%s: folios_peak %r, want %d" % (what, st["folios_peak"], folios_peak)
    assert st["bytes_resident"] == folios_now * F, \
        "%s: bytes_resident %r, want %d" % (
            what, st["bytes_resident"], folios_now * F)


def largest_request(tmp, op):
    """A trim or zero of 2^32-1 bytes (the largest NBD length; misaligned
    so allowed) is done completely: every folio it covers is released, its
    partial last folio keeps only the byte it does not cover."""
    G = 1 << 30
    count = 2**32 - 1
    path = os.path.join(tmp, "largest-" + op + ".json")
    with lbtest.Server("size=8G", "blksize=64k", "logical-blksize=4k",
                       "misaligned=allow", "statsfile=" + path) as s:
        h = s.connect()
        try:
            folios = [0, 2 * G, 4 * G - F, 4 * G]
            for i, off in enumerate(folios):
                h.pwrite(lbtest.pattern(F, 10 + i), off)
            getattr(h, op)(count, 0)
            for off in folios[:2]:
                assert h.pread(F, off) == bytes(F), \
                    "%s of 2^32-1: data left at %d" % (op, off)
            want = bytes(F - 1) + lbtest.pattern(F, 12)[-1:]
            assert h.pread(F, 4 * G - F) == want, \
                "%s of 2^32-1: the folio at 4G-64k is wrong" % op
            assert h.pread(F, 4 * G) == lbtest.pattern(F, 13), \
                "%s of 2^32-1: the folio at 4G was touched" % op
            ext = lbtest.extents(h, 4 * G - F, 0) + \
                lbtest.extents(h, 2 * F, 4 * G - F)
            want = [(0, 4 * G - F, nbd.STATE_HOLE | nbd.STATE_ZERO),
                    (4 * G - F, 2 * F, 0)]
            assert ext == want, "%s of 2^32-1: extents %r, want %r" % (
                op, ext, want)
        finally:
            h.shutdown()
        st = read_stats_after_stop(s, path)
    check_stats(st, 2, 4, op + " of 2^32-1 bytes")


def main():
    tmp = tempfile.mkdtemp(prefix="lbtest-trimzero.")
    try:
        params = ["size=%d" % SIZE, "blksize=64k", "logical-blksize=4k",
                  "max-request=%d" % MAX_REQUEST]

        # Step by step against the model.
        stats1 = os.path.join(tmp, "steps.json")
        with lbtest.Server(*params, "statsfile=" + stats1) as s:
            d = Disk(connect(s))
            try:
                steps(d)
            finally:
                d.h.shutdown()
            st = read_stats_after_stop(s, stats1)
        assert d.peak == NR_FOLIOS and len(d.allocated) < d.peak
        check_stats(st, len(d.allocated), d.peak, "after the steps")

        # A trim and a zero longer than max-request each release every
        # folio they cover.
        for op in ("trim", "zero"):
            path = os.path.join(tmp, op + ".json")
            with lbtest.Server(*params, "statsfile=" + path) as s:
                d = Disk(connect(s))
                try:
                    d.write(0, SIZE, 4)
                    d.check("before the whole-disk " + op)
                    getattr(d.h, op)(SIZE, 0)
                    d.released(0, SIZE)
                    d.check("after the whole-disk " + op)
                finally:
                    d.h.shutdown()
                st = read_stats_after_stop(s, path)
            check_stats(st, 0, NR_FOLIOS, "whole-disk " + op)

        for op in ("trim", "zero"):
            largest_request(tmp, op)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


lbtest.run(main)
