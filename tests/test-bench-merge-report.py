#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A partial benchmark run (make bench BENCH_ARGS='--only ...') rewrites
only the sections it produced in docs/performance.md: every other section
is kept, word for word and in its place, and says which run it comes
from.  This holds when the partial run measured the throughput matrix
(the report's Targets and Throughput) too, which once rewrote the whole
report down to those two sections.  No benchmark is run: the bench's own
merge_report() (bench/lbbench/report.py) is called on fixture reports."""
import os
import sys

SRCDIR = os.environ.get("abs_top_srcdir",
                        os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(SRCDIR, "bench"))
from lbbench import report as bench  # noqa: E402  (after the path above)


def report(command, machine, sections):
    """A report as the bench writes it: preamble, then '## ' sections,
    each a list of paragraphs."""
    text = ("# largeblock performance\n\nMachine: %s.\n\n"
            "Reproduce: `%s`.\n\nThe matrix's settings (%s).\n" % (
                machine, command, command))
    for heading, paragraphs in sections:
        text += "\n## %s\n\n%s\n" % (heading, "\n\n".join(paragraphs))
    return text


FULL_MACHINE = "2 cores (x86_64), Linux A"
KERNEL_NOTE = ("From a separate run: `make bench BENCH_ARGS='--only "
               "kernel'`; machine: 2 cores (x86_64), Linux B.")
OLD = report("make bench", FULL_MACHINE, [
    ("Targets", ["- old target"]),
    ("Throughput", ["| old | row |"]),
    ("Memory", ["old memory", "| a | b |"]),
    ("Scale", ["old scale"]),
    ("Trim and zero", ["old trim"]),
    ("Kernel device", [KERNEL_NOTE, "old kernel",
                       "### In a guest under TCG (largeblock-vm)",
                       "old guest"]),
])
ORDER = ["Targets", "Throughput", "Memory", "Scale", "Trim and zero",
         "Kernel device"]


def sections(text):
    return bench.split_sections(text)


def expect(cond, what, text):
    if not cond:
        print("FAIL: %s; the merged report:\n%s" % (what, text))
        sys.exit(1)


def old_section(heading):
    return dict(sections(OLD)[1])[heading]


def check_matrix_only():
    """--only matrix: Targets and Throughput replaced, the preamble is
    this run's, every other section kept and noted as the full run's."""
    cmd = "make bench BENCH_ARGS='--only matrix --reps 5'"
    new = report(cmd, "2 cores (x86_64), Linux C", [
        ("Targets", ["- new target"]), ("Throughput", ["| new | row |"])])
    got = bench.merge_report(new, OLD)
    pre, secs = sections(got)
    expect([h for h, _ in secs] == ORDER,
           "sections lost or out of order: %s" % [h for h, _ in secs], got)
    expect(pre == sections(new)[0], "the preamble is not the matrix run's",
           got)
    by = dict(secs)
    for h in ("Targets", "Throughput"):
        expect(by[h] == dict(sections(new)[1])[h], "%s not replaced" % h, got)
    full_note = ("From a separate run: `make bench`; machine: %s." %
                 FULL_MACHINE)
    for h in ("Memory", "Scale", "Trim and zero"):
        expect(by[h] == old_section(h).replace(
            "\n\n", "\n\n" + full_note + "\n\n", 1),
            "%s not kept with the full run's note" % h, got)
    expect(by["Kernel device"] == old_section("Kernel device"),
           "the kernel section, which names its run, was changed", got)


def check_one_section():
    """--only trim: the Trim section replaced in its place and noted as
    this run's; the preamble and every other section unchanged."""
    cmd = "make bench BENCH_ARGS='--only trim'"
    new = report(cmd, "machine D", [("Trim and zero", ["new trim"])])
    got = bench.merge_report(new, OLD)
    pre, secs = sections(got)
    expect([h for h, _ in secs] == ORDER, "sections lost or moved", got)
    expect(pre == sections(OLD)[0], "the old preamble was not kept", got)
    by = dict(secs)
    expect(by["Trim and zero"] == "## Trim and zero\n\nFrom a separate run: "
           "`%s`; machine: machine D.\n\nnew trim" % cmd,
           "the trim section is not the new one with its note", got)
    for h in ORDER:
        if h != "Trim and zero":
            expect(by[h] == old_section(h), "%s changed" % h, got)


def check_new_section_placed():
    """A section the old report lacks goes after the one it follows in
    this run's report, not at the end."""
    new = report("make bench BENCH_ARGS='--only trim --only limit'", "E", [
        ("Trim and zero", ["new trim"]),
        ("Peak memory under memory-limit", ["new limit"])])
    got = bench.merge_report(new, OLD)
    heads = [h for h, _ in sections(got)[1]]
    want = ORDER[:5] + ["Peak memory under memory-limit", "Kernel device"]
    expect(heads == want, "sections: %s" % heads, got)


check_matrix_only()
check_one_section()
check_new_section_placed()
print("PASS")
