#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# docs/vm-testing.md quotes what a client without TLS gets from an
# nbdkit started with --tls=require --tls-psk: this runs such a server
# and the two clients (nbdinfo, and qemu-img where installed) and checks
# that the page quotes each one's real message.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
requires nbdinfo
requires openssl

doc="$abs_top_srcdir/docs/vm-testing.md"
echo "lbguest:$(openssl rand -hex 32)" >"$tmpdir/keys.psk"
chmod 600 "$tmpdir/keys.psk"

# refusal CLIENT...: the client's message, less its program name.
refusal () {
    "$NBDKIT" -U - --tls=require --tls-psk="$tmpdir/keys.psk" \
        "$LARGEBLOCK_PLUGIN" size=1M \
        --run "$* \"nbd+unix:///?socket=\$unixsocket\"" >/dev/null 2>"$tmpdir/out" &&
        fail "$1 connected without TLS"
    cat "$tmpdir/out" >&2
    sed -n 's/^[a-z-]*: //p' "$tmpdir/out" | head -1
}

# The page joins lines, so compare with its text as one line.
text=$(tr '\n' ' ' <"$doc")
msg=$(refusal nbdinfo)
msg=${msg#nbd_opt_go: }
[ -n "$msg" ] || fail "nbdinfo printed no message"
[[ $text == *"\"$msg\""* ]] || fail "$doc does not quote nbdinfo's refusal: $msg"
if command -v qemu-img >/dev/null; then
    msg=$(refusal qemu-img info)
    msg=${msg#Could not open \'*\': }
    [[ $text == *"\"$msg\""* ]] || fail "$doc does not quote QEMU's refusal: $msg"
else
    echo "qemu-img not installed: QEMU's message not checked"
fi
exit 0
