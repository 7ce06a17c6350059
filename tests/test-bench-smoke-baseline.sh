#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The matrix's server options.  --threads=N reaches every nbdkit the
# matrix starts (the peers, nbdkit's blocksize-policy filter over memory,
# largeblock and the baseline), read from each process's own command
# line, and the report says so.  --baseline-plugin=PATH serves that
# plugin beside this one (here the same build) and the report gets its
# "Since the last release" table with a ratio per row.  --baseline=REV
# refuses a revision that names no commit with one line, making no
# worktree; with a real one it makes its worktree, and a SIGTERM during
# the build removes it again, with everything else the run made (the
# build itself is left to make bench: it takes a minute).  No timing is
# judged: the machine is shared and noisy.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/bench-functions.sh"

bench=("$PYTHON_NBD" "$abs_top_srcdir/bench/largeblock-bench.py")

"${bench[@]}" --quick --only matrix --patterns randwrite --threads=3 \
    --baseline-plugin="$LARGEBLOCK_PLUGIN" --output "$tmpdir/matrix.md" \
    --json "$tmpdir/matrix.json" 2>"$tmpdir/progress" ||
    { cat "$tmpdir/progress"; fail "the quick matrix with a baseline failed"; }
"$PYTHON_NBD" - "$tmpdir/matrix.json" <<'PY' || fail "the servers' command lines: see above"
import json, sys
d = json.load(open(sys.argv[1]))
want = {"memory-sparse", "memory-malloc", "null", "memory+blocksize-policy",
        "largeblock-16k/4k", "baseline-16k/4k"}
assert set(d["cmdlines"]) == want, sorted(d["cmdlines"])
for name, cmd in d["cmdlines"].items():
    assert cmd.count("--threads=3") == 1, (name, cmd)
    # nbdkit's own options come before the plugin, the first word after
    # them without a dash.
    plugin = next(a for a in cmd[cmd.index("-P") + 2:] if a[0] != "-")
    assert cmd.index("--threads=3") < cmd.index(plugin), (name, cmd)
policy = d["cmdlines"]["memory+blocksize-policy"]
for arg in ("--filter=blocksize-policy", "memory", "allocator=sparse",
            "blocksize-minimum=4096", "blocksize-preferred=16384",
            "blocksize-error-policy=error"):
    assert arg in policy, (arg, policy)
maximum = [a for a in policy if a.startswith("blocksize-maximum=")]
assert len(maximum) == 1 and int(maximum[0].split("=")[1]) >= 16384, policy
assert d["baseline"]["plugin"].endswith(".so"), d["baseline"]
PY
report="$tmpdir/matrix.md"
grep -qF 'nbdkit ran with `--threads=3`' "$report" ||
    fail "the report does not state nbdkit's threads"
grep -qxF "## Since the last release" "$report" ||
    fail "no 'Since the last release' section"
ratio='[0-9]+\.[0-9]{2}'
grep -qE "^\| randwrite \| 16k \| 1 \| 16k/4k \| [0-9]+ \| [0-9]+ \| $ratio \| [0-9.]+ \| [0-9.]+ \| $ratio \|$" \
    "$report" || { cat "$report"; fail "no since-baseline row for 16k/4k"; }
grep -qE "^\| randwrite \| 16k \| 1 \| memory-(sparse|malloc) \| $ratio / $ratio \| $ratio / $ratio \|$" \
    "$report" || { cat "$report"; fail "no row against the better memory allocator"; }

# --baseline=REV needs this checkout to be a git repository.
git -C "$abs_top_srcdir" rev-parse --git-dir >/dev/null 2>&1 || {
    echo "PASS (not a git checkout: --baseline=REV not tested)"; exit 0; }
# our_worktrees: the worktrees this test's runs made (under $tmpdir).
our_worktrees () {
    git -C "$abs_top_srcdir" worktree list --porcelain | grep -F "worktree $tmpdir/"
}
# On a failure: the worktrees a broken teardown left go too.
remove_our_worktrees () {
    local path
    our_worktrees | while read -r _ path; do
        git -C "$abs_top_srcdir" worktree remove --force "$path"
    done
}
cleanup_fn remove_our_worktrees

rc=0
TMPDIR=$tmpdir "${bench[@]}" --quick --only matrix \
    --baseline=nonexistent-rev 2>"$tmpdir/bad-rev" || rc=$?
[ "$rc" -ne 0 ] || fail "--baseline=nonexistent-rev succeeded"
[ "$(wc -l <"$tmpdir/bad-rev")" -eq 1 ] &&
    grep -qxF "largeblock-bench: --baseline=nonexistent-rev: not a commit of this repository" \
        "$tmpdir/bad-rev" ||
    { cat "$tmpdir/bad-rev"; fail "--baseline=nonexistent-rev: not one clear line"; }
! our_worktrees || fail "--baseline=nonexistent-rev left a worktree"

# A SIGTERM while the baseline builds: the bench runs in a session of
# its own, so that its process group is only what it started; the build
# runs in another session, in the worktree under $tmpdir.
# in_our_tree: the PIDs of processes working in a directory under $tmpdir.
in_our_tree () {
    local p
    for p in /proc/[0-9]*; do
        case $(readlink "$p/cwd" 2>/dev/null) in
        "$tmpdir"/*) echo "${p#/proc/}" ;;
        esac
    done
}
bench_pid=
stop_bench_group () {
    [ -n "$bench_pid" ] || return 0
    kill -TERM -- "-$bench_pid" $(in_our_tree) 2>/dev/null
    sleep 1
    kill -KILL -- "-$bench_pid" $(in_our_tree) 2>/dev/null
}
cleanup_fn stop_bench_group
TMPDIR=$tmpdir setsid "${bench[@]}" --quick --only matrix --baseline=HEAD \
    --output "$tmpdir/baseline.md" 2>"$tmpdir/progress" &
bench_pid=$!
for (( i=0; i<6000; i++ )); do
    grep -q "building the baseline" "$tmpdir/progress" && break
    kill -0 "$bench_pid" 2>/dev/null || break
    sleep 0.01
done
our_worktrees >/dev/null ||
    { cat "$tmpdir/progress"; fail "--baseline=HEAD made no worktree"; }
kill -TERM "$bench_pid"
rc=0
wait "$bench_pid" || rc=$?
cat "$tmpdir/progress" >&2
for (( i=0; i<1000; i++ )); do
    pgrep -g "$bench_pid" >/dev/null || [ -n "$(in_our_tree)" ] || break
    sleep 0.01
done
if pgrep -g "$bench_pid" >/dev/null || [ -n "$(in_our_tree)" ]; then
    ps -o pid,args -g "$bench_pid" >&2
    in_our_tree | xargs -r ps -o pid,args -p >&2
    fail "SIGTERM during the baseline's build: a process the bench started remains"
fi
bench_pid=
[ "$rc" -eq 143 ] || fail "SIGTERM during the baseline's build: exit status $rc"
! our_worktrees || fail "SIGTERM during the baseline's build: its worktree remains"
! ls -d "$tmpdir"/lbbench* 2>/dev/null ||
    fail "SIGTERM during the baseline's build: temporary directories remain"
[ ! -e "$tmpdir/baseline.md" ] || fail "SIGTERM: a report was written"
echo PASS
