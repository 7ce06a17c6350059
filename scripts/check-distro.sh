#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: build this checkout and run its tests on a newer Debian
# (trixie or sid), in a chroot made with mmdebstrap, and end with the
# line "N passed, M failed".  Exit status: non-zero if the chroot, the
# build or any test failed.  Needs root; not in CI (docs/testing.md).
#
#   scripts/check-distro.sh [--cache-dir=DIR] [--mirror=URL] [--rebuild] \
#       trixie|sid
#
# The chroot is made once, under DIR/SUITE (default
# $LARGEBLOCK_DISTRO_CACHE, else ~/.cache/largeblock-distro), with the
# packages of scripts/install-deps.sh but the hardening and VM ones
# (valgrind, clang, AFL++, QEMU's system emulator and the guest tools:
# separate make targets, not make check), and reused while that list is
# unchanged; --rebuild makes it again.  The mirror is the first Debian
# one in the host's apt sources ($LARGEBLOCK_DISTRO_MIRROR overrides);
# the host's apt configuration is only read.  Release files are
# signature-checked with debian-archive-keyring, but not for Valid-Until:
# the mirrors these machines reach may serve an expired unstable one.
#
# Each run copies the checkout's tracked files (as they are in the work
# tree, nothing built) to /build/largeblock in the chroot, commits them
# to a fresh git repository there (the Debian package test builds from
# one), and runs scripts/build.sh and make check inside.
#
# No kernel device reaches the chroot: its /dev holds only the nodes
# mmdebstrap creates (null, zero, random, tty...), no loop-control,
# fuse or nbd*, so the root, loop, FUSE and nbd tests skip with their
# own reasons, as on any machine without those devices.  /proc, a
# read-only /sys, /dev/pts and /dev/shm are mounted in a private mount
# and PID namespace (unshare): they vanish with it, even if this script
# is killed, and the trap unmounts them first anyway.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${LARGEBLOCK_DISTRO_CACHE:-${HOME:-/root}/.cache/largeblock-distro}
mirror=${LARGEBLOCK_DISTRO_MIRROR:-}
rebuild=0
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
# Not needed by make check: the hardening checks and the VM guests.
not_in_chroot=(valgrind clang afl++ qemu-system-x86 busybox-static socat
               kmod xz-utils cpio)

usage () {
    echo "usage: $0 [--cache-dir=DIR] [--mirror=URL] [--rebuild] trixie|sid" >&2
    exit 2
}
die () { echo "check-distro: $*" >&2; exit 1; }

suite=
for arg; do
    case $arg in
        --cache-dir=*) cache=${arg#*=} ;;
        --mirror=*) mirror=${arg#*=} ;;
        --rebuild) rebuild=1 ;;
        trixie|sid) suite=$arg ;;
        *) usage ;;
    esac
done
[ -n "$suite" ] || usage

# --- inside the namespace: mount, build, test -----------------------------

# run_in_chroot ROOT: the second half, run by unshare below.
run_in_chroot () {
    local root=$1
    set -e
    # Expanded now: $root is local, gone when the trap runs.
    # shellcheck disable=SC2064
    trap "umount_all $(printf %q "$root")" EXIT
    mount -t proc proc "$root/proc"
    mount -t sysfs -o ro sysfs "$root/sys"
    mkdir -p "$root/dev/pts" "$root/dev/shm"
    mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"
    mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
    chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
        LANG=C.UTF-8 TERM=dumb LB_TEST_JOBS="${LB_TEST_JOBS:-}" \
        /bin/bash -c "$(declare -f in_chroot); in_chroot"
}

umount_all () {
    local m
    for m in dev/shm dev/pts sys proc; do
        mountpoint -q "$1/$m" && umount -l "$1/$m"
    done
    return 0
}

# in_chroot: runs inside the chroot, in /build/largeblock.
in_chroot () {
    set -uo pipefail
    cd /build/largeblock
    echo "== versions"
    dpkg-query -W -f '${Package} ${Version}\n' nbdkit libnbd-dev gcc \
        qemu-utils python3-libnbd check 2>/dev/null
    gcc --version | head -1
    git init -q && git add -A && git -c user.name=check-distro \
        -c user.email=check-distro@localhost commit -q -m snapshot ||
        { echo "0 passed, 1 failed (git snapshot)"; return 1; }
    echo "== build"
    if ! scripts/build.sh >build.log 2>&1; then
        tail -50 build.log
        echo "0 passed, 1 failed (the build)"
        return 1
    fi
    grep -i 'warning:' build.log | head -20
    echo "== make check"
    local jobs=${LB_TEST_JOBS:-$((2 * $(nproc)))}
    make -j"$jobs" check 2>&1 | grep -Ev '^(PASS|XFAIL): '
    local status=${PIPESTATUS[0]}
    [ -f test-suite.log ] ||
        { echo "0 passed, 1 failed (no test-suite.log)"; return 1; }
    [ "$status" -ne 0 ] && sed -n '/^FAIL\|^ERROR/,$p' test-suite.log | head -300
    local pass fail error xpass skip
    pass=$(sed -n 's/^# PASS: *//p' test-suite.log)
    fail=$(sed -n 's/^# FAIL: *//p' test-suite.log)
    error=$(sed -n 's/^# ERROR: *//p' test-suite.log)
    xpass=$(sed -n 's/^# XPASS: *//p' test-suite.log)
    skip=$(sed -n 's/^# SKIP: *//p' test-suite.log)
    echo "$skip skipped:"
    grep -h '^SKIP:' tests/*.log 2>/dev/null | sort | uniq -c | sort -rn
    echo "$pass passed, $((fail + error + xpass)) failed"
    return "$status"
}

# --- outside: the chroot, once --------------------------------------------

# debian_mirror: the first Debian mirror of the host's apt sources, both
# one-line (deb URL SUITE...) and deb822 (URIs: URL) forms, not security.
debian_mirror () {
    { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
          /etc/apt/sources.list.d/*.sources 2>/dev/null || :; } |
    sed -n -e 's/^[[:space:]]*URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' \
        -e 's/^[[:space:]]*deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\).*/\2/p' |
    grep -E '/debian/?$' | head -1
}

chroot_packages () {
    local p skip=" ${not_in_chroot[*]} "
    "$top/scripts/install-deps.sh" --list | while read -r p; do
        [[ $skip == *" $p "* ]] || echo "$p"
    done
    echo git
}

# mounted_under DIR: is anything mounted at or below DIR?
mounted_under () {
    awk -v d="$1" '$5 == d || index($5, d "/") == 1 { f = 1 } END { exit !f }' \
        /proc/self/mountinfo
}

make_chroot () {
    local root=$1 tmp=$1.tmp list
    command -v mmdebstrap >/dev/null ||
        die "mmdebstrap is not installed (apt-get install mmdebstrap)"
    [ -r "$keyring" ] || die "$keyring is missing (debian-archive-keyring)"
    [ -n "$mirror" ] || mirror=$(debian_mirror)
    [ -n "$mirror" ] || die "no Debian mirror in /etc/apt/sources.list{,.d}:" \
        "set LARGEBLOCK_DISTRO_MIRROR"
    for d in "$root" "$tmp"; do
        mounted_under "$d" && die "something is mounted under $d: not removing it"
    done
    rm -rf "$tmp" "$root"
    list=$(chroot_packages | paste -sd, -)
    echo "== making the $suite chroot in $root from $mirror"
    mmdebstrap --mode=root --variant=apt --format=directory \
        --keyring="$keyring" \
        --aptopt='Acquire::Check-Valid-Until "false"' \
        --include="$list" "$suite" "$tmp" "$mirror" ||
        die "mmdebstrap failed"
    chroot_packages >"$tmp/.largeblock-packages"
    mv "$tmp" "$root"
}

[ "$(id -u)" -eq 0 ] || die "needs root (mmdebstrap --mode=root, chroot)"
command -v unshare >/dev/null || die "unshare (util-linux) is missing"
root=$cache/$suite
mkdir -p "$cache"
if [ $rebuild = 1 ] || [ ! -f "$root/.largeblock-packages" ] ||
   ! chroot_packages | cmp -s - "$root/.largeblock-packages"; then
    make_chroot "$root"
else
    echo "== reusing the $suite chroot in $root"
fi

mounted_under "$root" && die "something is mounted under $root already"
rm -rf "$root/build/largeblock"
mkdir -p "$root/build/largeblock"
(cd "$top" && git ls-files -z |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf -) | tar -C "$root/build/largeblock" -xf -

start=$SECONDS
status=0
unshare --mount --propagation private --pid --fork \
    bash -c "$(declare -f run_in_chroot umount_all in_chroot)
             run_in_chroot \"\$1\"" check-distro "$root" || status=$?
echo "== $suite: $((SECONDS - start)) s; logs in $root/build/largeblock"
exit $status
