#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: configure (once) and build in the source tree.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x configure ] || autoreconf -fi
[ -f Makefile ] || ./configure "$@"
make -j"$(nproc)"
