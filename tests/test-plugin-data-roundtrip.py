#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Data written to a largeblock RAM disk reads back exactly, everywhere.

On a 16k-physical/4k-logical disk, a 64k/64k disk and a 100k disk with 16k
folios (whose last folio is partial), deterministic pseudo-random writes of
one logical block up to 1 MiB, placed to straddle folio boundaries, are
checked against an in-test model of the disk after every batch by reading
the whole disk back (and by random sub-range reads), so misplaced,
truncated or lost bytes are caught.  Also proves: a fresh disk and every
unwritten area read as zeros; overwriting part of a folio keeps the rest of
that folio; the last (partial) folio of the disk holds data; and a second
connection sees what the first wrote, in both directions, including a trim.
"""
import random

import nbd

import lbtest

KiB = 1024
MiB = 1024 * KiB
READ_CHUNK = 4 * MiB


class Disk:
    """A connection plus the model of what the whole disk must contain."""

    def __init__(self, server, size, logical, physical):
        self.h = server.connect()
        self.size = size
        self.logical = logical
        self.physical = physical
        self.model = bytearray(size)
        self.written = bytearray(size // logical)   # 1: block was written

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Disconnect: nbdkit waits for its clients before exiting."""
        if self.h is not None:
            try:
                self.h.shutdown()
            except nbd.Error:
                pass
            self.h = None

    def write(self, data, offset, flags=0, h=None):
        (h or self.h).pwrite(data, offset, flags)
        self.model[offset:offset + len(data)] = data
        first = offset // self.logical
        last = (offset + len(data)) // self.logical
        self.written[first:last] = b"\1" * (last - first)

    def read_whole(self, h=None):
        h = h or self.h
        parts = []
        for off in range(0, self.size, READ_CHUNK):
            parts.append(h.pread(min(READ_CHUNK, self.size - off), off))
        return b"".join(parts)

    def verify(self, when, h=None):
        got = self.read_whole(h)
        assert len(got) == self.size, "%s: read %d bytes, want %d" % (
            when, len(got), self.size)
        if got != self.model:
            first = next(i for i in range(self.size)
                         if got[i] != self.model[i])
            last = next(i for i in range(self.size - 1, -1, -1)
                        if got[i] != self.model[i])
            raise AssertionError(
                "%s: disk differs from the model in bytes [%d, %d] "
                "(folios %d..%d; first byte read %#x, want %#x)" % (
                    when, first, last, first // self.physical,
                    last // self.physical, got[first], self.model[first]))

    def verify_range(self, count, offset, when):
        got = self.h.pread(count, offset)
        want = bytes(self.model[offset:offset + count])
        assert got == want, "%s: read of %d bytes at %d differs from model" % (
            when, count, offset)


def straddling_write(rng, disk):
    """(offset, length): logical-aligned, up to 1 MiB, crossing a folio
    boundary whenever the length allows it."""
    lg, ph, size = disk.logical, disk.physical, disk.size
    max_blocks = min(MiB, size // 2) // lg
    # Favour the interesting lengths: one block, around a folio, and big.
    blocks = rng.choice([1, 2, 3, ph // lg, ph // lg + 1, 2 * ph // lg - 1,
                         rng.randint(1, max_blocks), max_blocks])
    blocks = max(1, min(blocks, max_blocks))
    length = blocks * lg
    nr_folios = (size + ph - 1) // ph
    if nr_folios > 1 and blocks >= 2:
        boundary = rng.randint(1, nr_folios - 1) * ph
        lo = max(0, boundary - length + lg)
        hi = min(boundary - lg, size - length)
        if lo <= hi:
            offset = rng.randint(lo // lg, hi // lg) * lg
            assert offset < boundary < offset + length
            return offset, length
    return rng.randint(0, (size - length) // lg) * lg, length


def random_batches(disk, seed, nr_batches=5, per_batch=10):
    rng = random.Random(seed)
    for batch in range(nr_batches):
        # A short first batch, so unwritten areas remain to be checked.
        for i in range(3 if batch == 0 else per_batch):
            offset, length = straddling_write(rng, disk)
            flags = nbd.CMD_FLAG_FUA if rng.random() < 0.25 else 0
            disk.write(lbtest.pattern(length, seed * 1000003 +
                                      batch * 1009 + i),
                       offset, flags)
        disk.verify("seed %d batch %d" % (seed, batch))
        if batch == 0:
            check_unwritten(disk, required=True)
        # Sub-range reads at aligned offsets crossing folio boundaries.
        for _ in range(8):
            offset, length = straddling_write(rng, disk)
            disk.verify_range(length, offset, "seed %d batch %d" % (
                seed, batch))


def check_partial_overwrite(disk, seed):
    """Writing one logical block inside a folio keeps the rest of it."""
    lg, ph = disk.logical, disk.physical
    if ph == lg:
        # One logical block is the whole folio: overwrite the middle block
        # of three folios instead, and check its neighbours.
        base = ph
        disk.write(lbtest.pattern(3 * ph, seed), base - ph)
        before = disk.h.pread(3 * ph, base - ph)
        disk.write(lbtest.pattern(lg, seed + 1), base)
        after = disk.h.pread(3 * ph, base - ph)
        assert after[:ph] == before[:ph], "overwriting folio 1 changed folio 0"
        assert after[2 * ph:] == before[2 * ph:], \
            "overwriting folio 1 changed folio 2"
        assert after[ph:2 * ph] == lbtest.pattern(lg, seed + 1), \
            "overwriting folio 1 did not take"
        return
    base = 2 * ph
    folio = lbtest.pattern(ph, seed)
    disk.write(folio, base)
    inside = ph // 2 - lg if ph // 2 >= lg else lg
    inside -= inside % lg
    new = lbtest.pattern(lg, seed + 1)
    disk.write(new, base + inside)
    got = disk.h.pread(ph, base)
    want = folio[:inside] + new + folio[inside + lg:]
    assert got == want, \
        "a %d-byte write at %d inside folio 2 did not keep the folio's " \
        "other bytes" % (lg, inside)
    disk.verify("after partial overwrite")


def check_last_folio(disk, seed):
    """The disk's last logical block and last folio hold data."""
    lg, ph, size = disk.logical, disk.physical, disk.size
    last_folio = (size - 1) // ph * ph
    disk.write(lbtest.pattern(lg, seed), size - lg)
    disk.verify_range(lg, size - lg, "last logical block")
    disk.write(lbtest.pattern(size - last_folio, seed + 1), last_folio)
    disk.verify_range(size - last_folio, last_folio, "last folio")
    if last_folio >= lg:
        # Straddle into the last folio from the one before.
        disk.write(lbtest.pattern(size - last_folio + lg, seed + 2),
                   last_folio - lg)
    disk.verify("after writing the last folio")


def check_cross_connection(server, disk, seed):
    """What one connection writes or trims, another sees at once."""
    b = server.connect()
    try:
        cross_connection_steps(disk, b, seed)
    finally:
        b.shutdown()


def cross_connection_steps(disk, b, seed):
    lg, ph = disk.logical, disk.physical
    # A writes, B reads.
    off = ph - lg
    data = lbtest.pattern(ph + 2 * lg, seed)
    disk.write(data, off)
    assert b.pread(len(data), off) == data, \
        "connection B does not see A's write"
    # B writes, A reads.
    off2 = 3 * ph - lg
    data2 = lbtest.pattern(2 * lg, seed + 1)
    disk.write(data2, off2, h=b)
    assert disk.h.pread(len(data2), off2) == data2, \
        "connection A does not see B's write"
    # A trims two whole folios, B reads zeros there.
    disk.write(lbtest.pattern(2 * ph, seed + 2), 4 * ph)
    assert b.pread(2 * ph, 4 * ph) == lbtest.pattern(2 * ph, seed + 2), \
        "connection B does not see A's write before the trim"
    disk.h.trim(2 * ph, 4 * ph)
    disk.model[4 * ph:6 * ph] = bytes(2 * ph)
    assert b.pread(2 * ph, 4 * ph) == bytes(2 * ph), \
        "connection B still reads data that A trimmed"
    # B trims a folio A wrote, A reads zeros there.
    disk.h.pwrite(lbtest.pattern(ph, seed + 3), ph)
    disk.model[ph:2 * ph] = lbtest.pattern(ph, seed + 3)
    b.trim(ph, ph)
    disk.model[ph:2 * ph] = bytes(ph)
    assert disk.h.pread(ph, ph) == bytes(ph), \
        "connection A still reads data that B trimmed"
    disk.verify("cross-connection, read on B", h=b)
    disk.verify("cross-connection, read on A")


def check_unwritten(disk, required=False):
    """Blocks never written read as zeros.  (The whole-disk verify covers
    them too; this names the failure, and makes sure there were some.)"""
    lg = disk.logical
    unwritten = [i for i, w in enumerate(disk.written) if not w]
    assert unwritten or not required, "test bug: every block was written"
    for i in unwritten[:: max(1, len(unwritten) // 64)]:
        assert disk.h.pread(lg, i * lg) == bytes(lg), \
            "never-written block at %d does not read as zeros" % (i * lg)


def roundtrip(params, size, logical, physical, seed, cross=True):
    with lbtest.Server(*params) as s, Disk(s, size, logical,
                                            physical) as disk:
        assert disk.h.get_size() == size, \
            "size is %d, want %d" % (disk.h.get_size(), size)
        disk.verify("fresh disk (must be all zeros)")
        random_batches(disk, seed)
        check_partial_overwrite(disk, seed + 100)
        check_last_folio(disk, seed + 200)
        if cross:
            check_cross_connection(s, disk, seed + 300)
        disk.verify("end")
        check_unwritten(disk)
        disk.close()


def main():
    roundtrip(["size=8M", "blksize=16k", "logical-blksize=4k"],
              8 * MiB, 4 * KiB, 16 * KiB, seed=1)
    roundtrip(["size=8M", "blksize=64k", "logical-blksize=64k"],
              8 * MiB, 64 * KiB, 64 * KiB, seed=2)
    roundtrip(["size=100k", "blksize=16k", "logical-blksize=4k"],
              100 * KiB, 4 * KiB, 16 * KiB, seed=3)


lbtest.run(main)
