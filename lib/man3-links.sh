#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: the section 3 links, from the group pages themselves.
#
#   man3-links.sh SRCDIR POD...
#
# Prints "FUNCTION PAGE" for every function a group page (docs/lb_*.pod,
# docs/largeblock.pod) names in its NAME section, so that "man
# lb_pread_full" can open lb_aligned_io(3) through a ".so" link: a
# function documented on a page gets its link with no list to keep.
set -e
srcdir=$1
shift
for pod in "$@"; do
    page=$(basename "$pod" .pod)
    awk '/^=head1 NAME/ { on = 1; next } /^=/ { on = 0 } on' "$srcdir/$pod" |
        tr '\n' ' ' | sed 's/ - .*//' | tr ',' '\n' |
        sed 's/^ *//; s/ *$//' | grep '^lb_[a-z0-9_]*$' | grep -vx "$page" |
        sed "s/\$/ $page/"
done
