# SPDX-License-Identifier: BSD-3-Clause
"""The bench's settings from the environment, units, and small helpers
every section uses (processes' CPU time, child processes, stopping a
child of ours).
"""
import os
import signal
import subprocess

import nbd

KiB, MiB, GiB = 1024, 1024 ** 2, 1024 ** 3
CLK_TCK = os.sysconf("SC_CLK_TCK")

# The checkout (or build tree) this package is in.
TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
# The plugin built in it, never nbdkit's "largeblock" by name, which
# could load an installed copy of another version.
BUILT_PLUGIN = os.path.join(TOP, "plugins", "largeblock", ".libs",
                            "nbdkit-largeblock-plugin.so")
PLUGIN = os.path.realpath(os.environ.get("LARGEBLOCK_PLUGIN") or BUILT_PLUGIN)
NBDKIT = os.environ.get("NBDKIT", "nbdkit")
COPY_COST = os.environ.get("LARGEBLOCK_COPY_COST")   # bench/copy-cost
LARGEBLOCK_RUN = os.environ.get("LARGEBLOCK_RUN", os.path.join(
    TOP, "server", "run", "largeblock-run"))
# The file section's disks and the kernel section's loop device's file.
TMPFS = os.environ.get("LARGEBLOCK_BENCH_TMPFS", "/dev/shm")

# What the sections measure and the report describes (the report does
# not import the sections: --render runs without a plugin to serve).
WARMUP = 64 * MiB               # trim: written and trimmed before timing
MEMORY_PEERS = ("memory-sparse", "memory-malloc")    # matrix: the targets
POLICY = "memory+blocksize-policy"  # matrix: nbdkit's filter over memory
BASELINE = "baseline-"          # matrix: the --baseline build's prefix
VM_ATTACHES = ("virtio", "nbd")  # kernel: the guest's paths


def size_name(n):
    for unit, name in ((GiB, "G"), (MiB, "M"), (KiB, "k")):
        if n >= unit and n % unit == 0:
            return "%d%s" % (n // unit, name)
    return str(n)


def cpu_of(pid):
    """A process's CPU seconds, user + system, from /proc/PID/stat."""
    with open("/proc/%s/stat" % pid) as f:       # PID or PID/task/TID
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


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


def ratio(a, b):
    return a / b if b else float("nan")
