# SPDX-License-Identifier: BSD-3-Clause
# ---- make check-vm: guest kernels under QEMU (server/vm/largeblock-vm) ----
# Not part of make check: each test boots guests (TCG where KVM cannot
# boot them) on the default guest kernel (>= 6.15, fetched once into
# largeblock-vm's cache; the tests skip if it cannot be fetched), about
# 3 to 4 minutes in all, the longest (the crash test in a guest) first.
# Its own log, test-suite-vm.log.
vm_tests = \
	tests/test-vm-crash-in-guest.sh \
	tests/test-vm-virtio-16k.sh \
	tests/test-vm-nbd-16k.sh \
	tests/test-vm-virtio-xfs.sh \
	tests/test-vm-nbd.sh \
	tests/test-vm-refuses-16k.sh \
	tests/test-vm-largeblock-run-in-guest.sh \
	tests/test-vm-bad-inputs.sh \
	tests/test-vm-signals.sh
EXTRA_DIST += $(vm_tests) tests/vm-functions.sh tests/vm-xfs-roundtrip.sh

# Boots nothing: part of the plain make check.
integration_tests += tests/test-vm-docs-cover-every-option.sh \
	tests/test-vm-docs-example-quoting.sh \
	tests/test-vm-plugin-choice.sh \
	tests/test-vm-kernel-deb-layouts.sh

check-vm: all
	$(MAKE) $(AM_MAKEFLAGS) check TESTS='$(vm_tests)' \
	  TEST_SUITE_LOG=test-suite-vm.log
.PHONY: check-vm
