#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""crash-log=PATH: the plugin records what its volatile cache did.

- writes (one record per physical block, with their data), a FUA write,
  trims, zeros, flushes (the client's, and the one a trim with FUA
  makes) and a power cut (power-cut-after=) come back from the log, read
  with the library's reader (tests/helpers/crashlog-dump), in order,
  with their epochs, flags and data, and the post-cut write after them;
- an existing file is refused, not overwritten;
- crash-log without write-cache=volatile is refused, naming both;
- a log too small for a request fails it with ENOSPC, naming crash-log
  and crash-log-size, and the disk keeps what it had.
"""
import errno
import os
import shutil
import subprocess
import tempfile

import nbd

import lbtest

KiB = 1024
BLK, LOG = 16 * KiB, 4 * KiB
DUMP = os.path.join(os.environ.get("abs_top_builddir", "."),
                    "tests/helpers/crashlog-dump")
CACHE = ("size=1M", "blksize=16k", "logical-blksize=4k",
         "write-cache=volatile")


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return "%016x" % h


def dump(path):
    out = subprocess.run([DUMP, path], check=True, capture_output=True,
                         text=True).stdout.splitlines()
    assert out[0].startswith("disk 1048576 16384 4096 limit "), out[0]
    return out[1:]


def record(seq, epoch, kind, flags, offset, length, data=None):
    return "%d %d %s %d %d %d %s" % (seq, epoch, kind, flags, offset, length,
                                     fnv1a(data) if data else "-")


def logs_every_change(d):
    log = os.path.join(d, "log")
    a, b = lbtest.pattern(2 * BLK, 1), lbtest.pattern(LOG, 2)
    c = lbtest.pattern(BLK, 3)
    with lbtest.Server(*CACHE, "crash-log=" + log, "power-cut-mode=atomic",
                       "power-cut-seed=5", "power-cut-after=7") as srv:
        h = srv.connect()
        h.pwrite(a, 0)
        h.pwrite(b, 4 * BLK, nbd.CMD_FLAG_FUA)
        h.trim(BLK, BLK)
        h.zero(LOG, 2 * LOG)
        h.flush()
        h.pwrite(c, 8 * BLK)
        h.trim(BLK, 8 * BLK, nbd.CMD_FLAG_FUA)
        lbtest.expect_errno(errno.EIO, "the write power-cut-after cuts on",
                            h.pwrite, b, 0)
        srv.connect().pwrite(b, BLK)
    want = [
        record(0, 0, "write", 0, 0, BLK, a[:BLK]),
        record(1, 0, "write", 0, BLK, BLK, a[BLK:]),
        record(2, 0, "write", 1, 4 * BLK, LOG, b),
        record(3, 0, "trim", 0, BLK, BLK),
        record(4, 0, "zero", 0, 2 * LOG, LOG),
        record(5, 0, "flush", 0, 0, 0),
        record(6, 1, "write", 0, 8 * BLK, BLK, c),
        record(7, 1, "trim", 0, 8 * BLK, BLK),
        record(8, 1, "flush", 0, 0, 0),
        record(9, 2, "write", 0, 0, LOG, b),
        # The cut: mode atomic (1), seed 5, cut 1; then the new power.
        record(10, 2, "cut", 1, 5, 1),
        record(11, 3, "write", 0, BLK, LOG, b),
    ]
    got = dump(log)
    assert got == want, "the log:\n%s\nexpected:\n%s" % ("\n".join(got),
                                                         "\n".join(want))


def refused(*params):
    try:
        with lbtest.Server(*params):
            pass
    except RuntimeError as e:
        return str(e)
    raise AssertionError("nbdkit started with %s" % " ".join(params))


def refuses_bad_configurations(d):
    log = os.path.join(d, "existing")
    with open(log, "w") as f:
        f.write("keep me")
    msg = refused(*CACHE, "crash-log=" + log)
    assert "crash-log=%s: cannot create it (a log is never overwritten)" \
        % log in msg, msg
    with open(log) as f:
        assert f.read() == "keep me"
    absent = os.path.join(d, "absent")
    msg = refused("size=1M", "crash-log=" + absent)
    assert "crash-log=%s needs write-cache=volatile" % absent in msg, msg
    assert not os.path.exists(absent)
    msg = refused(*CACHE, "crash-log=" + absent, "crash-log-size=100")
    assert "crash-log-size 100 is smaller than the smallest log" in msg, msg
    assert not os.path.exists(absent)


def full_log_changes_nothing(d):
    log = os.path.join(d, "small")
    old, new = lbtest.pattern(LOG, 4), lbtest.pattern(2 * BLK, 5)
    with lbtest.Server(*CACHE, "crash-log=" + log,
                       "crash-log-size=8k") as srv:
        h = srv.connect()
        h.pwrite(old, 0)
        lbtest.expect_errno(errno.ENOSPC, "a write the log has no room for",
                            h.pwrite, new[:LOG], LOG)
        lbtest.expect_errno(errno.ENOSPC, "a two-block write",
                            h.pwrite, new, 0)
        got = h.pread(2 * BLK, 0)
        assert got == old + bytes(2 * BLK - LOG), "the disk changed"
        h.flush()
        err = srv.stderr()
    assert "crash-log=%s is full (crash-log-size=8192 bytes): the " \
        "request was not done" % log in err, err
    assert dump(log) == [record(0, 0, "write", 0, 0, LOG, old),
                         record(1, 0, "flush", 0, 0, 0)]


def main():
    if not os.access(DUMP, os.X_OK):
        lbtest.skip("%s is not built" % DUMP)
    d = tempfile.mkdtemp(prefix="lbcrashlog.")
    try:
        logs_every_change(d)
        refuses_bad_configurations(d)
        full_log_changes_nothing(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


lbtest.run(main)
