#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""memory-limit bounds the server's memory with the write cache too.

A 256M RAM disk with blksize=16k, memory-limit=64M and the default 64M
volatile write cache is written by 4 connections at once, in 16k
requests, each over its own interleaved quarter of the first 48M, twice
(the second pass rewrites blocks whose folios exist), then flushed.  The
server's peak RSS (VmHWM) must stay within what the plugin's man page
promises:

  RSS at start + memory-limit + index + write-cache bookkeeping
    + connections x threads x largest request

with the bookkeeping write-cache-size x E / (blksize + E) and
E = 64 + 8 x ceil(blksize / logical-blksize / 64), plus slack for
nbdkit's threads and malloc's arenas.  The cache's content buffers used
to come from malloc, which kept every flushed buffer resident beside the
folio that replaced it: the peak reached 97-103 MiB here, against 79 MiB
allowed (and 137 MiB over a larger span).

What is measured is glibc malloc's and the kernel's RSS: valgrind and
the sanitizers bring allocators and shadow memory of their own, so
under them only the data is checked.
"""
import math
import os
import shutil
import tempfile

import lbtest

KiB = 1024
MiB = 1024 * KiB
FOLIO = 16 * KiB
LOGICAL = 512                   # the default logical-blksize
LIMIT = 64 * MiB
CACHE = 64 * MiB                # the default write-cache-size
SPAN = 48 * MiB                 # under the limit: no write may fail
CONNECTIONS = 4
THREADS = 16                    # nbdkit's default --threads
SLACK_KIB = 8 * 1024            # nbdkit's threads, arenas, index nodes
RSS_CHECKED = not (os.environ.get("LB_VALGRIND") or
                   os.environ.get("NBDKIT_PRELOAD"))


def bookkeeping_bytes():
    """The man page's bound on the cache's bookkeeping for data."""
    e = 64 + 8 * math.ceil(FOLIO // LOGICAL / 64)
    return CACHE * e // (FOLIO + e)


def vm_hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM")


def block_data(conn, block, rnd):
    return bytes([(conn * 16 + rnd * 4 + block) % 251 + 1]) * FOLIO


def writer(handles):
    blocks = SPAN // FOLIO

    def run(conn):
        h = handles[conn]
        for rnd in range(2):
            for block in range(conn, blocks, CONNECTIONS):
                h.pwrite(block_data(conn, block, rnd), block * FOLIO)
        h.flush()
    return run


def check_data(h):
    for block in range(0, SPAN // FOLIO, 97):
        got = h.pread(FOLIO, block * FOLIO)
        want = block_data(block % CONNECTIONS, block, 1)
        assert got == want, "block %d does not read back" % block


def main():
    tmp = tempfile.mkdtemp(prefix="lbtest-wcache-rss.")
    statsfile = os.path.join(tmp, "stats.json")
    try:
        with lbtest.Server("size=256M", "blksize=16k", "memory-limit=64M",
                           "write-cache=volatile",
                           "statsfile=" + statsfile) as s:
            handles = [s.connect() for _ in range(CONNECTIONS)]
            for h in handles:           # every connection's threads exist
                h.pread(FOLIO, 0)
            base = s.rss_kib()
            lbtest.in_threads(writer(handles), CONNECTIONS)
            check_data(handles[0])
            peak = vm_hwm_kib(s.pid)
            rc = s.stop()
            assert rc == 0, "nbdkit exited with %r" % rc
        stats = lbtest.read_stats(statsfile)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    cache_peak = stats["write_cache"]["bytes_peak"]
    assert cache_peak >= 16 * MiB, \
        "the cache held at most %d bytes: the load did not use it" % \
        cache_peak
    if not RSS_CHECKED:
        return
    assert peak >= base + SPAN // KiB, \
        "peak RSS %d KiB, start %d KiB, after writing %d MiB: the " \
        "measurement is meaningless" % (peak, base, SPAN // MiB)
    bound = base + (LIMIT + bookkeeping_bytes() +
                    CONNECTIONS * THREADS * FOLIO) // KiB + SLACK_KIB
    print("start %d KiB, peak %d KiB, bound %d KiB" % (base, peak, bound))
    assert peak <= bound, \
        "peak RSS %d KiB, start %d KiB: more than the documented %d KiB " \
        "(memory-limit %d KiB, cache bookkeeping %d KiB, request buffers " \
        "%d KiB, slack %d KiB)" % (
            peak, base, bound, LIMIT // KiB, bookkeeping_bytes() // KiB,
            CONNECTIONS * THREADS * FOLIO // KiB, SLACK_KIB)


lbtest.run(main)
