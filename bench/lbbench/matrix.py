# SPDX-License-Identifier: BSD-3-Clause
"""Section "matrix": the fio throughput matrix, largeblock in several
geometries against nbdkit memory and null, servers interleaved.
"""
import statistics

from .common import KiB, MiB, PLUGIN, size_name
from .fio import fio
from .server import Server


PEERS = [
    ("memory-sparse", ["memory", "allocator=sparse"]),
    ("memory-malloc", ["memory", "allocator=malloc"]),
    ("null", ["null"]),
]
GEOMETRIES = [(4 * KiB, 4 * KiB), (16 * KiB, 16 * KiB), (64 * KiB, 4 * KiB),
              (2 * MiB, 64 * KiB)]
PATTERNS = ["randread", "randwrite", "read", "write"]
BLOCK_SIZES = [4 * KiB, 16 * KiB, 64 * KiB, MiB]
CONNECTIONS = [1, 4]


def lb_name(physical, logical):
    return "largeblock-%s/%s" % (size_name(physical), size_name(logical))


def start_servers(workdir, disk_bytes, geometries, peers):
    servers = {}
    size = size_name(disk_bytes)
    for name, args in peers:
        servers[name] = Server(workdir, name, args[:1] + [size] + args[1:])
    for physical, logical in geometries:
        name = lb_name(physical, logical)
        servers[name] = Server(workdir, name.replace("/", "_"), [
            PLUGIN, "size=" + size, "blksize=%d" % physical,
            "logical-blksize=%d" % logical])
        servers[name].logical = logical
    return servers


def prefill(servers, workdir, region):
    for s in servers.values():
        fio(s, workdir, "write", MiB, 1, region, 0)


def applicable(server, bs):
    """largeblock refuses requests below its logical block size."""
    return bs >= getattr(server, "logical", 0)


def rotated(names, rep):
    """The servers' order for repetition rep: A B C, then B C A, ..."""
    k = rep % len(names) if names else 0
    return names[k:] + names[:k]


def run_matrix(servers, workdir, region, runtime, reps, patterns,
               block_sizes, connections, progress):
    cells = []
    for rw in patterns:
        for bs in block_sizes:
            for conns in connections:
                names = [n for n in servers if applicable(servers[n], bs)]
                runs = {n: [] for n in names}
                for rep in range(reps):
                    for n in rotated(names, rep):   # A B C B C A ...
                        runs[n].append(fio(servers[n], workdir, rw, bs,
                                           conns, region, runtime))
                cell = {"rw": rw, "bs": bs, "conns": conns, "servers": {}}
                for n, rs in runs.items():
                    cell["servers"][n] = {
                        k: statistics.median(r[k] for r in rs)
                        for k in ("mibs", "iops", "cpu_per_gib")}
                cells.append(cell)
                progress("%s %s x%d done" % (rw, size_name(bs), conns))
    return cells
