#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: a small filesystem workload for largeblock-run
# --crash-explore's tests: creates, renames and overwrites, some made
# durable with fsync (file and directory), some only pushed to the
# device's cache (sync_file_range: written, no flush).
#
# Runs in $LARGEBLOCK_MNT.  Outside the disk it records, in order:
#   $EXPLORE_VERSIONS  "NAME SUM" for each durable change (SUM: sha256 of
#                      the content, "-" once NAME is gone);
#   $EXPLORE_UNSYNCED  "NAME SUM" for each change left unflushed.
# On the disk, the file "progress" gets the same line as
# $EXPLORE_VERSIONS, fsync'd, once each durable change is durable: a
# line there promises that NAME was durable with SUM at that point
# (tests/helpers/explore-check.sh reads both).
set -e
: "${LARGEBLOCK_MNT:?}" "${EXPLORE_VERSIONS:?}" "${EXPLORE_UNSYNCED:?}"
cd "$LARGEBLOCK_MNT"
: >"$EXPLORE_VERSIONS"
: >"$EXPLORE_UNSYNCED"

sum () { if [ -e "$1" ]; then sha256sum <"$1" | cut -c1-64; else echo -; fi; }

# write NAME BYTE SIZE: NAME holds SIZE bytes of BYTE, in the page cache.
write () { xfs_io -f -c "truncate 0" -c "pwrite -q -S $2 0 $3" "$1"; }

# durable NAME: NAME's change is durable now; say so outside, then on
# the disk.
durable () {
    echo "$1 $(sum "$1")" >>"$EXPLORE_VERSIONS"
    echo "$1 $(sum "$1")" >>progress
    sync progress
}

# unsynced NAME BYTE SIZE: write NAME and push it to the device's
# cache, without a flush.
unsynced () {
    xfs_io -f -c "pwrite -q -S $2 0 $3" -c "sync_range -w 0 $3" \
        -c "sync_range -a 0 $3" "$1"
    echo "$1 $(sum "$1")" >>"$EXPLORE_UNSYNCED"
}

mkdir dir
touch progress
sync progress dir .

write f1 0x61 64k; sync f1 .; durable f1                  # create
unsynced u1 0x62 48k
write tmp 0x63 100k; sync tmp; mv tmp r1; sync .; durable r1
unsynced u1 0x64 48k                                       # overwrite in place
write tmp 0x65 32k; sync tmp; mv tmp f1; sync .; durable f1   # replace
mv r1 dir/r2; sync . dir; durable dir/r2; durable r1       # rename
for i in 2 3 4; do unsynced "u$i" "0x7$i" "${i}0k"; done
write dir/f3 0x70 200k; sync dir/f3 dir; durable dir/f3
unsynced u5 0x75 16k
mv u5 u6                                                   # unsynced rename
echo "u5 -" >>"$EXPLORE_UNSYNCED"; echo "u6 $(sum u6)" >>"$EXPLORE_UNSYNCED"
write f4 0x76 24k; sync f4 .; durable f4
unsynced u7 0x78 64k
