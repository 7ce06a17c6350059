# SPDX-License-Identifier: BSD-3-Clause
"""Section "huge": a 2M-folio disk with and without transparent huge
pages.
"""
import statistics

from .common import MiB, PLUGIN
from .fio import fio
from .server import Server


def huge_page_section(workdir, runtime, reps, quick):
    region = 64 * MiB if quick else 512 * MiB
    out = {}
    for thp in (True, False):
        s = Server(workdir, "thp%d" % thp, [PLUGIN, "size=%d" % (2 * region),
                                            "blksize=2M",
                                            "logical-blksize=64k"], thp=thp)
        fio(s, workdir, "write", MiB, 1, region, 0)
        res = {"anon_huge_kib": s.anon_huge_kib()}
        for rw in ("randread", "randwrite"):
            rs = [fio(s, workdir, rw, MiB, 1, region, runtime)
                  for _ in range(reps)]
            res[rw] = {k: statistics.median(r[k] for r in rs)
                       for k in ("mibs", "cpu_per_gib")}
        s.stop()
        out["thp" if thp else "no-thp"] = res
    return out
