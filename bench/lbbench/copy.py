# SPDX-License-Identifier: BSD-3-Clause
"""Section "copy": the RAM store's own cost, from bench/copy-cost.
"""
import json
import subprocess

from .common import COPY_COST


def copy_cost_section(quick):
    r = subprocess.run([COPY_COST, "200" if quick else "5000"],
                       capture_output=True, text=True, check=True)
    return [json.loads(line) for line in r.stdout.splitlines()]
