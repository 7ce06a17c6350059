# SPDX-License-Identifier: BSD-3-Clause
"""--baseline=REV: another revision of this repository's plugin, built
for the matrix to serve beside this checkout's in every geometry.

REV is checked before anything starts: one that names no commit ends the
run with one line.  It is built in a git worktree (git worktree add
--detach) in a private temporary directory -- autoreconf, configure and
the plugin's make target only, which has had the same path since the
first release -- and the worktree is removed at teardown (git worktree
remove --force, then prune), so also when a signal stops the run.  The
build runs in its own session: a signal stops the whole build (make and
its compilers) before the worktree is removed.  --baseline-plugin=PATH
serves a plugin built before instead.
"""
import os
import signal
import subprocess
import sys

from .common import TOP
from .teardown import held, on_teardown, private_dir

PLUGIN_TARGET = "plugins/largeblock/nbdkit-largeblock-plugin.la"
PLUGIN_SO = os.path.join("plugins", "largeblock", ".libs",
                         "nbdkit-largeblock-plugin.so")


def git(*args):
    return subprocess.run(["git", "-C", TOP] + list(args),
                          capture_output=True, text=True)


def resolve(rev):
    """REV's commit in this checkout's repository, or the run ends with
    one line naming REV."""
    if git("rev-parse", "--git-dir").returncode:
        sys.exit("largeblock-bench: --baseline=%s: %s is not a git checkout "
                 "(use --baseline-plugin=PATH)" % (rev, os.path.realpath(TOP)))
    found = git("rev-parse", "--verify", "--quiet", "--end-of-options",
                rev + "^{commit}")
    if found.returncode or not found.stdout.strip():
        sys.exit("largeblock-bench: --baseline=%s: not a commit of this "
                 "repository" % rev)
    return found.stdout.strip()


def check_plugin(path):
    """PATH, if it is a plugin file; else the run ends with one line."""
    if not os.path.isfile(path):
        sys.exit("largeblock-bench: --baseline-plugin=%s: no such file"
                 % path)
    return os.path.realpath(path)


def remove_worktree(tree):
    if os.path.exists(tree):
        git("worktree", "remove", "--force", tree)
    git("worktree", "prune")


def add_worktree(commit):
    """A detached worktree of COMMIT in a private directory, removed at
    teardown."""
    tree = os.path.join(private_dir("lbbench-baseline."), "src")
    with held():
        on_teardown(lambda: remove_worktree(tree))
        added = git("worktree", "add", "--detach", tree, commit)
    if added.returncode:
        sys.exit("largeblock-bench: git worktree add %s: %s" % (
            commit, (added.stderr.strip().splitlines() or ["failed"])[-1]))
    return tree


def run_step(cmd, tree, log):
    """CMD in TREE, its output to LOG, in a session of its own that is
    stopped whole if we are interrupted."""
    proc = None
    try:
        with held():
            proc = subprocess.Popen(cmd, cwd=tree, stdout=log,
                                    stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        return proc.wait()
    finally:
        if proc and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)     # our own session
            proc.wait()


def build(rev, commit, progress):
    """The plugin .so of COMMIT (REV as given), built in a temporary
    worktree that stays until teardown."""
    tree = add_worktree(commit)
    progress("largeblock-bench: building the baseline %s (%s) in %s" % (
        rev, commit[:12], tree))
    jobs = "-j%d" % len(os.sched_getaffinity(0))
    log_path = os.path.join(os.path.dirname(tree), "build.log")
    with open(log_path, "w") as log:
        for cmd in (["autoreconf", "-fi"], ["./configure"],
                    ["make", jobs, PLUGIN_TARGET]):
            status = run_step(cmd, tree, log)
            if status:
                with open(log_path) as f:
                    sys.stderr.write("".join(f.readlines()[-20:]))
                sys.exit("largeblock-bench: --baseline=%s: '%s' failed "
                         "(exit %d) building %s; its last lines are above"
                         % (rev, " ".join(cmd), status, commit[:12]))
    return os.path.join(tree, PLUGIN_SO)
