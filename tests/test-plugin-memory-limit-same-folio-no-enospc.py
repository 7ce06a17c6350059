#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Concurrent writes to one absent folio get no ENOSPC while it fits.

A 16k/2k disk with memory-limit=64 folios holds 63 of them; then eight
connections, each in its own thread, write their own 2k eighth of the
same absent folio, over and over, while another trims it between rounds.
Each round needs exactly one folio, which the limit has room for, so
every write must succeed.  (Each writer charges the folio it expects to
create before it takes any lock; two writers charging the same folio
used to push the charge over the limit and one got ENOSPC.)  At the end
each eighth reads back as its writer's last data and the peak stays
within the limit.
"""
import os
import shutil
import tempfile
import threading

import nbd

import lbtest

FOLIO = 16384
LOGICAL = 2048
LIMIT_FOLIOS = 64
SIZE = 64 << 20
WRITERS = 8
ROUNDS = 2000
TARGET = LIMIT_FOLIOS * FOLIO       # the folio they all race for


def main():
    d = tempfile.mkdtemp(prefix="lbtest-samefolio.")
    stats = os.path.join(d, "stats.json")
    try:
        with lbtest.Server("size=%d" % SIZE, "blksize=%d" % FOLIO,
                           "logical-blksize=%d" % LOGICAL,
                           "memory-limit=%d" % (LIMIT_FOLIOS * FOLIO),
                           "statsfile=" + stats) as s:
            h0 = s.connect()
            h0.pwrite(b"\x07" * ((LIMIT_FOLIOS - 1) * FOLIO), 0)
            handles = [s.connect() for _ in range(WRITERS)]
            barrier = threading.Barrier(WRITERS + 1)
            failures = []
            last = {}

            def writer(i):
                for r in range(ROUNDS):
                    barrier.wait()
                    data = lbtest.pattern(LOGICAL, i * 100000 + r)
                    try:
                        handles[i].pwrite(data, TARGET + i * LOGICAL)
                        last[i] = data
                    except nbd.Error as e:
                        failures.append("round %d writer %d: %s" %
                                        (r, i, e))
                    barrier.wait()

            def trimmer(_):
                for r in range(ROUNDS):
                    barrier.wait()
                    barrier.wait()
                    if r < ROUNDS - 1:
                        h0.trim(FOLIO, TARGET)

            lbtest.in_threads(lambda i: writer(i) if i < WRITERS
                              else trimmer(i), WRITERS + 1)
            assert not failures, "%d of %d writes failed, first: %s" % (
                len(failures), WRITERS * ROUNDS, failures[0])
            for i in range(WRITERS):
                got = h0.pread(LOGICAL, TARGET + i * LOGICAL)
                assert got == last[i], "eighth %d lost its last write" % i
            assert s.stop() == 0, "nbdkit failed: %s" % s.last_stderr
        peak = lbtest.read_stats(stats)["folios_peak"]
        assert peak <= LIMIT_FOLIOS, "folios_peak %d over the limit %d" % (
            peak, LIMIT_FOLIOS)
        print("%d concurrent writes to one absent folio at the limit, none "
              "refused; peak %d of %d folios" % (WRITERS * ROUNDS, peak,
                                                 LIMIT_FOLIOS))
    finally:
        shutil.rmtree(d, ignore_errors=True)


lbtest.run(main)
