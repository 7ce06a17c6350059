#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""power-cut-fifo: "cut N" cuts the power unless cut N has happened.

- "cut 1" cuts; more "cut 1" lines after it, from one writer or several,
  change nothing: a connection opened after the cut keeps working and
  its unflushed data stays cached;
- "cut 3" after one cut makes cut 2 (one cut per line, never more);
- plain "cut" still cuts every time;
- "cut 0" and other malformed forms are refused with a message and cut
  nothing;
- a "cut 1" after power-cut-after= made cut 1 changes nothing (what
  largeblock-run --crash-test relies on).

The FIFO's lines are handled in order, so the test writes an unknown
line as a marker after each request and waits for its complaint in the
log: then every line before it has been handled.
"""
import errno
import os
import time

import nbd

import lbtest

KiB = 1024
BLK, LOG = 16 * KiB, 4 * KiB


def send(fifo, *lines):
    with open(fifo, "w") as f:
        f.write("".join(line + "\n" for line in lines))


def handled(srv, fifo, marker):
    """Write marker into the FIFO and wait until the server complained
    about it: every line written before it has been handled."""
    send(fifo, marker)
    want = "unknown command '%s'" % marker
    deadline = time.monotonic() + 60  # a bound for a hung server only
    while want not in srv.stderr():
        assert srv.alive(), "the server died:\n" + srv.stderr()
        assert time.monotonic() < deadline, "marker %s never handled" % marker
        time.sleep(0.01)


def cuts(stats):
    return lbtest.read_stats(stats)["write_cache"]["cuts"]


def server(d, name, *params):
    """A lose-mode server with its FIFO and statsfile in d."""
    fifo = os.path.join(d, name + ".cut")
    stats = os.path.join(d, name + ".json")
    srv = lbtest.Server("size=1M", "blksize=16k", "logical-blksize=4k",
                        "write-cache=volatile", "power-cut-mode=lose",
                        "power-cut-fifo=" + fifo, "statsfile=" + stats,
                        *params)
    return srv, fifo, stats


def cut_n_once(d):
    srv, fifo, stats = server(d, "once")
    with srv:
        h1 = srv.connect()
        h1.pwrite(b"a" * BLK, 0)
        send(fifo, "cut 1")
        handled(srv, fifo, "m1")
        assert cuts(stats) == 1
        lbtest.expect_errno(errno.EIO, "a read after cut 1", h1.pread, LOG, 0)

        h2 = srv.connect()
        h2.pwrite(b"b" * BLK, BLK)
        send(fifo, "cut 1", "  cut   1 ")
        send(fifo, "cut 1")     # another writer
        handled(srv, fifo, "m2")
        assert cuts(stats) == 1, "a repeated cut 1 cut again"
        assert h2.pread(BLK, BLK) == b"b" * BLK, "cut 1 again lost data"

        send(fifo, "cut 3")
        handled(srv, fifo, "m3")
        assert cuts(stats) == 2, "cut 3 after one cut must make cut 2"
        lbtest.expect_errno(errno.EIO, "a read after cut 2", h2.pread, LOG, 0)
        h3 = srv.connect()
        assert h3.pread(BLK, BLK) == bytes(BLK), "unflushed data kept (lose)"

        send(fifo, "cut", "cut")
        handled(srv, fifo, "m4")
        assert cuts(stats) == 4, "plain cut must always cut"

        send(fifo, "cut 0", "cut -1", "cut 2 2", "cut 99999999999999999999")
        handled(srv, fifo, "m5")
        assert cuts(stats) == 4, "a malformed cut cut"
        log = srv.stderr()
    for n in range(1, 5):
        assert "power cut %d (mode lose" % n in log, log
    assert "power cut 5" not in log, log
    for bad in ("cut 0", "cut -1", "cut 2 2", "cut 99999999999999999999"):
        assert ("unknown command '%s' (expected: cut, or cut N with N >= 1)"
                % bad) in log, log


def after_power_cut_after(d):
    srv, fifo, stats = server(d, "after", "power-cut-after=1")
    with srv:
        h1 = srv.connect()
        lbtest.expect_errno(errno.EIO, "the write power-cut-after cuts on",
                            h1.pwrite, b"a" * BLK, 0)
        h2 = srv.connect()
        h2.pwrite(b"b" * BLK, 0)
        send(fifo, "cut 1")
        handled(srv, fifo, "m1")
        assert cuts(stats) == 1, "cut 1 after power-cut-after cut again"
        assert h2.pread(BLK, 0) == b"b" * BLK


def main():
    d = lbtest.tempfile.mkdtemp(prefix="lbcutn.")
    try:
        cut_n_once(d)
        after_power_cut_after(d)
    finally:
        lbtest.shutil.rmtree(d, ignore_errors=True)


lbtest.run(main)
