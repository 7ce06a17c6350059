#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""write-cache=volatile: power cuts through nbdkit, as a client sees them.

- power-cut-after=N cuts at the Nth write: that write and every later
  request on the connection open at the cut fail with EIO; a new
  connection sees the post-cut image: FUA and flushed data intact,
  unflushed data lost (lose), whole physical blocks old or new
  (atomic), logical blocks old or new (torn);
- the same seed replays the identical image, logged with the counts;
- a line "cut" written to power-cut-fifo cuts the power of a running
  server, and the statsfile (rewritten at once) counts the cut.
"""
import errno
import os
import time

import nbd

import lbtest

KiB = 1024
BLK, LOG = 16 * KiB, 4 * KiB
NR = 16


def workload(h):
    """Write NR blocks (every 4th FUA, a flush after the first 8), then
    one more write: power-cut-after=NR+1 cuts on it."""
    for i in range(NR):
        h.pwrite(lbtest.pattern(BLK, i), i * BLK,
                 nbd.CMD_FLAG_FUA if i % 4 == 0 else 0)
        if i == 7:
            h.flush()
    lbtest.expect_errno(errno.EIO, "the write power fails on", h.pwrite,
                        b"x" * BLK, NR * BLK)
    lbtest.expect_errno(errno.EIO, "a read after the cut", h.pread, LOG, 0)
    lbtest.expect_errno(errno.EIO, "a cache request after the cut", h.cache,
                        LOG, 0)


def post_cut_image(mode, seed):
    with lbtest.Server("size=1M", "blksize=16k", "logical-blksize=4k",
                       "write-cache=volatile", "power-cut-mode=" + mode,
                       "power-cut-seed=%d" % seed,
                       "power-cut-after=%d" % (NR + 1)) as srv:
        workload(srv.connect())
        h = srv.connect()
        h.cache(LOG, 0)         # a new connection's disk has power
        image = bytes(h.pread(NR * BLK, 0))
        log = srv.stderr()
    assert "power cut 1 (mode %s, seed %d)" % (mode, seed) in log, log
    # A cut is news, not an error (issue 29): no "error:" on its line.
    assert "error: largeblock: power cut" not in log, log
    return image


def check_mode(mode, image):
    torn = 0
    for i in range(NR):
        new = lbtest.pattern(BLK, i)
        got = image[i * BLK:(i + 1) * BLK]
        if i % 4 == 0 or i < 8:
            assert got == new, "%s: FUA/flushed block %d lost" % (mode, i)
            continue
        pieces = [got[j:j + LOG] == new[j:j + LOG] for j in range(0, BLK, LOG)]
        for j in range(0, BLK, LOG):
            assert got[j:j + LOG] in (new[j:j + LOG], bytes(LOG)), \
                "%s: block %d torn inside a logical block" % (mode, i)
        if mode == "lose":
            assert not any(pieces), "lose kept block %d" % i
        if mode == "atomic":
            assert all(pieces) or not any(pieces), "atomic mixed block %d" % i
        torn += any(pieces) and not all(pieces)
    return torn


def fifo_cut():
    d = lbtest.tempfile.mkdtemp(prefix="lbcut.")
    fifo, stats = os.path.join(d, "cut"), os.path.join(d, "stats.json")
    try:
        with lbtest.Server("size=1M", "blksize=16k", "write-cache=volatile",
                           "power-cut-mode=lose", "power-cut-fifo=" + fifo,
                           "statsfile=" + stats) as srv:
            h = srv.connect()
            h.pwrite(b"d" * BLK, 0)
            h.flush()
            h.pwrite(b"u" * BLK, BLK)
            with open(fifo, "w") as f:
                f.write("cut\n")
            deadline = time.monotonic() + 60
            while True:         # the cut is asynchronous: wait for it
                try:
                    h.pread(LOG, 0)
                except nbd.Error as e:
                    assert e.errnum == errno.EIO, e
                    break
                assert time.monotonic() < deadline, "no cut after 60s"
                time.sleep(0.01)
            h2 = srv.connect()
            assert h2.pread(BLK, 0) == b"d" * BLK, "flushed data lost"
            assert h2.pread(BLK, BLK) == bytes(BLK), "unflushed data kept"
            wc = lbtest.read_stats(stats)["write_cache"]
            assert wc["cuts"] == 1 and wc["blocks_lost"] == 1, wc
    finally:
        lbtest.shutil.rmtree(d, ignore_errors=True)


def main():
    for mode in ("lose", "atomic", "torn"):
        a = post_cut_image(mode, 7)
        assert a == post_cut_image(mode, 7), "%s: seed 7 did not replay" % mode
        torn = check_mode(mode, a)
        assert mode == "torn" or torn == 0
    fifo_cut()


lbtest.run(main)
