# SPDX-License-Identifier: BSD-3-Clause
"""Running fio: a job against a server's NBD URI, its throughput and the
server's CPU seconds per GiB; stopped cleanly on a signal.
"""
import json
import os
import subprocess

from .common import GiB, MiB, stop_child
from .teardown import held


def run_fio(cmd):
    """fio, to its end.  On a signal it is asked to stop with SIGTERM,
    which it passes on to its job processes (a SIGKILL would leave them
    doing I/O on our devices), and waited for."""
    proc = None
    try:
        with held():
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        if proc.wait():
            raise subprocess.CalledProcessError(proc.returncode, cmd)
    finally:
        if proc:
            stop_child(proc, timeout=30)


def fio(server, workdir, rw, bs, conns, region, runtime, extra=()):
    out = os.path.join(workdir, "fio.json")
    cmd = ["fio", "--name=bench", "--ioengine=nbd", "--uri=" + server.uri,
           "--rw=" + rw, "--bs=%d" % bs, "--iodepth=32",
           "--numjobs=%d" % conns, "--size=%d" % region,
           "--group_reporting", "--output-format=json", "--output=" + out]
    if runtime:
        cmd += ["--time_based", "--runtime=%dms" % int(runtime * 1000)]
    cmd += list(extra)
    cpu0 = server.cpu_s()
    run_fio(cmd)
    cpu = server.cpu_s() - cpu0
    with open(out) as f:
        text = f.read()
    # fio may put its own messages before the JSON document.
    job = json.loads(text[text.index("{"):])["jobs"][0]
    side = job["read"] if "read" in rw else job["write"]
    moved = side["io_bytes"]
    return {"mibs": side["bw_bytes"] / MiB, "iops": side["iops"],
            "cpu_per_gib": cpu / (moved / GiB) if moved else float("nan")}
