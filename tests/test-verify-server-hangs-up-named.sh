#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-verify names a server that greets and then hangs up in
# words ("closed the connection during the NBD handshake"), not only in
# libnbd's state-machine terms, and exits 4 (could not run).
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/verify-functions.sh"

sock="$tmpdir/hangup.sock"
"$PYTHON_NBD" "$abs_top_srcdir/tests/helpers/greet-and-hang-up.py" \
    "$sock" "$tmpdir/ready" &
server=$!
cleanup_fn "kill $server 2>/dev/null"
for (( i=0; i<300; i++ )); do
    [ -e "$tmpdir/ready" ] && break
    sleep 0.02
done
[ -e "$tmpdir/ready" ] || fail "the fake server did not start"

lb_verify hangup --verify-only 1 "nbd+unix:///?socket=$sock"
expect_rc hangup 4
grep -q "closed the connection during the NBD handshake" \
    "$tmpdir/hangup.verr" ||
    fail "no plain-words message: $(cat "$tmpdir/hangup.verr")"
[ "$(wc -l <"$tmpdir/hangup.verr")" -eq 1 ] ||
    fail "more than one line: $(cat "$tmpdir/hangup.verr")"
