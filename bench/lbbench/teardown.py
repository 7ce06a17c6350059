# SPDX-License-Identifier: BSD-3-Clause
"""Signals and teardown.

Everything a run makes -- its temporary directories, servers, nbdfuse
mounts, loop devices -- is recorded in UNDO as it is made, under held()
so that no signal falls between making a thing and recording it.  A
SIGTERM, SIGINT or SIGHUP raises Signalled wherever the main thread is
(a fio it waits for is asked to stop, any other child is killed by
subprocess on the way out); the sections' finally blocks undo what they
made, main() undoes whatever is still recorded and exits 128+N.  Only
the first signal raises: later ones cannot cut a teardown short.
"""
import contextlib
import shutil
import signal
import sys
import tempfile



class Signalled(BaseException):
    """Not an Exception: no "except Exception" swallows it."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_signal = {"num": None, "holding": 0, "raised": False}
UNDO = []       # callables, newest last; each may run more than once


def _on_signal(signum, frame):
    if _signal["num"] is None:
        _signal["num"] = signum
    _raise_pending()


def _raise_pending():
    if _signal["num"] and not _signal["holding"] and not _signal["raised"]:
        _signal["raised"] = True
        raise Signalled(_signal["num"])


@contextlib.contextmanager
def held():
    """A signal that arrives inside waits until the block is done."""
    _signal["holding"] += 1
    try:
        yield
    finally:
        _signal["holding"] -= 1
    _raise_pending()


def on_teardown(undo):
    """Record UNDO; under held() with the step that makes what it undoes,
    unless UNDO is harmless before that step."""
    UNDO.append(undo)
    return undo


def done_with(undo):
    """UNDO has run in the normal course: forget it."""
    if undo in UNDO:
        UNDO.remove(undo)


def undo_since(mark):
    """Undo what was recorded after UNDO had MARK entries, newest first."""
    with held():
        while len(UNDO) > mark:
            try:
                UNDO.pop()()
            except Exception as e:      # tear down the rest regardless
                print("largeblock-bench: teardown: %s" % e, file=sys.stderr)


def teardown():
    """Undo everything still recorded."""
    undo_since(0)


def private_dir(prefix, parent=None):
    """A new directory, removed at teardown if not before."""
    with held():
        path = tempfile.mkdtemp(prefix=prefix, dir=parent)
        on_teardown(lambda: shutil.rmtree(path, ignore_errors=True))
    return path


def catch_signals():
    """From now on SIGTERM, SIGINT and SIGHUP raise Signalled."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _on_signal)


def caught_signal():
    """The first signal caught, or None."""
    return _signal["num"]
