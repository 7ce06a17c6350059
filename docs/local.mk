# SPDX-License-Identifier: BSD-3-Clause
# largeblock: docs/ -- the documents that belong to no one program.
# Each man page is built by its program's fragment (plugins/largeblock/,
# server/run/, server/vm/, tools/: the last three keep their page beside
# the program); Makefile.am cleans them all.

EXTRA_DIST += docs/testing.md docs/fstests.md
