"""largeblock side-by-side benchmark.

Drives largeblock and its peers -- nbdkit memory (allocator=sparse and
allocator=malloc) and nbdkit null, the protocol ceiling that copies no
data -- with fio's nbd engine over Unix sockets, with the same client
settings for all.  The machine this runs on is shared and noisy, so only
ratios measured in the same run mean anything: servers are interleaved
(A B C A B C ...) for every pattern, each pattern is repeated, and medians
and ratios are reported.  Besides MiB/s and IOPS it reports the server's
own CPU seconds per GiB served (from /proc/PID/stat), which stays stable
when the machine is busy.

Then memory (resident memory against folio bytes, after trimming, and
per-folio metadata), scale (startup time and memory up to 7E, a map of a
1T disk, nbdcopy of a sparse disk) and huge pages.

Writes a Markdown report (docs/performance.md by default) and, with
--json, the raw numbers.  --quick runs a few seconds' subset, for the
smoke test in make check.

Environment: LARGEBLOCK_PLUGIN (the plugin .so), NBDKIT; run with a
python3 that has the libnbd bindings.
"""
import argparse
import ctypes
import json
import os
import platform
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

PLUGIN = os.environ.get("LARGEBLOCK_PLUGIN", "largeblock")
NBDKIT = os.environ.get("NBDKIT", "nbdkit")
COPY_COST = os.environ.get("LARGEBLOCK_COPY_COST")   # bench/copy-cost


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
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stderr=self.errlog,
                                     preexec_fn=preexec)
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
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

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
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.errlog.close()


def _disable_thp():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)


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
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
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


def applicable(name, bs):
    """largeblock refuses requests below its logical block size."""
    if not name.startswith("largeblock-"):
        return True
    logical = dict((lb_name(p, l), l) for p, l in GEOMETRIES)[name]
    return bs >= logical


def run_matrix(servers, workdir, region, runtime, reps, patterns,
               block_sizes, connections, progress):
    cells = []
    for rw in patterns:
        for bs in block_sizes:
            for conns in connections:
                names = [n for n in servers if applicable(n, bs)]
                runs = {n: [] for n in names}
                for _ in range(reps):
                    for n in names:     # interleaved: A B C A B C ...
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


def report(res):
    lines = ["# largeblock performance", "",
             "Generated by `bench/largeblock-bench.py` (`make bench`); "
             "do not edit by hand.", "",
             "Machine: " + res["machine"] + ".", "",
             "Reproduce: `%s`." % res["command"], "",
             "fio's nbd engine, iodepth 32, one connection per fio job, "
             "servers on Unix sockets, %g s per run, %d repetitions with the "
             "servers interleaved; medians.  The machine is shared, so only "
             "the ratios within this run mean anything; CPU seconds per GiB "
             "is the server's own time (user + system) divided by the data "
             "it moved.  Disks are %s, of which %s is prefilled and used." % (
                 res["runtime"], res["reps"], size_name(res["disk"]),
                 size_name(res["region"])), "",
             "## Targets", ""] + targets(res["cells"],
                                         res.get("copy_cost")) + [
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
    return "\n".join(lines) + "\n"


def parse_size(text):
    units = {"k": KiB, "m": MiB, "g": GiB}
    unit = units.get(text[-1:].lower())
    return int(text[:-1]) * unit if unit else int(text)


def pick(option, convert, default):
    return [convert(v) for v in option.split(",")] if option else default


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
    ap.add_argument("--only", choices=["matrix", "memory", "scale", "huge",
                                       "copy"],
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
        with open(args.output, "w") as f:
            f.write(report(res))
        return
    if shutil.which("fio") is None:
        sys.exit("largeblock-bench: fio is not installed")
    quick = args.quick
    runtime = args.runtime or (0.3 if quick else 1.0)
    reps = args.reps or (1 if quick else 3)
    sections = args.only or ["matrix", "memory", "scale", "huge", "copy"]
    if COPY_COST is None and "copy" in sections:
        sections.remove("copy")     # run outside make bench
    disk, region = (64 * MiB, 32 * MiB) if quick else (GiB, 256 * MiB)
    progress = (lambda msg: print(msg, file=sys.stderr, flush=True))

    workdir = tempfile.mkdtemp(prefix="lbbench.")
    servers = {}
    res = {"machine": machine(), "runtime": runtime, "reps": reps,
           "disk": disk, "region": region, "cells": [],
           "command": args.command or " ".join(["bench/largeblock-bench.py"]
                                               + sys.argv[1:])}
    try:
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
            servers = {}
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
    finally:
        for s in servers.values():
            s.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    with open(args.output, "w") as f:
        f.write(report(res))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    print("wrote " + args.output)


if __name__ == "__main__":
    main()
