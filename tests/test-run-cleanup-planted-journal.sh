#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run --cleanup, as root, obeys no journal that it did not
# write itself.  Under a shared sticky TMPDIR, look-alike directories
# hold journals that name a root-owned empty directory in "mkdir" lines
# (the old form and the new, with its real device and inode) and a root
# process by pid, start time and executable, the process being a
# `tail -f` of the journal (so its arguments name the directory): made
# by `nobody`; or root's, but with the directory's mode 0755, the
# journal owned by nobody, the journal's mode 0644, or the journal a
# symlink.  Afterwards the root directory, every process and every
# look-alike must still be there.  Beside them a dead run's genuine
# journal (root's, 0700/0600, unlocked) is cleaned, mount point
# included, which proves --cleanup looked.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
source "$abs_top_srcdir/tests/cleanup-functions.sh" || exit 1

failures=()
victim="$tmpdir/root-owned-empty"
mkdir -m 0755 "$victim"
read -r victim_dev victim_ino < <(stat -c '%d %i' "$victim")

tails=()
stop_tails () {
    local p
    for p in "${tails[@]}"; do kill "$p" 2>/dev/null; done
}
cleanup_fn stop_tails

# plant CASE USER DIR_MODE JOURNAL_OWNER JOURNAL_MODE [symlink]: a
# look-alike of USER with a journal as described (root writes it, as
# the owner could), and a tail -f of it.
declare -A planted
plant () {
    local name=$1 user=$2 dmode=$3 jowner=$4 jmode=$5 how=${6-} dir j file pid
    dir=$(look_alike "$user") || fail "$name: cannot make the look-alike"
    as_user "$user" chmod "$dmode" "$dir"
    j="$dir/journal" file="$dir/journal"
    if [ "$how" = symlink ]; then
        file="$tmpdir/elsewhere.$RANDOM"
        ln -s "$file" "$j"
    fi
    : >"$file"
    chown "$jowner" "$file"
    chmod "$jmode" "$file"
    tail -f "$j" >/dev/null 2>&1 &
    pid=$!
    tails+=("$pid")
    printf 'owner 1 0\nmkdir %s\nmkdir %s %s %s\nproc %s %s %s\n' \
        "$victim" "$victim_dev" "$victim_ino" "$victim" \
        "$pid" "$(start_time "$pid")" "$(readlink "/proc/$pid/exe")" \
        >>"$file"
    planted[$name]="$dir $pid"
}

plant "nobody's directory and journal" nobody 0700 nobody 0600
plant "root's directory with mode 0755" root 0755 root 0600
plant "a journal owned by nobody" root 0700 nobody 0600
plant "a journal with mode 0644" root 0700 root 0644
plant "a journal that is a symlink" root 0700 root 0600 symlink

# The control: a dead run's own journal and the mount point it made.
control=$(look_alike root)
mkdir "$tmpdir/control-mnt"
(umask 077
 printf 'owner 1 0\nmkdir %s %s %s\n' \
     $(stat -c '%d %i' "$tmpdir/control-mnt") "$tmpdir/control-mnt" \
     >"$control/journal")

cleanup_shared

for name in "${!planted[@]}"; do
    read -r dir pid <<<"${planted[$name]}"
    alive "$pid" || failures+=("$name: root's tail -f of it was killed")
    [ -e "$dir/journal" ] || failures+=("$name: it was removed")
done
[ -d "$victim" ] || failures+=("the root-owned directory it names was removed")
[ -e "$control" ] && failures+=("the dead run's own directory was left")
[ -e "$tmpdir/control-mnt" ] &&
    failures+=("the dead run's own mount point was left")
[ "$cleanup_rc" = 0 ] || failures+=("--cleanup exited $cleanup_rc")

if [ "${#failures[@]}" -gt 0 ]; then
    printf 'FAIL: %s\n' "${failures[@]}" >&2
    exit 1
fi
echo "every planted journal was ignored; the dead run's own was cleaned"
