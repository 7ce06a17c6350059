# SPDX-License-Identifier: BSD-3-Clause
"""Section "memory": resident memory against folio bytes, after
trimming, and per-folio metadata.
"""
import json
import os

from .common import GiB, KiB, MiB, PLUGIN, connect
from .fio import fio
from .matrix import PEERS
from .server import Server


def memory_section(workdir, quick):
    data = 64 * MiB if quick else GiB
    disk = 8 * data
    stats = os.path.join(workdir, "stats.json")
    s = Server(workdir, "mem", [PLUGIN, "size=%d" % disk, "blksize=16k",
                                "logical-blksize=16k", "statsfile=" + stats])
    start = s.rss_kib()
    # Every 16k block of a 'data'-sized region exactly once, in random order.
    fio(s, workdir, "randwrite", 16 * KiB, 1, data, 0,
        extra=["--offset=%d" % (disk // 2)])
    written = s.rss_kib()
    h = connect(s)
    for off in range(0, disk, 2 * GiB):
        h.trim(min(2 * GiB, disk - off), off)
    h.shutdown()
    trimmed = s.rss_kib()
    peers = {}
    for name, args in PEERS[:2]:
        p = Server(workdir, "mem-" + name, args[:1] + ["%d" % disk] + args[1:])
        p0 = p.rss_kib()
        fio(p, workdir, "randwrite", 16 * KiB, 1, data, 0,
            extra=["--offset=%d" % (disk // 2)])
        peers[name] = {"start_kib": p0, "written_kib": p.rss_kib()}
        p.stop()
    s.stop()
    with open(stats) as f:
        st = json.load(f)
    return {
        "data_bytes": data, "start_kib": start, "written_kib": written,
        "trimmed_kib": trimmed, "folios_peak": st["folios_peak"],
        "metadata_bytes": st["metadata_bytes"],
        "metadata_per_folio": st["metadata_bytes"] / max(1, st["folios_peak"]),
        "limit_kib": (1.01 * data + 8 * MiB) / KiB, "peers": peers,
    }
