#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: the two checks of largeblock-run --crash-explore's tests,
# on the files of tests/helpers/explore-workload.sh in $LARGEBLOCK_MNT.
#
#   explore-check.sh synced   what the workload made durable is there:
#       for each NAME in the disk's "progress" (its last line for NAME,
#       SUM), NAME holds SUM or a content it was given after that
#       ($EXPLORE_VERSIONS lists them in order; "-": NAME is gone).
#       Holds in every crash state of a correct filesystem.
#   explore-check.sh all      every file holds its final content, the
#       unflushed changes ($EXPLORE_UNSYNCED) included: demands what
#       no flush promised, so it fails in some crash states.
# Prints one line per file that fails; exit status 1 if any did.
: "${LARGEBLOCK_MNT:?}" "${EXPLORE_VERSIONS:?}" "${EXPLORE_UNSYNCED:?}"
cd "$LARGEBLOCK_MNT" || exit 1

line='^[^ ]+ ([0-9a-f]{64}|-)$'
case $1 in
synced)
    [ -e progress ] || exit 0          # cut before the first promise
    promised=$(grep -aE "$line" progress) ;;
all) promised= ;;
*) echo "usage: explore-check.sh synced|all" >&2; exit 2 ;;
esac
# Every name ever written, and one sha256sum for all that exist: a
# check runs in every crash state, so it forks little.
names=$({ echo "$promised"; cat "$EXPLORE_VERSIONS" "$EXPLORE_UNSYNCED"; } |
        cut -d' ' -f1 | sort -u)
{
    echo "$promised" | sed -n 's/^./P &/p'
    sed 's/^/V /' "$EXPLORE_VERSIONS"
    sed 's/^/U /' "$EXPLORE_UNSYNCED"
    # shellcheck disable=SC2086 # the names hold no spaces
    sha256sum -- $names 2>/dev/null | sed 's/^\([0-9a-f]*\)  \(.*\)$/S \2 \1/'
} | awk -v mode="$1" '
    $1 == "P" { promised[$2] = $3 }
    $1 == "V" { v[$2, ++nv[$2]] = $3; final[$2] = $3 }
    $1 == "U" { final[$2] = $3 }
    $1 == "S" { got[$2] = $3 }
    function now(n) { return (n in got) ? got[n] : "-" }
    # NAME holds its promised content or one it was given after that.
    function kept_promise(n,    i, seen) {
        for (i = 1; i <= nv[n]; i++) {
            if (v[n, i] == promised[n]) seen = 1
            if (seen && v[n, i] == now(n)) return 1
        }
        return 0
    }
    END {
        bad = 0
        if (mode == "synced") {
            for (n in promised) if (!kept_promise(n)) {
                print "explore-check: " n " is " now(n) ", but " promised[n] " was durable"
                bad = 1
            }
        } else {
            for (n in final) if (now(n) != final[n]) {
                print "explore-check: " n " is " now(n) ", not its final " final[n]
                bad = 1
            }
        }
        exit bad
    }'
