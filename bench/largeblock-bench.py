#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""largeblock side-by-side benchmark: make bench's command.  The benchmark
is the package beside this file, bench/lbbench (its __init__ says what it
measures); its servers are tests/lbtest's."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "tests")]

from lbbench.main import main  # noqa: E402  (after the path above)

if __name__ == "__main__":
    main()
