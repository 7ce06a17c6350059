#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""memory-limit holds under 4 concurrent writers.

Four connections, each in its own thread and its own region of a 64M disk
with blksize=16k and memory-limit=1M (64 folios), write 4k to 64k at
4k-aligned offsets (so within and across folios), trim and zero at
random, and so constantly race for the last free folios.  Each keeps a
model of its region: a write refused with ENOSPC must change nothing, so
at the end every region reads back exactly as its model.  The statsfile
written at exit must show a peak of at most the limit -- the RAM store
charges folios before allocating them, so not even one folio per worker
over -- and both successes and ENOSPC refusals must have happened (or the
test proved nothing).
"""
import errno
import os
import random
import shutil
import tempfile

import nbd

import lbtest

FOLIO = 16384
LOGICAL = 4096
LIMIT_FOLIOS = 64
SIZE = 64 << 20
WORKERS = 4
REGION = SIZE // WORKERS
OPS = 1500


def worker(h, idx, results):
    rnd = random.Random(1000 + idx)
    base = idx * REGION
    model = bytearray(REGION)          # what the region must read as
    ok = refused = 0
    for i in range(OPS):
        length = rnd.choice((1, 2, 4, 8, 16)) * LOGICAL
        off = rnd.randrange(0, REGION - length, LOGICAL)
        op = rnd.random()
        try:
            if op < 0.7:
                data = lbtest.pattern(length, idx * 100000 + i)
                h.pwrite(data, base + off)
                model[off:off + length] = data
            elif op < 0.85:
                h.trim(length, base + off)
                model[off:off + length] = bytes(length)
            else:
                h.zero(length, base + off)
                model[off:off + length] = bytes(length)
            ok += 1
        except nbd.Error as e:
            if e.errnum != errno.ENOSPC:
                raise AssertionError("worker %d: %s" % (idx, e))
            refused += 1
    for off in range(0, REGION, 1 << 20):
        got = h.pread(1 << 20, base + off)
        if got != model[off:off + (1 << 20)]:
            raise AssertionError("worker %d: region at %d differs from its "
                                 "model: a refused write changed data" %
                                 (idx, base + off))
    results[idx] = (ok, refused)


def main():
    d = tempfile.mkdtemp(prefix="lbtest-memlimit.")
    stats = os.path.join(d, "stats.json")
    try:
        with lbtest.Server("size=%d" % SIZE, "blksize=%d" % FOLIO,
                           "logical-blksize=%d" % LOGICAL,
                           "memory-limit=%d" % (LIMIT_FOLIOS * FOLIO),
                           "statsfile=" + stats) as s:
            handles = [s.connect() for _ in range(WORKERS)]
            results = {}
            lbtest.in_threads(lambda i: worker(handles[i], i, results),
                              WORKERS)
            assert s.stop() == 0, "nbdkit failed: %s" % s.last_stderr
        st = lbtest.read_stats(stats)
        peak = st["folios_peak"]
        assert peak <= LIMIT_FOLIOS, \
            "folios_peak %d is over the limit of %d folios" % (
                peak, LIMIT_FOLIOS)
        ok = sum(r[0] for r in results.values())
        refused = sum(r[1] for r in results.values())
        assert ok > 0 and refused > 0, \
            "no race for the limit happened (%d ok, %d ENOSPC)" % (ok,
                                                                   refused)
        print("%d requests served, %d refused with ENOSPC, peak %d of %d "
              "folios" % (ok, refused, peak, LIMIT_FOLIOS))
    finally:
        shutil.rmtree(d, ignore_errors=True)


lbtest.run(main)
