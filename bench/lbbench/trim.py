# SPDX-License-Identifier: BSD-3-Clause
"""Section "trim": trim and zero of large ranges.
"""
import os
import statistics
import time

from .common import WARMUP, GiB, MiB, PLUGIN, connect
from .fio import fio
from .server import Server


TRIM_SERVERS = [
    ("largeblock-4k", lambda d: [PLUGIN, "size=%d" % d, "blksize=4k"]),
    ("largeblock-16k", lambda d: [PLUGIN, "size=%d" % d, "blksize=16k"]),
    ("largeblock-64k", lambda d: [PLUGIN, "size=%d" % d, "blksize=64k"]),
    ("memory-sparse", lambda d: ["memory", "%d" % d, "allocator=sparse"]),
    ("memory-malloc", lambda d: ["memory", "%d" % d, "allocator=malloc"]),
]


def timed_halves(h, op, data):
    """Two requests of half the data each, then a flush: seconds until
    both replied, and until the flush did (largeblock gives released
    memory back after the reply; its flush waits for that)."""
    half = data // 2
    t = time.monotonic()
    op(half, 0)
    op(half, half)
    replied = time.monotonic() - t
    h.flush()
    return replied, time.monotonic() - t




def trim_once(workdir, name, args, data):
    s = Server(workdir, name, args)
    try:
        out = {"cold_kib": s.rss_kib()}
        h = connect(s)
        # The same fio load over a small region first, trimmed again:
        # nbdkit keeps a request buffer per worker thread (16 x 1 MiB
        # here) for the life of the server, and that is not disk memory.
        fio(s, workdir, "write", MiB, 1, WARMUP, 0)
        timed_halves(h, h.trim, WARMUP)
        out["start_kib"] = s.rss_kib()
        fio(s, workdir, "write", MiB, 1, data, 0)
        out["written_kib"] = s.rss_kib()
        out["trim_s"], out["trim_back_s"] = timed_halves(h, h.trim, data)
        out["trimmed_kib"] = s.rss_kib()
        fio(s, workdir, "write", MiB, 1, data, 0)
        out["zero_s"], out["zero_back_s"] = timed_halves(h, h.zero, data)
        out["zeroed_kib"] = s.rss_kib()
        h.shutdown()
    finally:
        s.stop()
    return out


def trim_section(workdir, reps, quick, progress):
    data = 64 * MiB if quick else 2 * GiB
    # Faulting in 2 GiB of fresh memory takes about 15 s here, four times
    # per server and repetition: two repetitions keep the section near
    # five minutes.
    reps = min(reps, 2)
    runs = {n: [] for n, _ in TRIM_SERVERS}
    load = [os.getloadavg()[0]]
    for _ in range(reps):
        for name, args in TRIM_SERVERS:     # interleaved
            runs[name].append(trim_once(workdir, name, args(data), data))
        progress("trim repetition done")
    load.append(os.getloadavg()[0])
    return {"data": data, "reps": reps, "load": load,
            "servers": {n: {k: statistics.median(r[k] for r in rs)
                            for k in rs[0]} for n, rs in runs.items()}}
