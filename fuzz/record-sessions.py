#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Record the session fuzzer's seeds from real NBD clients.

Each seed in fuzz/corpus/session/ is the byte stream one real client
(libnbd's nbdinfo, nbdcopy and Python bindings, QEMU's qemu-io and
qemu-img) sent to largeblock over one connection: handshake, options,
requests, disconnect.  "nbdkit -s" reads exactly such a stream on its
standard input, so the fuzzer (scripts/fuzz-session.sh) mutates these and
"make check" replays them (tests/test-fuzz-session-replay.sh).

For every session a fresh nbdkit serves a 4 MiB RAM disk with the block
geometry of every fuzz/session-targets configuration (GEOMETRY) on a
private Unix socket, and the client talks to a recording proxy in front
of it, which saves what the client sent.  Each
client runs as its own process, against a fresh disk, so the server's
answers -- which the client's later requests may depend on -- are the ones
the fuzzer's nbdkit gives to the same bytes.  Sessions that send the
same bytes as an earlier one are kept once.  Re-recording gives the same
bytes except for QEMU's, whose request handles differ from run to run.

Usage (from a configured, built tree; needs qemu-io, qemu-img, nbdcopy,
nbdinfo and the libnbd Python bindings):
    $PYTHON_NBD fuzz/record-sessions.py [OUTDIR]   (default fuzz/corpus/session)
Environment: LARGEBLOCK_PLUGIN (default: the build tree's plugin), NBDKIT.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

SRCDIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGIN = os.environ.get("LARGEBLOCK_PLUGIN", os.path.join(
    SRCDIR, "plugins/largeblock/.libs/nbdkit-largeblock-plugin.so"))
NBDKIT = os.environ.get("NBDKIT", "nbdkit")
PYTHON = sys.executable
MAX_SEED_BYTES = 64 * 1024      # the fuzzer wants small inputs
GEOMETRY = ["size=4M", "blksize=16k", "logical-blksize=4k",
            "max-request=256k"]

# libnbd through its Python bindings: one script per session, given the
# URI as argv[1].  Strict mode is off where the session is meant to send
# what a careful client would not, so the server is the one refusing it.
NBD_RW = r'''
import sys, nbd
h = nbd.NBD()
h.add_meta_context(nbd.CONTEXT_BASE_ALLOCATION)
h.connect_uri(sys.argv[1])
h.pwrite(b"\xa5" * 4096, 0)
h.pwrite(b"\x5a" * 4096, 20480, nbd.CMD_FLAG_FUA)
h.pread(16384, 16384)
h.flush()
h.block_status(65536, 0, lambda *a: 0)
h.block_status(65536, 0, lambda *a: 0, nbd.CMD_FLAG_REQ_ONE)
h.trim(16384, 16384)
h.zero(8192, 36864)
h.zero(16384, 65536, nbd.CMD_FLAG_NO_HOLE)
try:
    h.zero(16384, 98304, nbd.CMD_FLAG_FAST_ZERO)
except nbd.Error:
    pass
h.cache(32768, 0)
h.pread(4096, 4 * 1024 * 1024 - 4096)
h.shutdown()
'''

NBD_ABUSE = r'''
import sys, nbd
h = nbd.NBD()
h.set_strict_mode(0)
h.add_meta_context(nbd.CONTEXT_BASE_ALLOCATION)
h.connect_uri(sys.argv[1])
for fn in (lambda: h.pread(4096, 512),              # misaligned offset
           lambda: h.pread(1000, 4096),             # misaligned length
           lambda: h.pwrite(b"x" * 100, 4096),
           lambda: h.trim(4096, 2048),
           lambda: h.zero(512, 4096),
           lambda: h.cache(4096, 100),
           lambda: h.pread(512 * 1024, 0),          # beyond max-request
           lambda: h.pread(4096, 4 * 1024 * 1024),  # past the end
           lambda: h.block_status(4096, 4 * 1024 * 1024 - 2048,
                                  lambda *a: 0)):
    try:
        fn()
    except nbd.Error:
        pass
h.trim(1024 * 1024, 0)                               # beyond max-request
h.shutdown()
'''

# Oldest handshake a libnbd client speaks: newstyle without the "fixed"
# bit, so NBD_OPT_EXPORT_NAME, and simple replies only.
NBD_OLD_HANDSHAKE = r'''
import sys, nbd
h = nbd.NBD()
h.set_handshake_flags(0)
h.set_request_structured_replies(False)
h.connect_uri(sys.argv[1])
h.pwrite(b"\x11" * 4096, 65536)
h.pread(8192, 61440)
h.trim(16384, 65536)
h.flush()
h.shutdown()
'''

# Option haggling before NBD_OPT_GO: list exports, ask for information,
# list and choose meta contexts.
NBD_OPTIONS = r'''
import sys, nbd
h = nbd.NBD()
h.set_opt_mode(True)
h.set_full_info(True)
h.connect_uri(sys.argv[1])
h.opt_list(lambda name, desc: 0)
h.opt_info()
h.opt_list_meta_context(lambda name: 0)
h.add_meta_context(nbd.CONTEXT_BASE_ALLOCATION)
h.add_meta_context("qemu:dirty-bitmap:nope")
h.opt_list_meta_context(lambda name: 0)
h.opt_go()
h.pwrite(b"\x42" * 4096, 12288)
h.block_status(262144, 0, lambda *a: 0)
h.shutdown()
'''

# qemu-io and qemu-img: QEMU's NBD client.
QEMU_IO_CMDS = ["write -P 0xab 0 4k", "read -P 0xab 0 4k",
                "write -z 16k 16k", "discard 48k 16k",
                "write -P 0xcd -f 64k 4k", "aio_write -P 1 128k 4k",
                "aio_flush", "flush", "read -P 0 256k 4k"]


def sessions(uri, srcfile):
    """(name, argv) of every session to record."""
    qemu_io = ["qemu-io", "-f", "raw"]
    for c in QEMU_IO_CMDS:
        qemu_io += ["-c", c]
    return [
        ("libnbd-rw", [PYTHON, "-c", NBD_RW, uri]),
        ("libnbd-abuse", [PYTHON, "-c", NBD_ABUSE, uri]),
        ("libnbd-old-handshake", [PYTHON, "-c", NBD_OLD_HANDSHAKE, uri]),
        ("libnbd-options", [PYTHON, "-c", NBD_OPTIONS, uri]),
        ("nbdinfo", ["nbdinfo", uri]),
        ("nbdinfo-list", ["nbdinfo", "--list", uri]),
        ("nbdinfo-map", ["nbdinfo", "--map", uri]),
        ("nbdcopy-to", ["nbdcopy", "--connections=1", "--requests=4",
                        srcfile, uri]),
        ("nbdcopy-from", ["nbdcopy", "--connections=1", "--requests=4",
                          uri, "null:"]),
        ("qemu-io", qemu_io + [uri]),
        ("qemu-img-info", ["qemu-img", "info", uri]),
        ("qemu-img-map", ["qemu-img", "map", "--output=json", uri]),
    ]


class Recorder:
    """A Unix-socket proxy to `server` that records what each client sends."""

    def __init__(self, path, server):
        self.server = server
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(8)
        self.recordings = []            # one bytearray per connection
        self.threads = []
        self.accepter = threading.Thread(target=self.accept, daemon=True)
        self.accepter.start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return                  # closed by finish()
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(self.server)
            rec = bytearray()
            self.recordings.append(rec)
            for src, dst, r in ((client, upstream, rec),
                                (upstream, client, None)):
                t = threading.Thread(target=self.pump, args=(src, dst, r),
                                     daemon=True)
                t.start()
                self.threads.append(t)

    @staticmethod
    def pump(src, dst, rec):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if rec is not None:
                    rec += data
                dst.sendall(data)
        except OSError:
            pass
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def finish(self):
        self.listener.close()
        for t in self.threads:
            t.join(30)
        return [bytes(r) for r in self.recordings]


def start_nbdkit(tmp, params):
    sock = os.path.join(tmp, "server.sock")
    pidfile = os.path.join(tmp, "server.pid")
    errlog = open(os.path.join(tmp, "server.err"), "w")
    proc = subprocess.Popen([NBDKIT, "-f", "-U", sock, "-P", pidfile,
                             PLUGIN] + params, stdin=subprocess.DEVNULL,
                            stderr=errlog)
    errlog.close()
    deadline = time.monotonic() + 30
    while not os.path.exists(pidfile):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_nbdkit(proc)
            sys.exit("nbdkit did not start: " +
                     open(os.path.join(tmp, "server.err")).read())
        time.sleep(0.01)
    os.unlink(pidfile)
    return proc, sock


def stop_nbdkit(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def record(tmp, name, argv_of, params):
    """Record one client's session(s); returns [(seed name, bytes)]."""
    proc, server = start_nbdkit(tmp, params)
    proxy = os.path.join(tmp, "proxy.sock")
    rec = Recorder(proxy, server)
    uri = "nbd+unix:///?socket=" + proxy
    argv = dict(argv_of(uri))[name]
    try:
        out = subprocess.run(argv, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=60)
    finally:
        streams = rec.finish()
        stop_nbdkit(proc)
        os.unlink(proxy)
        os.unlink(server)
    if out.returncode != 0:
        sys.exit("%s failed (%d): %s%s" % (name, out.returncode, out.stdout,
                                           out.stderr))
    if len(streams) == 1:
        return [(name, streams[0])]
    return [("%s-%d" % (name, i), s) for i, s in enumerate(streams)]


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.join(SRCDIR, "fuzz/corpus/session")
    params = GEOMETRY
    tmp = tempfile.mkdtemp(prefix="lb-record.")
    try:
        srcfile = os.path.join(tmp, "src.img")
        with open(srcfile, "wb") as f:      # data, a hole, zeros, a hole
            f.write(b"\x77" * 4096)
            f.seek(65536)
            f.write(bytes(16384))
            f.truncate(128 * 1024)
        names = [n for n, _ in sessions("", srcfile)]
        os.makedirs(outdir, exist_ok=True)
        seen = {}
        for name in names:
            for seed, data in record(tmp, name,
                                     lambda u: sessions(u, srcfile), params):
                if len(data) > MAX_SEED_BYTES:
                    sys.exit("%s: %d bytes, more than %d" % (
                        seed, len(data), MAX_SEED_BYTES))
                if data in seen:
                    print("%-24s same bytes as %s: not kept" % (
                        seed, seen[data]))
                    continue
                seen[data] = seed
                with open(os.path.join(outdir, seed), "wb") as f:
                    f.write(data)
                print("%-24s %6d bytes" % (seed, len(data)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
