#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: install dependencies, build, install the build (so that
# `nbdkit largeblock` and the programs work by name), and serve the
# example disk (512 MiB, 16 KiB physical and logical blocks) in the
# foreground on a Unix socket.  Prints the NBD URI once the server
# answers; Ctrl-C stops it.
#   LARGEBLOCK_SOCKET  socket path (default /tmp/largeblock-example.sock)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
build_log=$(mktemp /tmp/largeblock-build.XXXXXX.log)
if ! scripts/build.sh >"$build_log" 2>&1; then
  cat "$build_log" >&2
  echo "largeblock: the build failed (log above)" >&2
  exit 1
fi
rm -f "$build_log"
scripts/install-build.sh

sock=${LARGEBLOCK_SOCKET:-/tmp/largeblock-example.sock}
pidfile=$(mktemp -u /tmp/largeblock-example.XXXXXX.pid)
rm -f "$sock"
nbdkit -f -U "$sock" -P "$pidfile" \
  plugins/largeblock/.libs/nbdkit-largeblock-plugin.so \
  size=512M blksize=16k logical-blksize=16k "$@" &
server=$!
trap 'kill -TERM "$server" 2>/dev/null; wait "$server"; rm -f "$pidfile"' EXIT
trap 'exit 0' INT TERM

for _ in $(seq 300); do
  [ -s "$pidfile" ] && break
  kill -0 "$server" 2>/dev/null || { wait "$server"; exit 1; }
  sleep 0.1
done
echo "largeblock: serving 512 MiB, blksize=16k logical-blksize=16k"
echo "NBD URI: nbd+unix:///?socket=$sock"
echo "try: nbdinfo 'nbd+unix:///?socket=$sock'   (Ctrl-C stops the server)"
wait "$server"
