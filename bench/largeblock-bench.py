# SPDX-License-Identifier: BSD-3-Clause
"""largeblock side-by-side benchmark.

Drives largeblock and its peers -- nbdkit memory (allocator=sparse and
allocator=malloc) and nbdkit null, the protocol ceiling that copies no
data -- with fio's nbd engine over Unix sockets, with the same client
settings for all.  The machine this runs on is shared and noisy, so only
ratios measured in the same run mean anything: servers are interleaved,
the order rotated each repetition (A B C B C A ...) so that no server
always runs first, for every pattern, each pattern is repeated, and medians
and ratios are reported.  Besides MiB/s and IOPS it reports the server's
own CPU seconds per GiB served (from /proc/PID/stat), which stays stable
when the machine is busy.

Then memory (resident memory against folio bytes, after trimming, and
per-folio metadata), scale (startup time and memory up to 7E, a map of a
1T disk, nbdcopy of a sparse disk) and huge pages; file disks against
nbdkit file on tmpfs (fio rows and a mixed load with read p99), trim and
zero of large ranges against nbdkit memory with RSS, the peak RSS under
memory-limit, and the kernel device that largeblock-run attaches
(nbdfuse + loop) against its nbdkit null ceiling and a loop device over
tmpfs (needs root, /dev/fuse and loop devices; else reported skipped),
and fio inside a largeblock-vm guest under TCG on its virtio-blk and nbd
paths, largeblock against nbdkit null (needs what make check-vm needs,
with its kernel already cached; else reported skipped).

Writes a Markdown report (docs/performance.md by default) and, with
--json, the raw numbers.  With --only, the sections run replace theirs
in an existing report and the others are kept.  --quick runs a few
seconds' subset, for the smoke tests in make check.  Stopped by SIGTERM,
SIGINT or SIGHUP, it tears down every server, mount, loop device and
temporary directory it made and exits 128+N, writing no report.

Environment: LARGEBLOCK_PLUGIN (the plugin .so; default the one built
in this checkout, never an installed one by name), NBDKIT, LARGEBLOCK_RUN
(default server/run/largeblock-run), LARGEBLOCK_VM (default
server/vm/largeblock-vm), LARGEBLOCK_VM_CACHE (as largeblock-vm's),
LARGEBLOCK_BENCH_TMPFS (a tmpfs directory, default /dev/shm); run with a
python3 that has the libnbd bindings.
"""
import argparse
import contextlib
import ctypes
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import nbd

KiB, MiB, GiB = 1024, 1024 ** 2, 1024 ** 3
CLK_TCK = os.sysconf("SC_CLK_TCK")
PR_SET_THP_DISABLE = 41

# The plugin built beside this script, never nbdkit's "largeblock" by
# name, which could load an installed copy of another version.
BUILT_PLUGIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                            "plugins", "largeblock", ".libs",
                            "nbdkit-largeblock-plugin.so")
PLUGIN = os.path.realpath(os.environ.get("LARGEBLOCK_PLUGIN") or BUILT_PLUGIN)
NBDKIT = os.environ.get("NBDKIT", "nbdkit")
COPY_COST = os.environ.get("LARGEBLOCK_COPY_COST")   # bench/copy-cost


# ---- signals and teardown ----
#
# Everything a run makes -- its temporary directories, servers, nbdfuse
# mounts, loop devices -- is recorded in UNDO as it is made, under held()
# so that no signal falls between making a thing and recording it.  A
# SIGTERM, SIGINT or SIGHUP raises Signalled wherever the main thread is
# (a fio it waits for is asked to stop, any other child is killed by
# subprocess on the way out); the sections' finally blocks undo what they
# made, main() undoes whatever is still recorded and exits 128+N.  Only
# the first signal raises: later ones cannot cut a teardown short.

class Signalled(BaseException):
    """Not an Exception: no "except Exception" swallows it."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_signal = {"num": None, "holding": 0, "raised": False}
UNDO = []       # callables, newest last; each may run more than once


def _on_signal(signum, frame):
    if _signal["num"] is None:
        _signal["num"] = signum
    _raise_pending()


def _raise_pending():
    if _signal["num"] and not _signal["holding"] and not _signal["raised"]:
        _signal["raised"] = True
        raise Signalled(_signal["num"])


@contextlib.contextmanager
def held():
    """A signal that arrives inside waits until the block is done."""
    _signal["holding"] += 1
    try:
        yield
    finally:
        _signal["holding"] -= 1
    _raise_pending()


def on_teardown(undo):
    """Record UNDO; under held() with the step that makes what it undoes,
    unless UNDO is harmless before that step."""
    UNDO.append(undo)
    return undo


def done_with(undo):
    """UNDO has run in the normal course: forget it."""
    if undo in UNDO:
        UNDO.remove(undo)


def undo_since(mark):
    """Undo what was recorded after UNDO had MARK entries, newest first."""
    with held():
        while len(UNDO) > mark:
            try:
                UNDO.pop()()
            except Exception as e:      # tear down the rest regardless
                print("largeblock-bench: teardown: %s" % e, file=sys.stderr)


def teardown():
    """Undo everything still recorded."""
    undo_since(0)


def private_dir(prefix, parent=None):
    """A new directory, removed at teardown if not before."""
    with held():
        path = tempfile.mkdtemp(prefix=prefix, dir=parent)
        on_teardown(lambda: shutil.rmtree(path, ignore_errors=True))
    return path


def size_name(n):
    for unit, name in ((GiB, "G"), (MiB, "M"), (KiB, "k")):
        if n >= unit and n % unit == 0:
            return "%d%s" % (n // unit, name)
    return str(n)


class Server:
    """An nbdkit in the foreground on a private socket; stop() ends it."""

    started = 0

    def __init__(self, workdir, name, args, thp=True):
        Server.started += 1
        self.name = name
        # A fresh pid file per server: its appearance means "started".
        base = os.path.join(workdir, "%s.%d" % (name, Server.started))
        self.socket = base + ".sock"
        self.pidfile = base + ".pid"
        self.errlog = open(base + ".err", "w")
        cmd = [NBDKIT, "-f", "-U", self.socket, "-P", self.pidfile] + args
        preexec = None if thp else _disable_thp
        start = time.monotonic()
        with held():
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                         stderr=self.errlog,
                                         preexec_fn=preexec)
            on_teardown(self.stop)
        while not os.path.exists(self.pidfile):
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited: see %s" %
                                   (name, self.errlog.name))
            if time.monotonic() - start > 60:
                self.stop()
                raise RuntimeError("%s did not start" % name)
            time.sleep(0.002)
        self.startup_s = time.monotonic() - start
        self.uri = "nbd+unix:///?socket=" + self.socket

    def cpu_s(self):
        return cpu_of(self.proc.pid)

    def status_kib(self, key):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        return 0

    def anon_huge_kib(self):
        with open("/proc/%d/smaps_rollup" % self.proc.pid) as f:
            for line in f:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        with held():
            stop_child(self.proc)
            self.errlog.close()
            done_with(self.stop)


def cpu_of(pid):
    """A process's CPU seconds, user + system, from /proc/PID/stat."""
    with open("/proc/%s/stat" % pid) as f:       # PID or PID/task/TID
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def _disable_thp():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)


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


def stop_child(proc, timeout=60):
    """SIGTERM to a child of ours (by its PID), then wait; SIGKILL if it
    lingers."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def connect(server):
    h = nbd.NBD()
    h.connect_unix(server.socket)
    return h


# ---- the fio matrix ----

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


# ---- memory, scale, huge pages ----

def rss_kib(server):
    return server.status_kib("VmRSS")


def memory_section(workdir, quick):
    data = 64 * MiB if quick else GiB
    disk = 8 * data
    stats = os.path.join(workdir, "stats.json")
    s = Server(workdir, "mem", [PLUGIN, "size=%d" % disk, "blksize=16k",
                                "logical-blksize=16k", "statsfile=" + stats])
    start = rss_kib(s)
    # Every 16k block of a 'data'-sized region exactly once, in random order.
    fio(s, workdir, "randwrite", 16 * KiB, 1, data, 0,
        extra=["--offset=%d" % (disk // 2)])
    written = rss_kib(s)
    h = connect(s)
    for off in range(0, disk, 2 * GiB):
        h.trim(min(2 * GiB, disk - off), off)
    h.shutdown()
    trimmed = rss_kib(s)
    peers = {}
    for name, args in PEERS[:2]:
        p = Server(workdir, "mem-" + name, args[:1] + ["%d" % disk] + args[1:])
        p0 = rss_kib(p)
        fio(p, workdir, "randwrite", 16 * KiB, 1, data, 0,
            extra=["--offset=%d" % (disk // 2)])
        peers[name] = {"start_kib": p0, "written_kib": rss_kib(p)}
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


def scale_section(workdir, quick):
    out = {"startup": []}
    for size in ("1T", "1P", "7E"):
        s = Server(workdir, "scale", [PLUGIN, "size=" + size])
        out["startup"].append({"size": size, "ms": s.startup_s * 1000,
                               "rss_kib": rss_kib(s)})
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


def copy_cost_section(quick):
    r = subprocess.run([COPY_COST, "200" if quick else "5000"],
                       capture_output=True, text=True, check=True)
    return [json.loads(line) for line in r.stdout.splitlines()]


# ---- file disks: largeblock file= against nbdkit file, on tmpfs ----

TMPFS = os.environ.get("LARGEBLOCK_BENCH_TMPFS", "/dev/shm")
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


# ---- trim and zero of large ranges ----

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


WARMUP = 64 * MiB


def trim_once(workdir, name, args, data):
    s = Server(workdir, name, args)
    try:
        out = {"cold_kib": rss_kib(s)}
        h = connect(s)
        # The same fio load over a small region first, trimmed again:
        # nbdkit keeps a request buffer per worker thread (16 x 1 MiB
        # here) for the life of the server, and that is not disk memory.
        fio(s, workdir, "write", MiB, 1, WARMUP, 0)
        timed_halves(h, h.trim, WARMUP)
        out["start_kib"] = rss_kib(s)
        fio(s, workdir, "write", MiB, 1, data, 0)
        out["written_kib"] = rss_kib(s)
        out["trim_s"], out["trim_back_s"] = timed_halves(h, h.trim, data)
        out["trimmed_kib"] = rss_kib(s)
        fio(s, workdir, "write", MiB, 1, data, 0)
        out["zero_s"], out["zero_back_s"] = timed_halves(h, h.zero, data)
        out["zeroed_kib"] = rss_kib(s)
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


# ---- peak memory under memory-limit ----

LIMIT_BYTES = 64 * MiB
NBDKIT_THREADS = 16         # nbdkit's default --threads


def limit_once(workdir, name, args, bs, conns, runtime):
    """conns fio connections writing bs-sized requests at iodepth 16 plus
    an nbdcopy of the whole disk, at once; the server's peak RSS."""
    s = Server(workdir, name, args)
    start = rss_kib(s)
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


# ---- the kernel device: largeblock-run's nbdfuse + loop ----

LARGEBLOCK_RUN = os.environ.get("LARGEBLOCK_RUN", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "server", "run",
    "largeblock-run"))
KERNEL_SECTOR = 16 * KiB
KERNEL_DISK = 4 * GiB
KERNEL_ROWS = [("randwrite", 16 * KiB), ("randread", 16 * KiB),
               ("write", MiB), ("read", MiB)]


def kernel_unavailable():
    """Why the kernel-device path cannot be measured here, or None."""
    if os.geteuid() != 0:
        return "needs root (losetup, FUSE mounts)"
    for dev in ("/dev/fuse", "/dev/loop-control"):
        if not os.path.exists(dev):
            return "no " + dev
    for tool in ("nbdfuse", "fusermount3", "losetup"):
        if shutil.which(tool) is None:
            return tool + " is not installed"
    if not os.access(LARGEBLOCK_RUN, os.X_OK):
        return "no largeblock-run at " + LARGEBLOCK_RUN
    return None


def children(pid):
    """PIDs of a process's children, by command name."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out[comm] = int(entry)
    return out


def run_checked(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(cmd),
                                              r.stderr.strip()))
    return r.stdout.strip()


def losetup(path):
    """A loop device on PATH; its teardown is recorded first, so that a
    signal while losetup runs leaves no device behind either."""
    path = os.path.realpath(path)
    on_teardown(lambda: detach_loops_on(path))
    return run_checked(["losetup", "--find", "--show", "--sector-size",
                        "%d" % KERNEL_SECTOR, "--direct-io=on", path])


def detach_loops_on(path):
    """Detach the loop devices still backed by PATH, and no other: once
    detached, a device's name may be someone else's.  The kernel's record
    of the backing file is read, not the file (whose FUSE mount may be
    dead by now)."""
    for name in os.listdir("/sys/block"):
        try:
            with open("/sys/block/%s/loop/backing_file" % name) as f:
                backing = f.read().rstrip("\n")
        except OSError:
            continue
        if backing == path:
            run_checked(["losetup", "-d", "/dev/" + name])


class KernelPaths:
    """The four devices, attached at once so runs can be interleaved;
    each part is recorded in UNDO as it is made."""

    def __init__(self, workdir):
        self.devs, self.procs = {}, {}
        self.attach(workdir)

    def attach(self, workdir):
        env = dict(os.environ, LARGEBLOCK_PLUGIN=PLUGIN, NBDKIT=NBDKIT)
        # largeblock-run with no command attaches, prints the device and
        # waits for a signal.
        # Its own teardown undoes what it made.
        with held():
            run = subprocess.Popen(
                [LARGEBLOCK_RUN, "--attach=loop", "blksize=16k",
                 "logical-blksize=16k", "size=%d" % KERNEL_DISK],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                stderr=open(os.path.join(workdir, "run.err"), "w"), env=env)
            on_teardown(lambda: stop_child(run))
        dev = run.stdout.readline().strip()
        if not dev.startswith("/dev/"):
            raise RuntimeError("largeblock-run printed no device: see %s" %
                               os.path.join(workdir, "run.err"))
        # Its children are nbdfuse and the server (nbdkit, or whatever
        # NBDKIT names: under valgrind the process is valgrind's).
        kids = children(run.pid)
        fuse_pid = kids.pop("nbdfuse")
        if len(kids) != 1:
            raise RuntimeError("largeblock-run's children: %s" % kids)
        self.devs["largeblock-run"] = dev
        self.procs["largeblock-run"] = {"nbdkit": kids.popitem()[1],
                                        "nbdfuse": fuse_pid}
        # The same path over nbdkit null: the ceiling of nbdfuse + loop.
        self.attach_fuse(workdir, "nbdfuse-null", ["null", "%d" % KERNEL_DISK])
        # ... and over nbdkit memory: a RAM disk that, like largeblock,
        # copies each byte once; the ceiling for any RAM disk on it.
        self.attach_fuse(workdir, "nbdfuse-memory",
                         ["memory", "%d" % KERNEL_DISK, "allocator=sparse"])
        # A loop device over a tmpfs file: what a user could take instead.
        tmp = private_dir("lbbench-kernel.", TMPFS)
        path = os.path.join(tmp, "disk.img")
        with open(path, "wb") as f:
            f.truncate(KERNEL_DISK)
        self.devs["loop-tmpfs"] = losetup(path)
        self.procs["loop-tmpfs"] = {}

    def attach_fuse(self, workdir, name, server_args):
        """nbdfuse + loop over an nbdkit of ours, as largeblock-run
        attaches its own."""
        server = Server(workdir, "kernel-" + name, server_args)
        fuse_dir = os.path.join(workdir, name + ".fuse")
        os.mkdir(fuse_dir)
        pidfile = os.path.join(workdir, name + ".fuse.pid")
        # In a session of its own: nbdfuse given a Ctrl-C meant for the
        # bench would lazily unmount itself under the loop device, whose
        # backing file then shows no path to find it by.
        with held():
            fuse = subprocess.Popen(["nbdfuse", "-P", pidfile,
                                     os.path.join(fuse_dir, "disk"),
                                     "--unix", server.socket],
                                    stdin=subprocess.DEVNULL,
                                    start_new_session=True)
            on_teardown(lambda: unmount_fuse(fuse, fuse_dir))
        start = time.monotonic()
        while not os.path.exists(pidfile):
            if fuse.poll() is not None or time.monotonic() - start > 30:
                raise RuntimeError("nbdfuse over %s did not start" % name)
            time.sleep(0.01)
        self.devs[name] = losetup(os.path.join(fuse_dir, "disk"))
        self.procs[name] = {"nbdkit": server.proc.pid, "nbdfuse": fuse.pid}


def unmount_fuse(fuse, fuse_dir):
    """Unmount nbdfuse's mount (after the loop device on it is gone):
    nbdfuse then exits; if it does not, it is ended by its PID."""
    subprocess.run(["fusermount3", "-u", "-q", fuse_dir],
                   stderr=subprocess.DEVNULL)
    try:
        fuse.wait(timeout=60)
    except subprocess.TimeoutExpired:
        stop_child(fuse)


def fio_dev(dev, workdir, rw, bs, region, runtime, procs):
    out = os.path.join(workdir, "fio-dev.json")
    cmd = ["fio", "--name=kernel", "--filename=" + dev, "--ioengine=libaio",
           "--direct=1", "--rw=" + rw, "--bs=%d" % bs, "--iodepth=32",
           "--numjobs=2", "--size=%d" % region, "--group_reporting",
           "--output-format=json", "--output=" + out]
    if runtime:
        cmd += ["--time_based", "--runtime=%dms" % int(runtime * 1000)]
    cpu0 = {k: cpu_of(p) for k, p in procs.items()}
    run_fio(cmd)
    cpu = {k: cpu_of(p) - cpu0[k] for k, p in procs.items()}
    with open(out) as f:
        text = f.read()
    job = json.loads(text[text.index("{"):])["jobs"][0]
    side = job["read"] if "read" in rw else job["write"]
    gib = side["io_bytes"] / GiB
    r = {"mibs": side["bw_bytes"] / MiB, "iops": side["iops"]}
    for k, c in cpu.items():
        r[k + "_cpu_per_gib"] = c / gib if gib else float("nan")
    return r


def kernel_section(workdir, runtime, reps, quick, progress):
    """The host's kernel device (nbdfuse + loop), then the guest paths
    (largeblock-vm under TCG); either is skipped on its own."""
    why = kernel_unavailable()
    out = ({"skipped": why} if why else
           host_kernel_rows(workdir, runtime, reps, quick, progress))
    out["vm"] = vm_section(workdir, runtime, reps, quick, progress)
    return out


def host_kernel_rows(workdir, runtime, reps, quick, progress):
    region = 32 * MiB if quick else 512 * MiB
    rows = KERNEL_ROWS[::3] if quick else KERNEL_ROWS
    mark = len(UNDO)
    load = [os.getloadavg()[0]]
    cells = []
    try:
        paths = KernelPaths(workdir)
        for name, dev in paths.devs.items():
            fio_dev(dev, workdir, "write", MiB, region, 0, {})
        for rw, bs in rows:
            runs = {n: [] for n in paths.devs}
            for _ in range(reps):
                for n, dev in paths.devs.items():   # interleaved
                    runs[n].append(fio_dev(dev, workdir, rw, bs, region,
                                           runtime, paths.procs[n]))
            cells.append({"rw": rw, "bs": bs, "servers": {
                n: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
                for n, rs in runs.items()}})
            progress("kernel %s %s done" % (rw, size_name(bs)))
    finally:
        undo_since(mark)
    load.append(os.getloadavg()[0])
    return {"disk": KERNEL_DISK, "sector": KERNEL_SECTOR, "region": region,
            "runtime": runtime, "reps": reps, "cells": cells, "load": load}


# ---- the guest paths: largeblock-vm under TCG ----

LARGEBLOCK_VM = os.environ.get("LARGEBLOCK_VM", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "server", "vm",
    "largeblock-vm"))
VM_ATTACHES = ("virtio", "nbd")
VM_SERVERS = ("largeblock", "null")
VM_LOGICAL, VM_PHYSICAL = 4 * KiB, 16 * KiB    # 6.12 refuses logical > 4k


def vm_cache_dir():
    """largeblock-vm's cache directory, as it finds it."""
    if os.environ.get("LARGEBLOCK_VM_CACHE"):
        return os.environ["LARGEBLOCK_VM_CACHE"]
    if os.environ.get("XDG_CACHE_HOME"):
        return os.path.join(os.environ["XDG_CACHE_HOME"], "largeblock-vm")
    return os.path.join(os.environ.get("HOME", "/tmp"), ".cache",
                        "largeblock-vm")


def vm_unavailable():
    """Why no guest can be booted here, or None: largeblock-vm's own
    prerequisites (make check-vm's), and its default kernel already in
    its cache -- the benchmark downloads nothing; make check-vm, or any
    largeblock-vm run, fetches the kernel once."""
    if not os.access(LARGEBLOCK_VM, os.X_OK):
        return "no largeblock-vm at " + LARGEBLOCK_VM
    for tool in ("qemu-system-x86_64", "busybox", "socat", "nbd-client"):
        if shutil.which(tool) is None:
            return tool + " is not installed (largeblock-vm needs it)"
    cache = vm_cache_dir()
    if not any(os.path.exists(os.path.join(cache, t, ".complete"))
               for t in (os.listdir(cache) if os.path.isdir(cache) else [])
               if t.startswith("tree-")):
        return ("no guest kernel in largeblock-vm's cache %s (make "
                "check-vm fetches it once)" % cache)
    return None


def vm_server_wrapper(workdir, disk):
    """An NBDKIT for largeblock-vm --disks=2: it starts every server as
    `NBDKIT -f -U SOCK -P PIDFILE PLUGIN PARAM...`, disk 0 first on
    disk0.sock; disk 0 stays largeblock, disk 1 becomes nbdkit null with
    the same advertised block sizes (the blocksize-policy filter), so one
    guest runs both, interleaved.  Each records its PID for the CPU
    figures."""
    path = os.path.join(workdir, "vm-nbdkit")
    q = shlex.quote
    with open(path, "w") as f:
        f.write("""#!/bin/sh
[ "$2" = -U ] && [ "$4" = -P ] || {{ echo "vm-nbdkit: unexpected $*" >&2; exit 1; }}
case "${{3##*/}}" in
disk0.sock) echo $$ >{lb}; exec {nbdkit} "$@" ;;
disk1.sock) echo $$ >{null}
    exec {nbdkit} -f -U "$3" -P "$5" --filter=blocksize-policy null {disk} \\
        blocksize-minimum={lo} blocksize-preferred={hi} blocksize-maximum=32M ;;
*) echo "vm-nbdkit: a third disk? $3" >&2; exit 1 ;;
esac
""".format(lb=q(os.path.join(workdir, "vm-largeblock.pid")),
           null=q(os.path.join(workdir, "vm-null.pid")), nbdkit=q(NBDKIT),
           disk=disk, lo=VM_LOGICAL, hi=VM_PHYSICAL))
    os.chmod(path, 0o755)
    return path


def vm_guest_script(rows, region, runtime, reps):
    """The guest's command: prefill both disks, then every (pattern,
    server) run, servers interleaved and their order rotated each
    repetition.  fio itself frames each run's I/O (exec_prerun and
    exec_postrun, after its start-up, which is slow under TCG) with a
    line on the guest's stdout that carries the guest's CPU times
    (/proc/stat); the host samples its own CPU times at those lines."""
    fio = ("fio --name=vm --filename=${dev[$1]} --ioengine=libaio "
           "--direct=1 --rw=$2 --bs=$3 --iodepth=32 --size=%d "
           "--output-format=json --output=/tmp/fio.json" % region)
    lines = [
        "set -e",
        "declare -A dev=([largeblock]=$LARGEBLOCK_DEV "
        "[null]=$LARGEBLOCK_DEV1)",
        "echo \"LBBENCH-KERNEL $(uname -r)\"",
        # fio adds its own redirection to the command; this one wins.
        "echo 'echo \"LBBENCH-$1 $(head -1 /proc/stat)\" >/dev/hvc0' "
        ">/tmp/mark",
        "prefill () { " + fio + " >/dev/null; }",
        "run () {  # server rw bs",
        "    " + fio + " --time_based --runtime=%dms "
        "--exec_prerun='sh /tmp/mark BEGIN' "
        "--exec_postrun='sh /tmp/mark END' >/dev/null" % (runtime * 1000),
        "    echo \"LBBENCH-RESULT $(tr -d '\\n' </tmp/fio.json)\"",
        "}"]
    for s in VM_SERVERS:
        lines.append("prefill %s write %d" % (s, MiB))
    order = list(VM_SERVERS)
    for rw, bs in rows:
        for rep in range(reps):
            for s in order[rep % 2:] + order[:rep % 2]:
                lines.append("run %s %s %d" % (s, rw, bs))
    return "\n".join(lines) + "\n"


def qemu_cpu(pid):
    """QEMU's CPU seconds: its main thread (the main loop: the NBD client,
    the virtio-serial chardevs) and its other threads (the TCG thread
    that runs both virtual CPUs, and the RCU and worker threads)."""
    main = other = 0.0
    for tid in os.listdir("/proc/%d/task" % pid):
        c = cpu_of("%d/task/%s" % (pid, tid))
        if int(tid) == pid:
            main += c
        else:
            other += c
    return main, other


def vm_boot(workdir, attach, rows, region, runtime, reps):
    """One guest on ATTACH with the two disks; its runs in order, each
    with fio's JSON and the host CPU seconds spent during it."""
    env = dict(os.environ, LARGEBLOCK_PLUGIN=PLUGIN, TMPDIR=workdir,
               NBDKIT=vm_server_wrapper(workdir, region))
    err_path = os.path.join(workdir, "vm-%s.err" % attach)
    cmd = [LARGEBLOCK_VM, "--accel=tcg", "--attach=" + attach, "--disks=2",
           "--timeout=%d" % (300 + 60 * len(rows) * reps),
           "blksize=%d" % VM_PHYSICAL, "logical-blksize=%d" % VM_LOGICAL,
           "size=%d" % region, "--",
           vm_guest_script(rows, region, runtime, reps)]
    with open(err_path, "w") as err, held():
        vm = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=err, env=env,
                              text=True)
        # largeblock-vm tears its guest and servers down on SIGTERM.
        stop_vm = on_teardown(lambda: stop_child(vm, timeout=120))
    runs, kernel, procs, cpu0 = [], None, None, None
    try:
        for line in vm.stdout:
            word, _, rest = line.rstrip("\n").partition(" ")
            if word == "LBBENCH-KERNEL":
                kernel = rest
            elif word == "LBBENCH-BEGIN":
                procs = procs or vm_processes(workdir, vm.pid)
                cpu0 = dict(vm_cpu(procs), **guest_cpu(rest))
            elif word == "LBBENCH-END":
                cpu = dict(vm_cpu(procs), **guest_cpu(rest))
                runs.append({k: cpu[k] - cpu0[k] for k in cpu})
            elif word == "LBBENCH-RESULT":
                runs[-1]["fio"] = json.loads(rest)["jobs"][0]
        vm.stdout.close()
        rc = vm.wait()
    finally:
        stop_vm()
        done_with(stop_vm)
    with open(err_path) as f:
        errors = f.read().strip()
    return rc, kernel, runs, errors


def vm_processes(workdir, vm_pid):
    procs = {"qemu": next(p for c, p in children(vm_pid).items()
                          if c.startswith("qemu"))}
    for s in VM_SERVERS:
        with open(os.path.join(workdir, "vm-%s.pid" % s)) as f:
            procs[s] = int(f.read())
    return procs


def guest_cpu(stat):
    """The guest's "cpu ..." line of /proc/stat: its CPU time in ticks,
    in all, in user space (fio, socat) and idle (with iowait)."""
    t = [int(x) for x in stat.split()[1:9]]
    return {"guest_all": sum(t), "guest_user": t[0] + t[1],
            "guest_idle": t[3] + t[4]}


def vm_cpu(procs):
    main, other = qemu_cpu(procs["qemu"])
    out = {"qemu_main": main, "qemu_other": other}
    for s in VM_SERVERS:
        out["nbdkit_" + s] = cpu_of(procs[s])
    return out


def vm_run_result(run, server, rw):
    """One run's figures: guest-side MiB/s and IOPS (TCG-slowed), the
    host's CPU per GiB moved in QEMU's threads and in the server that
    served the run, and how busy the guest's CPUs were (all of them:
    fio, socat, the kernel), in percent of their time."""
    job = run["fio"]
    side = job["read"] if "read" in rw else job["write"]
    gib = side["io_bytes"] / GiB
    per = (lambda c: c / gib if gib else float("nan"))
    return {"mibs": side["bw_bytes"] / MiB, "iops": side["iops"],
            "qemu_main_cpu_per_gib": per(run["qemu_main"]),
            "qemu_other_cpu_per_gib": per(run["qemu_other"]),
            "nbdkit_cpu_per_gib": per(run["nbdkit_" + server]),
            "guest_busy_pct": 100 * ratio(run["guest_all"] -
                                          run["guest_idle"],
                                          run["guest_all"]),
            "guest_user_pct": 100 * ratio(run["guest_user"],
                                          run["guest_all"])}


def vm_section(workdir, runtime, reps, quick, progress):
    """The same fio workload inside a largeblock-vm guest (TCG), on the
    virtio-blk and on the guest's nbd-driver path, against largeblock and
    against nbdkit null with the same block sizes: relative figures."""
    why = vm_unavailable()
    if why:
        return {"skipped": why}
    region = 32 * MiB if quick else 256 * MiB
    rows = KERNEL_ROWS[::3] if quick else KERNEL_ROWS
    load = [os.getloadavg()[0]]
    cells, kernel = [], None
    for attach in VM_ATTACHES:
        vmdir = tempfile.mkdtemp(prefix="vm-%s." % attach, dir=workdir)
        start = time.monotonic()
        rc, kernel, runs, errors = vm_boot(vmdir, attach, rows, region,
                                           runtime, reps)
        if rc == 125 and not runs:  # no guest: a prerequisite is missing
            return {"skipped": "largeblock-vm could not start a guest: " +
                    (errors.splitlines() or ["exit 125"])[-1]}
        if rc != 0 or len(runs) != len(rows) * reps * len(VM_SERVERS):
            raise RuntimeError("largeblock-vm --attach=%s exited with %d "
                               "after %d runs: %s" % (attach, rc, len(runs),
                                                      errors[-2000:]))
        for rw, bs in rows:
            got = {s: [] for s in VM_SERVERS}
            for rep in range(reps):
                order = list(VM_SERVERS)
                for s in order[rep % 2:] + order[:rep % 2]:
                    got[s].append(vm_run_result(runs.pop(0), s, rw))
            cells.append({"attach": attach, "rw": rw, "bs": bs, "servers": {
                s: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
                for s, rs in got.items()}})
        progress("kernel: guest on %s done (%.0f s)" % (
            attach, time.monotonic() - start))
    load.append(os.getloadavg()[0])
    return {"kernel": kernel, "logical": VM_LOGICAL, "physical": VM_PHYSICAL,
            "region": region, "runtime": runtime, "reps": reps,
            "cells": cells, "load": load}


# ---- the report ----

def best_memory(cell):
    mem = [cell["servers"][n] for n in ("memory-sparse", "memory-malloc")]
    return max(mem, key=lambda r: r["mibs"])


def matrix_table(cells):
    lines = [
        "| pattern | bs | conns | server | MiB/s | IOPS | CPU s/GiB | "
        "vs best memory | vs null |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for c in cells:
        best, null = best_memory(c), c["servers"]["null"]
        for n, r in c["servers"].items():
            vs_mem = r["mibs"] / best["mibs"] if best["mibs"] else 0
            vs_null = r["mibs"] / null["mibs"] if null["mibs"] else 0
            lines.append("| %s | %s | %d | %s | %.0f | %.0f | %.3f | %.2f | "
                         "%.2f |" % (c["rw"], size_name(c["bs"]), c["conns"],
                                     n, r["mibs"], r["iops"],
                                     r["cpu_per_gib"], vs_mem, vs_null))
    return lines


def copy_floor(cell, copy_cost):
    """CPU s/GiB no server that copies each byte once can go below:
    nbdkit null's (protocol, no copy) plus one flat memcpy per byte."""
    flat = [c["flat_read_us" if "read" in cell["rw"] else "flat_write_us"]
            for c in copy_cost]
    return cell["servers"]["null"]["cpu_per_gib"] + min(flat) * 1024 / 1e6


def targets(cells, copy_cost=None):
    """One line per largeblock result against the issue's targets."""
    worst_mem, worst_null, worst_cpu = [], [], []
    for c in cells:
        best, null = best_memory(c), c["servers"]["null"]
        best_cpu = min(c["servers"][n]["cpu_per_gib"]
                       for n in ("memory-sparse", "memory-malloc"))
        for n, r in c["servers"].items():
            if not n.startswith("largeblock-"):
                continue
            key = "%s %s x%d %s" % (c["rw"], size_name(c["bs"]), c["conns"],
                                    n)
            worst_mem.append((r["mibs"] / best["mibs"], key))
            if c["bs"] <= 16 * KiB:
                worst_null.append((r["mibs"] / null["mibs"], key))
            if c["bs"] == MiB:
                worst_cpu.append((r["cpu_per_gib"] / best_cpu, key))
    out = []
    small = [c["servers"]["null"]["mibs"] / best_memory(c)["mibs"]
             for c in cells if c["bs"] <= 16 * KiB]
    if small:
        out.append("- Noise in this run: `nbdkit null`, which does strictly "
                   "less work than any RAM disk, measured between %.2f and "
                   "%.2f of the better memory allocator at 16k and below.  "
                   "Ratios inside that band are not differences." % (
                       min(small), max(small)))
    if worst_mem:
        lo = min(worst_mem)
        met = sum(1 for r, _ in worst_mem if r >= 1.0)
        out.append("- Throughput vs the better `nbdkit memory` allocator: "
                   "%d of %d results at or above 1.00; lowest %.2f (%s); "
                   "median %.2f." % (met, len(worst_mem), lo[0], lo[1],
                                     statistics.median(r for r, _ in
                                                       worst_mem)))
    if worst_null:
        lo = min(worst_null)
        met = sum(1 for r, _ in worst_null if r >= 0.9)
        out.append("- At 16k and below vs `nbdkit null`: %d of %d within "
                   "10%%; lowest %.2f (%s)." % (met, len(worst_null), lo[0],
                                                lo[1]))
    if worst_cpu:
        hi = max(worst_cpu)
        met = sum(1 for r, _ in worst_cpu if r <= 0.85)
        out.append("- Server CPU per GiB at 1M vs the better memory "
                   "allocator: %d of %d at or below 0.85; highest %.2f (%s)."
                   % (met, len(worst_cpu), hi[0], hi[1]))
    mib_cells = [c for c in cells if c["bs"] == MiB]
    if copy_cost and mib_cells:
        below = 0
        for c in mib_cells:
            best_cpu = min(c["servers"][n]["cpu_per_gib"]
                           for n in ("memory-sparse", "memory-malloc"))
            if 0.85 * best_cpu < copy_floor(c, copy_cost):
                below += 1
        out.append("- Why the CPU target is out of reach: `nbdkit memory` "
                   "and largeblock both copy each byte once between "
                   "nbdkit's buffer and the disk's memory, which is the "
                   "least any RAM disk can do.  `nbdkit null` (no copy) "
                   "plus one memcpy at the fastest flat rate measured below "
                   "is a floor; 0.85 x the better memory allocator lies "
                   "below that floor in %d of the %d 1M patterns.  The RAM "
                   "store itself copies at the flat memcpy rate (see \"The "
                   "RAM store's own cost\"), and with 2M folios on huge "
                   "pages faster than it." % (below, len(mib_cells)))
    return out


def machine():
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    nbdkit_version = subprocess.run([NBDKIT, "--version"],
                                    capture_output=True,
                                    text=True).stdout.split()[-1]
    return ("%d cores (%s), %.0f GiB memory, Linux %s, nbdkit %s, %s" % (
        os.cpu_count(), platform.processor() or platform.machine(),
        mem_kib / 1024 ** 2, platform.release(), nbdkit_version,
        subprocess.run(["fio", "--version"], capture_output=True,
                       text=True).stdout.strip()))


def load_note(sec):
    return ("Load average (1 min) on this shared machine: %.2f at the "
            "start of the section, %.2f at its end." % tuple(sec["load"]))


def ratio(a, b):
    return a / b if b else float("nan")


def file_report(fs):
    ref = "nbdkit-file"
    lines = ["", "## File disks", "",
             "largeblock `file=` with the default geometry (4k/512) and "
             "with blksize=16k, against `nbdkit file`, each serving its own "
             "sparse %s file on tmpfs (%s), so that the servers, not the "
             "host's writeback, are measured.  fio's nbd engine, one "
             "connection, iodepth 32, %g s per run, %d repetitions with the "
             "servers interleaved, their order rotated each repetition; "
             "medians.  %s is prefilled and used.  %s"
             % (size_name(fs["disk"]), fs["tmpfs"], fs["runtime"], fs["reps"],
                size_name(fs["region"]), load_note(fs)), ""]
    below = []
    for c in fs["cells"]:
        for n, r in c["servers"].items():
            if n != ref:
                below.append((ratio(r["mibs"], c["servers"][ref]["mibs"]),
                              "%s %s %s" % (c["rw"], size_name(c["bs"]), n)))
    mx = fs["mixed"]
    if below:
        lo = min(below)
        lines.append("- Throughput vs `nbdkit file` (target >= 1.00): %d of "
                     "%d results at or above 1.00; lowest %.2f (%s); median "
                     "%.2f." % (sum(1 for r, _ in below if r >= 1.0),
                                len(below), lo[0], lo[1],
                                statistics.median(r for r, _ in below)))
    for n, r in mx.items():
        if n != ref:
            lines.append("- Mixed load, %s vs `nbdkit file`: writes %.2f, "
                         "reads %.2f, read p99 %.2f (target <= 1.10)." % (
                             n, ratio(r["write_mibs"], mx[ref]["write_mibs"]),
                             ratio(r["read_mibs"], mx[ref]["read_mibs"]),
                             ratio(r["read_p99_ms"], mx[ref]["read_p99_ms"])))
    lines += ["", "| pattern | bs | server | MiB/s | IOPS | CPU s/GiB | "
              "vs nbdkit file |", "| --- | --- | --- | ---: | ---: | ---: | "
              "---: |"]
    for c in fs["cells"]:
        for n, r in c["servers"].items():
            lines.append("| %s | %s | %s | %.0f | %.0f | %.3f | %.2f |" % (
                c["rw"], size_name(c["bs"]), n, r["mibs"], r["iops"],
                r["cpu_per_gib"], ratio(r["mibs"],
                                        c["servers"][ref]["mibs"])))
    lines += ["", "Mixed load: one job writing 1M sequentially and one "
              "reading 4k at random, iodepth 16 each, at once, %g s:" %
              fs["mixed_runtime"], "",
              "| server | write MiB/s | read MiB/s | read p99 | write vs "
              "nbdkit file | read vs nbdkit file | p99 vs nbdkit file |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for n, r in mx.items():
        lines.append("| %s | %.0f | %.1f | %.2f ms | %.2f | %.2f | %.2f |" % (
            n, r["write_mibs"], r["read_mibs"], r["read_p99_ms"],
            ratio(r["write_mibs"], mx[ref]["write_mibs"]),
            ratio(r["read_mibs"], mx[ref]["read_mibs"]),
            ratio(r["read_p99_ms"], mx[ref]["read_p99_ms"])))
    return lines


def trim_report(tr):
    sv = tr["servers"]
    ref = sv["memory-sparse"]
    lines = ["", "## Trim and zero", "",
             "%s written with fio (1M sequential writes), then trimmed in "
             "two requests of %s each and flushed; written again, then "
             "zeroed the same way (no flags, so holes are allowed).  A "
             "fresh server per run, %d repetitions with the servers "
             "interleaved; medians.  %s" % (
                 size_name(tr["data"]), size_name(tr["data"] // 2),
                 tr["reps"], load_note(tr)),
             "",
             "Trim and zero are timed to the second reply (the figure the "
             "targets compare); 'memory back' is the time until the flush "
             "that follows replied: largeblock drops the folios from its "
             "index before replying and gives their memory to the system "
             "on a reclaim thread, and a flush waits for that.  RSS is "
             "read after the flush.  'Start' is after the same fio load "
             "wrote and trimmed %s, so the first use's one-off costs are "
             "in it; the cold RSS is in the table.  The 1M request buffers "
             "of fio's closed connection stay in glibc's arenas in every "
             "server (memory-malloc's 16 MiB); after a large give-back "
             "largeblock hands those back too (malloc_trim), and what "
             "remains at blksize=4k is mostly its index (8 bytes a folio).  "
             "Times this short swing widely between runs, so read ratios "
             "near the targets as ties." % size_name(WARMUP), ""]
    for n, r in sv.items():
        if not n.startswith("largeblock-"):
            continue
        target = 2.0 if n == "largeblock-4k" else 1.0
        back = (r["trimmed_kib"] - r["start_kib"]) / 1024
        lines.append("- %s vs `nbdkit memory` sparse: trim %.2f, zero %.2f "
                     "(target <= %.1f); memory back after %.3f s; RSS after "
                     "trimming %.1f MiB above the start (target <= 8)." % (
                         n, ratio(r["trim_s"], ref["trim_s"]),
                         ratio(r["zero_s"], ref["zero_s"]), target,
                         r["trim_back_s"], back))
    lines.append("- For comparison, RSS after trimming, above the start: "
                 + ", ".join("%s %.1f MiB" % (
                     n, (sv[n]["trimmed_kib"] - sv[n]["start_kib"]) / 1024)
                             for n in ("memory-sparse", "memory-malloc")
                             if n in sv) + ".")
    lines += ["", "| server | trim | memory back | zero | memory back "
              "| trim vs sparse | zero vs sparse | RSS cold | at start "
              "| after writing | after trim | after zero |",
              "| --- |" + " ---: |" * 11]
    for n, r in sv.items():
        lines.append("| %s | %.3f s | %.3f s | %.3f s | %.3f s | %.2f | %.2f "
                     "| %d KiB | %d KiB | %d KiB | %d KiB | %d KiB |" % (
                         n, r["trim_s"], r["trim_back_s"], r["zero_s"],
                         r["zero_back_s"], ratio(r["trim_s"], ref["trim_s"]),
                         ratio(r["zero_s"], ref["zero_s"]), r["cold_kib"],
                         r["start_kib"], r["written_kib"], r["trimmed_kib"],
                         r["zeroed_kib"]))
    return lines


def limit_report(lm):
    lines = ["", "## Peak memory under memory-limit", "",
             "A %s RAM disk with blksize=64k and memory-limit=%s, and "
             "`nbdkit memory` of the same size, under %d fio connections "
             "writing at random (iodepth 16) and an `nbdcopy` (%d "
             "connections) into the disk at the same time, all with the "
             "same request size; the server's peak RSS (VmHWM).  Beyond "
             "the folios, nbdkit gives each of a connection's %d worker "
             "threads (its --threads) a buffer as large as the largest "
             "read or write that thread has served, zeroed, so resident, "
             "and kept until the connection closes; the bound is the RSS "
             "at start + memory-limit + connections x threads x request "
             "size (see memory-limit in nbdkit-largeblock-plugin(1)).  "
             "The plugin allocates nothing per request on RAM disks, so "
             "its peak should follow `nbdkit memory`'s." % (
                 size_name(lm["limit"]), size_name(lm["limit"]), lm["conns"],
                 lm["nbdcopy_conns"], lm["threads"]), "",
             "| request | largeblock peak RSS | nbdkit memory peak RSS | "
             "limit | bound |", "| --- | ---: | ---: | ---: | ---: |"]
    for r in lm["rows"]:
        lines.append("| %s | %.0f MiB | %.0f MiB | %s | %.0f MiB |" % (
            size_name(r["bs"]), r["largeblock_hwm_kib"] / 1024,
            r["memory-sparse_hwm_kib"] / 1024, size_name(lm["limit"]),
            r["bound_kib"] / 1024))
    return lines


def kernel_report(kn):
    lines = ["", "## Kernel device", ""]
    if "skipped" in kn:
        lines.append("skipped: " + kn["skipped"] + ".")
    else:
        lines += host_kernel_report(kn)
    if "vm" in kn:
        lines += vm_report(kn["vm"])
    return lines


def host_kernel_report(kn):
    lines = ["fio (libaio, direct, iodepth 32, 2 jobs) on four block "
             "devices with %s sectors: the one `largeblock-run "
             "--attach=loop blksize=16k logical-blksize=16k size=%s` "
             "attaches (nbdfuse + loop), the same nbdfuse + loop over "
             "`nbdkit null` (the ceiling of that path) and over `nbdkit "
             "memory` (a RAM disk that copies each byte once, as "
             "largeblock does), and a loop device over a tmpfs file (what "
             "a user could take instead).  %s "
             "used, %g s per run, %d repetitions interleaved; medians.  "
             "CPU s/GiB is the nbdkit and nbdfuse processes' own time "
             "(user + system) per GiB moved.  %s" % (
                 size_name(kn["sector"]), size_name(kn["disk"]),
                 size_name(kn["region"]), kn["runtime"], kn["reps"],
                 load_note(kn)),
             "",
             "How to read it: the gap between the ceiling and loop over "
             "tmpfs is what FUSE and the NBD round trip cost, since "
             "`nbdkit null` does no work; the gap between largeblock-run "
             "and the ceiling is the server's, and its nbdkit CPU beyond "
             "null's says how much server time that is.  On two cores "
             "fio, the kernel, nbdfuse and nbdkit share, that time comes "
             "out of the path's throughput; `nbdkit memory` through the "
             "same path shows what storing the data costs any RAM disk.",
             ""]
    for c in kn["cells"]:
        s = c["servers"]
        lb, null, tmp = s["largeblock-run"], s["nbdfuse-null"], s["loop-tmpfs"]
        mem = s.get("nbdfuse-memory")
        lines.append(
            "- %s %s: largeblock-run %.2f of the null ceiling (target >= "
            "0.90)%s, %.2f of loop over tmpfs; the ceiling itself is %.2f "
            "of loop over tmpfs.  nbdkit CPU %.3f s/GiB (null %.3f%s), "
            "nbdfuse CPU %.3f s/GiB (over null %.3f)." % (
                c["rw"], size_name(c["bs"]), ratio(lb["mibs"], null["mibs"]),
                "" if mem is None else
                ", %.2f of nbdkit memory on the same path, which is itself "
                "%.2f of the ceiling" % (ratio(lb["mibs"], mem["mibs"]),
                                         ratio(mem["mibs"], null["mibs"])),
                ratio(lb["mibs"], tmp["mibs"]),
                ratio(null["mibs"], tmp["mibs"]), lb["nbdkit_cpu_per_gib"],
                null["nbdkit_cpu_per_gib"],
                "" if mem is None else
                ", memory %.3f" % mem["nbdkit_cpu_per_gib"],
                lb["nbdfuse_cpu_per_gib"], null["nbdfuse_cpu_per_gib"]))
    lines += ["", "| pattern | bs | path | MiB/s | IOPS | nbdkit CPU s/GiB | "
              "nbdfuse CPU s/GiB | vs null ceiling | vs loop over tmpfs |",
              "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for c in kn["cells"]:
        s = c["servers"]
        for n, r in s.items():
            cpu = ["%.3f" % r[k] if k in r else "-" for k in
                   ("nbdkit_cpu_per_gib", "nbdfuse_cpu_per_gib")]
            lines.append("| %s | %s | %s | %.0f | %.0f | %s | %s | %.2f | "
                         "%.2f |" % (c["rw"], size_name(c["bs"]), n,
                                     r["mibs"], r["iops"], cpu[0], cpu[1],
                                     ratio(r["mibs"],
                                           s["nbdfuse-null"]["mibs"]),
                                     ratio(r["mibs"],
                                           s["loop-tmpfs"]["mibs"])))
    return lines

def vm_host_cpu(r):
    return sum(r[k] for k in ("qemu_main_cpu_per_gib",
                              "qemu_other_cpu_per_gib", "nbdkit_cpu_per_gib"))


def vm_summary(by):
    """One line per guest path: largeblock against null over all patterns,
    and the server's share of the host CPU the path costs."""
    out = []
    for attach in VM_ATTACHES:
        cells = [s for (a, _, _), s in by.items() if a == attach]
        if not cells:
            continue
        rs = [ratio(s["largeblock"]["mibs"], s["null"]["mibs"])
              for s in cells]
        share = [100 * ratio(s["largeblock"]["nbdkit_cpu_per_gib"],
                             vm_host_cpu(s["largeblock"])) for s in cells]
        busy = [s["largeblock"]["guest_busy_pct"] for s in cells]
        out.append("- %s path: largeblock against nbdkit null, median %.2f "
                   "(%.2f to %.2f over the patterns); the server is %.0f%% "
                   "to %.0f%% of the host CPU the path costs, the rest is "
                   "QEMU; the guest's CPUs are %.0f%% to %.0f%% busy." % (
                       attach, statistics.median(rs), min(rs), max(rs),
                       min(share), max(share), min(busy), max(busy)))
    return out + [""]


def vm_report(vm):
    lines = ["", "### In a guest under TCG (largeblock-vm)", ""]
    if "skipped" in vm:
        return lines + ["Guest paths skipped: " + vm["skipped"] + "."]
    lines += [
        "The same kind of fio workload (libaio, direct, iodepth 32, one "
        "job) run inside a `largeblock-vm --accel=tcg` guest (kernel %s, "
        "QEMU TCG with one host thread for both virtual CPUs), on two %s "
        "disks attached at once: largeblock (`blksize=16k "
        "logical-blksize=4k`; 6.12 refuses logical blocks above 4k) and "
        "`nbdkit null` advertising the same block sizes (blocksize-policy "
        "filter), on each guest path: virtio-blk through QEMU's NBD client "
        "(`--attach=virtio`, the guest sees %d/%d) and the guest's nbd "
        "driver over a virtio-serial port (`--attach=nbd`, %d/%d).  %g s "
        "per run, %d repetitions with the two disks interleaved and their "
        "order rotated; medians.  %s" % (
            vm["kernel"], size_name(vm["region"]), vm["logical"],
            vm["physical"], vm["logical"], vm["logical"], vm["runtime"],
            vm["reps"], load_note(vm)),
        "",
        "Emulating the guest's CPU slows every path by a large factor, so "
        "MiB/s here are TCG figures, not what the path does under KVM or "
        "on hardware: read the ratios.  CPU s/GiB are host CPU seconds per "
        "GiB the guest moved: QEMU's main thread (its main loop: the NBD "
        "client, the virtio-serial chardevs), QEMU's other threads (the "
        "TCG thread that runs the guest's kernel and fio), and the server "
        "that served the run.  Guest busy is the share of the guest's two "
        "virtual CPUs' time not idle, from the guest's /proc/stat (the "
        "kernel, fio and, on the nbd path, socat), and guest user its "
        "user-space part.", ""]
    by = {(c["attach"], c["rw"], c["bs"]): c["servers"] for c in vm["cells"]}
    lines += vm_summary(by)
    for (attach, rw, bs), s in by.items():
        lb, null = s["largeblock"], s["null"]
        total = vm_host_cpu(lb)
        line = ("- %s %s %s: largeblock %.2f of nbdkit null (TCG: %.1f vs "
                "%.1f MiB/s).  Host CPU for largeblock's runs: QEMU's TCG "
                "and other threads %.0f%%, QEMU's main loop %.0f%%, the "
                "server %.0f%%." % (
                    attach, rw, size_name(bs), ratio(lb["mibs"], null["mibs"]),
                    lb["mibs"], null["mibs"],
                    100 * ratio(lb["qemu_other_cpu_per_gib"], total),
                    100 * ratio(lb["qemu_main_cpu_per_gib"], total),
                    100 * ratio(lb["nbdkit_cpu_per_gib"], total)))
        other = by.get(("virtio", rw, bs))
        if attach == "nbd" and other:
            line += ("  The nbd path is %.2f of the virtio path here "
                     "(nbdkit null on both)." % ratio(
                         null["mibs"], other["null"]["mibs"]))
        lines.append(line)
    lines += ["", "| path | pattern | bs | server | MiB/s (TCG) | IOPS (TCG) "
              "| vs null | QEMU TCG+other CPU s/GiB | QEMU main loop CPU "
              "s/GiB | nbdkit CPU s/GiB | guest busy | guest user |",
              "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | "
              "---: | ---: | ---: |"]
    for (attach, rw, bs), s in by.items():
        for n, r in s.items():
            lines.append("| %s | %s | %s | %s | %.1f | %.0f | %.2f | %.2f | "
                         "%.2f | %.3f | %.0f%% | %.0f%% |" % (
                             attach, rw, size_name(bs), n, r["mibs"],
                             r["iops"], ratio(r["mibs"], s["null"]["mibs"]),
                             r["qemu_other_cpu_per_gib"],
                             r["qemu_main_cpu_per_gib"],
                             r["nbdkit_cpu_per_gib"], r["guest_busy_pct"],
                             r["guest_user_pct"]))
    return lines


def split_sections(text):
    """A report's text as (preamble, [(heading, text)]), at '## '."""
    parts = ("\n" + text).split("\n## ")
    return parts[0].lstrip("\n"), [
        (p.split("\n", 1)[0], "## " + p.rstrip("\n")) for p in parts[1:]]


def provenance(preamble):
    """The 'From a separate run' note for a report's sections, from its
    preamble's Reproduce and Machine lines (None if it has neither)."""
    found = {}
    for line in preamble.splitlines():
        for key in ("Reproduce: `", "Machine: "):
            if line.startswith(key):
                found[key] = line[len(key):].rstrip(".").rstrip("`")
    if not found:
        return None
    return "From a separate run: `%s`; machine: %s." % (
        found.get("Reproduce: `", "unknown"), found.get("Machine: ", "unknown"))


def with_note(section, note):
    """SECTION with NOTE as its first paragraph, unless it has one."""
    if not note or "\n\nFrom a separate run: " in section:
        return section
    head, sep, body = section.partition("\n\n")
    return head + "\n\n" + note + (sep + body if sep else "")


def merge_report(new, old):
    """The report of a partial run (--only) laid over the previous one:
    each section this run wrote replaces its namesake where that stood,
    a section the old report lacks goes after the one it follows in this
    run's, and every other old section is kept as it was, in order.  The
    preamble describes the throughput matrix's run: it is this run's if
    this run measured the matrix (the old sections kept then say which
    run they come from), else the old one (and this run's sections say
    they come from this run)."""
    old_pre, old_secs = split_sections(old)
    new_pre, new_secs = split_sections(new)
    fresh = dict(new_secs)
    if "Targets" in fresh:
        pre, kept_note, fresh_note = new_pre, provenance(old_pre), None
    else:
        pre, kept_note, fresh_note = old_pre, None, provenance(new_pre)
    out = [(h, with_note(fresh[h], fresh_note) if h in fresh
            else with_note(t, kept_note)) for h, t in old_secs]
    for i, (h, t) in enumerate(new_secs):
        if h in dict(old_secs):
            continue
        before = [b for b, _ in new_secs[:i]]
        at = max([j + 1 for j, (o, _) in enumerate(out) if o in before],
                 default=0)
        out.insert(at, (h, with_note(t, fresh_note)))
    return "\n\n".join([pre.rstrip("\n")] + [t for _, t in out]) + "\n"


def report(res):
    lines = ["# largeblock performance", "",
             "Generated by `bench/largeblock-bench.py` (`make bench`); "
             "do not edit by hand.", "",
             "Machine: " + res["machine"] + ".", "",
             "Reproduce: `%s`." % res["command"], ""]
    if res["cells"]:
        lines += [
             "fio's nbd engine, iodepth 32, one connection per fio job, "
             "servers on Unix sockets, %g s per run, %d repetitions with the "
             "servers interleaved, their order rotated each repetition; "
             "medians.  The machine is shared, so only "
             "the ratios within this run mean anything; CPU seconds per GiB "
             "is the server's own time (user + system) divided by the data "
             "it moved.  Disks are %s, of which %s is prefilled and used." % (
                 res["runtime"], res["reps"], size_name(res["disk"]),
                 size_name(res["region"])), "",
             "## Targets", ""] + targets(
            res["cells"], res.get("copy_cost")) + [
                "", "## Throughput", ""] + matrix_table(res["cells"])
    m = res.get("memory")
    if m:
        lines += ["", "## Memory", "",
                  "Writing %s in random 16k blocks (each once) to a "
                  "16k/16k disk:" % size_name(m["data_bytes"]), "",
                  "| server | RSS before | RSS after writing | "
                  "RSS after trimming all |",
                  "| --- | ---: | ---: | ---: |",
                  "| largeblock | %d KiB | %d KiB | %d KiB |" % (
                      m["start_kib"], m["written_kib"], m["trimmed_kib"])]
        for n, p in m["peers"].items():
            lines.append("| %s | %d KiB | %d KiB | - |" % (
                n, p["start_kib"], p["written_kib"]))
        lines += ["", "Limit (1.01 x data + 8 MiB): %.0f KiB.  Folios at "
                  "peak: %d; metadata %d bytes, %.1f bytes per folio." % (
                      m["limit_kib"], m["folios_peak"], m["metadata_bytes"],
                      m["metadata_per_folio"])]
    sc = res.get("scale")
    if sc:
        lines += ["", "## Scale", "", "| size | startup | RSS |",
                  "| --- | ---: | ---: |"]
        for st in sc["startup"]:
            lines.append("| %s | %.1f ms | %d KiB |" % (
                st["size"], st["ms"], st["rss_kib"]))
        lines += ["", "Startup is measured from spawning nbdkit to its pid "
                  "file appearing (it includes loading nbdkit itself).", "",
                  "`nbdinfo --map` over a 1T disk with one 64k folio "
                  "written: %.0f ms (%d extents)." % (sc["map_1t_ms"],
                                                     sc["map_1t_lines"]),
                  "", "`nbdcopy` to `null:` of a %s disk with %s written: "
                  "largeblock %.0f ms, nbdkit memory (sparse) %.0f ms." % (
                      size_name(sc["copy"]["disk"]),
                      size_name(sc["copy"]["data"]),
                      sc["copy"]["largeblock_ms"],
                      sc["copy"]["memory-sparse_ms"])]
    cc = res.get("copy_cost")
    if cc:
        lines += ["", "## The RAM store's own cost", "",
                  "`bench/copy-cost`: random 1 MiB reads and writes through "
                  "the RAM store in-process (no nbdkit, no socket), against "
                  "a plain memcpy of the same sizes from one flat buffer of "
                  "4k pages, in microseconds per MiB:", "",
                  "| folio | store read | flat read | store write | "
                  "flat write |", "| --- | ---: | ---: | ---: | ---: |"]
        for c in cc:
            lines.append("| %s | %.1f | %.1f | %.1f | %.1f |" % (
                size_name(c["folio"]), c["store_read_us"],
                c["flat_read_us"], c["store_write_us"],
                c["flat_write_us"]))
    hp = res.get("huge_pages")
    if hp:
        lines += ["", "## Huge pages", "",
                  "A 2M/64k disk with transparent huge pages (the plugin "
                  "asks for them with MADV_HUGEPAGE) and with them disabled "
                  "for the server (PR_SET_THP_DISABLE); 1M requests:", "",
                  "| THP | AnonHugePages | randread MiB/s | randread CPU "
                  "s/GiB | randwrite MiB/s | randwrite CPU s/GiB |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for k, r in hp.items():
            lines.append("| %s | %d KiB | %.0f | %.3f | %.0f | %.3f |" % (
                k, r["anon_huge_kib"], r["randread"]["mibs"],
                r["randread"]["cpu_per_gib"], r["randwrite"]["mibs"],
                r["randwrite"]["cpu_per_gib"]))
    if res.get("file"):
        lines += file_report(res["file"])
    if res.get("trim"):
        lines += trim_report(res["trim"])
    if res.get("limit"):
        lines += limit_report(res["limit"])
    if res.get("kernel"):
        lines += kernel_report(res["kernel"])
    return "\n".join(lines) + "\n"


def parse_size(text):
    units = {"k": KiB, "m": MiB, "g": GiB}
    unit = units.get(text[-1:].lower())
    return int(text[:-1]) * unit if unit else int(text)


def pick(option, convert, default):
    return [convert(v) for v in option.split(",")] if option else default


ALL_SECTIONS = ["matrix", "memory", "scale", "huge", "copy", "file", "trim",
                "limit", "kernel"]


def write_report(res, output, partial):
    text = report(res)
    if partial and os.path.exists(output):
        with open(output) as f:
            text = merge_report(text, f.read())
    with open(output, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="a few seconds' subset (smoke test)")
    ap.add_argument("--runtime", type=float, default=None,
                    help="seconds per fio run (default 1, quick 0.3)")
    ap.add_argument("--reps", type=int, default=None,
                    help="repetitions per pattern (default 3, quick 1)")
    ap.add_argument("--output", default="docs/performance.md",
                    help="the Markdown report to write")
    ap.add_argument("--json", help="also write the raw numbers here")
    ap.add_argument("--only", choices=ALL_SECTIONS,
                    action="append", help="run only these sections")
    ap.add_argument("--render", metavar="JSON",
                    help="only write the report from a previous --json")
    ap.add_argument("--command", help="the reproduce command to print "
                    "(default: how this run was started)")
    ap.add_argument("--patterns", help="comma-separated fio rw patterns")
    ap.add_argument("--bs", help="comma-separated request sizes, e.g. 16k,1M")
    ap.add_argument("--conns", help="comma-separated connection counts")
    args = ap.parse_args()
    if args.render:
        with open(args.render) as f:
            res = json.load(f)
        if args.command:
            res["command"] = args.command
        write_report(res, args.output, res.get("partial", False))
        return
    if shutil.which("fio") is None:
        sys.exit("largeblock-bench: fio is not installed")
    if not os.path.isfile(PLUGIN):
        sys.exit("largeblock-bench: plugin %s: no such file (build it, or "
                 "set LARGEBLOCK_PLUGIN to a plugin .so)" % PLUGIN)
    print("largeblock-bench: serving the plugin " + PLUGIN, file=sys.stderr,
          flush=True)
    quick = args.quick
    runtime = args.runtime or (0.3 if quick else 1.0)
    reps = args.reps or (1 if quick else 3)
    sections = list(args.only or ALL_SECTIONS)
    if COPY_COST is None and "copy" in sections:
        sections.remove("copy")     # run outside make bench
    disk, region = (64 * MiB, 32 * MiB) if quick else (GiB, 256 * MiB)
    progress = (lambda msg: print(msg, file=sys.stderr, flush=True))

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _on_signal)
    try:
        res = {"machine": machine(), "runtime": runtime, "reps": reps,
               "disk": disk, "region": region, "cells": [],
               "partial": bool(args.only),
               "command": args.command or " ".join(
                   ["bench/largeblock-bench.py"] + sys.argv[1:])}
        workdir = private_dir("lbbench.")
        if "matrix" in sections:
            geoms = GEOMETRIES[1:2] if quick else GEOMETRIES
            servers = start_servers(workdir, disk, geoms, PEERS)
            prefill(servers, workdir, region)
            res["cells"] = run_matrix(
                servers, workdir, region, runtime, reps,
                pick(args.patterns, str, PATTERNS[:2] if quick else PATTERNS),
                pick(args.bs, parse_size,
                     [16 * KiB] if quick else BLOCK_SIZES),
                pick(args.conns, int, [1] if quick else CONNECTIONS),
                progress)
            for s in servers.values():
                s.stop()
        if "memory" in sections:
            res["memory"] = memory_section(workdir, quick)
            progress("memory done")
        if "scale" in sections:
            res["scale"] = scale_section(workdir, quick)
            progress("scale done")
        if "huge" in sections:
            res["huge_pages"] = huge_page_section(workdir, runtime, reps,
                                                  quick)
            progress("huge pages done")
        if "copy" in sections:
            res["copy_cost"] = copy_cost_section(quick)
            progress("copy cost done")
        if "file" in sections:
            res["file"] = file_section(workdir, runtime, reps, quick,
                                       progress)
            progress("file disks done")
        if "trim" in sections:
            res["trim"] = trim_section(workdir, reps, quick, progress)
            progress("trim done")
        if "limit" in sections:
            res["limit"] = limit_section(workdir, runtime if quick else 3,
                                         quick, progress)
            progress("memory limit done")
        if "kernel" in sections:
            res["kernel"] = kernel_section(workdir, runtime if quick else 2,
                                           reps, quick, progress)
            progress("kernel device done")
    except BaseException:
        teardown()
        # A signal ends the run as that signal, even if what it broke
        # first was raised instead (a child killed by the same Ctrl-C).
        signum = _signal["num"]
        if signum:
            progress("largeblock-bench: stopped by %s; tore down what it "
                     "made" % signal.Signals(signum).name)
            sys.exit(128 + signum)
        raise
    finally:
        teardown()
    write_report(res, args.output, res["partial"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    print("wrote " + args.output)


if __name__ == "__main__":
    main()
