#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every shell example in README.md, docs/crash-testing.md and the man
pages (MAN_PODS) runs as written, and prints what the docs show.

The examples are read from the docs themselves (tests/docexamples.py): a
code block annotated "example: ID" is run, and the blocks annotated
"output: ID", or its own trailing "# ..." lines, are what it must print
(in order, among other lines; a shown line ending in "..." matches any
line it begins).  A shell block (fenced as ```sh, or starting with a
command) that is not annotated must be in NOT_RUN below with the reason it cannot run here; an annotation or a
NOT_RUN entry that matches nothing fails too, so a doc change breaks
this test.

How an example runs: bash -e, as root, in a scratch directory of its
own, in document order.  The examples of one file share that file's
state like a reader following it (the README's servers keep running until
its end; a man page example is given a fresh directory, since each stands
alone).  Fixed paths under /tmp, /var/tmp and /mnt are moved into the
scratch directory (other tests run beside this one), $TMPDIR is the
scratch directory (so mktemp -d lands there), and PATH starts with the
just-built largeblock-run, largeblock-verify and largeblock-vm and an
nbdkit shim that serves the built plugin for the name "largeblock" and
adds a pid file (and, if the example gives no socket, a private Unix
socket instead of TCP port 10809, which every test on the host shares).
Whatever an example leaves -- mounts, loop devices, FUSE mounts, servers
-- is removed afterwards, also on any failure or signal: only what lies
under the scratch directory, and servers whose command line names it.  A
power-cut FIFO still there once its server has stopped fails the test:
the server removes the one it made.
"""
import glob
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docexamples  # noqa: E402

SRC = os.environ.get("abs_top_srcdir") or \
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("abs_top_builddir", SRC)
PLUGIN = os.environ.get("LARGEBLOCK_PLUGIN")
# make check's nbdkit: the wrapper that preloads the sanitizer runtime an
# instrumented plugin needs, when there is one.  Absolute paths, since
# the examples' PATH starts with the shim named nbdkit.
NBDKIT = shutil.which(os.environ.get("NBDKIT") or "nbdkit")
if os.environ.get("NBDKIT_REAL"):
    os.environ["NBDKIT_REAL"] = shutil.which(os.environ["NBDKIT_REAL"])

# The man pages: a program's beside it (server/run/, server/vm/,
# tools/), the plugin's and the library's in docs/.
MAN_PODS = ("docs/*.pod", "server/*/*.pod", "tools/*.pod")
DOCS = ["README.md", "docs/crash-testing.md"] + sorted(
    os.path.relpath(p, SRC) for pattern in MAN_PODS
    for p in glob.glob(os.path.join(SRC, pattern)))

# The quick start's server, which the README's worked examples use; the
# README and scripts/serve-example.sh must still say these parameters.
EXAMPLE_SERVER = "size=512M blksize=16k logical-blksize=16k"

# Annotated examples: what each needs.
#   server  "example": the quick start's server runs on its socket
#   status  the exit status the example must end with (default 0)
#   vary    regexes for what differs between runs, matched in the shown
#           and in the real output alike
#   cwd     "build": run in the build tree (for its relative paths)
#   twice   run it twice (a server example that must be restartable)
#   loop_image  a file of this size with XFS on a loop device is made
#           first, and stands for the /dev/loop0 the example names
EXAMPLES = {
    "readme-run-xfs": {},
    "readme-run-cleanup": {},
    "readme-power-cut-fifo": {},
    "readme-power-cut-verify": {},
    "readme-crash-log": {},
    "readme-replay": {},
    "readme-nbdinfo": {"server": "example"},
    "readme-nbdfuse-xfs": {"server": "example"},
    "readme-file-image": {"twice": True},
    "readme-verify-export": {"server": "example"},
    "readme-verify-refuses-fs": {"loop_image": "320M",
                                 "vary": [r"/dev/loop\d+"]},
    "readme-build-plugin-path": {"cwd": "build"},
    "crash-recipe-server": {},
    "crash-verify-torn": {},
    "crash-replay": {"vary": [r"replay=/\S+/crash\.log:"]},
    "plugin-16k": {},
    "plugin-16k-4k": {},
    "plugin-64k": {},
    "plugin-7e": {},
    "plugin-memory-limit": {},
    "plugin-statsfile": {},
    "plugin-file-image": {},
    "plugin-file-image-restart": {"twice": True},
    "plugin-replay": {},
    "plugin-nbdinfo": {},
    "plugin-qemu": {},
    "plugin-nbdfuse-xfs": {},
    "run-xfs": {},
    "run-cleanup": {},
    "run-stop-timeout": {},
    "verify-largeblock": {},
    "verify-power-cut-torn": {},
    "verify-power-cut-after": {},
}

# Shell examples that do not run here, by "file: first line", and why.
NBD = "needs the kernel nbd module, which this host lacks"
VM = ("boots a guest kernel under QEMU (tens of seconds each under TCG); "
      "make check-vm runs these paths")
FSTESTS = ("runs in an fstests build, which is not packaged; "
           "tests/test-run-fstests.sh runs it where FSTESTS_DIR is set, and "
           "tests/test-run-fstests-fixture.sh checks the fixture with a "
           "stand-in ./check")
NOT_RUN = {
    "README.md: scripts/serve-example.sh":
        "installs packages and this build system-wide; "
        "tests/test-install-run-finds-its-plugin.sh checks the install, and "
        "this test runs the same server for the worked examples",
    "README.md: scripts/run-tests.sh": "runs the whole suite, this test too",
    "README.md: for seed in $(seq 1 20); do":
        "twenty crash tests of the reader's own ./my-workload; "
        "tests/test-run-crash-xfs.sh runs the same command line with "
        "tests/helpers/crash-workload.py",
    "README.md: largeblock-run --crash-explore --sample=20 --seeds=2 "
    "--mkfs=xfs --mount \\":
        "a crash exploration of the reader's own ./my-workload and "
        "./check-synced-files; tests/test-run-explore-xfs.sh runs the same "
        "command line with tests/helpers/explore-workload.sh",
    "README.md: largeblock-vm --attach=virtio blksize=16k "
    "logical-blksize=4k size=1G \\": VM,
    "README.md: largeblock-vm --attach=nbd blksize=16k "
    "logical-blksize=16k size=1G \\": VM + " (tests/test-vm-nbd-16k.sh)",
    "README.md: largeblock-run --fstests --mkfs=xfs blksize=16k "
    "logical-blksize=16k \\": FSTESTS,
    "README.md: modprobe nbd": NBD,
    "README.md: cc mytest.c $(pkg-config --cflags --libs largeblock)":
        "needs the library installed; "
        "tests/test-lib-man-examples-build-and-run.sh builds the examples",
    "README.md: scripts/install-deps.sh     # Debian 12 packages (as root)":
        "installs packages and the build system-wide",
    "README.md: make bench BENCH_ARGS='--only matrix --patterns "
    "randread,randwrite --bs 16k,1M --conns 1'":
        "a benchmark of minutes; tests/test-bench-smoke*.sh run its parts",
    "docs/crash-testing.md: for seed in $(seq 1 20); do":
        "twenty crash tests of the reader's own ./my-workload; "
        "tests/test-run-crash-xfs.sh runs the same command line",
    "docs/crash-testing.md: largeblock-run --crash-explore --sample=20 "
    "--seeds=2 --mkfs=xfs --mount \\":
        "a crash exploration of the reader's own ./my-workload and "
        "./check-synced-files; tests/test-run-explore-xfs.sh runs the same "
        "command line with tests/helpers/explore-workload.sh",
    "docs/crash-testing.md: for seed in $(seq 201 210); do":
        "ten crash tests with three writers, about a minute; "
        "not part of make check by design (the doc says so)",
    "server/run/largeblock-run.pod: largeblock-run --attach=nbd --mkfs=xfs "
    "--mount blksize=16k \\": NBD + "; tests/test-run-attach-nbd-"
        "unavailable.sh checks the one-line refusal",
    "server/run/largeblock-run.pod: largeblock-run --fstests --mkfs=xfs "
    "blksize=16k logical-blksize=16k \\": FSTESTS,
    "server/run/largeblock-run.pod: largeblock-run --crash-explore "
    "--sample=6 --seeds=2 --mkfs=xfs --mount \\":
        "a crash exploration of the reader's own ./my-workload and "
        "./check-synced-files; tests/test-run-explore-xfs.sh runs the same "
        "command line with tests/helpers/explore-workload.sh",
    "server/run/largeblock-run.pod: for seed in $(seq 1 20); do":
        "twenty crash tests of the reader's own ./my-workload; "
        "tests/test-run-crash-xfs.sh runs the same command line",
    "server/run/largeblock-run.pod: nbd-client -unix SOCKET /dev/nbdN "
    "-b LOGICAL": "a description of what --attach=nbd runs, not a command",
    "tools/largeblock-verify.pod: losetup --find --show --sector-size 16384 "
    "--direct-io=on disk.img": "names /dev/loop0 whichever device losetup "
        "finds; tests/test-verify-file-and-device.sh runs it on its own",
    "tools/largeblock-verify.pod: largeblock-verify --write /dev/loop0":
        "the README's copy of this example runs (readme-verify-refuses-fs)",
    "tools/largeblock-verify.pod: largeblock-verify --write --seed 1234 "
    "--size 1G nbd://server/disk": "a reader's own server and a restart "
        "in between; tests/test-verify-only-after-restart.sh does this",
    "tools/largeblock-verify.pod: largeblock-verify --write --duration 300 "
    "--connections 8 --depth 16 \\": "a five-minute soak of a reader's "
        "server",
    "server/vm/largeblock-vm.pod: largeblock-vm --attach=virtio blksize=16k "
    "logical-blksize=4k size=1G \\": VM,
    "server/vm/largeblock-vm.pod: largeblock-vm blksize=16k logical-blksize=4k "
    "size=1G -- '": VM,
    "server/vm/largeblock-vm.pod: largeblock-vm --attach=nbd --connections=2 "
    "blksize=4k size=512M \\": VM,
    "server/vm/largeblock-vm.pod: largeblock-vm --memory=2G blksize=4k size=8M "
    "-- \\": VM + "; tests/test-vm-docs-example-quoting.sh",
    "server/vm/largeblock-vm.pod: largeblock-vm --attach=nbd blksize=16k "
    "logical-blksize=16k size=1G \\": VM + " (tests/test-vm-nbd-16k.sh)",
    "server/vm/largeblock-vm.pod: largeblock-vm \\":
        "needs the reader's downloaded kernel packages; "
        "tests/test-vm-kernel-deb-layouts.sh reads each layout",
    "server/vm/largeblock-vm.pod: largeblock-vm --kernel=arch/x86/boot/bzImage "
    "\\": "needs the reader's own kernel build",
    "docs/nbdkit-largeblock-plugin.pod: nbdkit -U /tmp/lb.sock largeblock "
    "size=1G blksize=16k logical-blksize=4k":
        "a QEMU guest command line with '...' for the reader's own options",
    "docs/nbdkit-largeblock-plugin.pod: nbdkit -U /tmp/lb.sock largeblock "
    "size=2G blksize=64k logical-blksize=32k":
        "an outline ('...', /dev/loopN) of the nbdfuse example that runs "
        "(plugin-nbdfuse-xfs)",
    "docs/nbdkit-largeblock-plugin.pod: nbdkit largeblock file=/dev/sdb "
    "blksize=64k logical-blksize=16k": "needs a spare block device",
    "docs/nbdkit-largeblock-plugin.pod: modprobe nbd": NBD,
}


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def skip(msg):
    print("SKIP:", msg)
    sys.exit(77)


def first_line(block):
    return "%s: %s" % (block.path, block.text.splitlines()[0].rstrip())


def collect():
    """Examples (with their shown output) in document order, per file."""
    per_file, seen, problems = [], set(), []
    not_run_seen = set()
    for path in DOCS:
        blocks = docexamples.blocks_of(os.path.join(SRC, path))
        for b in blocks:
            b.path = path
        examples, outputs = [], {}
        for b in blocks:
            if b.kind == "example":
                if b.ident in seen:
                    problems.append("%s: example %s twice" % (b.where(),
                                                               b.ident))
                seen.add(b.ident)
                examples.append(b)
            elif b.kind == "output":
                outputs.setdefault(b.ident, []).append(b)
            elif b.kind == "unannotated":
                key = first_line(b)
                if key in NOT_RUN:
                    not_run_seen.add(key)
                else:
                    problems.append(
                        "%s: a shell example that is neither annotated "
                        "(<!-- example: ID --> or =for comment example: ID) "
                        "nor in NOT_RUN: %s" % (b.where(), key))
        ids = {e.ident for e in examples}
        for ident, blocks_ in outputs.items():
            if ident not in ids:
                problems.append("%s: output of unknown example %s" %
                                (blocks_[0].where(), ident))
        per_file.append((path, [(e, docexamples.shown_output(
            e, outputs.get(e.ident, []))) for e in examples]))
    for ident in seen - set(EXAMPLES):
        problems.append("example %s is not in this test's EXAMPLES" % ident)
    for ident in set(EXAMPLES) - seen:
        problems.append("EXAMPLES names %s, which no doc has" % ident)
    for key in set(NOT_RUN) - not_run_seen:
        problems.append("NOT_RUN names an example no doc has: %s" % key)
    if problems:
        fail("\n  ".join(["the docs' examples and this test disagree:"] +
                         problems))
    return per_file


# ---- the scratch world and its cleanup ----

class World:
    def __init__(self):
        self.top = tempfile.mkdtemp(prefix="lbdoc.", dir="/tmp")
        os.chmod(self.top, 0o700)
        self.bin = os.path.join(self.top, "bin")
        os.mkdir(self.bin)
        self._shims()

    def _shims(self):
        links = {"largeblock-run": "server/run/largeblock-run",
                 "largeblock-vm": "server/vm/largeblock-vm",
                 "largeblock-verify": "tools/largeblock-verify"}
        for name, rel in links.items():
            os.symlink(os.path.join(BUILD, rel), os.path.join(self.bin, name))
        shim = os.path.join(self.bin, "nbdkit")
        with open(shim, "w") as f:
            f.write(NBDKIT_SHIM.format(nbdkit=NBDKIT, plugin=PLUGIN))
        os.chmod(shim, 0o755)

    def scratch(self, name):
        d = os.path.join(self.top, name)
        for sub in ("tmp", "var/tmp", "mnt"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        return d

    def clean(self, under):
        """Remove what examples left under the directory `under`."""
        under = under.rstrip("/") + "/"
        for mnt in sorted(mounts_under(under, fuse=False), reverse=True):
            subprocess.call(["umount", mnt])
        out = subprocess.run(["losetup", "-l", "-n", "--raw",
                              "-O", "NAME,BACK-FILE"],
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split(None, 1)
            if len(parts) == 2 and parts[1].startswith(under):
                subprocess.call(["losetup", "-d", parts[0]])
        for mnt in sorted(mounts_under(under, fuse=True), reverse=True):
            subprocess.call(["fusermount3", "-u", mnt])
        for pidfile in glob.glob(under + "**/*.pid", recursive=True):
            stop_server(pidfile, under)
        # An example's own -P file may have any name, and the example may
        # fail before it reads it: the stand-in nbdkit noted where it is.
        for note in glob.glob(under + "**/*.pidfile-path", recursive=True):
            stop_server(open(note).read().strip(), under)
        return fifos_under(under)

    def close(self):
        self.clean(self.top)
        shutil.rmtree(self.top, ignore_errors=True)


# The nbdkit examples call: the built plugin for "largeblock", a pid file
# for the cleanup (or a note of where the example's own -P file is), and
# a private socket where none is given.
NBDKIT_SHIM = r"""#!/bin/bash
args=() own_sock=yes own_pid=yes named= pidfile_next=
note_pidfile () {{ realpath -m -- "$1" >"$TMPDIR/nbdkit.$$.pidfile-path"; }}
for a in "$@"; do
  [ -z "$pidfile_next" ] || {{ note_pidfile "$a"; pidfile_next=; }}
  case $a in
    -U|--unix|-p|--port|-s|--single|--socket-activation|--vsock|--unix=*|--port=*)
      own_sock= ;;
    -P|--pidfile) own_pid= pidfile_next=1 ;;
    --pidfile=*) own_pid=; note_pidfile "${{a#--pidfile=}}" ;;
  esac
  if [ -z "$named" ] && [ "$a" = largeblock ]; then a={plugin}; named=1; fi
  args+=("$a")
done
pre=()
[ -z "$own_pid" ] || pre+=(-P "$TMPDIR/nbdkit.$$.pid")
[ -z "$own_sock" ] || pre+=(-U "$TMPDIR/nbdkit.$$.sock")
exec {nbdkit} "${{pre[@]}}" "${{args[@]}}"
"""


def fifos_under(under):
    """FIFOs left under the directory once every server stopped: a
    power-cut FIFO that outlived the server that made it."""
    found = []
    for root, _, files in os.walk(under):
        for name in files:
            path = os.path.join(root, name)
            if stat.S_ISFIFO(os.lstat(path).st_mode):
                found.append(path)
    return found


def mounts_under(under, fuse):
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")
            fstype = fields[fields.index("-") + 1]
            if (point + "/").startswith(under) and \
               fstype.startswith("fuse") == fuse:
                found.append(point)
    return found


def stop_server(pidfile, under):
    """SIGTERM a server whose pid file is ours and whose command line
    names our directory, and wait for it."""
    try:
        pid = int(open(pidfile).read().strip())
        cmd = open("/proc/%d/cmdline" % pid, "rb").read().decode()
    except (OSError, ValueError):
        return
    if under.rstrip("/") not in cmd:
        return
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if not os.path.exists("/proc/%d" % pid) or \
           open("/proc/%d/stat" % pid).read().split()[2] == "Z":
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


# ---- running one example ----

PATH_RE = re.compile(r"(?<![\w/.$-])(/tmp|/var/tmp|/mnt)/([\w.-]+)")


def localise(text, scratch):
    return PATH_RE.sub(lambda m: scratch + m.group(1) + "/" + m.group(2),
                       text)


def start_example_server(world, scratch):
    sock = localise("/tmp/largeblock-example.sock", scratch)
    pidfile = os.path.join(scratch, "example-server.pid")
    if os.path.exists(pidfile):
        return      # still serving for the examples before this one
    subprocess.run([NBDKIT, "-U", sock, "-P", pidfile, PLUGIN] +
                   EXAMPLE_SERVER.split(), check=True)


def make_loop_image(scratch, size):
    img = tempfile.mktemp(prefix="loop.", suffix=".img", dir=scratch)
    subprocess.run(["truncate", "-s", size, img], check=True)
    subprocess.run(["mkfs.xfs", "-q", img], check=True)
    return subprocess.run(["losetup", "--find", "--show", img],
                          capture_output=True, text=True,
                          check=True).stdout.strip()


def run_block(world, example, scratch, spec):
    text = localise(example.text, scratch)
    env = dict(os.environ, TMPDIR=scratch, EXAMPLE_SCRATCH=scratch,
               PATH=world.bin + ":" + os.environ["PATH"])
    if spec.get("loop_image"):
        loop = make_loop_image(scratch, spec["loop_image"])
        text = text.replace("/dev/loop0", loop)
    cwd = BUILD if spec.get("cwd") == "build" else scratch
    start = time.monotonic()
    p = subprocess.Popen(["bash", "-e", "-c", text], cwd=cwd, env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        fail("%s: example %s did not end in 180 s; it printed:\n%s" %
             (example.where(), example.ident, out))
    except BaseException:       # a signal: stop the example, then clean
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise
    took = time.monotonic() - start
    return p.returncode, out, took


def normalise(line, vary):
    for pattern in vary:
        line = re.sub(pattern, "<varies>", line)
    return " ".join(line.split())


def check_output(example, shown, out, vary):
    """Each shown line appears in the output, in order."""
    real = [normalise(l, vary) for l in out.splitlines()]
    i = 0
    for want in shown:
        want = normalise(want, vary)
        prefix = want.endswith("...")
        if prefix:
            want = want[:-3].rstrip()
        while i < len(real) and not (real[i].startswith(want) if prefix
                                     else real[i] == want):
            i += 1
        if i == len(real):
            fail("%s: example %s should print (in order) %r, but printed:"
                 "\n%s" % (example.where(), example.ident, want, out))
        i += 1


def run_example(world, example, shown, scratch):
    spec = EXAMPLES[example.ident]
    if spec.get("server") == "example":
        start_example_server(world, scratch)
    for n in range(2 if spec.get("twice") else 1):
        status, out, took = run_block(world, example, scratch, spec)
        print("%s %s%s: exit %d in %.1f s" % (
            example.where(), example.ident, " (again)" if n else "",
            status, took))
        if status != spec.get("status", 0):
            fail("%s: example %s exited %d, not %d; it printed:\n%s" % (
                example.where(), example.ident, status,
                spec.get("status", 0), out))
        check_output(example, [localise(l, scratch) for l in shown], out,
                     spec.get("vary", []))


def check_no_fifo_left(what, fifos):
    if fifos:
        fail("%s: a FIFO outlived the server that made it: %s" %
             (getattr(what, "ident", what), " ".join(fifos)))


def check_quick_start_server():
    for rel in ("README.md", "scripts/serve-example.sh"):
        with open(os.path.join(SRC, rel)) as f:
            if EXAMPLE_SERVER not in f.read():
                fail("%s no longer serves %s, the server this test gives "
                     "the README's worked examples" % (rel, EXAMPLE_SERVER))


def main():
    per_file = collect()
    check_quick_start_server()
    if os.geteuid() != 0:
        skip("the examples run as root")
    if not os.path.exists("/dev/fuse") or \
       not os.path.exists("/dev/loop-control"):
        skip("/dev/fuse or loop devices are missing")
    for tool in ("nbdfuse", "fusermount3", "losetup", "mkfs.xfs", "nbdinfo",
                 "qemu-io", "qemu-img"):
        if shutil.which(tool) is None:
            skip(tool + " is not installed")
    if not PLUGIN or not os.path.exists(PLUGIN):
        fail("LARGEBLOCK_PLUGIN is not set: run through make check")
    world = World()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))
    try:
        for path, examples in per_file:
            shared = world.scratch(re.sub(r"\W", "-", path))
            for example, shown in examples:
                if path.endswith(".pod"):
                    scratch = world.scratch(example.ident)
                else:
                    scratch = shared
                try:
                    run_example(world, example, shown, scratch)
                finally:
                    left = world.clean(scratch) if scratch != shared else []
                check_no_fifo_left(example, left)
            check_no_fifo_left(path, world.clean(shared))
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)   # clean up to the end
        world.close()
    print("every runnable example ran as written")


main()
