# SPDX-License-Identifier: BSD-3-Clause
"""The kernel section's host part: largeblock-run's nbdfuse + loop
device against its nbdkit null ceiling and a loop device over tmpfs.
"""
import json
import os
import shutil
import statistics
import subprocess
import time

from .common import (GiB, KiB, LARGEBLOCK_RUN, MiB, NBDKIT, PLUGIN, TMPFS,
                     children, cpu_of, size_name, stop_child)
from .fio import run_fio
from .server import Server
from .teardown import UNDO, held, on_teardown, private_dir, undo_since


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
