#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# No man page shows POD markup literally: a paragraph that starts with
# white space is verbatim, so B<...>, C<...>, I<...> or L<...> in it
# reaches the reader as those characters (pod2text, man), and podchecker
# does not flag it.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
requires perl

found=0
# Every man page: a program's beside it, the plugin's and the library's
# in docs/.
for pod in "$abs_top_srcdir"/docs/*.pod "$abs_top_srcdir"/server/*/*.pod \
           "$abs_top_srcdir"/tools/*.pod; do
    # Paragraph mode; the verbatim paragraphs outside =begin/=end blocks.
    perl -00 -ne '
        $in_begin = 1 if /^=begin\b/;
        $in_begin = 0 if /^=end\b/;
        next if $in_begin || !/^[ \t]/;
        if (/(?<![A-Za-z0-9_])[BCIL]</) {
            (my $first = $_) =~ s/\n.*//s;
            print "$ARGV: paragraph $.: verbatim with markup: $first\n";
            $bad = 1;
        }
        END { exit($bad ? 1 : 0) }
    ' "$pod" || found=1
done
[ "$found" -eq 0 ] || fail "verbatim paragraphs with POD markup (remove the leading spaces, or use =over/=item)"
exit 0
