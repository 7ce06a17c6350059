# SPDX-License-Identifier: BSD-3-Clause
"""A backing file that shrinks while it is served (file=).

The file of a 4 MiB disk is truncated to 1 MiB behind the server's back.
Then, on the same connection:
- a read that lies past the new end of the file fails with EIO, again on
  a second try, and so does one that starts before the end and crosses
  it; the server says so in one log line, not one per request;
- a read inside the remaining 1 MiB still returns the data written there;
- a write past the end succeeds and extends the file again (as nbdkit's
  file plugin does); it reads back, and the gap it leaves between the old
  end and the write reads as zeros.
The same is checked with direct=on and misaligned=allow (a write that
needs a read-modify-write of units past the end of the file).
"""
import errno
import os
import tempfile

import lbtest

KiB = 1024
MiB = 1024 * KiB


def check(tmp, *extra):
    path = os.path.join(tmp, "shrink.img")
    with lbtest.Server("file=" + path, "size=4M", "blksize=16k",
                       "logical-blksize=4k", *extra) as srv:
        h = srv.connect()
        data = lbtest.pattern(4 * MiB, 1)
        h.pwrite(data, 0)
        h.flush()
        os.truncate(path, 1 * MiB)

        for _ in range(2):
            lbtest.expect_errno(errno.EIO, "read at 3M after shrink",
                                h.pread, 64 * KiB, 3 * MiB)
        lbtest.expect_errno(errno.EIO, "read across the new end",
                            h.pread, 64 * KiB, 1 * MiB - 16 * KiB)
        assert h.pread(64 * KiB, 0) == data[:64 * KiB], \
            "data before the new end changed"
        assert srv.alive(), "server died"
        log = srv.stderr()
        lines = [l for l in log.splitlines() if "shorter than the disk" in l]
        assert len(lines) == 1, "expected one log line, got %r" % log
        assert "Input/output error" not in log, \
            "EIO past the end logged per request: %r" % log

        new = lbtest.pattern(20 * KiB, 2)
        h.pwrite(new, 3 * MiB + 4 * KiB)
        assert os.stat(path).st_size >= 3 * MiB + 24 * KiB, \
            "the write did not extend the file"
        assert h.pread(20 * KiB, 3 * MiB + 4 * KiB) == new, "write lost"
        assert h.pread(64 * KiB, 2 * MiB) == bytes(64 * KiB), \
            "the gap after the old end is not zeros"
        assert h.pread(4 * KiB, 3 * MiB) == bytes(4 * KiB), \
            "the unit's head before the write is not zeros"
    os.unlink(path)


def main():
    tmp = tempfile.mkdtemp(prefix="lbshrink.")
    try:
        check(tmp)
        check(tmp, "direct=on", "misaligned=allow")
    finally:
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)


lbtest.run(main)
