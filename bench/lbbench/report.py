# SPDX-License-Identifier: BSD-3-Clause
"""The Markdown report: every section's tables, and the merge of a
partial run (--only) into the previous report.
"""
import os
import platform
import statistics
import subprocess

from .common import (BASELINE, MEMORY_PEERS, POLICY, VM_ATTACHES, WARMUP,
                     KiB, MiB, NBDKIT, ratio, size_name)

LARGEBLOCK = "largeblock-"


def best_memory(cell):
    """The better nbdkit memory allocator's result (by throughput)."""
    mem = [cell["servers"][n] for n in MEMORY_PEERS]
    return max(mem, key=lambda r: r["mibs"])


def memory_cpu(cell):
    """The lower CPU s/GiB of the two nbdkit memory allocators."""
    return min(cell["servers"][n]["cpu_per_gib"] for n in MEMORY_PEERS)


def row_key(cell):
    return "%s %s x%d" % (cell["rw"], size_name(cell["bs"]), cell["conns"])


def matrix_table(cells):
    lines = [
        "| pattern | bs | conns | server | MiB/s | IOPS | CPU s/GiB | "
        "vs best memory | CPU vs memory | vs null |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for c in cells:
        best, null = best_memory(c), c["servers"]["null"]
        for n, r in c["servers"].items():
            lines.append("| %s | %s | %d | %s | %.0f | %.0f | %.3f | %.2f | "
                         "%.2f | %.2f |" % (
                             c["rw"], size_name(c["bs"]), c["conns"], n,
                             r["mibs"], r["iops"], r["cpu_per_gib"],
                             ratio(r["mibs"], best["mibs"]),
                             ratio(r["cpu_per_gib"], memory_cpu(c)),
                             ratio(r["mibs"], null["mibs"])))
    return lines


def against_memory_table(cells):
    """One line per row: each largeblock geometry and the blocksize-policy
    peer against the better nbdkit memory allocator, throughput / CPU."""
    subjects = []
    for c in cells:
        for n in c["servers"]:
            if (n.startswith(LARGEBLOCK) or n == POLICY) and \
                    n not in subjects:
                subjects.append(n)
    lines = ["Each row's throughput against the better `nbdkit memory` "
             "allocator's, then its server CPU s/GiB against the lower of "
             "the two allocators' (target: at or above 1.00, then at or "
             "below 1.00); `-` where a geometry refuses the request size.",
             "",
             "| pattern | bs | conns | better memory | " +
             " | ".join(n[len(LARGEBLOCK):] if n.startswith(LARGEBLOCK)
                        else n for n in subjects) + " |",
             "| --- | --- | --- | --- |" + " ---: |" * len(subjects)]
    for c in cells:
        best = max(MEMORY_PEERS, key=lambda n: c["servers"][n]["mibs"])
        row = []
        for n in subjects:
            r = c["servers"].get(n)
            row.append("-" if r is None else "%.2f / %.2f" % (
                ratio(r["mibs"], c["servers"][best]["mibs"]),
                ratio(r["cpu_per_gib"], memory_cpu(c))))
        lines.append("| %s | %s | %d | %s | %s |" % (
            c["rw"], size_name(c["bs"]), c["conns"], best, " | ".join(row)))
    return lines


def copy_floor(cell, copy_cost):
    """CPU s/GiB no server that copies each byte once can go below:
    nbdkit null's (protocol, no copy) plus one flat memcpy per byte."""
    flat = [c["flat_read_us" if "read" in cell["rw"] else "flat_write_us"]
            for c in copy_cost]
    return cell["servers"]["null"]["cpu_per_gib"] + min(flat) * 1024 / 1e6


def targets(cells, copy_cost=None):
    """One line per largeblock result against the issue's targets."""
    worst_mem, worst_null, worst_cpu, all_cpu = [], [], [], []
    for c in cells:
        best, null = best_memory(c), c["servers"]["null"]
        best_cpu = memory_cpu(c)
        for n, r in c["servers"].items():
            if not n.startswith(LARGEBLOCK):
                continue
            key = "%s %s" % (row_key(c), n)
            worst_mem.append((r["mibs"] / best["mibs"], key))
            all_cpu.append((r["cpu_per_gib"] / best_cpu, key))
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
    if all_cpu:
        hi = max(all_cpu)
        out.append("- Server CPU per GiB vs the lower of the two memory "
                   "allocators': %d of %d results at or below 1.00; highest "
                   "%.2f (%s); median %.2f." % (
                       sum(1 for r, _ in all_cpu if r <= 1.0), len(all_cpu),
                       hi[0], hi[1],
                       statistics.median(r for r, _ in all_cpu)))
    out += policy_line(cells)
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
            if 0.85 * memory_cpu(c) < copy_floor(c, copy_cost):
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


def policy_line(cells):
    """nbdkit's blocksize-policy filter over memory, what a user would
    pick instead: against memory, and largeblock's geometry like it
    against it."""
    rows = [c for c in cells if POLICY in c["servers"]]
    if not rows:
        return []
    own = [ratio(c["servers"][POLICY]["mibs"], best_memory(c)["mibs"])
           for c in rows]
    line = ("- `%s` vs the better memory allocator: median %.2f (%.2f to "
            "%.2f)" % (POLICY, statistics.median(own), min(own), max(own)))
    lb = LARGEBLOCK + "16k/4k"
    vs = [(ratio(c["servers"][lb]["mibs"], c["servers"][POLICY]["mibs"]),
           row_key(c)) for c in rows if lb in c["servers"]]
    if vs:
        line += ("; %s vs it: %d of %d results at or above 1.00, lowest "
                 "%.2f (%s)" % (lb, sum(1 for r, _ in vs if r >= 1.0),
                                len(vs), min(vs)[0], min(vs)[1]))
    return [line + "."]


def baseline_label(b):
    """How the report names the baseline: REV (its commit) or its .so."""
    if "rev" in b:
        return "%s (%s)" % (b["rev"], b["commit"][:12])
    return "the plugin `%s`" % b["plugin"]


def since_pairs(cells):
    """(cell, geometry, now, then) for each largeblock result that has a
    baseline result beside it."""
    out = []
    for c in cells:
        for n, r in c["servers"].items():
            then = c["servers"].get(BASELINE + n[len(LARGEBLOCK):])
            if n.startswith(LARGEBLOCK) and then:
                out.append((c, n[len(LARGEBLOCK):], r, then))
    return out


def since_report(res):
    """The section on largeblock against the --baseline build."""
    b, pairs = res["baseline"], since_pairs(res["cells"])
    name = b.get("rev", "baseline")
    lines = ["", "## Since the last release", "",
             "This checkout's largeblock against %s, each geometry served "
             "by both builds, in the same run and rotation as the servers "
             "above (`%s...` rows in the throughput table).  Above 1.00 "
             "the throughput is higher now; the CPU ratio is the server's "
             "CPU s/GiB now over then, below 1.00 cheaper now." % (
                 baseline_label(b), BASELINE), ""]
    if not pairs:
        return lines + ["No row had both builds."]
    mibs = [(ratio(now["mibs"], then["mibs"]), "%s %s" % (row_key(c), g))
            for c, g, now, then in pairs]
    cpu = [(ratio(now["cpu_per_gib"], then["cpu_per_gib"]),
            "%s %s" % (row_key(c), g)) for c, g, now, then in pairs]
    lines += ["- Throughput since %s: median %.2f; lowest %.2f (%s); %d of "
              "%d results at or above 0.95." % (
                  name, statistics.median(r for r, _ in mibs), min(mibs)[0],
                  min(mibs)[1], sum(1 for r, _ in mibs if r >= 0.95),
                  len(mibs)),
              "- Server CPU per GiB since %s: median %.2f; highest %.2f "
              "(%s)." % (name, statistics.median(r for r, _ in cpu),
                         max(cpu)[0], max(cpu)[1]),
              "",
              "| pattern | bs | conns | geometry | MiB/s | %s MiB/s | "
              "since %s | CPU s/GiB | %s CPU s/GiB | CPU since %s |" % (
                  name, name, name, name),
              "| --- | --- | --- | --- |" + " ---: |" * 6]
    for c, g, now, then in pairs:
        lines.append("| %s | %s | %d | %s | %.0f | %.0f | %.2f | %.3f | "
                     "%.3f | %.2f |" % (
                         c["rw"], size_name(c["bs"]), c["conns"], g,
                         now["mibs"], then["mibs"],
                         ratio(now["mibs"], then["mibs"]),
                         now["cpu_per_gib"], then["cpu_per_gib"],
                         ratio(now["cpu_per_gib"], then["cpu_per_gib"])))
    return lines


def threads_note(res):
    """The sentence on nbdkit's --threads in the matrix (none in a report
    from a run that did not record them)."""
    t = res.get("threads")
    if not t:
        return ""
    if t["value"] is None:
        return ("  nbdkit ran with its default threads (16 per connection, "
                "%s) for every server; on few CPUs these thrash, so the "
                "figures swing from run to run." % t["why"])
    return ("  nbdkit ran with `--threads=%d` (%s) for every server: on few "
            "CPUs nbdkit's default of 16 threads per connection thrash, "
            "and the same value for every server keeps the comparison "
            "fair." % (t["value"], t["why"]))


def policy_note(res):
    """What the blocksize-policy peer runs, from its command line."""
    cmd = res.get("cmdlines", {}).get(POLICY)
    if not cmd or "-P" not in cmd:
        return ""
    args = [a for a in cmd[cmd.index("-P") + 2:]
            if not a.startswith("--threads")]
    return ("  `%s` is `nbdkit %s`: nbdkit's own filter advertising "
            "largeblock 16k/4k's block sizes and refusing requests that "
            "break them, what a user would pick instead." % (
                POLICY, " ".join(args)))


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


def wcache_report(wc):
    """The section on write-cache=volatile against write-cache=none."""
    none, vol = "largeblock write-cache=none", "largeblock write-cache=volatile"
    lines = ["", "## The volatile write cache", "",
             "largeblock 16k/4k with `write-cache=none` and with "
             "`write-cache=volatile` (its default `write-cache-size`), "
             "against `nbdkit memory`; fio's nbd engine, iodepth 32, %g s "
             "per run, %d repetitions with the servers interleaved and "
             "rotated; medians.  'Flush every 16' is fio's `--fsync=16`: "
             "each job flushes after every 16 writes, which makes the cache "
             "write back what it holds.  Target: volatile at or above 0.80 "
             "of none on random 16k writes.  The cache copies every byte "
             "twice, into its buffer and at the flush into the disk, where "
             "no cache copies it once: on 1M writes, where that copy is "
             "nearly all the server's work, expect about twice the CPU per "
             "GiB and a little over half the throughput; on 16k writes the "
             "request's own cost hides it." % (wc["runtime"], wc["reps"]),
             ""]
    for row in wc["rows"]:
        if row["pattern"] == "randwrite 16k":
            sv = row["servers"]
            lines.append("- randwrite 16k x%d: volatile / none %.2f "
                         "(target >= 0.80)." % (
                             row["conns"],
                             ratio(sv[vol]["mibs"], sv[none]["mibs"])))
    lines += ["", "| pattern | conns | server | MiB/s | CPU s/GiB "
              "| vs write-cache=none | vs best memory |",
              "| --- | --- | --- |" + " ---: |" * 4]
    for row in wc["rows"]:
        sv = row["servers"]
        best = max((sv[n] for n in MEMORY_PEERS), key=lambda r: r["mibs"])
        for n, r in sv.items():
            lines.append("| %s | %d | %s | %.0f | %.3f | %.2f | %.2f |" % (
                row["pattern"], row["conns"], n, r["mibs"],
                r["cpu_per_gib"], ratio(r["mibs"], sv[none]["mibs"]),
                ratio(r["mibs"], best["mibs"])))
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
             "it moved.  Disks are %s, of which %s is prefilled and used."
             "%s%s" % (
                 res["runtime"], res["reps"], size_name(res["disk"]),
                 size_name(res["region"]), threads_note(res),
                 policy_note(res)), "",
             "## Targets", ""] + targets(
            res["cells"], res.get("copy_cost")) + [
                "", "## Throughput", ""] + against_memory_table(
                    res["cells"]) + [""] + matrix_table(res["cells"])
        if res.get("baseline"):
            lines += since_report(res)
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
    if res.get("wcache"):
        lines += wcache_report(res["wcache"])
    if res.get("limit"):
        lines += limit_report(res["limit"])
    if res.get("kernel"):
        lines += kernel_report(res["kernel"])
    return "\n".join(lines) + "\n"


def write_report(res, output, partial):
    text = report(res)
    if partial and os.path.exists(output):
        with open(output) as f:
            text = merge_report(text, f.read())
    with open(output, "w") as f:
        f.write(text)
