#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: check that the C sources are laid out as .clang-format says.
#
#   scripts/check-format.sh [-d] [FILE...]   (FILE relative to the top)
#
# Lists every file clang-format would change, with the number of its lines
# that would change, and exits 1 if there is any; exits 0 when all match.
# Without FILE, checks the tree's C sources (below).  -d also prints the
# diffs.  Exits 77 (automake's SKIP) when clang-format is not installed,
# and 2 if clang-format fails.  Set CLANG_FORMAT to choose the program;
# .clang-format is written for clang-format 14 (Debian 12's), and other
# versions may lay out some lines differently.
set -euo pipefail
cd "$(dirname "$0")/.."

show_diff=false
if [ "${1:-}" = -d ]; then
    show_diff=true
    shift
fi

clang_format=${CLANG_FORMAT:-}
if [ -z "$clang_format" ]; then
    for p in clang-format clang-format-14; do
        if command -v "$p" >/dev/null; then
            clang_format=$p
            break
        fi
    done
fi
if [ -z "$clang_format" ] || ! command -v "$clang_format" >/dev/null; then
    echo "check-format: SKIP: clang-format is not installed" \
         "(apt-get install clang-format)"
    exit 77
fi
version=$("$clang_format" --version | sed -n 's/.*version \([0-9]*\).*/\1/p')
if [ "$version" != 14 ]; then
    echo "check-format: note: $clang_format is version ${version:-unknown};" \
         ".clang-format was tuned with version 14" >&2
fi

if [ $# -eq 0 ]; then
    shopt -s nullglob
    set -- lib/*.c lib/*.h plugins/largeblock/*.c server/*/*.c server/*/*.h \
        tools/*.c tools/*.h tests/unit/*.c tests/unit/*.h tests/helpers/*.c \
        tests/*.c fuzz/*.c bench/*.c
fi

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
differ=0
for f in "$@"; do
    if ! "$clang_format" --style=file "$f" >"$tmp"; then
        echo "check-format: $clang_format failed on $f" >&2
        exit 2
    fi
    if ! cmp -s "$f" "$tmp"; then
        lines=$(diff -U0 "$f" "$tmp" | tail -n +3 | grep -c '^-' || true)
        echo "$f: $lines lines differ from .clang-format"
        if $show_diff; then
            diff -u "$f" "$tmp" | sed "1,2s|$tmp|$f (clang-format)|" || true
        fi
        differ=$((differ + 1))
    fi
done
if [ "$differ" -gt 0 ]; then
    echo "check-format: $differ of $# files differ;" \
         "reformat with: $clang_format -i FILE..."
    exit 1
fi
echo "check-format: $# files match .clang-format"
