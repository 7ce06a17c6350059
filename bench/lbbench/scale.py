# SPDX-License-Identifier: BSD-3-Clause
"""Section "scale": startup time and memory up to 7E, a map of a 1T
disk, nbdcopy of a sparse disk.
"""
import subprocess
import time

from .common import GiB, KiB, MiB, PLUGIN, connect
from .fio import fio
from .server import Server


def scale_section(workdir, quick):
    out = {"startup": []}
    for size in ("1T", "1P", "7E"):
        s = Server(workdir, "scale", [PLUGIN, "size=" + size])
        out["startup"].append({"size": size, "ms": s.startup_s * 1000,
                               "rss_kib": s.rss_kib()})
        s.stop()
    s = Server(workdir, "map", [PLUGIN, "size=1T", "blksize=64k",
                                "logical-blksize=4k"])
    h = connect(s)
    h.pwrite(b"\x01" * 65536, 512 * GiB)
    h.shutdown()
    t = time.monotonic()
    r = subprocess.run(["nbdinfo", "--map", s.uri], capture_output=True,
                       text=True, check=True)
    out["map_1t_ms"] = (time.monotonic() - t) * 1000
    out["map_1t_lines"] = len(r.stdout.splitlines())
    s.stop()
    copy_disk = 256 * MiB if quick else 4 * GiB
    copy_data = 16 * MiB if quick else 100 * MiB
    out["copy"] = {"disk": copy_disk, "data": copy_data}
    for name, args in [("largeblock", [PLUGIN, "size=%d" % copy_disk,
                                       "blksize=64k", "logical-blksize=4k"]),
                       ("memory-sparse", ["memory", "%d" % copy_disk,
                                          "allocator=sparse"])]:
        s = Server(workdir, "copy-" + name, args)
        fio(s, workdir, "randwrite", 64 * KiB, 1, copy_data, 0,
            extra=["--offset=%d" % (copy_disk // 3 // MiB * MiB)])
        t = time.monotonic()
        subprocess.run(["nbdcopy", s.uri, "null:"], check=True)
        out["copy"][name + "_ms"] = (time.monotonic() - t) * 1000
        s.stop()
    return out
