# SPDX-License-Identifier: BSD-3-Clause
"""Section "file": file disks, largeblock file= against nbdkit file, on
tmpfs.
"""
import json
import os
import shutil
import statistics

from .common import GiB, KiB, MiB, PLUGIN, TMPFS
from .fio import run_fio
from .matrix import PATTERNS, prefill, rotated, run_matrix
from .server import Server
from .teardown import private_dir


FILE_BLOCK_SIZES = [4 * KiB, 16 * KiB, MiB]


def file_servers(workdir, dirname, disk):
    """largeblock file= (default geometry, and blksize=16k) and nbdkit
    file, each on its own sparse file in the same tmpfs directory."""
    configs = [("largeblock-file", [PLUGIN]),
               ("largeblock-file-16k", [PLUGIN, "blksize=16k"]),
               ("nbdkit-file", ["file"])]
    servers = {}
    for name, args in configs:
        path = os.path.join(dirname, name + ".img")
        with open(path, "wb") as f:
            f.truncate(disk)
        arg = "file=" + path if args[0] == PLUGIN else path
        servers[name] = Server(workdir, name, args[:1] + [arg] + args[1:])
    return servers


def fio_mixed(server, workdir, region, runtime):
    """One job writing 1M sequentially and one reading 4k at random,
    iodepth 16 each, at the same time on one server."""
    out = os.path.join(workdir, "fio-mixed.json")
    cmd = ["fio", "--ioengine=nbd", "--uri=" + server.uri,
           "--size=%d" % region, "--time_based",
           "--runtime=%dms" % int(runtime * 1000), "--iodepth=16",
           "--output-format=json", "--output=" + out,
           "--name=writer", "--rw=write", "--bs=1M",
           "--name=reader", "--rw=randread", "--bs=4k"]
    run_fio(cmd)
    with open(out) as f:
        text = f.read()
    jobs = {j["jobname"]: j for j in json.loads(text[text.index("{"):])
            ["jobs"]}
    read = jobs["reader"]["read"]
    return {"write_mibs": jobs["writer"]["write"]["bw_bytes"] / MiB,
            "read_mibs": read["bw_bytes"] / MiB,
            "read_p99_ms": read["clat_ns"]["percentile"]["99.000000"] / 1e6}


def file_section(workdir, runtime, reps, quick, progress):
    disk, region = (256 * MiB, 32 * MiB) if quick else (GiB, 256 * MiB)
    mixed_runtime = runtime if quick else 3 * runtime
    dirname = private_dir("lbbench-file.", TMPFS)
    servers = {}
    load = [os.getloadavg()[0]]
    try:
        servers = file_servers(workdir, dirname, disk)
        prefill(servers, workdir, region)
        cells = run_matrix(
            servers, workdir, region, runtime, reps,
            ["randwrite", "read"] if quick else PATTERNS,
            [16 * KiB] if quick else FILE_BLOCK_SIZES, [1], progress)
        runs = {n: [] for n in servers}
        for rep in range(reps):
            for n in rotated(list(servers), rep):
                runs[n].append(fio_mixed(servers[n], workdir, region,
                                         mixed_runtime))
        mixed = {n: {k: statistics.median(r[k] for r in rs)
                     for k in rs[0]} for n, rs in runs.items()}
        progress("file mixed done")
    finally:
        for s in servers.values():
            s.stop()
        shutil.rmtree(dirname, ignore_errors=True)
    load.append(os.getloadavg()[0])
    return {"disk": disk, "region": region, "runtime": runtime,
            "mixed_runtime": mixed_runtime, "reps": reps, "tmpfs": TMPFS,
            "cells": cells, "mixed": mixed, "load": load}
