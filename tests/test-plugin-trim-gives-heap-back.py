#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""After a large trim, the server's RSS returns to where it started.

A 1G RAM disk with 4k folios (the most runs to give back) is written
whole in 1M requests, 32 in flight, on a connection of its own (as
fio does), then trimmed in two 512M requests and flushed: the flush waits until the reclaim thread has given the
folios back.  The RSS must then be within 8 MiB of the RSS after a
warm-up that wrote and trimmed 64M the same way.  Beyond the folios,
the 1M request buffers that a closed connection's nbdkit threads freed
(from glibc's arenas, once its first free raised the mmap threshold)
and the trim's run lists stay in the arenas unless they are handed back
too (malloc_trim): without that, the RSS stayed 16-23 MiB above the
start.  Then the disk is written again and zeroed:
the same bound.
"""
import os

import nbd

import lbtest

KiB = 1024
MiB = 1024 * KiB
SIZE = 1024 * MiB
WARMUP = 64 * MiB
IN_FLIGHT = 32
SLACK_KIB = 8 * 1024


def check_written(error):
    assert error.value == 0, "a write failed: errno %d" % error.value
    return 1                    # retire the command


def fill(h, length):
    """Write [0, length) in 1M requests, IN_FLIGHT at a time (what fio
    with iodepth 32 does)."""
    buf = nbd.Buffer.from_bytearray(bytearray(b"\x5a" * MiB))
    off = 0
    while off < length or h.aio_in_flight() > 0:
        while off < length and h.aio_in_flight() < IN_FLIGHT:
            h.aio_pwrite(buf, off, completion=check_written)
            off += MiB
        h.poll(-1)


def release(h, op, length):
    op(length // 2, 0)
    op(length // 2, length // 2)
    h.flush()


def fill_and_close(s, length):
    """fill() on a connection of its own, closed afterwards: its nbdkit
    threads exit and free their request buffers."""
    h = s.connect()
    fill(h, length)
    lbtest.close(h)


def main():
    # What is measured is glibc malloc's: valgrind and the sanitizers
    # bring allocators of their own (ASan keeps freed memory in
    # quarantine, resident).
    if os.environ.get("LB_VALGRIND") or os.environ.get("NBDKIT_PRELOAD"):
        lbtest.skip("the measurement is of glibc malloc, not %s's" % (
            "valgrind" if os.environ.get("LB_VALGRIND") else "a sanitizer"))
    with lbtest.Server("size=%d" % SIZE, "blksize=4k") as s:
        h = s.connect()
        fill_and_close(s, WARMUP)
        release(h, h.trim, WARMUP)
        base = s.rss_kib()
        for name, op in (("trim", h.trim), ("zero", h.zero)):
            fill_and_close(s, SIZE)
            written = s.rss_kib()
            assert written >= base + SIZE // KiB // 2, \
                "RSS %d KiB after writing 1G, start %d KiB: the " \
                "measurement is meaningless" % (written, base)
            release(h, op, SIZE)
            rss = s.rss_kib()
            assert rss <= base + SLACK_KIB, \
                "after a %s of 1G and a flush: RSS %d KiB, start %d KiB " \
                "(at most %d KiB more)" % (name, rss, base, SLACK_KIB)


lbtest.run(main)
