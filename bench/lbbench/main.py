# SPDX-License-Identifier: BSD-3-Clause
"""The command line: checks what the run needs, runs the sections asked
for (run.py) with the teardown on a signal (teardown.py), and writes the
report (report.py).  Options that name nbdkit's threads and the
baseline become the dicts the run and the report read: "threads"
{value (None: nbdkit's own default), why} and "baseline" {rev, commit}
or {plugin}.
"""
import argparse
import json
import os
import shutil
import signal
import sys

from . import __doc__ as package_doc
from .baseline import check_plugin, resolve
from .common import COPY_COST, PLUGIN
from .report import write_report
from .teardown import catch_signals, caught_signal, teardown

ALL_SECTIONS = ["matrix", "memory", "scale", "huge", "copy", "file", "trim",
                "wcache", "limit", "kernel"]


def threads(text):
    """--threads: a number, "default" (nbdkit's own, 16), or unset:
    2 per CPU this process may run on, within 4 to 16."""
    if text is None:
        cpus = len(os.sched_getaffinity(0))
        return {"value": min(16, max(4, 2 * cpus)),
                "why": "2 x %d CPUs, within 4 to 16" % cpus}
    if text == "default":
        return {"value": None, "why": "--threads=default"}
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(
            "'%s': must be a number of threads (1 or more) or 'default'"
            % text)
    return {"value": int(text), "why": "given with --threads"}


def baseline(args):
    if args.baseline is not None:
        return {"rev": args.baseline, "commit": resolve(args.baseline)}
    if args.baseline_plugin is not None:
        return {"plugin": check_plugin(args.baseline_plugin)}
    return None


def main():
    ap = argparse.ArgumentParser(description=package_doc.split("\n\n")[0])
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
    ap.add_argument("--threads", type=threads, metavar="N|default",
                    help="nbdkit's --threads for every server in the "
                    "matrix and the write-cache section (default 2 per CPU, within 4 to 16; 'default': "
                    "nbdkit's own, 16)")
    base = ap.add_mutually_exclusive_group()
    base.add_argument("--baseline", metavar="REV",
                      help="also serve the plugin of git revision REV, "
                      "built in a temporary worktree, in every geometry")
    base.add_argument("--baseline-plugin", metavar="PATH",
                      help="like --baseline, with a plugin .so built before")
    args = ap.parse_args()
    if args.render:
        with open(args.render) as f:
            res = json.load(f)
        if args.command:
            res["command"] = args.command
        write_report(res, args.output, res.get("partial", False))
        return
    sections = list(args.only or ALL_SECTIONS)
    if args.threads is None:
        args.threads = threads(None)
    args.baseline = baseline(args)
    if args.baseline and "matrix" not in sections:
        sys.exit("largeblock-bench: --baseline and --baseline-plugin "
                 "compare the matrix: add --only matrix")
    if shutil.which("fio") is None:
        sys.exit("largeblock-bench: fio is not installed")
    if not os.path.isfile(PLUGIN):
        sys.exit("largeblock-bench: plugin %s: no such file (build it, or "
                 "set LARGEBLOCK_PLUGIN to a plugin .so)" % PLUGIN)
    print("largeblock-bench: serving the plugin " + PLUGIN, file=sys.stderr,
          flush=True)
    if COPY_COST is None and "copy" in sections:
        sections.remove("copy")     # run outside make bench
    progress = (lambda msg: print(msg, file=sys.stderr, flush=True))
    # Imported here, not above: the sections serve through tests/lbtest,
    # which needs the plugin, and --render and the checks above do not.
    from .run import run_sections

    catch_signals()
    try:
        res = run_sections(args, sections, progress)
    except BaseException:
        teardown()
        # A signal ends the run as that signal, even if what it broke
        # first was raised instead (a child killed by the same Ctrl-C).
        signum = caught_signal()
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
