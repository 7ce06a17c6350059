#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: a COMMAND step for the largeblock-run tests: writes two
# files (one not a multiple of any block size) on $LARGEBLOCK_MNT,
# unmounts, mounts $LARGEBLOCK_DEV again and verifies them.
set -eu
head -c 5M /dev/urandom >"$LARGEBLOCK_MNT/a"
head -c 123457 /dev/urandom >"$LARGEBLOCK_MNT/b"
(cd "$LARGEBLOCK_MNT" && sha256sum a b) >"$TMPDIR/sums"
sync
umount "$LARGEBLOCK_MNT"
mount "$LARGEBLOCK_DEV" "$LARGEBLOCK_MNT"
(cd "$LARGEBLOCK_MNT" && sha256sum -c --quiet "$TMPDIR/sums")
