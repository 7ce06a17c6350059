#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# What largeblock-verify reports for other servers, written down so that
# a change in them (or in the tool) is noticed:
#  - nbdkit memory advertises no block sizes (nbdkit 1.32): the aligned
#    probes run at the NBD defaults (512, 4096, 32M capped to the
#    region), nothing can be misaligned (policy n/a), and the data
#    verifies in 512-byte blocks; newer nbdkit's memory plugin (1.42,
#    1.48) advertises 1/32768/4294967295 and the probes run at those
#    sizes instead: which one is told by what the server advertises;
#  - nbdkit memory behind blocksize-policy (minimum 4096, error policy)
#    advertises 4096/4096/4294967295 (4096/32768/4294967295 over the
#    newer memory plugin) and refuses misaligned requests with EINVAL,
#    touching nothing; the maximum cannot be exceeded;
#  - qemu-nbd on a raw file advertises 1/4096/32M; a write above the
#    maximum makes it disconnect, a read above it gets EINVAL.
# All of them verify cleanly: exit 0.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/verify-functions.sh"

args=(--write --seed 21 --size 4M --connections 2 --depth 4)

start_nbdkit mem memory 8M
lb_verify mem "${args[@]}" "$(uri_of mem)"
expect_rc mem 0
assert_json mem \
    "r['misaligned_policy'] == 'n/a' and not failed" \
    "r['integrity']['block_size'] == 512 and blocks['good'] == 8192"
if json_holds mem "r['block_size']['minimum'] == 0"; then
    policy_preferred=4096
    assert_json mem \
        "r['block_size'] == {'minimum': 0, 'preferred': 0, 'maximum': 0}" \
        "probes['write 512 (minimum, not advertised)']['result'] == 'pass'" \
        "probes['write 4096 (preferred, not advertised)']['result'] == \
'pass'" \
        "probes['write 4194304 (maximum, not advertised, capped)']\
['result'] == 'pass'"
else
    policy_preferred=32768
    assert_json mem \
        "r['block_size'] == {'minimum': 1, 'preferred': 32768, \
'maximum': 4294967295}" \
        "probes['write 1 (minimum)']['result'] == 'pass'" \
        "probes['write 32768 (preferred)']['result'] == 'pass'" \
        "probes['write 4194304 (maximum, capped)']['result'] == 'pass'"
fi

start_nbdkit policy --filter=blocksize-policy memory 8M \
    blocksize-minimum=4096 blocksize-error-policy=error
lb_verify policy "${args[@]}" "$(uri_of policy)"
expect_rc policy 0
assert_json policy \
    "r['block_size'] == {'minimum': 4096, 'preferred': $policy_preferred, \
'maximum': 4294967295}" \
    "r['misaligned_policy'] == 'refuse' and not failed" \
    "probes['write 4096 at +2048 (misaligned offset)']['detail'] == \
'refused: EINVAL, data untouched'" \
    "probes['write 4294971391 (above maximum)']['result'] == 'skip'" \
    "blocks['good'] == 1024"

if command -v qemu-nbd >/dev/null && command -v qemu-img >/dev/null; then
    qemu-img create -q -f raw "$tmpdir/q.img" 8M
    start_bg q qemu-nbd -t -e 8 -f raw -k "$tmpdir/q.sock" \
        --pid-file="$tmpdir/q.pid" "$tmpdir/q.img"
    lb_verify q "${args[@]}" "$(uri_of q)"
    expect_rc q 0
    assert_json q \
        "r['block_size'] == {'minimum': 1, 'preferred': 4096, \
'maximum': 33554432}" \
        "r['misaligned_policy'] == 'n/a' and not failed" \
        "probes['write 33554944 (above maximum)']['result'] == 'skip'" \
        "blocks['good'] == 8192"
    # The whole export is needed to go above 32M: probe a 40M image.
    qemu-img create -q -f raw "$tmpdir/big.img" 40M
    start_bg big qemu-nbd -t -e 8 -f raw -k "$tmpdir/big.sock" \
        --pid-file="$tmpdir/big.pid" "$tmpdir/big.img"
    lb_verify big --write --seed 22 --size 40M --rounds 1 "$(uri_of big)"
    expect_rc big 0
    assert_json big \
        "probes['write 33554944 (above maximum)']['detail'] == \
'refused by disconnecting'" \
        "probes['read 33554944 (above maximum)']['detail'] == \
'refused: Invalid argument'" \
        "r['disconnects'] == 1"
else
    echo "qemu-nbd or qemu-img is not installed: skipping that part"
fi
echo PASS
