#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""An allocation failure is ENOMEM for that request only.

nbdkit runs with tests/helpers/fail-mmap.c preloaded: while a flag file
exists, anonymous mmaps of 4 MiB or more fail with ENOMEM.  With blksize=4M
each new folio needs its own mapping, so:
- a write needing a new folio fails with ENOMEM and the folio stays a
  hole (reads as zeros, reported as a hole);
- at the same time, reads, overwrites of allocated folios, trims and a
  second connection all work: only the request that needed memory fails;
- a multi-folio write that fails at its second (new) folio keeps what it
  wrote into its first (allocated) folio -- the documented behaviour
  (docs/testing.md): folios are written in order and not rolled back;
- once memory is back, the same write succeeds.
"""
import errno
import os
import shutil
import tempfile

import nbd

import lbtest

FOLIO = 4 << 20
SIZE = 64 << 20
SHIM = os.path.join(os.environ.get("abs_top_builddir", "."),
                    "tests", "helpers", ".libs", "libfail-mmap.so")


def main():
    if not os.path.exists(SHIM):
        raise AssertionError("the mmap shim %s was not built" % SHIM)
    if os.environ.get("LB_VALGRIND"):
        lbtest.skip("valgrind replaces mmap itself; the shim cannot work")
    if os.environ.get("NBDKIT_PRELOAD"):
        lbtest.skip("the sanitizer runtime must own mmap; the shim cannot "
                    "be preloaded with it")
    flagdir = tempfile.mkdtemp(prefix="lbtest-enomem.")
    flag = os.path.join(flagdir, "out-of-memory")
    env = {"LD_PRELOAD": SHIM, "LB_FAIL_MMAP_FLAG": flag}
    with lbtest.Server("size=%d" % SIZE, "blksize=%d" % FOLIO,
                       "logical-blksize=4096", "max-request=16M",
                       env=env) as s:
        try:
            exercise(s, flag)
        finally:
            shutil.rmtree(flagdir, ignore_errors=True)


def exercise(s, flag):
    h = s.connect()
    first = lbtest.pattern(FOLIO, 1)
    h.pwrite(first, 0)                     # folio 0 allocated
    open(flag, "w").close()                # from now on: out of memory

    new = lbtest.pattern(FOLIO, 2)
    lbtest.expect_errno(errno.ENOMEM, "write to a new folio", h.pwrite,
                        new, FOLIO)
    assert h.pread(FOLIO, FOLIO) == bytes(FOLIO), \
        "the refused write changed the new folio"
    assert lbtest.extents(h, FOLIO, FOLIO)[0][2] & nbd.STATE_HOLE, \
        "the refused write left a folio allocated"

    # Everything that needs no new memory still works, on any connection.
    other = s.connect()
    assert other.pread(FOLIO, 0) == first, "folio 0 lost"
    again = lbtest.pattern(FOLIO, 3)
    other.pwrite(again, 0)
    h.trim(FOLIO, 8 * FOLIO)
    h.zero(FOLIO, 8 * FOLIO)
    assert h.pread(FOLIO, 0) == again, "overwrite at ENOMEM time lost"

    # A write over folio 0 (allocated) and folio 1 (new) fails at folio 1;
    # folio 0 keeps the part written before the failure.
    both = lbtest.pattern(2 * FOLIO, 4)
    lbtest.expect_errno(errno.ENOMEM, "write over an allocated and a new "
                        "folio", h.pwrite, both, 0)
    assert h.pread(FOLIO, 0) == both[:FOLIO], \
        "the first folio of a write failing at its second differs from " \
        "the documented behaviour (written, not rolled back)"
    assert h.pread(FOLIO, FOLIO) == bytes(FOLIO), \
        "the folio that could not be allocated is not a hole"

    os.unlink(flag)                        # memory is back
    h.pwrite(new, FOLIO)
    assert h.pread(FOLIO, FOLIO) == new, "write after recovery lost"
    assert s.alive(), "nbdkit died: %s" % s.stderr()


lbtest.run(main)
