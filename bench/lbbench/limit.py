# SPDX-License-Identifier: BSD-3-Clause
"""Section "limit": peak memory under memory-limit.
"""
import subprocess

from .common import KiB, MiB, PLUGIN, size_name, stop_child
from .server import Server
from .teardown import held


LIMIT_BYTES = 64 * MiB
NBDKIT_THREADS = 16         # nbdkit's default --threads


def limit_once(workdir, name, args, bs, conns, runtime):
    """conns fio connections writing bs-sized requests at iodepth 16 plus
    an nbdcopy of the whole disk, at once; the server's peak RSS."""
    s = Server(workdir, name, args)
    start = s.rss_kib()
    src = Server(workdir, "limit-src", ["pattern", "%d" % LIMIT_BYTES])
    job = None
    try:
        with held():
            job = subprocess.Popen(
                ["fio", "--name=limit", "--ioengine=nbd", "--uri=" + s.uri,
                 "--rw=randwrite", "--bs=%d" % bs, "--iodepth=16",
                 "--numjobs=%d" % conns, "--size=%d" % LIMIT_BYTES,
                 "--time_based", "--runtime=%dms" % int(runtime * 1000)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # A refusal at the limit (ENOSPC) is not what is measured here.
        subprocess.run(["nbdcopy", "--request-size=%d" % bs, src.uri, s.uri],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        job.wait()
        return start, s.status_kib("VmHWM")
    finally:
        if job:                 # still running only after a signal
            stop_child(job, timeout=30)
        s.stop()
        src.stop()


def limit_section(workdir, runtime, quick, progress):
    """Peak RSS of a RAM disk at memory-limit=64M, against the limit and
    against nbdkit memory under the same load: what is over the limit is
    nbdkit's per-request buffers, up to connections x threads x request."""
    sizes = [64 * KiB, MiB] if quick else [64 * KiB, MiB, 8 * MiB]
    conns = 2 if quick else 8
    nbdcopy_conns = 4       # nbdcopy's default
    rows = []
    for bs in sizes:
        row = {"bs": bs}
        for name, args in [
                ("largeblock", [PLUGIN, "size=%d" % LIMIT_BYTES,
                                "blksize=64k",
                                "memory-limit=%d" % LIMIT_BYTES]),
                ("memory-sparse", ["memory", "%d" % LIMIT_BYTES])]:
            row[name + "_start_kib"], row[name + "_hwm_kib"] = limit_once(
                workdir, name, args, bs, conns, runtime)
        row["bound_kib"] = row["largeblock_start_kib"] + (
            LIMIT_BYTES + (conns + nbdcopy_conns) * NBDKIT_THREADS * bs) / KiB
        rows.append(row)
        progress("limit %s done" % size_name(bs))
    return {"limit": LIMIT_BYTES, "conns": conns,
            "nbdcopy_conns": nbdcopy_conns, "threads": NBDKIT_THREADS,
            "rows": rows}
