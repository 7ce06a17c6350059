# SPDX-License-Identifier: BSD-3-Clause
"""largeblock side-by-side benchmark.

Drives largeblock (4k/4k, 16k/4k, 16k/16k and 64k/4k) and its peers --
nbdkit memory (allocator=sparse and allocator=malloc), nbdkit memory
behind nbdkit's own blocksize-policy filter set up like largeblock
16k/4k, and nbdkit null, the protocol ceiling that copies no data --
with fio's nbd engine over Unix sockets, with the same client settings
and the same nbdkit --threads for all (--threads; by default 2 per CPU,
within 4 to 16: on few CPUs nbdkit's own 16 per connection thrash).
With --baseline=REV it also serves the plugin of another revision of
this repository, built in a temporary git worktree (baseline.py), or
with --baseline-plugin=PATH one built before, in every geometry, and
reports largeblock against it row by row.

The machine this runs on is shared and noisy, so only
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

One module per section (matrix, memory, scale, huge, copy, file, trim,
limit, kernel: --only's names), run.py running them in order, report.py
writing the report, main.py the command line, baseline.py building the
baseline; bench/largeblock-bench.py
is the command.  Servers are tests/lbtest's Server (server.py).

Environment: LARGEBLOCK_PLUGIN (the plugin .so; default the one built
in this checkout, never an installed one by name), NBDKIT, LARGEBLOCK_RUN
(default server/run/largeblock-run), LARGEBLOCK_VM (default
server/vm/largeblock-vm), LARGEBLOCK_VM_CACHE (as largeblock-vm's),
LARGEBLOCK_BENCH_TMPFS (a tmpfs directory, default /dev/shm); run with a
python3 that has the libnbd bindings.
"""
