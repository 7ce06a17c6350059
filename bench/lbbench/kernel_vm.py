# SPDX-License-Identifier: BSD-3-Clause
"""The kernel section's guest part: largeblock-vm under TCG, on its
virtio-blk and nbd paths, largeblock against nbdkit null.
"""
import json
import os
import shlex
import shutil
import statistics
import subprocess
import tempfile
import time

from .common import (VM_ATTACHES, GiB, KiB, LARGEBLOCK_RUN, MiB, NBDKIT, TOP,
                     PLUGIN, children, cpu_of, ratio, stop_child)
from .fio import fio
from .kernel_host import KERNEL_ROWS
from .teardown import done_with, held, on_teardown


LARGEBLOCK_VM = os.environ.get("LARGEBLOCK_VM", os.path.join(
    TOP, "server", "vm", "largeblock-vm"))
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
    # --quick boots one guest: a TCG boot costs both CPUs for a minute,
    # and the nbd path's guest runs the same code with another --attach
    # (make check-vm boots both paths).
    attaches = VM_ATTACHES[:1] if quick else VM_ATTACHES
    load = [os.getloadavg()[0]]
    cells, kernel = [], None
    for attach in attaches:
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
            "attaches": list(attaches), "cells": cells, "load": load}
