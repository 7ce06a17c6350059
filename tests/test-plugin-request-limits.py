#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The request checks of nbdkit-largeblock-plugin(1) (ALIGNMENT POLICY),
at the edges of the 32-bit NBD count.

On an 8G disk with 16k folios and 4k logical blocks:
- a trim of 4 GiB - 4096 bytes at offset 0 completes, the range reads as
  zeros (sampled at its start, middle and end) and the server's RSS does
  not grow by more than a few MiB (no buffer of that size, no folios);
  the same for a zero without flags;
- after 128 MiB of data was written across that range (the RSS grows by
  at least 100 MiB, so the measurement means something), the same trim
  -- and then the same zero -- removes every byte of it, including the
  first folio and the folio the range ends in the middle of, whose tail
  beyond the range keeps its data; the RSS falls back near the baseline
  (the memory went back to the OS), and once that tail folio is trimmed
  too, the statsfile shows folios_allocated = 0;
- block_status with count 2^32-1 (not a multiple of 4k) at offset 0 gets
  EINVAL under misaligned=error, and the server stays alive and keeps
  serving; with count 2^32-4096 it is answered, inside the request;
- reads and writes of max-request + 4k (and of 64M) get EINVAL and write
  nothing, while exactly max-request works;
- a NO_HOLE|FAST_ZERO zero gets ENOTSUP (zeroing that must allocate is not
  fast) and changes nothing; FAST_ZERO alone succeeds.
With misaligned=allow on the same disk:
- block_status with count 2^32-1 is answered with extents inside the
  request, also when the request ends at the end of the disk;
- a trim, and a zero, of 2^32-1 bytes at offset 0 zero everything up to
  the last byte of the range and nothing beyond (no silent capping).
"""
import errno
import os
import shutil
import tempfile

import nbd

import lbtest

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
SIZE = 8 * GiB
FOLIO = 16 * KiB
BIG = 2**32 - 4096              # the largest aligned NBD count
MAX32 = 2**32 - 1
CHUNK = 256 * KiB               # request size for data and sampling
MAX_REQUEST = 32 * MiB          # the default
# nbdkit keeps a per-thread request buffer (16 threads by default), so
# requests of CHUNK bytes may keep up to 16 * CHUNK resident; plus index
# nodes and slack.
RSS_SLACK_KIB = 8 * 1024
# Under valgrind the RSS is valgrind's as much as the plugin's: on a
# loaded machine it grew by 15-44 MiB across requests that allocate
# nothing in the plugin.  There only the data is checked; the plain and
# ASan runs check the memory.
RSS_CHECKED = not os.environ.get("LB_VALGRIND")


def sample_offsets(end):
    """Start, middle and end of [0, end): a few MiB, in CHUNK pieces."""
    out = []
    for base in (0, (end // 2) & ~(FOLIO - 1), (end - 4 * MiB) & ~(CHUNK - 1)):
        out += [base + i * CHUNK for i in range(16)]
    return out


def assert_zeros(h, offsets, end, what):
    for off in offsets:
        n = min(CHUNK, end - off)
        got = h.pread(n, off)
        if got != bytes(n):
            bad = next(i for i in range(n) if got[i])
            raise AssertionError("%s: byte %d is %d, not zero" % (
                what, off + bad, got[bad]))


# 128 MiB of data spread over the range: 128 runs of 1 MiB, 32 MiB apart
# (the first at offset 0), plus the folio in which the range ends.
DATA_RUNS = [i * 32 * MiB for i in range(128)]
TAIL_FOLIO = BIG & ~(FOLIO - 1)         # 4G - 16k: the range ends in it


def write_data(h, seed):
    for i, off in enumerate(DATA_RUNS):
        for k in range(MiB // CHUNK):
            h.pwrite(lbtest.pattern(CHUNK, seed + 4 * i + k), off + k * CHUNK)
    tail = lbtest.pattern(FOLIO, seed - 1)
    h.pwrite(tail, TAIL_FOLIO)
    assert h.pread(CHUNK, DATA_RUNS[5] + CHUNK) == \
        lbtest.pattern(CHUNK, seed + 21), "data did not stick"
    return tail


def assert_rss_back(s, h, base_kib, what):
    """After a flush, the RSS is back within slack of base_kib."""
    h.flush()   # trimmed memory goes back after the reply, before a flush
    rss = s.rss_kib()
    assert not RSS_CHECKED or rss <= base_kib + RSS_SLACK_KIB, \
        "%s: RSS %d KiB, baseline %d KiB: the memory was not released" % (
            what, rss, base_kib)


def check_released(s, h, tail, base_kib, what):
    data_offsets = [off + k * CHUNK for off in DATA_RUNS[::9]
                    for k in range(MiB // CHUNK)]
    assert_zeros(h, data_offsets + sample_offsets(BIG), BIG, what)
    got = h.pread(FOLIO, TAIL_FOLIO)
    cut = BIG - TAIL_FOLIO
    assert got[:cut] == bytes(cut), \
        "%s: the part of the last folio inside the range is not zero" % what
    assert got[cut:] == tail[cut:], \
        "%s: the part of the last folio beyond the range changed" % what
    assert_rss_back(s, h, base_kib, what)


def big_range_release(s, h):
    # Warm up: one request per size we use, on every nbdkit thread.
    for i in range(64):
        h.pread(CHUNK, (i % 16) * CHUNK)
    base = s.rss_kib()

    # On an empty disk.
    for name, op in (("trim", h.trim), ("zero", h.zero)):
        op(BIG, 0)
        assert_rss_back(s, h, base, "%s of 4G-4k on an empty disk" % name)
        assert_zeros(h, sample_offsets(BIG), BIG,
                     "%s of 4G-4k on an empty disk" % name)

    # With data in the range.
    for seed, name, op in ((100, "trim", h.trim), (1000, "zero", h.zero)):
        tail = write_data(h, seed)
        rss = s.rss_kib()
        assert not RSS_CHECKED or rss >= base + 100 * 1024, \
            "RSS %d KiB after writing 128 MiB, baseline %d KiB: the " \
            "measurement is meaningless" % (rss, base)
        op(BIG, 0)
        check_released(s, h, tail, base, "%s of 4G-4k after writing 128 MiB"
                       % name)
    # Now release the tail folio too: nothing is allocated any more.
    h.trim(FOLIO, TAIL_FOLIO)
    ext = lbtest.extents_covering(h, BIG, 0)
    assert ext == [(0, BIG, nbd.STATE_HOLE | nbd.STATE_ZERO)], \
        "after releasing everything the map is %r" % ext


def block_status_limits(s, h):
    lbtest.expect_errno(errno.EINVAL,
                        "block_status of 2^32-1 at 0 (misaligned)",
                        lbtest.extents, h, MAX32, 0)
    assert s.alive(), "server died after block_status of 2^32-1"
    h.pwrite(b"\x5a" * 4096, 3 * GiB)
    assert h.pread(4096, 3 * GiB) == b"\x5a" * 4096, \
        "server does not serve after block_status of 2^32-1"
    for off in (0, 4096, SIZE - BIG):
        ext = lbtest.extents(h, BIG, off)
        assert ext and ext[0][0] == off, "block_status(%d, %d): %r" % (
            BIG, off, ext)
        end = ext[-1][0] + ext[-1][1]
        assert end <= off + BIG, \
            "block_status(%d, %d) reached %d, past the request" % (
                BIG, off, end)
    h.trim(FOLIO, 3 * GiB)


def max_request_limits(h):
    over = MAX_REQUEST + 4096
    lbtest.expect_errno(errno.EINVAL, "read of max-request + 4k",
                        h.pread, over, 0)
    lbtest.expect_errno(errno.EINVAL, "write of max-request + 4k", h.pwrite,
                        b"\xee" * over, 0)
    lbtest.expect_errno(errno.EINVAL, "read of 64M", h.pread, 64 * MiB, GiB)
    lbtest.expect_errno(errno.EINVAL, "write of 64M", h.pwrite,
                        b"\xee" * (64 * MiB), GiB)
    ext = lbtest.extents(h, 2 * GiB, 0)
    assert ext == [(0, 2 * GiB, nbd.STATE_HOLE | nbd.STATE_ZERO)], \
        "a refused large write allocated something: %r" % ext
    data = lbtest.pattern(MAX_REQUEST, 5)
    h.pwrite(data, GiB)
    assert h.pread(MAX_REQUEST, GiB) == data, "max-request write/read"
    h.trim(MAX_REQUEST, GiB)


def fast_zero(h):
    h.pwrite(b"\x11" * FOLIO, 5 * GiB)
    lbtest.expect_errno(errno.ENOTSUP, "NO_HOLE|FAST_ZERO zero", h.zero,
                        2 * FOLIO, 5 * GiB,
                        nbd.CMD_FLAG_NO_HOLE | nbd.CMD_FLAG_FAST_ZERO)
    assert h.pread(FOLIO, 5 * GiB) == b"\x11" * FOLIO, \
        "a refused fast zero changed data"
    ext = lbtest.extents(h, 2 * FOLIO, 5 * GiB)
    hole = nbd.STATE_HOLE | nbd.STATE_ZERO
    assert ext == [(5 * GiB, FOLIO, 0), (5 * GiB + FOLIO, FOLIO, hole)], \
        "a refused fast zero changed the allocation: %r" % ext
    h.zero(2 * FOLIO, 5 * GiB, nbd.CMD_FLAG_FAST_ZERO)
    assert h.pread(2 * FOLIO, 5 * GiB) == bytes(2 * FOLIO), "fast zero"


def strict_server(tmp):
    statsfile = os.path.join(tmp, "stats.json")
    with lbtest.Server("size=8G", "blksize=16k", "logical-blksize=4k",
                       "statsfile=" + statsfile) as s:
        h = s.connect()
        try:
            # First, while nbdkit's per-thread buffers are small.
            big_range_release(s, h)
            block_status_limits(s, h)
            max_request_limits(h)
            fast_zero(h)
        finally:
            lbtest.close(h)
        rc = s.stop()
        assert rc == 0, "nbdkit exited with %r: %s" % (rc, s.last_stderr)
    stats = lbtest.read_stats(statsfile)
    assert stats["folios_allocated"] == 0 and stats["bytes_resident"] == 0, \
        "at exit: folios_allocated %d, bytes_resident %d, want 0" % (
            stats["folios_allocated"], stats["bytes_resident"])
    assert stats["folios_peak"] >= 128 * MiB // FOLIO, \
        "folios_peak %d is below what was written" % stats["folios_peak"]


def allow_server():
    with lbtest.Server("size=8G", "blksize=16k", "logical-blksize=4k",
                       "misaligned=allow") as s:
        h = s.connect()
        try:
            h.pwrite(b"\x77" * FOLIO, GiB)
            for off in (0, 1, SIZE - MAX32):
                ext = lbtest.extents(h, MAX32, off)
                assert ext and ext[0][0] == off, \
                    "block_status(2^32-1, %d): %r" % (off, ext)
                end = ext[-1][0] + ext[-1][1]
                assert end <= off + MAX32, \
                    "block_status(2^32-1, %d) reached %d, past %d: %r" % (
                        off, end, off + MAX32, ext)
            assert s.alive(), "server died"

            for name, op in (("trim", h.trim), ("zero", h.zero)):
                last = TAIL_FOLIO + FOLIO       # 4G
                tail = lbtest.pattern(2 * FOLIO, 9)
                h.pwrite(tail, TAIL_FOLIO)      # [4G-16k, 4G+16k)
                h.pwrite(b"\x77" * FOLIO, GiB)
                op(MAX32, 0)
                got = h.pread(2 * FOLIO, TAIL_FOLIO)
                cut = MAX32 - TAIL_FOLIO
                assert got[:cut] == bytes(cut), \
                    "%s of 2^32-1: the end of its range is not zero" % name
                assert got[cut:] == tail[cut:], \
                    "%s of 2^32-1 changed bytes beyond its range (from %d)" \
                    % (name, last - 1)
                assert h.pread(FOLIO, GiB) == bytes(FOLIO), \
                    "%s of 2^32-1: data at 1G survived" % name
        finally:
            lbtest.close(h)


def main():
    tmp = tempfile.mkdtemp(prefix="lbtest-limits.")
    try:
        strict_server(tmp)
        allow_server()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


lbtest.run(main)
