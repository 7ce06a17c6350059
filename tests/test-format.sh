#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: the C sources are laid out as .clang-format says
# (scripts/check-format.sh; skips where clang-format is not installed).
: "${abs_top_srcdir:?run through make check}"
exec "$abs_top_srcdir/scripts/check-format.sh"
