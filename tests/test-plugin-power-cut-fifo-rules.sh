#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# power-cut-fifo= is the server's own (issue 25, W3): whoever can write
# to the FIFO can cut the power.
#  - a path that does not exist: the server makes a FIFO of mode 0600
#    owned by its uid, and removes it at exit;
#  - an existing FIFO of the server's uid, mode 0600: used, and left;
#  - refused at start-up in one line naming the parameter, the path and
#    the rule: a FIFO writable by others (0666) or by the group (0620),
#    a symbolic link to a good FIFO, a regular file, and (as root) a
#    FIFO owned by nobody.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"

serve () {
    "$NBDKIT" -U - "$LARGEBLOCK_PLUGIN" size=1M write-cache=volatile \
        "power-cut-fifo=$1" --run "$2"
}

# refused NAME PATH MESSAGE: the server exits at start-up with MESSAGE.
refused () {
    if serve "$2" 'echo served' >"$tmpdir/$1.out" 2>&1; then
        cat "$tmpdir/$1.out"; fail "$1: served with power-cut-fifo=$2"
    fi
    [ "$(cat "$tmpdir/$1.out")" = "nbdkit: error: largeblock: $3" ] ||
        { cat "$tmpdir/$1.out"; fail "$1: not the one line: $3"; }
}

uid=$(id -u)
rule="an existing FIFO must not be writable by group or others (chmod go-w it, or name a path that does not exist)"

fifo=$tmpdir/new.cut
st=$(serve "$fifo" "stat -c '%F %a %u' '$fifo'") || fail "a new FIFO was refused"
[ "$st" = "fifo 600 $uid" ] ||
    fail "the new FIFO is '$st', not a FIFO of mode 600 owned by $uid"
[ ! -e "$fifo" ] || fail "the FIFO the server made is still there"
echo "missing path: made mode 0600, removed at exit"

fifo=$tmpdir/own.cut
mkfifo -m 0600 "$fifo"
serve "$fifo" true || fail "the server's own 0600 FIFO was refused"
[ -p "$fifo" ] || fail "a FIFO the server found was removed"
ln -s "$fifo" "$tmpdir/link.cut"
refused link "$tmpdir/link.cut" \
    "power-cut-fifo $tmpdir/link.cut is a symbolic link: links are not followed, give the FIFO itself"

mkfifo -m 0666 "$tmpdir/open.cut"
chmod 0666 "$tmpdir/open.cut"   # whatever the umask
refused world "$tmpdir/open.cut" \
    "power-cut-fifo $tmpdir/open.cut has mode 0666: $rule"
mkfifo -m 0620 "$tmpdir/group.cut"
chmod 0620 "$tmpdir/group.cut"
refused group "$tmpdir/group.cut" \
    "power-cut-fifo $tmpdir/group.cut has mode 0620: $rule"
: >"$tmpdir/plain.cut"
refused plain "$tmpdir/plain.cut" \
    "power-cut-fifo $tmpdir/plain.cut exists and is not a FIFO"
echo "own FIFO used; link, 0666, 0620 and a regular file refused"

if [ "$uid" = 0 ] && id nobody >/dev/null 2>&1; then
    mkfifo -m 0600 "$tmpdir/nobody.cut"
    chown nobody "$tmpdir/nobody.cut"
    refused nobody "$tmpdir/nobody.cut" \
        "power-cut-fifo $tmpdir/nobody.cut is owned by uid $(id -u nobody), not by the server's uid 0: an existing FIFO must be the server's own (or name a path that does not exist)"
    echo "a FIFO of nobody's refused"
fi
echo PASS
