#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: the workload of the XFS crash tests (largeblock-run
# --crash-test).  In $LARGEBLOCK_MNT it writes files of varied sizes,
# fsyncs every other one and, once fsync returned, appends its name and
# SHA-256 to the manifest $CRASH_MANIFEST (outside the disk): those
# files must be intact after any power cut.  The others are written to
# the disk without a flush, so they sit in its volatile write cache.
#
#   CRASH_FILES    how many files (default 40)
#   CRASH_CUT_AT   after this many fsyncs, write the next unflushed file
#                  and CRASH_BURST (default 4) more in a row, cut the
#                  power itself through $LARGEBLOCK_CUT and keep writing
#                  (0: never; the cut then comes from power-cut-after=
#                  or from largeblock-run when the workload ends)
#   CRASH_SEED     the seed of the file contents and sizes
#   CRASH_DIR      the directory it makes in the mount (default d), so
#                  that several can run at once on one manifest
#
# After the cut every write and fsync fails (the filesystem shuts
# down): the workload stops at the first error and exits 0, since the
# failure is what a power cut does.
import ctypes
import hashlib
import os
import random
import sys

mnt = os.environ["LARGEBLOCK_MNT"]
manifest = os.environ["CRASH_MANIFEST"]
files = int(os.environ.get("CRASH_FILES", "40"))
cut_at = int(os.environ.get("CRASH_CUT_AT", "0"))
burst = int(os.environ.get("CRASH_BURST", "4"))
top = os.environ.get("CRASH_DIR", "d")
rng = random.Random(int(os.environ.get("CRASH_SEED", "1")))

libc = ctypes.CDLL(None, use_errno=True)


def write_back(fd):
    """Write fd's dirty pages to the disk and wait, without a flush
    (sync_file_range WAIT_BEFORE | WRITE | WAIT_AFTER): the data sits
    in the disk's volatile cache."""
    if libc.sync_file_range(fd, ctypes.c_longlong(0), ctypes.c_longlong(0),
                            7) == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


synced = 0
with open(manifest, "a") as man:
    try:
        os.mkdir(os.path.join(mnt, top))
        for i in range(files):
            # Sizes across the 4k..64k block boundaries and beyond.
            size = rng.choice([1, 4095, 4096, 12288, 16384, 20000,
                               65536, 100000, 262144])
            data = rng.randbytes(size)
            name = "%s/f%03d" % (top, i)
            fd = os.open(os.path.join(mnt, name),
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, data)
                if i % 2 == 0:
                    os.fsync(fd)
                else:
                    write_back(fd)
            finally:
                os.close(fd)
            if i % 2 == 0:
                # The directory entry too, so the name survives.
                dfd = os.open(os.path.join(mnt, top), os.O_RDONLY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)
                man.write("%s  %s\n" % (hashlib.sha256(data).hexdigest(),
                                        name))
                man.flush()
                synced += 1
            elif synced == cut_at and cut_at > 0:
                # A burst of unflushed files in a row (no fsync between
                # them flushes the cache), then the cut.
                for b in range(burst):
                    fd = os.open(os.path.join(mnt, "%s/b%03d.%d" % (top, i, b)),
                                 os.O_WRONLY | os.O_CREAT, 0o644)
                    try:
                        os.write(fd, rng.randbytes(rng.choice([4096, 20000,
                                                               65536,
                                                               262144])))
                        write_back(fd)
                    finally:
                        os.close(fd)
                with open(os.environ["LARGEBLOCK_CUT"], "w") as cut:
                    cut.write("cut 1\n")
    except OSError as e:
        print("crash-workload: stopped after %d fsyncs: %s" % (synced, e),
              file=sys.stderr)
