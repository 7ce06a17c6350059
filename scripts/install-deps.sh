#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: install every Debian 12 package the build and the tests need.
# Idempotent: does nothing (and needs no network) when all are present.
# --list prints the packages, one a line, and installs nothing
# (scripts/check-distro.sh builds its chroots from it).
set -euo pipefail

packages=(
  # build
  build-essential autoconf automake libtool pkg-config perl
  nbdkit nbdkit-plugin-dev libnbd-dev libcap-ng-dev libblkid-dev check
  # tests and examples
  libnbd-bin python3-libnbd qemu-utils fio xfsprogs fuse3 util-linux
  e2fsprogs btrfs-progs libcap2-bin nbd-client procps
  # hardening (docs/testing.md): valgrind, libFuzzer, AFL++ (session fuzzer)
  valgrind clang afl++
  # largeblock-vm and make check-vm: guests under QEMU
  qemu-system-x86 busybox-static socat kmod xz-utils cpio
  # the C layout check (scripts/check-format.sh)
  clang-format
  # the Debian packages (make check-deb)
  debhelper lintian
)

if [ "${1:-}" = --list ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
       grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or: sudo $0)" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
