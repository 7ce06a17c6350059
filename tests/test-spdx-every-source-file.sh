#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Every tracked source file carries "SPDX-License-Identifier:
# BSD-3-Clause" (LICENSE) near its top: scripts/spdx-check.sh, which
# skips (77) outside a git checkout.
: "${abs_top_srcdir:?run through make check}"
exec "$abs_top_srcdir/scripts/spdx-check.sh" "$abs_top_srcdir"
