#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""statsfile= gets an exact, valid JSON account of the session at exit.

After a known sequence of requests the file written when nbdkit exits is
valid JSON, no temporary file is left beside it, and:
- "geometry" echoes size, blksize, logical_blksize, max_request and the
  misaligned policy;
- "requests" and "bytes" count, type by type (read, write, trim, zero,
  cache, extents, flush), every request the plugin saw and the bytes of
  each one served (a refused one counts as a request of 0 bytes);
- "errors" counts the refused ones: reads/writes above max-request
  (EINVAL), a NO_HOLE|FAST_ZERO zero (ENOTSUP), and under
  misaligned=error every misaligned request;
- "misaligned" counts misaligned requests by type, both when they are
  served (misaligned=allow) and when they are refused (misaligned=error);
- folios_allocated is the number of allocated folios at exit (as the
  allocation map showed it), folios_peak the largest number ever
  allocated, bytes_resident = folios_allocated * blksize, and
  metadata_bytes is a positive integer;
- a relative statsfile path is resolved when the server starts: nbdkit
  started in the background (which changes directory to /) from a
  private directory writes the file in that directory, not in /.
"""
import errno
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import nbd

import lbtest

KiB = 1024
MiB = 1024 * KiB
TYPES = ["read", "write", "trim", "zero", "cache", "extents", "flush"]


class Tally:
    """Sends requests and keeps the counters the statsfile must show."""

    def __init__(self, h, folio):
        self.h = h
        self.folio = folio
        self.want = {k: dict.fromkeys(TYPES, 0)
                     for k in ("requests", "bytes", "misaligned", "errors")}
        self.peak = 0
        self.allocated = 0

    def _count(self, t, nbytes, misaligned=False, err=None):
        self.want["requests"][t] += 1
        if misaligned:
            self.want["misaligned"][t] += 1
        if err is None:
            self.want["bytes"][t] += nbytes
        else:
            self.want["errors"][t] += 1

    def do(self, t, call, nbytes, misaligned=False, err=None):
        """Run call(); it must succeed, or fail with errno err."""
        self._count(t, nbytes, misaligned, err)
        try:
            call()
        except nbd.Error as e:
            assert err is not None, "%s of %d failed: %s" % (t, nbytes,
                                                              e.string)
            assert e.errnum == err, "%s of %d: expected %s, got %s" % (
                t, nbytes, errno.errorcode[err], e.string)
            return
        assert err is None, "%s of %d succeeded, expected %s" % (
            t, nbytes, errno.errorcode[err])

    def read(self, n, off, **kw):
        self.do("read", lambda: self.h.pread(n, off), n, **kw)

    def write(self, n, off, flags=0, **kw):
        buf = lbtest.pattern(n, n + off)
        self.do("write", lambda: self.h.pwrite(buf, off, flags), n, **kw)
        self.sample()

    def trim(self, n, off, **kw):
        self.do("trim", lambda: self.h.trim(n, off), n, **kw)
        self.sample()

    def zero(self, n, off, flags=0, **kw):
        self.do("zero", lambda: self.h.zero(n, off, flags), n, **kw)
        self.sample()

    def cache(self, n, off, **kw):
        self.do("cache", lambda: self.h.cache(n, off), n, **kw)

    def flush(self):
        self.do("flush", lambda: self.h.flush(), 0)

    def extents(self, n, off, flags=0, **kw):
        out = []
        self.do("extents",
                lambda: out.extend(lbtest.extents(self.h, n, off, flags)),
                n, **kw)
        return out

    def sample(self):
        """Allocated folios now (itself one extents request of the whole
        disk); single connection, so the peak is the largest sample."""
        size = self.h.get_size()
        n = sum(length for _, length, flags in self.extents(size, 0)
                if not flags & nbd.STATE_HOLE)
        assert n % self.folio == 0 or n == size, "extents not per folio"
        self.allocated = -(-n // self.folio)
        self.peak = max(self.peak, self.allocated)


def check_stats(path, tally, geometry, folio):
    assert not os.path.exists(path + ".tmp"), "statsfile .tmp left behind"
    with open(path) as f:
        text = f.read()
    try:
        stats = json.loads(text)
    except ValueError as e:
        raise AssertionError("statsfile is not valid JSON (%s):\n%s" % (
            e, text))
    assert stats.get("geometry") == geometry, \
        "geometry %r, want %r" % (stats.get("geometry"), geometry)
    for key, want in tally.want.items():
        assert stats.get(key) == want, "%s: %r, want %r" % (
            key, stats.get(key), want)
    assert stats["folios_allocated"] == tally.allocated, \
        "folios_allocated %r, want %d" % (stats["folios_allocated"],
                                          tally.allocated)
    assert stats["folios_peak"] == tally.peak, \
        "folios_peak %r, want %d" % (stats["folios_peak"], tally.peak)
    assert stats["bytes_resident"] == tally.allocated * folio, \
        "bytes_resident %r, want %d" % (stats["bytes_resident"],
                                        tally.allocated * folio)
    assert isinstance(stats.get("metadata_bytes"), int) and \
        stats["metadata_bytes"] > 0, \
        "metadata_bytes %r" % stats.get("metadata_bytes")
    return stats


def session(tmp, policy, requests):
    path = os.path.join(tmp, "stats-%s.json" % policy)
    folio = 16 * KiB
    with lbtest.Server("size=4M", "blksize=16k", "logical-blksize=4k",
                       "max-request=1M", "misaligned=" + policy,
                       "statsfile=" + path) as s:
        h = s.connect()
        try:
            tally = Tally(h, folio)
            requests(tally)
        finally:
            lbtest.close(h)
        rc = s.stop()
        assert rc == 0, "nbdkit (%s) exited with %r: %s" % (
            policy, rc, s.last_stderr)
    geometry = {"size": 4 * MiB, "blksize": folio, "logical_blksize": 4096,
                "max_request": MiB, "misaligned": policy}
    check_stats(path, tally, geometry, folio)


def allow_sequence(t):
    bad = {"misaligned": True}
    t.write(4096, 0)
    t.write(16 * KiB, 64 * KiB)
    t.write(64 * KiB, 128 * KiB, nbd.CMD_FLAG_FUA)
    t.write(MiB, 2 * MiB)                       # exactly max-request
    t.write(1000, 100, **bad)
    t.write(2 * MiB, 0, err=errno.EINVAL)       # above max-request
    t.read(4096, 0)
    t.read(MiB, MiB)
    t.read(513, 4096, **bad)
    t.read(MiB + 4096, 0, err=errno.EINVAL)
    t.trim(16 * KiB, 64 * KiB)
    t.trim(5000, 7, **bad)
    t.trim(MiB, 2 * MiB)                        # frees 64 folios
    t.zero(16 * KiB, 128 * KiB)
    t.zero(4096, 3 * MiB, nbd.CMD_FLAG_NO_HOLE)
    t.zero(4096, 3 * MiB + 4096,
           nbd.CMD_FLAG_NO_HOLE | nbd.CMD_FLAG_FAST_ZERO, err=errno.ENOTSUP)
    t.zero(3 * MiB, 0, nbd.CMD_FLAG_FAST_ZERO)  # may trim: fast, frees
    t.zero(700, 3 * MiB + 3, **bad)
    t.cache(4096, 0)
    t.cache(1000, 3, **bad)
    t.extents(4 * MiB, 0)
    t.extents(4 * MiB, 0, nbd.CMD_FLAG_REQ_ONE)
    t.extents(1000, 1, **bad)
    t.flush()
    t.flush()
    t.write(64 * KiB, MiB)                      # end with 5 folios
    assert t.allocated == 5, "test bug: %d folios" % t.allocated


def error_sequence(t):
    bad = {"misaligned": True, "err": errno.EINVAL}
    t.write(32 * KiB, 0)
    t.write(4096, 512, **bad)
    t.write(4097, 8192, **bad)
    t.write(MiB + 4096, 0, err=errno.EINVAL)
    t.read(4096, 0)
    t.read(4096, 100, **bad)
    t.read(MiB + 4096, 0, err=errno.EINVAL)
    t.trim(4096, 512, **bad)
    t.trim(600, 0, **bad)
    t.trim(16 * KiB, 0)
    t.zero(4096, 1, **bad)
    t.zero(4096, 16 * KiB, nbd.CMD_FLAG_NO_HOLE)
    t.cache(512, 0, **bad)
    t.extents(100, 0, **bad)
    t.extents(4096, 4095, **bad)
    t.flush()


def check_relative_path(tmp):
    """Background nbdkit chdirs to /; the relative path must already be
    absolute by then."""
    name = "lbtest-stats-%d.json" % os.getpid()
    wrong = os.path.join("/", name)
    right = os.path.join(tmp, name)
    sock = os.path.join(tmp, "bg.sock")
    pidfile = os.path.join(tmp, "bg.pid")
    assert not os.path.exists(wrong), "%s exists before the test" % wrong
    errlog = os.path.join(tmp, "bg.err")
    # Output to a file: the daemon could keep a pipe open.
    with open(errlog, "w") as err:
        r = subprocess.run([lbtest.NBDKIT, "-U", sock, "-P", pidfile,
                            lbtest.PLUGIN, "size=1M", "statsfile=" + name],
                           cwd=tmp, stdin=subprocess.DEVNULL,
                           stdout=err, stderr=err, timeout=60)
    with open(errlog) as err:
        assert r.returncode == 0, "background nbdkit failed: %s" % err.read()
    pid = None
    try:
        deadline = time.monotonic() + 30        # a hang guard, not a check
        while pid is None:
            try:
                with open(pidfile) as f:
                    pid = int(f.read().strip() or "0") or None
            except FileNotFoundError:
                pass
            assert pid or time.monotonic() < deadline, "no pid file"
            time.sleep(0.01)
        h = nbd.NBD()
        h.connect_unix(sock)
        h.pwrite(b"\1" * 4096, 0)
        h.shutdown()
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while pid_alive(pid):
            assert time.monotonic() < deadline, "nbdkit did not exit"
            time.sleep(0.01)
        pid = None
        assert not os.path.exists(wrong), \
            "relative statsfile was written relative to / (%s)" % wrong
        assert os.path.exists(right), \
            "relative statsfile %s not written in the startup directory" % (
                name)
        stats = lbtest.read_stats(right)
        assert stats["requests"]["write"] == 1 and \
            stats["folios_allocated"] == 1, "relative statsfile: %r" % stats
    finally:
        if pid is not None and pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
        if os.path.exists(wrong):
            os.unlink(wrong)


def pid_alive(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("State:"):
                    return "Z" not in line.split()[1]
    except FileNotFoundError:
        return False
    return True


def main():
    tmp = tempfile.mkdtemp(prefix="lbtest-stats.")
    try:
        session(tmp, "allow", allow_sequence)
        session(tmp, "error", error_sequence)
        check_relative_path(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


lbtest.run(main)
