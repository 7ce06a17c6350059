# SPDX-License-Identifier: BSD-3-Clause
"""Shared helpers for largeblock's Python integration tests.

A test starts the just-built plugin under nbdkit in the foreground on a
private Unix socket (Server), talks to it with libnbd with the client's own
strictness switched off (so the *server* has to refuse bad requests), and
always stops the server it started -- and only that one -- on the way out.
Exit status follows automake: 0 pass, 1 fail, 77 skip.

Helper names are tests/functions.sh's words, the same as the shell
tests': requires(program) skips unless it is installed, skip(reason);
Server is the server a test keeps running (the shell's start_server);
expect_THING fails unless it holds.
"""
import errno
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import nbd

PLUGIN = os.environ.get("LARGEBLOCK_PLUGIN")
NBDKIT = os.environ.get("NBDKIT", "nbdkit")

if not PLUGIN or not os.path.exists(PLUGIN):
    sys.exit("LARGEBLOCK_PLUGIN is not set or missing: "
             "run through 'make check'")


# x86_64 ASan's shadow memory and its gap (compiler-rt asan_mapping.h).
ASAN_SHADOW_START, ASAN_SHADOW_END = 0x7fff8000, 0x10007fff8000


def skip(reason):
    print("SKIP:", reason)
    sys.exit(77)


def requires(program):
    if shutil.which(program) is None:
        skip(program + " is not installed")


class Server:
    """nbdkit + largeblock in the foreground; a context manager.

    PARAMS are the plugin's key=value parameters.  For the bench
    (bench/lbbench/server.py), which serves other plugins too and times
    the start: PLUGIN (default the built largeblock), PARENT (the
    directory for the server's own, default $TMPDIR), PREEXEC_FN (for
    Popen), NBDKIT_ARGS (nbdkit's own options, such as --threads or
    --filter, put before the plugin); startup_s is the time from
    spawning nbdkit to its pid file;
    a subclass can wrap _spawn.
    """

    poll_s = 0.01               # how often the start is checked

    def __init__(self, *params, start_timeout=30, env=None, plugin=None,
                 parent=None, preexec_fn=None, nbdkit_args=()):
        self.dir = tempfile.mkdtemp(prefix="lbtest.", dir=parent)
        self.socket = os.path.join(self.dir, "sock")
        self.pidfile = os.path.join(self.dir, "pid")
        self.errlog = os.path.join(self.dir, "stderr")
        self.params = [str(p) for p in params]
        self.handles = []
        verbose = ["-v"] if os.environ.get("LB_VERBOSE") else []
        cmd = [NBDKIT, "-f"] + verbose + [
            "-U", self.socket, "-P", self.pidfile] + list(nbdkit_args) + [
            plugin or PLUGIN] + self.params
        start = time.monotonic()
        with open(self.errlog, "w") as err:
            self._spawn(cmd, err, dict(os.environ, **(env or {})),
                        preexec_fn)
        deadline = start + start_timeout
        while not os.path.exists(self.pidfile):
            if self.proc.poll() is not None:
                self.stop()             # removes the log: use its copy
                raise RuntimeError("nbdkit exited with %d: %s" %
                                   (self.proc.returncode, self.last_stderr))
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("nbdkit did not start")
            time.sleep(self.poll_s)
        self.startup_s = time.monotonic() - start
        self.uri = "nbd+unix:///?socket=" + self.socket

    def _spawn(self, cmd, err, env, preexec_fn):
        """Starts nbdkit as self.proc."""
        self.proc = subprocess.Popen(cmd, stderr=err,
                                     stdin=subprocess.DEVNULL, env=env,
                                     preexec_fn=preexec_fn)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    @property
    def pid(self):
        return self.proc.pid

    def stderr(self):
        with open(self.errlog) as f:
            return f.read()

    def alive(self):
        return self.proc.poll() is None

    def rss_kib(self):
        """The server's resident memory in KiB, without ASan's shadow.

        ASan keeps one shadow byte per 8 bytes the program touched, and
        madvise(MADV_DONTNEED) on the program's memory does not release
        that shadow: after 128 MiB written and trimmed, 16 MiB of shadow
        stays resident although the plugin gave every byte back.  So
        under an ASan build (NBDKIT_PRELOAD names libasan) the shadow's
        mappings are left out; elsewhere this is VmRSS.
        """
        if "libasan" not in os.environ.get("NBDKIT_PRELOAD", ""):
            with open("/proc/%d/status" % self.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
            raise RuntimeError("no VmRSS")
        total, in_shadow = 0, False
        with open("/proc/%d/smaps" % self.pid) as f:
            for line in f:
                field = line.split()
                if re.match(r"^[0-9a-f]+-[0-9a-f]+$", field[0]):
                    lo, hi = (int(x, 16) for x in field[0].split("-"))
                    in_shadow = lo < ASAN_SHADOW_END and hi > ASAN_SHADOW_START
                elif field[0] == "Rss:" and not in_shadow:
                    total += int(field[1])
        return total

    def connect(self, strict=False, export=None):
        """A handle on the server; export names the export (and asks for
        its description, h.get_export_description())."""
        h = nbd.NBD()
        if not strict:
            h.set_strict_mode(0)
        if export is not None:
            h.set_export_name(export)
            h.set_full_info(True)
        h.add_meta_context(nbd.CONTEXT_BASE_ALLOCATION)
        h.connect_unix(self.socket)
        self.handles.append(h)
        return h

    def stop(self):
        """SIGTERM our own nbdkit and wait; returns its exit status.

        Our clients hang up first: nbdkit 1.32 waits for connected
        clients before it acts on SIGTERM.
        """
        for h in self.handles:
            close(h)
        self.handles = []
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.dir and os.path.isdir(self.dir):
            self.last_stderr = self.stderr()
            shutil.rmtree(self.dir, ignore_errors=True)
            report = sanitizer_report(self.last_stderr)
            if report:
                raise AssertionError("nbdkit: sanitizer report:\n" +
                                     self.last_stderr)
        return self.proc.returncode


SANITIZER_REPORT = re.compile(r"ERROR: (Address|Leak)Sanitizer|"
                              r"WARNING: ThreadSanitizer|ThreadSanitizer: |"
                              r"runtime error: ")


def sanitizer_report(text):
    """The first ASan/UBSan/TSan report line in text, or None."""
    m = SANITIZER_REPORT.search(text)
    return m.group(0) if m else None


def expect_errno(expected, what, fn, *args):
    """fn(*args) must fail with errno `expected`; `what` names the call.

    Compares e.errnum: libnbd 1.14's Python e.errno is the symbolic name.
    """
    try:
        fn(*args)
    except nbd.Error as e:
        if e.errnum != expected:
            raise AssertionError("%s: expected %s, got %s (%s)" % (
                what, errno.errorcode[expected],
                errno.errorcode.get(e.errnum, e.errnum), e.string))
        return e
    raise AssertionError("%s: succeeded, expected %s" % (
        what, errno.errorcode[expected]))


def close(h):
    """Disconnect cleanly: nbdkit 1.32 does not act on SIGTERM while a
    client that has issued a request keeps its connection open (and a
    server killed instead writes no statsfile)."""
    try:
        h.shutdown()
    except nbd.Error:
        pass


def extents(h, count, offset, flags=0):
    """base:allocation as a list of (offset, length, flags)."""
    out = []

    def cb(metacontext, off, entries, err):
        if metacontext != nbd.CONTEXT_BASE_ALLOCATION:
            return 0
        pos = off
        for i in range(0, len(entries), 2):
            out.append((pos, entries[i], entries[i + 1]))
            pos += entries[i]
        return 0

    h.block_status(count, offset, cb, flags)
    return out


def extents_covering(h, count, offset):
    """base:allocation of the whole range [offset, offset + count), as
    the coalesced list of (offset, length, flags) a client builds by
    asking again from where each reply ended.

    The NBD protocol lets a reply cover less than the request, and
    newer servers do: nbdkit 1.48 sends a 4G-4k hole as one 4G-64k
    extent (0xffff0000, a multiple of every block size up to 64k, so a
    client going on from its end stays aligned), although the plugin
    was asked for, and answered, all of it; nbdkit 1.32 and 1.42 send
    all of it.  Each reply must still start where it was asked, make
    progress, and stay inside the request.
    """
    out = []
    pos, end = offset, offset + count
    while pos < end:
        got = extents(h, end - pos, pos)
        assert got and got[0][0] == pos, \
            "block_status(%d, %d) answered %r" % (end - pos, pos, got)
        reached = got[-1][0] + got[-1][1]
        assert reached <= end, "block_status(%d, %d) reached %d, past " \
            "the request" % (end - pos, pos, reached)
        for e in got:
            if out and out[-1][2] == e[2]:
                out[-1] = (out[-1][0], out[-1][1] + e[1], e[2])
            else:
                out.append(e)
        pos = reached
    return out


def read_stats(path):
    with open(path) as f:
        return json.load(f)


def pattern(length, seed):
    """Deterministic pseudo-random bytes: misplaced data never matches."""
    return random.Random(seed).randbytes(length)


def in_threads(fn, n):
    """Call fn(0) ... fn(n - 1) each in its own thread and wait for all;
    the first exception any of them raised fails the test."""
    errors = []

    def wrap(i):
        try:
            fn(i)
        except Exception as e:                  # re-raised below
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise AssertionError(str(errors[0]))


def run(main):
    """Run a test's main(); an AssertionError is a FAIL with its message."""
    try:
        main()
    except AssertionError as e:
        print("FAIL:", e)
        sys.exit(1)
    print("PASS")
    sys.exit(0)
