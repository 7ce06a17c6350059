# SPDX-License-Identifier: BSD-3-Clause
"""One run of the benchmark: the sections asked for, in order, each in
its own module, their results gathered for the report.
"""
import sys

from .common import GiB, KiB, MiB
from .copy import copy_cost_section
from .file import file_section
from .huge import huge_page_section
from .kernel import kernel_section
from .limit import limit_section
from .baseline import build as build_baseline
from .matrix import (BLOCK_SIZES, CONNECTIONS, GEOMETRIES, PATTERNS,
                     QUICK_GEOMETRIES, prefill, run_matrix, start_servers)
from .memory import memory_section
from .report import machine
from .scale import scale_section
from .teardown import private_dir
from .trim import trim_section
from .wcache import wcache_section


def parse_size(text):
    units = {"k": KiB, "m": MiB, "g": GiB}
    unit = units.get(text[-1:].lower())
    return int(text[:-1]) * unit if unit else int(text)


def pick(option, convert, default):
    return [convert(v) for v in option.split(",")] if option else default


def nbdkit_threads_args(threads):
    """nbdkit's options for main's --threads (see main.threads)."""
    value = threads["value"]
    return [] if value is None else ["--threads=%d" % value]


def run_sections(args, sections, progress):
    """The results of SECTIONS with ARGS (main's options)."""
    quick = args.quick
    runtime = args.runtime or (0.3 if quick else 1.0)
    reps = args.reps or (1 if quick else 3)
    disk, region = (64 * MiB, 32 * MiB) if quick else (GiB, 256 * MiB)
    res = {"machine": machine(), "runtime": runtime, "reps": reps,
           "disk": disk, "region": region, "cells": [],
           "partial": bool(args.only),
           "command": args.command or " ".join(
               ["bench/largeblock-bench.py"] + sys.argv[1:])}
    workdir = private_dir("lbbench.")
    if "matrix" in sections:
        res["threads"] = args.threads
        res["baseline"] = baseline = dict(args.baseline or {})
        if "commit" in baseline:
            baseline["plugin"] = build_baseline(
                baseline["rev"], baseline["commit"], progress)
        geoms = QUICK_GEOMETRIES if quick else GEOMETRIES
        servers = start_servers(workdir, disk, geoms,
                                nbdkit_threads_args(args.threads),
                                baseline.get("plugin"))
        res["cmdlines"] = {n: s.cmdline for n, s in servers.items()}
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
    if "wcache" in sections:
        res["wcache"] = wcache_section(
            workdir, disk, region, runtime, reps, quick,
            nbdkit_threads_args(args.threads), progress)
        progress("write cache done")
    if "limit" in sections:
        res["limit"] = limit_section(workdir, runtime if quick else 3,
                                     quick, progress)
        progress("memory limit done")
    if "kernel" in sections:
        res["kernel"] = kernel_section(workdir, runtime if quick else 2,
                                       reps, quick, progress)
        progress("kernel device done")
    return res
