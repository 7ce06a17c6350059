#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: every tracked source file names its licence in an SPDX line
# near its top (LICENSE: BSD-3-Clause).
#
#   scripts/spdx-check.sh [--fix] [SRCDIR]
#
# Lists each tracked source file (git ls-files) whose first five lines
# lack "SPDX-License-Identifier: BSD-3-Clause" and exits 1 if there is
# one.  --fix adds the line in the file's own comment syntax instead:
# after a "#!" line, else first; so after a merge brings new files,
# "scripts/spdx-check.sh --fix" redoes the mechanical commit.
# Source files: C, headers, shell, Python, TAP wrappers, makefile
# fragments, configure.ac, POD, .in templates, the version script, the
# valgrind suppressions, the systemd units, and anything starting "#!".
# Exits 77 outside a git checkout (a release tarball).
set -euo pipefail

fix=no
if [ "${1:-}" = --fix ]; then fix=yes; shift; fi
srcdir=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$srcdir"
line='SPDX-License-Identifier: BSD-3-Clause'

if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "spdx-check: $srcdir is not a git checkout; nothing to check"
    exit 77
fi

is_source () {
    case "$1" in
        fuzz/corpus/* | fuzz/regressions/*) return 1 ;;
        *.c | *.h | *.sh | *.py | *.tap | *.mk | *.am | *.ac | *.pod | \
        *.in | *.syms | *.supp | *.service | *.socket) return 0 ;;
    esac
    [ "$(head -c 2 "$1")" = '#!' ]
}

# The line in the file's own comment syntax.
spdx_comment () {
    case "$1" in
        *.c | *.h | *.h.in | *.syms) echo "/* $line */" ;;
        *.pod) printf '=for comment %s\n' "$line" ;;
        *) echo "# $line" ;;
    esac
}

add_line () {
    local f=$1 comment tmp
    comment=$(spdx_comment "$f")
    tmp=$(mktemp "$f.spdx.XXXXXX")
    if [ "$(head -c 2 "$f")" = '#!' ]; then
        { head -n 1 "$f"; echo "$comment"; tail -n +2 "$f"; } >"$tmp"
    else
        case "$f" in
            *.pod) { echo "$comment"; echo; cat "$f"; } >"$tmp" ;;
            *) { echo "$comment"; cat "$f"; } >"$tmp" ;;
        esac
    fi
    chmod --reference="$f" "$tmp"
    mv "$tmp" "$f"
}

missing=0
while IFS= read -r f; do
    [ -f "$f" ] && is_source "$f" || continue
    head -n 5 "$f" | grep -qF "$line" && continue
    if [ "$fix" = yes ]; then
        add_line "$f"
        echo "spdx-check: added to $f"
    else
        echo "spdx-check: $f has no \"$line\" in its first five lines"
        missing=$((missing + 1))
    fi
done < <(git ls-files)

[ "$missing" -eq 0 ] || { echo "spdx-check: $missing files (scripts/spdx-check.sh --fix adds it)"; exit 1; }
echo "spdx-check: every tracked source file has its SPDX line"
