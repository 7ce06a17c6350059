#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""replay=LOG: what a client sees of a crash log's states.

- the export list names every epoch (epoch=K) and says what closes it;
- a state has the log's size and block sizes, enforces them like any
  largeblock disk (a misaligned read fails with EINVAL), and does not
  advertise multi-conn;
- each connection has a state of its own: a write on one is not seen by
  another connection to the same name, nor by the next one (a new state),
  also with several clients writing at once;
- a connection to another epoch while a state is open is refused (EBUSY)
  in one line, and works once that state is closed; one asked for just
  after the other hung up works at once;
- every bad export name (the empty one included) is refused with one
  line naming the name and the rule, and the server serves on.
"""
import errno
import os
import shutil
import subprocess
import tempfile

import nbd

import lbtest

KiB = 1024
BLK, LBS, DISK = 16 * KiB, 4 * KiB, 1024 * KiB
DUMP = os.path.join(os.environ.get("abs_top_builddir", "."),
                    "tests/helpers/crashlog-dump")


def record_log(d):
    """A log of three epochs: 0 and 1 flushed, 2 not."""
    log = os.path.join(d, "log")
    with lbtest.Server("size=%d" % DISK, "blksize=16k", "logical-blksize=4k",
                       "write-cache=volatile", "crash-log=" + log) as srv:
        h = srv.connect()
        h.pwrite(lbtest.pattern(BLK, 1), 0)
        h.flush()
        h.pwrite(lbtest.pattern(BLK, 2), BLK)
        h.pwrite(lbtest.pattern(LBS, 3), 2 * BLK, nbd.CMD_FLAG_FUA)
        h.flush()
        h.pwrite(lbtest.pattern(BLK, 4), 0)
    out = subprocess.run([DUMP, log], check=True, capture_output=True,
                         text=True).stdout.splitlines()[1:]
    kinds = [line.split()[2] for line in out]
    assert kinds == ["write", "flush", "write", "write", "flush", "write"], \
        "the log: %r" % out
    return log


def lists_every_epoch(srv):
    h = nbd.NBD()
    h.set_opt_mode(True)
    h.connect_unix(srv.socket)
    got = []
    h.opt_list(lambda name, description: got.append((name, description)))
    h.opt_abort()
    want = [("epoch=0", "epoch 0: record 0, 1 block written, closed by "
             "the flush at seq 1"),
            ("epoch=1", "epoch 1: records 2-3, 2 blocks written, closed by "
             "the flush at seq 4"),
            ("epoch=2", "epoch 2: record 5, 1 block written, open at the "
             "end of the log")]
    assert got == want, "the export list: %r" % got


def serves_the_geometry(srv):
    h = srv.connect(export="epoch=2,mode=lose")
    got = (h.get_size(), h.get_block_size(nbd.SIZE_MINIMUM),
           h.get_block_size(nbd.SIZE_PREFERRED),
           h.get_block_size(nbd.SIZE_MAXIMUM), h.can_multi_conn())
    assert got == (DISK, LBS, BLK, 32 * 1024 * KiB, False), \
        "(size, minimum, preferred, maximum, multi-conn): %r" % (got,)
    lbtest.expect_errno(errno.EINVAL, "a misaligned read", h.pread, 512, 0)
    # mode lose: block 0's unflushed write is lost, epoch 1's are there.
    assert h.pread(3 * BLK, 0) == lbtest.pattern(BLK, 1) + \
        lbtest.pattern(BLK, 2) + lbtest.pattern(LBS, 3) + bytes(BLK - LBS)
    description = h.get_export_description()
    assert "epoch=2,mode=lose,seed=0: the power cut that ends epoch 2 " \
        "(record 5, 1 block written), after the last record: power cut 1 " \
        "(mode lose, seed 0): 0 blocks kept, 1 lost, 0 torn" in description, \
        description
    hang_up(srv, h)


def hang_up(srv, h):
    lbtest.close(h)
    srv.handles.remove(h)


def states_are_private(srv):
    name = "epoch=2,mode=atomic,seed=9"
    a, b = srv.connect(export=name), srv.connect(export=name)
    image = a.pread(DISK, 0)
    assert b.pread(DISK, 0) == image, "two connections to %s differ" % name
    mine = lbtest.pattern(2 * BLK, 5)
    a.pwrite(mine, BLK)
    a.flush()
    assert a.pread(2 * BLK, BLK) == mine
    assert b.pread(DISK, 0) == image, "a write showed in another connection"
    hang_up(srv, a)
    c = srv.connect(export=name)
    assert c.pread(DISK, 0) == image, "a write outlived its connection"
    hang_up(srv, b)
    hang_up(srv, c)

    def writer(i):
        h = srv.connect(export=name)
        data = lbtest.pattern(4 * BLK, 100 + i)
        for _ in range(20):
            h.pwrite(data, 0)
            assert h.pread(4 * BLK, 0) == data, "client %d lost its data" % i
            h.trim(BLK, 0)
            assert h.pread(BLK, 0) == bytes(BLK), "client %d: trim" % i
        assert h.pread(DISK - 4 * BLK, 4 * BLK) == image[4 * BLK:]
    lbtest.in_threads(writer, 4)
    for h in list(srv.handles):
        hang_up(srv, h)


def lines(srv, marker):
    return [line for line in srv.stderr().splitlines() if marker in line]


def refused(srv, name):
    """Connecting to name fails; returns the server's one line about it."""
    marker = 'largeblock: export name "%s": ' % name
    before = len(lines(srv, marker))
    h = nbd.NBD()
    h.set_export_name(name)
    try:
        h.connect_unix(srv.socket)
    except nbd.Error:
        pass
    else:
        raise AssertionError("export %r was served" % name)
    got = lines(srv, marker)
    assert len(got) == before + 1, "export %r: %r" % (name, got)
    return got[-1].split(marker, 1)[1]


def one_epoch_at_a_time(srv):
    h = srv.connect(export="epoch=2")
    why = refused(srv, "epoch=1")
    assert "epoch 2" in why, why
    hang_up(srv, h)
    # Each asked for just after a hang-up, which nbdkit reports to the
    # client before the plugin frees the state: without the plugin's
    # wait for it, about one in six of these was refused.
    for k in [1, 0, 2] * 10:
        h = srv.connect(export="epoch=%d" % k)
        h.pread(BLK, 0)
        hang_up(srv, h)


BAD_NAMES = [
    ("", "empty: name a crash state, "
         "epoch=K[,mode=lose|atomic|torn][,seed=S], with K from 0 to 2"),
    ("epoch=3", "has 3 epochs (0 to 2)"),
    ("epoch=18446744073709551615", "has 3 epochs (0 to 2)"),
    ("epoch=x", 'epoch "x" is not a decimal number'),
    ("epoch=-1", 'epoch "-1" is not a decimal number'),
    ("epoch=", 'epoch "" is not a decimal number'),
    ("epoch=18446744073709551616", "is not a decimal number"),
    ("mode=torn", "no epoch"),
    ("epoch=1,mode=half", 'mode "half" is not lose, atomic or torn'),
    ("epoch=1,seed=1e3", 'seed "1e3" is not a decimal number'),
    ("epoch=1,epoch=2", 'key "epoch" given twice'),
    ("epoch=1,colour=red", 'unknown key "colour"'),
    ("epoch=1,,seed=2", "an empty item"),
    ("epoch", "is not KEY=VALUE"),
    ("/epoch=1", 'unknown key "/epoch"'),
]


def refuses_bad_names(srv):
    for name, said in BAD_NAMES:
        why = refused(srv, name)
        assert said in why, "export %r: %r does not say %r" % (name, why,
                                                               said)
    assert srv.alive()
    h = srv.connect(export="epoch=0")
    h.pread(BLK, 0)
    hang_up(srv, h)


def main():
    if not os.access(DUMP, os.X_OK):
        lbtest.skip("%s is not built" % DUMP)
    d = tempfile.mkdtemp(prefix="lbreplayx.")
    try:
        log = record_log(d)
        with lbtest.Server("replay=" + log) as srv:
            lists_every_epoch(srv)
            serves_the_geometry(srv)
            states_are_private(srv)
            one_epoch_at_a_time(srv)
            refuses_bad_names(srv)
    finally:
        shutil.rmtree(d, ignore_errors=True)


lbtest.run(main)
