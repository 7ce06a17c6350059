#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock-verify checks a regular file and a block device through
# O_DIRECT, not only NBD: (1) a 64M file on /var/tmp gets a clean bill
# and --verify-only SEED re-checks it; (2) a loop device with 16k
# sectors gets a clean bill with minimum 16384 (root and a free loop
# device only); (3) bytes overwritten in the middle of one block behind
# the tool's back make --verify-only exit 2 and name exactly that block;
# (4) the same on a 16k-sector loop device over a tmpfs file, damaged in
# its backing file behind the kernel's back.
source "${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/functions.sh"
source "$abs_top_srcdir/tests/verify-functions.sh"

# tmpfs may refuse O_DIRECT: the files live on /var/tmp.
vartmp=$(mktemp -d /var/tmp/lbverify.XXXXXX)
cleanup_fn rm -rf "$vartmp"
disk="$vartmp/disk.img"
truncate -s 64M "$disk"

# (1) A regular file.
lb_verify file --write --seed 41 --rounds 4 "$disk"
expect_rc file 0
assert_json file "r['uri'] == '$disk'" "not failed" \
    "r['misaligned_policy'] in ('refuse', 'n/a')" \
    "r['integrity']['size'] == 64 << 20" \
    "blocks['good'] == (64 << 20) // r['integrity']['block_size']" \
    "r['integrity']['errors_total'] == 0"
lb_verify reread --verify-only 41 --rounds 4 "$disk"
expect_rc reread 0
assert_json reread "r['integrity']['writes'] == 0" \
    "blocks['good'] == (64 << 20) // r['integrity']['block_size']"

# (3) Damage: 100 bytes of 0xa5 at 32M + 1200, inside one stamped block.
head -c 100 /dev/zero | tr '\0' '\245' |
    dd of="$disk" bs=1 seek=$(( (32 << 20) + 1200 )) conv=notrunc,fsync \
       status=none
lb_verify damaged --verify-only 41 --rounds 4 "$disk"
expect_rc damaged 2
assert_json damaged "r['integrity']['errors_total'] == 1" \
    "'block at %d ' % (((32 << 20) + 1200) // \
r['integrity']['block_size'] * r['integrity']['block_size']) in errors[0]"

# (2) A loop device with 16k sectors over a file, direct I/O on.
if [ "$(id -u)" -ne 0 ]; then
    echo "loop device part skipped: not root"
elif ! command -v losetup >/dev/null ||
        ! loop=$(losetup --find --show --sector-size 16384 --direct-io=on \
                         "$disk" 2>"$tmpdir/losetup.err"); then
    echo "loop device part skipped: no loop device" \
         "($(cat "$tmpdir/losetup.err" 2>/dev/null))"
else
    cleanup_fn detach_loop_of "$loop" "$disk"
    lb_verify device --write --seed 42 "$loop"
    expect_rc device 0
    assert_json device "r['block_size']['minimum'] == 16384" "not failed" \
        "r['direct_io']['offset_alignment'] == 16384" \
        "r['integrity']['block_size'] == 16384" \
        "r['misaligned_policy'] == 'refuse'" \
        "blocks['good'] == (64 << 20) // 16384"
    lb_verify device-reread --verify-only 42 "$loop"
    expect_rc device-reread 0
fi

# (4) A loop device with 16k sectors over a tmpfs file (what a user
# could take instead of a largeblock disk), then its backing file
# damaged behind the kernel's back: the damage is found and named.
shm=/dev/shm
if [ "$(id -u)" -ne 0 ] || [ ! -d "$shm" ]; then
    echo "tmpfs loop part skipped: not root or no $shm"
else
    shmdisk=$(mktemp "$shm/lbverify.XXXXXX")
    cleanup_fn rm -f "$shmdisk"
    truncate -s 32M "$shmdisk"
    if ! shmloop=$(losetup --find --show --sector-size 16384 \
                           --direct-io=on "$shmdisk" 2>"$tmpdir/losetup.err")
    then
        echo "tmpfs loop part skipped: $(cat "$tmpdir/losetup.err")"
    else
        cleanup_fn detach_loop_of "$shmloop" "$shmdisk"
        lb_verify shm --write --seed 43 "$shmloop"
        expect_rc shm 0
        assert_json shm "r['block_size']['minimum'] == 16384" "not failed" \
            "blocks['good'] == (32 << 20) // 16384"
        head -c 100 /dev/zero | tr '\0' '\245' |
            dd of="$shmdisk" bs=1 seek=$(( (16 << 20) + 20000 )) \
               conv=notrunc status=none
        lb_verify shm-damaged --verify-only 43 "$shmloop"
        expect_rc shm-damaged 2
        assert_json shm-damaged "r['integrity']['errors_total'] == 1" \
            "'block at %d ' % (((16 << 20) + 20000) // 16384 * 16384) \
in errors[0]"
    fi
fi
echo PASS
