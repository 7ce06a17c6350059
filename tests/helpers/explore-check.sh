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

sum () { if [ -e "$1" ]; then sha256sum <"$1" | cut -c1-64; else echo -; fi; }
line='^[^ ]+ ([0-9a-f]{64}|-)$'
failed=0

# allowed NAME SUM GOT: GOT is SUM or a later content of NAME.
allowed () {
    awk -v n="$1" -v want="$2" -v got="$3" '
        $1 == n && $2 == want { seen = 1 }
        $1 == n && seen && $2 == got { ok = 1 }
        END { exit !ok }' "$EXPLORE_VERSIONS"
}

case $1 in
synced)
    [ -e progress ] || exit 0          # cut before the first promise
    declare -A promised
    while read -r name s; do promised[$name]=$s; done \
        < <(grep -aE "$line" progress)
    for name in "${!promised[@]}"; do
        got=$(sum "$name")
        allowed "$name" "${promised[$name]}" "$got" && continue
        echo "explore-check: $name is $got, but ${promised[$name]} was durable"
        failed=1
    done
    ;;
all)
    declare -A final
    while read -r name s; do final[$name]=$s; done \
        < <(cat "$EXPLORE_VERSIONS" "$EXPLORE_UNSYNCED")
    for name in "${!final[@]}"; do
        got=$(sum "$name")
        [ "$got" = "${final[$name]}" ] && continue
        echo "explore-check: $name is $got, not its final ${final[$name]}"
        failed=1
    done
    ;;
*) echo "usage: explore-check.sh synced|all" >&2; exit 2 ;;
esac
exit $failed
