#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""base:allocation reports exactly the allocated folios, never more.

On a 64M disk with 16k folios and 4k logical blocks (misaligned=allow, so
requests may start and end anywhere, also mid-folio):
- an empty disk is a single extent HOLE|ZERO (3) covering the whole disk;
- after writes of whole folios, sub-folio pieces and folio-straddling
  ranges, the map shows data (flags 0) at exactly the folios touched --
  folio granularity, not request granularity -- and holes elsewhere, with
  adjacent runs of the same kind coalesced into one extent;
- trim, partial trim and NO_HOLE zero change the map as
  nbdkit-largeblock-plugin(1)'s DATA SEMANTICS says;
- REQ_ONE returns exactly one extent, starting at the offset and ending
  at the end of its run or of the request, whichever comes first;
- no reply -- for hundreds of offset/count pairs, many ending mid-folio or
  mid-block -- ever reaches past offset + count (nbdkit 1.32 aborts on
  that: CVE-2025-47711), and every byte each reply covers has the state it
  claims;
- on a 7E disk with one folio written at 1T, a 4 GiB-4k block status
  around it reports hole / that folio / hole, and one at the very end of
  the disk is a single hole (asked again from where a reply ended:
  nbdkit 1.48 answers it in two);
- `nbdinfo --map` of a 1T disk with one written folio lists exactly that
  folio as data and the rest as hole,zero, and the server keeps serving.
"""
import json
import subprocess

import nbd

import lbtest

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
TiB = 1024 * GiB

HOLE_ZERO = nbd.STATE_HOLE | nbd.STATE_ZERO     # 3
DATA = 0


class Model:
    """Which folios are allocated, and whether they hold written data."""

    def __init__(self, size, folio):
        self.size = size
        self.folio = folio
        self.state = {}         # folio index -> "data" | "zeroed"

    def allocate(self, offset, length, kind="data"):
        for f in range(offset // self.folio,
                       (offset + length - 1) // self.folio + 1):
            if kind == "data" or f not in self.state:
                self.state[f] = kind

    def release(self, offset, length):
        """Trim: folios wholly inside the range go away."""
        first = -(-offset // self.folio)
        end = (offset + length) // self.folio
        for f in range(first, end):
            self.state.pop(f, None)

    def allocated(self, f):
        return f in self.state

    def runs(self):
        """The coalesced map: [(offset, length, flags)]."""
        out = []
        nr = self.size // self.folio
        f = 0
        while f < nr:
            a = self.allocated(f)
            g = f
            while g < nr and self.allocated(g) == a:
                g += 1
            out.append((f * self.folio, (g - f) * self.folio,
                        DATA if a else HOLE_ZERO))
            f = g
        return out


def check_reply(model, ext, count, offset, req_one, what):
    """One block-status reply against the model and the request bounds."""
    end = offset + count
    assert ext, "%s: empty reply" % what
    assert ext[0][0] == offset, \
        "%s: first extent starts at %d" % (what, ext[0][0])
    pos = offset
    for (o, length, flags) in ext:
        assert o == pos, "%s: extents not contiguous at %d: %r" % (
            what, pos, ext)
        assert length > 0, "%s: zero-length extent: %r" % (what, ext)
        assert o + length <= end, \
            "%s: extent (%d, %d) goes beyond offset+count = %d: %r" % (
                what, o, length, end, ext)
        folios = range(o // model.folio, (o + length - 1) // model.folio + 1)
        states = set(model.allocated(f) for f in folios)
        assert len(states) == 1, \
            "%s: extent (%d, %d, %d) mixes allocated and free folios" % (
                what, o, length, flags)
        if states.pop():
            kinds = set(model.state[f] for f in folios)
            assert not flags & nbd.STATE_HOLE, \
                "%s: allocated range (%d, %d) reported with flags %d" % (
                    what, o, length, flags)
            if kinds == {"data"}:
                assert flags == DATA, \
                    "%s: data range (%d, %d) reported with flags %d" % (
                        what, o, length, flags)
        else:
            assert flags == HOLE_ZERO, \
                "%s: unallocated range (%d, %d) reported with flags %d" % (
                    what, o, length, flags)
        pos += length
    if req_one:
        assert len(ext) == 1, "%s: REQ_ONE gave %d extents: %r" % (
            what, len(ext), ext)
        # The run containing offset, clipped to the request.
        f = offset // model.folio
        a = model.allocated(f)
        nr = model.size // model.folio
        g = f
        while g < nr and model.allocated(g) == a:
            g += 1
        want = min(g * model.folio, end) - offset
        assert ext[0][1] == want, "%s: REQ_ONE length %d, want %d" % (
            what, ext[0][1], want)
    else:
        assert pos == end, "%s: reply covers up to %d, not %d: %r" % (
            what, pos, end, ext)
        for a, b in zip(ext, ext[1:]):
            assert a[2] != b[2], "%s: adjacent extents not coalesced: %r" % (
                what, ext)


def check_everywhere(h, model, what):
    """The whole map, then many sub-ranges with and without REQ_ONE."""
    size, folio = model.size, model.folio
    got = lbtest.extents(h, size, 0)
    assert got == model.runs(), "%s: map is\n%r\nwant\n%r" % (
        what, got, model.runs())

    offsets = set([0, 1, 511, 512, 4095, 4096, 8192 + 17, folio - 1, folio,
                   folio + 1, 2 * folio - 4096, 3 * folio + 100,
                   5 * folio - 1, 100 * folio + 12288, 101 * folio,
                   size // 2 + 3, size - folio - 1, size - folio,
                   size - 4096, size - 1])
    counts = [1, 511, 512, 4095, 4096, 4097, folio - 1, folio, folio + 1,
              3 * folio + 100, 7 * folio - 4096, MiB + 7, 5 * MiB]
    for off in sorted(offsets):
        cs = [c for c in counts if off + c <= size] + [size - off]
        for c in cs:
            for flags in (0, nbd.CMD_FLAG_REQ_ONE):
                ext = lbtest.extents(h, c, off, flags)
                check_reply(model, ext, c, off, flags != 0,
                            "%s: block_status(count=%d, offset=%d%s)" % (
                                what, c, off, ", REQ_ONE" if flags else ""))


def check_small_disk():
    size, folio, lg = 64 * MiB, 16 * KiB, 4 * KiB
    with lbtest.Server("size=64M", "blksize=16k", "logical-blksize=4k",
                       "misaligned=allow") as s:
        h = s.connect()
        try:
            model = Model(size, folio)
            assert h.can_meta_context(nbd.CONTEXT_BASE_ALLOCATION), \
                "base:allocation not negotiated"

            # Empty disk: one hole.
            ext = lbtest.extents(h, size, 0)
            assert ext == [(0, size, HOLE_ZERO)], \
                "empty disk map is %r, want one hole" % ext
            check_everywhere(h, model, "empty disk")

            # Folios 0..2 via a straddling write and a sub-folio write:
            # must coalesce into one data extent of 3 folios.
            writes = [
                (0, 2 * folio),                 # folios 0, 1
                (2 * folio + lg, lg),           # 4k inside folio 2
                (5 * folio + 2 * lg, lg),       # 4k inside folio 5
                (99 * folio + 3 * lg, 2 * lg),  # straddles folios 99/100
                (1000 * folio, 1),              # one byte (misaligned)
                (size - lg, lg),                # last block of the disk
            ]
            for i, (off, length) in enumerate(writes):
                h.pwrite(lbtest.pattern(length, i + 1), off)
                model.allocate(off, length)
            assert model.runs()[0] == (0, 3 * folio, DATA), "test bug"
            check_everywhere(h, model, "after writes")

            # Trim folio 1 whole: the data run splits.  A partial trim
            # inside folio 5 and one inside folio 0 keep them allocated.
            h.trim(folio, folio)
            model.release(folio, folio)
            h.trim(lg, 5 * folio + lg)
            model.release(5 * folio + lg, lg)
            h.trim(2 * lg, lg)
            check_everywhere(h, model, "after trims")

            # NO_HOLE zero of free folios allocates them; a plain zero
            # covering folios 99..100 wholly releases them.
            h.zero(2 * folio, 200 * folio, nbd.CMD_FLAG_NO_HOLE)
            model.allocate(200 * folio, 2 * folio, "zeroed")
            h.zero(2 * folio + 4096, 99 * folio - 4096)
            model.release(99 * folio - 4096, 2 * folio + 4096)
            check_everywhere(h, model, "after zeros")

            assert s.alive(), "server died"
        finally:
            lbtest.close(h)


def check_7e():
    folio = 16 * KiB
    size = 7 * 2**60
    with lbtest.Server("size=7E", "blksize=16k",
                       "logical-blksize=4k") as s:
        h = s.connect()
        try:
            assert h.get_size() == size, "size %d" % h.get_size()
            data = lbtest.pattern(folio, 7)
            h.pwrite(data, TiB)

            count = 2**32 - 4096
            start = TiB - 2 * GiB
            ext = lbtest.extents(h, count, start)
            want = [(start, 2 * GiB, HOLE_ZERO), (TiB, folio, DATA),
                    (TiB + folio, start + count - TiB - folio, HOLE_ZERO)]
            assert ext == want, "7E: 4G around 1T: %r, want %r" % (ext, want)

            ext = lbtest.extents(h, count, start, nbd.CMD_FLAG_REQ_ONE)
            assert ext == [(start, 2 * GiB, HOLE_ZERO)], \
                "7E: REQ_ONE before 1T: %r" % ext
            ext = lbtest.extents(h, count, TiB, nbd.CMD_FLAG_REQ_ONE)
            assert ext == [(TiB, folio, DATA)], "7E: REQ_ONE at 1T: %r" % ext
            # Mid-folio inside the data folio, ending mid-folio.
            ext = lbtest.extents(h, 4096, TiB + 4096)
            assert ext == [(TiB + 4096, 4096, DATA)], \
                "7E: 4k inside the data folio: %r" % ext
            # The very end of the disk: one hole, which newer nbdkit
            # sends in two replies (lbtest.extents_covering says why).
            ext = lbtest.extents_covering(h, count, size - count)
            assert ext == [(size - count, count, HOLE_ZERO)], \
                "7E: last 4G: %r" % ext
            # Far from anything written, not starting at a folio.
            ext = lbtest.extents(h, 3 * folio, 5 * 2**60 + 4096)
            assert ext == [(5 * 2**60 + 4096, 3 * folio, HOLE_ZERO)], \
                "7E: at 5E: %r" % ext

            assert h.pread(folio, TiB) == data, "7E: data at 1T lost"
            assert s.alive(), "7E: server died"
        finally:
            lbtest.close(h)


def check_nbdinfo_map():
    lbtest.requires("nbdinfo")
    folio = 16 * KiB
    size = TiB
    where = 512 * GiB
    with lbtest.Server("size=1T", "blksize=16k", "logical-blksize=4k") as s:
        h = s.connect()
        try:
            h.pwrite(lbtest.pattern(4096, 8), where + 8192)   # 4k: 1 folio
        finally:
            lbtest.close(h)
        r = subprocess.run(["nbdinfo", "--map", "--json", s.uri],
                           stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, "nbdinfo --map failed (%d): %s\n%s" % (
            r.returncode, r.stderr, s.stderr())
        got = [(e["offset"], e["length"], e["type"])
               for e in json.loads(r.stdout)]
        want = [(0, where, HOLE_ZERO), (where, folio, DATA),
                (where + folio, size - where - folio, HOLE_ZERO)]
        assert got == want, "nbdinfo --map: %r, want %r" % (got, want)

        # The server is still alive and serving.
        assert s.alive(), "server died under nbdinfo --map"
        h = s.connect()
        try:
            assert h.pread(4096, where + 8192) == lbtest.pattern(4096, 8), \
                "data lost after nbdinfo --map"
        finally:
            lbtest.close(h)


def main():
    check_small_disk()
    check_7e()
    check_nbdinfo_map()


lbtest.run(main)
