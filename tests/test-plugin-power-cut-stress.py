#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""write-cache=volatile under load: power cuts race four connections.

Four connections, each in its own thread and each owning its own region,
write whole physical blocks (some FUA), zero and trim them and flush,
until a power cut sent through power-cut-fifo= at a random moment makes
them fail with EIO.  A small write-cache-size keeps implicit flushes
happening too.  Then a new connection reads every block and checks, per
physical block, what a volatile cache allows:

- it holds its last durable content (as of its writer's last
  acknowledged flush or FUA write) or a version written after that:
  acknowledged durable data is never lost (another connection's flush
  may make anything durable, so newer versions may survive in any mode);
- lose and atomic: the whole physical block is one such version;
  torn: each logical block is, independently.

Five cuts a mode (two under valgrind), on one server each, with a fixed seed; the statistics
must count every cut.  Run under TSan (make check-tsan) this is the
plugin's concurrency proof for the cache: per-connection state, the cut
flag, the FIFO thread and the cache's locks.
"""
import errno
import os
import random
import shutil
import tempfile
import threading
import time

import nbd

import lbtest

KiB = 1024
BLK, LOG = 16 * KiB, 4 * KiB
WRITERS = 4
BLOCKS_EACH = 24
# Under valgrind each request is ~50 times slower: two cuts a mode still
# race every path; TSan (NBDKIT_PRELOAD) keeps all five.
CUTS = 2 if os.environ.get("LB_VALGRIND") else 5
ZEROS = bytes(BLK)


class Writer:
    """One connection's region and what a cut may leave in each block."""

    def __init__(self, idx, h, rng):
        self.idx, self.h, self.rng = idx, h, rng
        self.base = idx * BLOCKS_EACH
        self.latest = [ZEROS] * BLOCKS_EACH
        self.durable = [ZEROS] * BLOCKS_EACH
        self.since = [[] for _ in range(BLOCKS_EACH)]
        self.seq = 0
        self.ops = 0

    def candidates(self, i):
        return [self.durable[i]] + self.since[i]

    def start_round(self, h):
        """After a cut the post-cut image is the new starting point."""
        self.h = h
        self.durable = list(self.latest)
        self.since = [[] for _ in range(BLOCKS_EACH)]

    def issue(self, i, version, fn, *args):
        self.since[i].append(version)
        self.latest[i] = version
        fn(*args)

    def step(self):
        op = self.rng.randrange(10)
        i = self.rng.randrange(BLOCKS_EACH)
        offset = (self.base + i) * BLK
        if op < 5:
            self.seq += 1
            data = lbtest.pattern(BLK, (self.idx << 32) | self.seq)
            fua = op == 0
            self.issue(i, data, self.h.pwrite, data, offset,
                       nbd.CMD_FLAG_FUA if fua else 0)
            if fua:
                self.make_durable([i])
        elif op == 5:
            self.issue(i, ZEROS, self.h.zero, BLK, offset)
        elif op == 6:
            self.issue(i, ZEROS, self.h.trim, BLK, offset)
        else:
            self.h.flush()
            self.make_durable(range(BLOCKS_EACH))
        self.ops += 1

    def make_durable(self, blocks):
        for i in blocks:
            self.durable[i] = self.latest[i]
            self.since[i] = []

    def run_until_cut(self):
        while True:
            try:
                self.step()
            except nbd.Error as e:
                assert e.errnum == errno.EIO, \
                    "writer %d: %s, not EIO, at the cut" % (self.idx, e)
                return

    def check(self, image, mode, cut):
        torn = 0
        for i in range(BLOCKS_EACH):
            got = image[(self.base + i) * BLK:(self.base + i + 1) * BLK]
            options = self.candidates(i)
            where = "%s cut %d: writer %d block %d" % (mode, cut, self.idx, i)
            if got in options:
                self.latest[i] = got
                continue
            assert mode == "torn", \
                where + " is no version it was written with"
            for j in range(0, BLK, LOG):
                assert any(got[j:j + LOG] == o[j:j + LOG] for o in options), \
                    where + " logical block %d is no version" % (j // LOG)
            self.latest[i] = got
            torn += 1
        return torn


def wait_for_cut(stats, n):
    deadline = time.monotonic() + 60
    while True:
        try:
            if lbtest.read_stats(stats)["write_cache"]["cuts"] >= n:
                return
        except (OSError, ValueError, KeyError):
            pass                # the statsfile is rewritten as we read
        assert time.monotonic() < deadline, "cut %d not counted in 60s" % n
        time.sleep(0.01)


def stress(mode, seed, workdir):
    fifo = os.path.join(workdir, mode + ".cut")
    stats = os.path.join(workdir, mode + ".json")
    rng = random.Random(seed)
    torn = 0
    with lbtest.Server("size=%d" % (WRITERS * BLOCKS_EACH * BLK),
                       "blksize=%d" % BLK, "logical-blksize=%d" % LOG,
                       "write-cache=volatile", "write-cache-size=256K",
                       "power-cut-mode=" + mode,
                       "power-cut-seed=%d" % seed,
                       "power-cut-fifo=" + fifo,
                       "statsfile=" + stats) as srv:
        writers = [Writer(i, srv.connect(), random.Random(rng.random()))
                   for i in range(WRITERS)]
        for cut in range(1, CUTS + 1):
            delay = rng.uniform(0.02, 0.3)

            def cutter():
                time.sleep(delay)
                with open(fifo, "w") as f:
                    f.write("cut\n")

            t = threading.Thread(target=cutter)
            t.start()
            lbtest.in_threads(lambda i: writers[i].run_until_cut(), WRITERS)
            t.join()
            wait_for_cut(stats, cut)
            reader = srv.connect()
            image = bytes(reader.pread(WRITERS * BLOCKS_EACH * BLK, 0))
            for w in writers:
                torn += w.check(image, mode, cut)
                w.start_round(srv.connect())
        wc = lbtest.read_stats(stats)["write_cache"]
        assert wc["cuts"] == CUTS, "%d cuts counted, %d made" % (wc["cuts"],
                                                                 CUTS)
        assert srv.stop() == 0, "nbdkit failed: %s" % srv.last_stderr
    ops = sum(w.ops for w in writers)
    print("%s: %d cuts under %d requests from %d connections, %d blocks "
          "torn" % (mode, CUTS, ops, WRITERS, torn))
    return torn


def main():
    workdir = tempfile.mkdtemp(prefix="lbtest-cutstress.")
    try:
        for mode in ("lose", "atomic", "torn"):
            stress(mode, 20261205, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


lbtest.run(main)
