#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""largeblock advertises its geometry through NBD block-size negotiation.

For each of several geometries (512/4k default, 4k/4k, 16k/16k, 4k logical
on 16k physical, 64k/64k, 64k logical on 2M physical with max-request=4M)
the export reports minimum = logical-blksize, preferred = blksize,
maximum = max-request, the exact size, a non-rotational medium, every
capability (multi-conn, trim, zero, fast zero, FUA, cache, flush) and an
export description naming the size and both block sizes.  Also
`nbdkit PLUGIN --dump-plugin` prints the largeblock_* limits of
nbdkit-largeblock-plugin(1)'s BLOCK SIZES.
"""
import re
import subprocess

import nbd

import lbtest

KiB = 1024
MiB = 1024 * KiB

# (parameters, size, logical, physical, max-request)
GEOMETRIES = [
    (["size=1M"], 1 * MiB, 512, 4 * KiB, 32 * MiB),
    (["size=8M", "blksize=4k", "logical-blksize=4k"],
     8 * MiB, 4 * KiB, 4 * KiB, 32 * MiB),
    (["size=16M", "blksize=16k", "logical-blksize=16k"],
     16 * MiB, 16 * KiB, 16 * KiB, 32 * MiB),
    (["size=1040k", "blksize=16k", "logical-blksize=4k"],
     1040 * KiB, 4 * KiB, 16 * KiB, 32 * MiB),
    (["size=64M", "blksize=64k", "logical-blksize=64k", "max-request=1M"],
     64 * MiB, 64 * KiB, 64 * KiB, 1 * MiB),
    (["4G", "blksize=2M", "logical-blksize=64k", "max-request=4M"],
     4096 * MiB, 64 * KiB, 2 * MiB, 4 * MiB),
]

CAPABILITIES = ["can_multi_conn", "can_trim", "can_zero", "can_fast_zero",
                "can_fua", "can_cache", "can_flush"]


def check_geometry(params, size, logical, physical, max_request):
    what = " ".join(params)
    with lbtest.Server(*params) as s:
        h = nbd.NBD()
        h.set_full_info(True)
        h.connect_unix(s.socket)
        try:
            got = (h.get_size(),
                   h.get_block_size(nbd.SIZE_MINIMUM),
                   h.get_block_size(nbd.SIZE_PREFERRED),
                   h.get_block_size(nbd.SIZE_MAXIMUM))
            want = (size, logical, physical, max_request)
            assert got == want, \
                "%s: (size, minimum, preferred, maximum) is %r, want %r" % (
                    what, got, want)

            assert not h.is_rotational(), \
                "%s: advertised as rotational" % what
            assert not h.is_read_only(), "%s: advertised read-only" % what
            for cap in CAPABILITIES:
                assert getattr(h, cap)(), "%s: %s() is false" % (what, cap)

            desc = h.get_export_description()
            numbers = set(int(n) for n in re.findall(r"\d+", desc))
            for name, value in (("size", size), ("logical block", logical),
                                ("physical block", physical)):
                assert value in numbers, \
                    "%s: description %r does not mention the %s %d" % (
                        what, desc, name, value)
        finally:
            h.shutdown()


def check_dump_plugin():
    out = subprocess.run([lbtest.NBDKIT, lbtest.PLUGIN, "--dump-plugin"],
                         stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, "--dump-plugin failed: %s" % out.stderr
    lines = dict(line.split("=", 1) for line in out.stdout.splitlines()
                 if line.startswith("largeblock_") and "=" in line)
    want = {
        "largeblock_size_max": str(2**63 - 1),
        "largeblock_blksize_min": "512",
        "largeblock_blksize_max": str(32 * MiB),
        "largeblock_logical_blksize_min": "512",
        "largeblock_logical_blksize_max": str(64 * KiB),
        "largeblock_max_request_max": str(64 * MiB),
    }
    for key, value in want.items():
        assert lines.get(key) == value, \
            "--dump-plugin: %s=%r, want %r" % (key, lines.get(key), value)
    policies = set(lines.get("largeblock_misaligned", "").split(","))
    assert policies == {"error", "allow"}, \
        "--dump-plugin: largeblock_misaligned=%r" % lines.get(
            "largeblock_misaligned")
    # nbdkit's own view agrees that this is the largeblock plugin.
    assert "name=largeblock" in out.stdout.splitlines(), \
        "--dump-plugin does not say name=largeblock"


def main():
    for g in GEOMETRIES:
        check_geometry(*g)
    check_dump_plugin()


lbtest.run(main)
