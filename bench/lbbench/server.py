# SPDX-License-Identifier: BSD-3-Clause
"""An nbdkit server for the bench: tests/lbtest's Server, recorded for
teardown (teardown.py) the moment it is spawned, and measured (CPU time,
memory, huge pages).
"""
import ctypes
import os

from .common import PLUGIN, cpu_of
from .teardown import done_with, held, on_teardown

# tests/lbtest checks, when imported, that LARGEBLOCK_PLUGIN names a
# plugin; the bench's default is the one built in this tree.
os.environ.setdefault("LARGEBLOCK_PLUGIN", PLUGIN)
import lbtest  # noqa: E402  (after the line above)

PR_SET_THP_DISABLE = 41


class Server(lbtest.Server):
    """An nbdkit in the foreground on a private socket under WORKDIR,
    serving ARGS (a plugin, then its parameters); stop() ends it.
    NBDKIT_ARGS are nbdkit's own options (--threads, --filter), before
    the plugin.  With thp=False the server runs with transparent huge
    pages disabled.  cmdline is the command line the nbdkit process
    runs, as the kernel reports it."""

    poll_s = 0.002              # startup_s is measured to a few ms

    def __init__(self, workdir, name, args, thp=True, nbdkit_args=()):
        self.name = name
        super().__init__(*args[1:], plugin=args[0], parent=workdir,
                         start_timeout=60, nbdkit_args=nbdkit_args,
                         preexec_fn=None if thp else _disable_thp)
        # Read once nbdkit runs: just after exec it may still be empty.
        with open("/proc/%d/cmdline" % self.pid) as f:
            self.cmdline = f.read().split("\0")[:-1]

    def _spawn(self, *args):
        with held():
            super()._spawn(*args)
            on_teardown(self.stop)

    def cpu_s(self):
        return cpu_of(self.pid)

    def status_kib(self, key):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        return 0

    def anon_huge_kib(self):
        with open("/proc/%d/smaps_rollup" % self.pid) as f:
            for line in f:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        with held():
            super().stop()
            done_with(self.stop)


def _disable_thp():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)
