#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-run --crash-test, the full XFS table (make check-crash):
# 30 cut points over two geometries and three modes.
: "${abs_top_srcdir:?run through make check}"
CRASH_FULL=1 exec bash "$abs_top_srcdir/tests/test-run-crash-xfs.sh"
