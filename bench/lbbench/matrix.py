# SPDX-License-Identifier: BSD-3-Clause
"""Section "matrix": the fio throughput matrix, largeblock in several
geometries against nbdkit memory (both allocators), nbdkit's
blocksize-policy filter over memory and nbdkit null -- and, with
--baseline, another build of largeblock in the same geometries --
servers interleaved, every nbdkit with the same nbdkit options (the
bench's --threads).
"""
import statistics

import nbd

from .common import BASELINE, POLICY, KiB, MiB, PLUGIN, connect, size_name
from .fio import fio
from .server import Server


PEERS = [
    ("memory-sparse", ["memory", "allocator=sparse"]),
    ("memory-malloc", ["memory", "allocator=malloc"]),
    ("null", ["null"]),
]
# POLICY, what a user would pick instead of largeblock (nbdkit memory
# behind nbdkit's own filter), advertises the block sizes of this one.
POLICY_GEOMETRY = (16 * KiB, 4 * KiB)
GEOMETRIES = [(4 * KiB, 4 * KiB), (16 * KiB, 4 * KiB), (16 * KiB, 16 * KiB),
              (64 * KiB, 4 * KiB)]
QUICK_GEOMETRIES = [POLICY_GEOMETRY]
PATTERNS = ["randread", "randwrite", "read", "write"]
BLOCK_SIZES = [4 * KiB, 16 * KiB, 64 * KiB, MiB]
CONNECTIONS = [1, 4]


def geometry_name(physical, logical):
    return "%s/%s" % (size_name(physical), size_name(logical))


def lb_name(physical, logical):
    return "largeblock-" + geometry_name(physical, logical)


def baseline_name(physical, logical):
    return BASELINE + geometry_name(physical, logical)


def largeblock(workdir, name, plugin, size, physical, logical, nbdkit_args):
    server = Server(workdir, name.replace("/", "_"), [
        plugin, "size=" + size, "blksize=%d" % physical,
        "logical-blksize=%d" % logical], nbdkit_args=nbdkit_args)
    server.logical = logical
    return server


def advertised_maximum(server):
    """The largest request SERVER advertises (NBD block size maximum)."""
    h = connect(server)
    try:
        return h.get_block_size(nbd.SIZE_MAXIMUM)
    finally:
        h.shutdown()


def policy_peer(workdir, size, maximum, nbdkit_args):
    """nbdkit memory (sparse) behind --filter=blocksize-policy, set up as
    the closest equivalent of largeblock in POLICY_GEOMETRY: the same
    minimum, preferred and maximum block sizes, and requests that break
    them refused, as largeblock refuses them."""
    physical, logical = POLICY_GEOMETRY
    server = Server(workdir, POLICY, [
        "memory", size, "allocator=sparse",
        "blocksize-minimum=%d" % logical, "blocksize-preferred=%d" % physical,
        "blocksize-maximum=%d" % maximum, "blocksize-error-policy=error"],
        nbdkit_args=["--filter=blocksize-policy"] + list(nbdkit_args))
    server.logical = logical
    return server


def start_servers(workdir, disk_bytes, geometries, nbdkit_args=(),
                  baseline=None):
    """The matrix's servers by name: the peers, largeblock in each of
    GEOMETRIES, and with a baseline (another build's plugin .so) that
    build in each of them too; every nbdkit gets NBDKIT_ARGS."""
    size = size_name(disk_bytes)
    # The policy's maximum is what this largeblock advertises: ask it.
    probe = largeblock(workdir, "probe", PLUGIN, size, *POLICY_GEOMETRY,
                       nbdkit_args)
    try:
        maximum = advertised_maximum(probe)
    finally:
        probe.stop()
    servers = {}
    for name, args in PEERS:
        servers[name] = Server(workdir, name, args[:1] + [size] + args[1:],
                               nbdkit_args=nbdkit_args)
    servers[POLICY] = policy_peer(workdir, size, maximum, nbdkit_args)
    for physical, logical in geometries:
        name = lb_name(physical, logical)
        servers[name] = largeblock(workdir, name, PLUGIN, size, physical,
                                   logical, nbdkit_args)
    if baseline:
        for physical, logical in geometries:
            name = baseline_name(physical, logical)
            servers[name] = largeblock(workdir, name, baseline, size,
                                       physical, logical, nbdkit_args)
    return servers


def prefill(servers, workdir, region):
    for s in servers.values():
        fio(s, workdir, "write", MiB, 1, region, 0)


def applicable(server, bs):
    """largeblock refuses requests below its logical block size (and the
    blocksize-policy peer below its minimum)."""
    return bs >= getattr(server, "logical", 0)


def rotated(names, rep):
    """The servers' order for repetition rep: A B C, then B C A, ..."""
    k = rep % len(names) if names else 0
    return names[k:] + names[:k]


def medians(runs):
    """One server's repetitions (fio results) as their medians."""
    return {k: statistics.median(r[k] for r in runs)
            for k in ("mibs", "iops", "cpu_per_gib")}


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
                    cell["servers"][n] = medians(rs)
                cells.append(cell)
                progress("%s %s x%d done" % (rw, size_name(bs), conns))
    return cells
