#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""replay=LOG serves, under export epoch=K,mode=M,seed=S, exactly the
image a live power cut left (issue 27's byte identity, at the plugin).

For lose, atomic and torn, at 16k/4k and 16k/16k: a live server with
write-cache=volatile, crash-log= and power-cut-fifo= takes a workload of
writes (whole blocks, logical pieces, several blocks at once), FUA
writes, trims (one with FUA, which logs a flush), zeros and flushes,
leaving many blocks unflushed over older durable content; "cut 1" cuts
it.  A new connection reads the post-cut image, writes on (the
recovery) and "cut 2" cuts again.  Then `nbdkit largeblock replay=LOG`:

- export epoch=K1,mode=M,seed=S (K1: the epoch cut 1's record closes)
  reads byte for byte the first post-cut image, and its description
  carries the live server's own "power cut 1 (...)" line;
- epoch=K2 reads the second image, and says "power cut 2 (...)";
- the last epoch (after cut 2, empty) reads the second image whatever
  mode and seed it is asked for: the log's cuts replay with the mode and
  seed they were made with;
- the same epoch with another seed differs in atomic and torn mode (so
  the seed matters and the comparison is not vacuous), and not in lose.
"""
import errno
import os
import re
import shutil
import subprocess
import tempfile
import time

import nbd

import lbtest

KiB = 1024
DISK = 1024 * KiB
DUMP = os.path.join(os.environ.get("abs_top_builddir", "."),
                    "tests/helpers/crashlog-dump")
MODES = (("lose", 3), ("atomic", 7), ("torn", 11))
GEOMETRIES = ((16 * KiB, 4 * KiB), (16 * KiB, 16 * KiB))
CUT_LINE = re.compile(r"power cut \d+ \(mode \w+, seed \d+\): .*")


def before_cut_1(h, blk, lbs):
    """Three epochs: the last one unflushed, over durable data."""
    p = lbtest.pattern
    h.pwrite(p(24 * blk, 1), 0)                 # epoch 0
    h.pwrite(p(lbs, 2), 30 * blk + lbs, nbd.CMD_FLAG_FUA)
    h.flush()
    h.pwrite(p(4 * blk, 3), 2 * blk)            # epoch 1
    h.zero(2 * lbs, 9 * blk)
    h.trim(blk, 8 * blk, nbd.CMD_FLAG_FUA)      # the trim, then a flush
    for i in range(16):                         # epoch 2, unflushed
        h.pwrite(p(lbs, 10 + i), i * blk + (i * lbs) % blk)
    h.pwrite(p(3 * blk, 30), 16 * blk)
    h.pwrite(p(2 * blk, 31), 4 * blk)
    h.trim(blk, 6 * blk)
    h.zero(lbs, 7 * blk + (blk - lbs), nbd.CMD_FLAG_NO_HOLE)
    h.pwrite(p(blk, 32), 20 * blk, nbd.CMD_FLAG_FUA)
    h.zero(2 * blk, 22 * blk)
    h.pwrite(p(blk, 33), 40 * blk)


def before_cut_2(h, blk, lbs):
    """The recovery: a flushed epoch and an unflushed one."""
    p = lbtest.pattern
    h.pwrite(p(2 * blk, 40), 0)
    h.trim(blk, 3 * blk)
    h.flush()
    for i in range(8):
        h.pwrite(p(lbs, 50 + i), (2 * i) * blk + (i * lbs) % blk)
    h.pwrite(p(blk, 60), 41 * blk, nbd.CMD_FLAG_FUA)
    h.zero(blk, 24 * blk)


def cut(fifo, h, nth):
    """Ask for cut nth and wait until h, opened before it, gets EIO."""
    with open(fifo, "w") as f:
        f.write("cut %d\n" % nth)
    deadline = time.monotonic() + 60   # a bound for a hung server only
    while True:
        try:
            h.pread(16 * KiB, 0)   # a block of both geometries
        except nbd.Error as e:
            assert e.errnum == errno.EIO, "after cut %d: %s" % (nth, e)
            return
        assert time.monotonic() < deadline, "cut %d never happened" % nth
        time.sleep(0.01)


def cut_epochs(log):
    """The epochs the log's cut records close, and the number of epochs."""
    out = subprocess.run([DUMP, log], check=True, capture_output=True,
                         text=True).stdout.splitlines()[1:]
    records = [line.split() for line in out]
    closing = sum(r[2] in ("flush", "cut") for r in records)
    return [int(r[1]) for r in records if r[2] == "cut"], closing + 1


def live(d, blk, lbs, mode, seed):
    """Record a log with two live cuts; their images and log lines."""
    log, fifo = os.path.join(d, "log"), os.path.join(d, "cut")
    with lbtest.Server("size=%d" % DISK, "blksize=%d" % blk,
                       "logical-blksize=%d" % lbs, "write-cache=volatile",
                       "power-cut-mode=" + mode, "power-cut-seed=%d" % seed,
                       "power-cut-fifo=" + fifo, "crash-log=" + log) as srv:
        h1 = srv.connect()
        before_cut_1(h1, blk, lbs)
        cut(fifo, h1, 1)
        h2 = srv.connect()
        image1 = h2.pread(DISK, 0)
        before_cut_2(h2, blk, lbs)
        cut(fifo, h2, 2)
        image2 = srv.connect().pread(DISK, 0)
        lines = CUT_LINE.findall(srv.stderr())
    assert len(lines) == 2, "the live cuts logged %r" % lines
    return log, (image1, image2), lines


def state(srv, name):
    """The image and description of export name, on a connection that
    is closed again (so the next one may ask for another epoch)."""
    h = srv.connect(export=name)
    try:
        return h.pread(DISK, 0), h.get_export_description()
    finally:
        lbtest.close(h)
        srv.handles.remove(h)


def replays_match(d, blk, lbs, mode, seed):
    what = "%s %d/%d seed %d" % (mode, blk // KiB, lbs // KiB, seed)
    log, images, lines = live(d, blk, lbs, mode, seed)
    (k1, k2), epochs = cut_epochs(log)
    with lbtest.Server("replay=" + log) as srv:
        for k, image, line in ((k1, images[0], lines[0]),
                               (k2, images[1], lines[1])):
            name = "epoch=%d,mode=%s,seed=%d" % (k, mode, seed)
            got, description = state(srv, name)
            assert got == image, "%s: export %s differs from the live " \
                "cut" % (what, name)
            assert line in description, "%s: export %s says %r, the " \
                "live cut %r" % (what, name, description, line)
        last = "epoch=%d,mode=lose,seed=%d" % (epochs - 1, seed + 100)
        assert state(srv, last)[0] == images[1], \
            "%s: export %s is not the image after cut 2" % (what, last)
        other = "epoch=%d,mode=%s,seed=%d" % (k1, mode, seed + 1)
        same = state(srv, other)[0] == images[0]
        assert same == (mode == "lose"), "%s: export %s %s the live " \
            "cut" % (what, other, "matches" if same else "differs from")
    os.unlink(log)


def main():
    if not os.access(DUMP, os.X_OK):
        lbtest.skip("%s is not built" % DUMP)
    d = tempfile.mkdtemp(prefix="lbreplay.")
    try:
        for blk, lbs in GEOMETRIES:
            for mode, seed in MODES:
                replays_match(d, blk, lbs, mode, seed)
    finally:
        shutil.rmtree(d, ignore_errors=True)


lbtest.run(main)
