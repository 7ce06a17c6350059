# SPDX-License-Identifier: BSD-3-Clause
# largeblock: helpers for the installed library's tests (sourced after
# functions.sh).  Helper names: the words of tests/functions.sh.

# pod_example POD: print the program in POD's EXAMPLE section (its
# verbatim lines, one leading space removed; blank lines kept inside).
pod_example () {
    awk '/^=head1 EXAMPLE/ { on = 1; next }
         /^=/ { on = 0 }
         on && /^ / { for (; blanks > 0; blanks--) print ""; print substr($0, 2); seen = 1; next }
         on && /^$/ && seen { blanks++ }' "$1"
}

# A directory for O_DIRECT files: $LB_DIRECT_DIR, else /var/tmp (tmpfs
# refuses O_DIRECT before Linux 6.6), else $tmpdir.
direct_dir () {
    local d
    for d in "${LB_DIRECT_DIR:-}" /var/tmp "$tmpdir"; do
        [ -n "$d" ] && [ -d "$d" ] && [ -w "$d" ] && { echo "$d"; return; }
    done
}

: "${CC:=cc}"
