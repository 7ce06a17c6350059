#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run --fstests without fstests: a fake ./check in a fake
# fstests directory records what it is given.  It must get FSTYP,
# TEST_DEV mounted on TEST_DIR, SCRATCH_DEV unmounted with SCRATCH_MNT a
# directory, MKFS_OPTIONS from the geometry, and HOST_OPTIONS naming a
# config file with the same values -- not the directory's own
# local.config, which here points at other devices.  It then makes and
# mounts its own scratch filesystem, as fstests does, and leaves it
# mounted: teardown must still leave nothing behind.  Its exit status
# is the run's.  The option's bad uses are refused in one line each.
: "${abs_top_srcdir:?run through make check}"
source "$abs_top_srcdir/tests/functions.sh" || exit 1
source "$abs_top_srcdir/tests/run-functions.sh" || exit 1
requires mkfs.xfs
requires findmnt

fst="$tmpdir/fstests"
mkdir "$fst"
printf 'TEST_DEV=/dev/not-ours\nSCRATCH_DEV=/dev/not-ours-either\n' >"$fst/local.config"
cat >"$fst/check" <<'EOS'
#!/bin/bash
# The fake fstests: record, check the mounts, make scratch as fstests does.
out=$PWD/seen
{
    for v in FSTYP TEST_DEV TEST_DIR SCRATCH_DEV SCRATCH_MNT MKFS_OPTIONS HOST_OPTIONS; do
        echo "$v=${!v}"
    done
    echo "args=$*"
    echo "test_mount=$(findmnt -n -o SOURCE,FSTYPE --mountpoint "$TEST_DIR")"
    findmnt -n -S "$SCRATCH_DEV" >/dev/null && echo scratch_mounted=yes
    [ -d "$SCRATCH_MNT" ] && echo scratch_mnt_is_dir=yes
} >"$out"
cp "$HOST_OPTIONS" "$PWD/config-seen"
mkfs.xfs -f $MKFS_OPTIONS "$SCRATCH_DEV" >/dev/null &&
    mount "$SCRATCH_DEV" "$SCRATCH_MNT" || exit 9
exit 3
EOS
chmod +x "$fst/check"

cd "$fst"
lb_run --fstests --mkfs=xfs blksize=16k logical-blksize=16k size=512M \
    -- ./check -g quick
[ "$rc" -eq 3 ] || fail "expected the command's status 3, got $rc"
cat seen
# value NAME: what the fake check saw for NAME.
value () { sed -n "s/^$1=//p" seen; }
[ "$(value FSTYP)" = xfs ] || fail "FSTYP is not xfs"
[ "$(value MKFS_OPTIONS)" = "-b size=16384 -s size=16384" ] ||
    fail "MKFS_OPTIONS is not the 16k geometry's"
[ "$(value args)" = "-g quick" ] || fail "the command's arguments were changed"
test_dev=$(value TEST_DEV) scratch_dev=$(value SCRATCH_DEV)
[ -n "$test_dev" ] && [ -n "$scratch_dev" ] && [ "$test_dev" != "$scratch_dev" ] ||
    fail "TEST_DEV and SCRATCH_DEV are not two devices"
case "$test_dev $scratch_dev" in
    *not-ours*) fail "the fstests directory's local.config was used" ;;
esac
[ "$(value test_mount)" = "$test_dev xfs" ] ||
    fail "TEST_DEV was not mounted with xfs on TEST_DIR"
grep -q '^scratch_mounted=yes' seen && fail "SCRATCH_DEV was mounted when fstests began"
grep -q '^scratch_mnt_is_dir=yes' seen || fail "SCRATCH_MNT is not a directory"
case "$(value HOST_OPTIONS)" in
    "$tmpdir"/largeblock-run.*/fstests.config) ;;
    *) fail "HOST_OPTIONS is not the run's own config file" ;;
esac
# The config file says the same as the environment.
for v in FSTYP TEST_DEV TEST_DIR SCRATCH_DEV SCRATCH_MNT MKFS_OPTIONS; do
    grep -qxF "export $v='$(value "$v")'" config-seen ||
        { cat config-seen; fail "the config file does not set $v as the environment does"; }
done
assert_nothing_left

# Bad uses: one line naming what is wrong, nothing started.
lb_run --fstests size=512M -- ./check
[ "$rc" -eq 1 ] || fail "--fstests without --mkfs: status $rc"
expect_msg "--fstests needs --mkfs"
lb_run --fstests --mkfs=xfs --disks=3 size=512M -- ./check
[ "$rc" -eq 1 ] || fail "--fstests --disks=3: status $rc"
expect_msg "--disks=3: --fstests uses exactly 2 disks"
lb_run --fstests --mkfs=xfs size=512M
[ "$rc" -eq 1 ] || fail "--fstests without COMMAND: status $rc"
expect_msg "--fstests needs a COMMAND"
assert_nothing_left
grep -q 'largeblock-run --fstests' "$abs_top_srcdir/README.md" ||
    fail "README.md has no largeblock-run --fstests example"
[ -f "$abs_top_srcdir/docs/fstests.md" ] || fail "docs/fstests.md is missing"
echo PASS
