# SPDX-License-Identifier: BSD-3-Clause
"""Section "wcache": what the volatile write cache costs.  largeblock
16k/4k with write-cache=none and write-cache=volatile (its default
write-cache-size) against nbdkit memory, on random 16k writes,
sequential 1M writes, and random 16k writes with a flush after every
16 (fio --fsync=16), servers interleaved as in the matrix.
"""
from .common import KiB, MiB, PLUGIN, size_name
from .fio import fio
from .matrix import medians, prefill, rotated
from .server import Server

# (label, fio rw, request size, fio's extra options)
WCACHE_PATTERNS = [
    ("randwrite 16k", "randwrite", 16 * KiB, []),
    ("write 1M", "write", MiB, []),
    ("randwrite 16k, flush every 16", "randwrite", 16 * KiB, ["--fsync=16"]),
]
WCACHE_CONNECTIONS = [1, 4]
GEOMETRY = ["blksize=16k", "logical-blksize=4k"]
NO_CACHE = "largeblock write-cache=none"
VOLATILE = "largeblock write-cache=volatile"


def wcache_servers(workdir, disk, nbdkit_args):
    size = size_name(disk)
    args = {
        NO_CACHE: [PLUGIN, "size=" + size] + GEOMETRY,
        VOLATILE: [PLUGIN, "size=" + size] + GEOMETRY +
                  ["write-cache=volatile"],
        "memory-sparse": ["memory", size, "allocator=sparse"],
        "memory-malloc": ["memory", size, "allocator=malloc"],
    }
    servers = {}
    for name, a in args.items():
        servers[name] = Server(workdir, "wc-" + name.replace(" ", "_")
                               .replace("=", "_"), a,
                               nbdkit_args=nbdkit_args)
    return servers


def wcache_section(workdir, disk, region, runtime, reps, quick,
                   nbdkit_args, progress):
    """Per pattern and connection count, each server's medians."""
    servers = wcache_servers(workdir, disk, nbdkit_args)
    rows = []
    try:
        prefill(servers, workdir, region)
        names = list(servers)
        for label, rw, bs, extra in WCACHE_PATTERNS:
            for conns in [1] if quick else WCACHE_CONNECTIONS:
                runs = {n: [] for n in names}
                for rep in range(reps):
                    for n in rotated(names, rep):
                        runs[n].append(fio(servers[n], workdir, rw, bs,
                                           conns, region, runtime, extra))
                rows.append({"pattern": label, "conns": conns, "servers": {
                    n: medians(rs) for n, rs in runs.items()}})
                progress("write cache: %s x%d done" % (label, conns))
    finally:
        for s in servers.values():
            s.stop()
    return {"rows": rows, "reps": reps, "runtime": runtime}
