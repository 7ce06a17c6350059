#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Soak: SOAK_SECONDS (default 600) of mixed, verified I/O.

Four connections, each in its own thread and its own quarter of a 256M
disk (blksize=16k, logical-blksize=4k), issue random writes, reads,
trims, zeros (some NO_HOLE) and flushes of 4k to 1M, and check every read
against their model of the region.  Afterwards every region is read back
whole, everything is trimmed, and the server's memory must return to its
baseline: no folio allocated (statsfile) and resident memory within 16
MiB of what it was before the first write (after a warm-up that makes
every nbdkit thread allocate its largest request buffer, which glibc
keeps).  Run by "make soak"; not part of
"make check".
"""
import os
import random
import shutil
import tempfile
import time

import nbd

import lbtest

FOLIO = 16384
LOGICAL = 4096
SIZE = 256 << 20
WORKERS = 4
REGION = SIZE // WORKERS
RSS_SLACK_KIB = 16 * 1024


def worker(h, idx, deadline, counts):
    rnd = random.Random(idx)
    base = idx * REGION
    model = bytearray(REGION)
    n = 0
    while time.monotonic() < deadline:
        length = rnd.choice((1, 2, 4, 16, 64, 256)) * LOGICAL
        off = rnd.randrange(0, REGION - length, LOGICAL)
        op = rnd.random()
        if op < 0.4:
            data = lbtest.pattern(length, rnd.getrandbits(32))
            h.pwrite(data, base + off,
                     nbd.CMD_FLAG_FUA if rnd.random() < 0.1 else 0)
            model[off:off + length] = data
        elif op < 0.7:
            got = h.pread(length, base + off)
            assert got == model[off:off + length], \
                "worker %d: read at %d differs from what was written" % (
                    idx, base + off)
        elif op < 0.8:
            h.trim(length, base + off)
            model[off:off + length] = bytes(length)
        elif op < 0.95:
            flags = nbd.CMD_FLAG_NO_HOLE if rnd.random() < 0.3 else 0
            h.zero(length, base + off, flags)
            model[off:off + length] = bytes(length)
        else:
            h.flush()
        n += 1
    for off in range(0, REGION, 1 << 20):
        assert h.pread(1 << 20, base + off) == model[off:off + (1 << 20)], \
            "worker %d: final check of %d failed" % (idx, base + off)
    counts[idx] = n


def warm_up(handles):
    """Make every nbdkit worker thread allocate its largest request buffer
    (glibc keeps those after the request), so the baseline includes them:
    16 client threads per connection, each reading 1M four times."""
    def reader(h, i):
        for k in range(4):
            h.pread(1 << 20, ((i + k) % 16) << 20)

    lbtest.in_threads(lambda n: reader(handles[n % WORKERS], n // WORKERS),
                      WORKERS * 16)


def main():
    seconds = float(os.environ.get("SOAK_SECONDS", "600"))
    d = tempfile.mkdtemp(prefix="lbsoak.")
    stats = os.path.join(d, "stats.json")
    try:
        with lbtest.Server("size=%d" % SIZE, "blksize=%d" % FOLIO,
                           "logical-blksize=%d" % LOGICAL,
                           "statsfile=" + stats) as s:
            handles = [s.connect() for _ in range(WORKERS)]
            warm_up(handles)
            base_kib = s.rss_kib()
            deadline = time.monotonic() + seconds
            counts = {}
            lbtest.in_threads(lambda i: worker(handles[i], i, deadline,
                                               counts), WORKERS)
            handles[0].trim(SIZE, 0)
            handles[0].flush()      # the memory is back by the flush
            rss = s.rss_kib()
            assert rss <= base_kib + RSS_SLACK_KIB, \
                "RSS %d KiB after trimming everything, baseline %d KiB" % (
                    rss, base_kib)
            assert s.stop() == 0, "nbdkit failed: %s" % s.last_stderr
        st = lbtest.read_stats(stats)
        assert st["folios_allocated"] == 0, \
            "%d folios still allocated after trimming everything" % (
                st["folios_allocated"])
        print("soak: %d requests in %.0f s over %d connections, peak %d "
              "folios, RSS back to baseline (%d KiB -> %d KiB)" % (
                  sum(counts.values()), seconds, WORKERS, st["folios_peak"],
                  base_kib, rss))
    finally:
        shutil.rmtree(d, ignore_errors=True)


lbtest.run(main)
