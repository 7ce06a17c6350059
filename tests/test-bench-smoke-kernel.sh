#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The benchmark's kernel section runs: fio on largeblock-run's device
# (nbdfuse + loop), on nbdfuse + loop over nbdkit null and over nbdkit
# memory, and on a loop device over a file, with the servers' CPU per
# GiB, and leaves no loop device, FUSE mount or process behind.
# Skipped only where root, /dev/fuse or loop devices are really missing.
# Where make check-vm can run (QEMU, busybox, socat, nbd-client, and the
# guest kernel in largeblock-vm's cache) its guest rows -- fio in a TCG
# guest on the virtio and nbd paths, largeblock against nbdkit null --
# must be there and parse; elsewhere the report must say why they were
# skipped.  No timing is judged.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/run-functions.sh"
source "$abs_top_srcdir/tests/bench-functions.sh"

export LARGEBLOCK_RUN LARGEBLOCK_BENCH_TMPFS="$tmpdir"
bench_quick kernel
bench_check_vm_rows kernel
bench_heading kernel "Kernel device"
if grep '^skipped: ' "$tmpdir/kernel.md"; then
    fail "the section skipped although root, /dev/fuse and loop are here"
fi
bench_check kernel '
paths = {"largeblock-run", "nbdfuse-null", "nbdfuse-memory", "loop-tmpfs"}
assert d["cells"], "no rows"
for c in d["cells"]:
    assert set(c["servers"]) == paths, c["servers"].keys()
    for n, r in c["servers"].items():
        num(r["mibs"], 1e-3); num(r["iops"], 1e-3)
        if n != "loop-tmpfs":
            num(r["nbdkit_cpu_per_gib"]); num(r["nbdfuse_cpu_per_gib"])
'
assert_nothing_left
if pgrep -f -- "$tmpdir/lbbench" >/dev/null; then
    pgrep -af -- "$tmpdir/lbbench" >&2
    fail "a server, nbdfuse or QEMU the benchmark started remains"
fi
echo PASS
