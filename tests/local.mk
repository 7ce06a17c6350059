# SPDX-License-Identifier: BSD-3-Clause
# largeblock: tests/ -- what make check runs: the unit test runner, the
# ramstore stress program, every integration test, and the helpers they
# load.  (The hardening targets are in tests/harden.mk; the programs the
# fuzz replay tests run are in fuzz/local.mk, bench/copy-cost in
# bench/local.mk.)

TESTS += $(instrumented_tests) $(bench_smoke_tests)
instrumented_tests = $(unit_lib_tests) tests/unit-server.tap \
	tests/stress-ramstore $(integration_tests)
EXTRA_DIST += $(unit_lib_tests) tests/unit-server.tap tests/functions.sh \
	tests/lbtest.py tests/docexamples.py

# ---- unit tests: one Check suite per lib/ module, one runner ----
# Each suite is a test of its own (tests/unit-lib-SUITE.tap runs
# "check-lib SUITE"), so make -j runs them side by side; under valgrind
# they take minutes.  The slowest there come first, so that they start
# first.  tests/test-unit-lib-every-suite-runs.sh checks that every
# suite check-lib knows is listed here.
unit_lib_tests = \
	tests/unit-lib-ramstore.tap \
	tests/unit-lib-filestore.tap \
	tests/unit-lib-geometry.tap \
	tests/unit-lib-wcache.tap \
	tests/unit-lib-slab.tap \
	tests/unit-lib-pattern.tap \
	tests/unit-lib-cutclass.tap \
	tests/unit-lib-align.tap \
	tests/unit-lib-aligned-io.tap \
	tests/unit-lib-stats.tap \
	tests/unit-lib-params.tap \
	tests/unit-lib-extents.tap \
	tests/unit-lib-reclaim.tap \
	tests/unit-lib-statsread.tap \
	tests/unit-lib-cutfifo.tap \
	tests/unit-lib-nbdkitargs.tap
check_PROGRAMS += tests/unit/check-lib
tests_unit_check_lib_SOURCES = \
	tests/unit/check-lib.c tests/unit/suites.h \
	tests/unit/check-align.c \
	tests/unit/check-aligned-io.c \
	tests/unit/check-cutclass.c \
	tests/unit/check-cutfifo.c \
	tests/unit/check-extents.c \
	tests/unit/check-filestore.c \
	tests/unit/check-geometry.c \
	tests/unit/check-nbdkitargs.c \
	tests/unit/check-params.c \
	tests/unit/check-pattern.c \
	tests/unit/check-ramstore.c \
	tests/unit/check-reclaim.c \
	tests/unit/check-slab.c \
	tests/unit/check-stats.c \
	tests/unit/check-statsread.c \
	tests/unit/check-wcache.c
tests_unit_check_lib_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_check_lib_LDADD = lib/libcutclass.la lib/libstatsread.la \
	lib/libdisk.la lib/libpattern.la \
	lib/libalignedio.la lib/libcore.la $(CHECK_LIBS)

# ---- unit tests of server/: the process layer, the mkfs command line,
# kernel versions ----
check_PROGRAMS += tests/unit/check-server
tests_unit_check_server_SOURCES = \
	tests/unit/check-server.c \
	tests/unit/check-mkfscmd.c \
	tests/unit/check-proc.c \
	tests/unit/check-kernel-version.c \
	server/run/mkfscmd.c
tests_unit_check_server_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/server/common -I$(top_srcdir)/server/run
tests_unit_check_server_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(CAPNG_CFLAGS)
tests_unit_check_server_LDADD = server/common/libcommon.la \
	lib/libdisk.la lib/libcore.la $(CHECK_LIBS) $(CAPNG_LIBS)

check_PROGRAMS += tests/stress-ramstore
tests_stress_ramstore_SOURCES = tests/stress-ramstore.c
tests_stress_ramstore_LDADD = lib/libdisk.la lib/libcore.la

# The attacker of tests/test-run-cleanup-symlink-swap.sh.
check_PROGRAMS += tests/helpers/swap-loop
tests_helpers_swap_loop_SOURCES = tests/helpers/swap-loop.c

# ---- helpers: test-only shared objects (not installed; -rpath makes
# libtool build a shared object) ----

# A deliberately broken nbdkit plugin: the bugs largeblock-verify must name.
check_LTLIBRARIES += tests/helpers/nbdkit-broken-plugin.la
tests_helpers_nbdkit_broken_plugin_la_SOURCES = tests/helpers/broken-plugin.c
tests_helpers_nbdkit_broken_plugin_la_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
tests_helpers_nbdkit_broken_plugin_la_LDFLAGS = \
	-module -avoid-version -shared -no-undefined -rpath /nowhere

# --enable-sanitizers: nbdkit is not instrumented, so the tests run it
# through tests/helpers/nbdkit-wrapper.sh, which preloads the sanitizer
# runtime -- and tests/helpers/asan-init-first.c, which initialises it
# before libp11-kit's constructor can leave glibc's locale lock broken.
# make check-valgrind (tests/harden.mk) runs nbdkit through the wrapper too.
EXTRA_DIST += tests/helpers/nbdkit-wrapper.sh
check_LTLIBRARIES += tests/helpers/libasan-init-first.la
tests_helpers_libasan_init_first_la_SOURCES = tests/helpers/asan-init-first.c
tests_helpers_libasan_init_first_la_LDFLAGS = -module -avoid-version -shared \
	-rpath $(abs_builddir)/tests/helpers -Wl,-z,initfirst

# Resource exhaustion: an LD_PRELOAD shim failing large anonymous mmaps.
check_LTLIBRARIES += tests/helpers/libfail-mmap.la
tests_helpers_libfail_mmap_la_SOURCES = tests/helpers/fail-mmap.c
tests_helpers_libfail_mmap_la_LDFLAGS = -module -avoid-version -shared \
	-rpath $(abs_builddir)/tests/helpers
tests_helpers_libfail_mmap_la_LIBADD = -ldl

# Signals: an LD_PRELOAD shim sending a group signal from a child
# between fork and its leaving the parent's process group.
check_LTLIBRARIES += tests/helpers/libgroup-signal-at-fork.la
tests_helpers_libgroup_signal_at_fork_la_SOURCES = \
	tests/helpers/group-signal-at-fork.c
tests_helpers_libgroup_signal_at_fork_la_LDFLAGS = -module -avoid-version \
	-shared -rpath $(abs_builddir)/tests/helpers

# ---- integration tests ----

# The unit tests' wiring: every lib/ suite has its test.
integration_tests += tests/test-unit-lib-every-suite-runs.sh

# The plugin: parameters, data, alignment, extents, limits, file disks.
integration_tests += \
	tests/test-docs-cover-every-parameter.sh \
	tests/test-docs-no-markup-in-verbatim.sh \
	tests/test-docs-statsfile-example-is-real.sh \
	tests/test-docs-tls-refusal-is-real.sh \
	tests/test-docs-blockdev-output-is-real.sh \
	tests/test-config-errors.sh \
	tests/test-startup-7e.sh \
	tests/test-block-sizes.py \
	tests/test-data-roundtrip.py \
	tests/test-trim-zero.py \
	tests/test-align-misaligned-einval.py \
	tests/test-extents.py \
	tests/test-memory-limit.py \
	tests/test-memory-limit-write-cache-rss.py \
	tests/test-statsfile.py \
	tests/test-power-cut.py \
	tests/test-power-cut-stress.py \
	tests/test-power-cut-fifo-cut-n-once.py \
	tests/test-power-cut-fifo-rules.sh \
	tests/test-request-limits.py \
	tests/test-trim-gives-heap-back.py \
	tests/test-stress-multiconn.py \
	tests/test-qemu-io.sh \
	tests/test-file-disk.py \
	tests/test-file-disk-shrink-eio.py \
	tests/test-file-disk-root.sh \
	tests/test-file-lock-one-writer.sh \
	tests/test-file-refuses-mounted-device-and-ro-fs.sh \
	tests/test-stress-file.sh

# The bench's smoke tests drive fio and nbdcopy through every section
# (and its report merge and teardown on a signal have tests of their own);
# under valgrind or ASan they would time the instrumentation, and the
# plugin paths they reach run in the tests above, so the instrumented
# passes (check-valgrind, check-sanitizers' asan) leave them out:
# check-instrumented is make check without them.
bench_smoke_tests = \
	tests/test-bench-smoke.sh \
	tests/test-bench-smoke-file.sh \
	tests/test-bench-smoke-trim.sh \
	tests/test-bench-smoke-limit.sh \
	tests/test-bench-smoke-kernel.sh \
	tests/test-bench-signal-kernel.sh \
	tests/test-bench-merge-report.py
EXTRA_DIST += tests/bench-functions.sh $(bench_smoke_tests)
check-instrumented:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS="$(instrumented_tests)"
.PHONY: check-instrumented

# The docs' shell examples, run as written (tests/docexamples.py finds
# them).  Left out of the instrumented passes too: they run documented
# commands whose plugin paths the tests above reach, and under valgrind
# the verify examples alone would take minutes.
docs_example_tests = tests/test-docs-examples-run.py
TESTS += $(docs_example_tests)
EXTRA_DIST += $(docs_example_tests)

# The tree's conventions: the C layout of .clang-format, and the licence
# line in every source file.
integration_tests += tests/test-format.sh tests/test-spdx-every-source-file.sh
EXTRA_DIST += scripts/check-format.sh scripts/spdx-check.sh

# server/run/largeblock-run.
integration_tests += \
	tests/test-run-xfs-16k.sh \
	tests/test-run-failures-leave-nothing.sh \
	tests/test-run-nbd-stub-client.sh \
	tests/test-run-attach-nbd-unavailable.sh \
	tests/test-run-nbd-xfs.sh \
	$(run_process_tests) \
	tests/test-run-crash-xfs.sh \
	tests/test-run-crash-options.sh \
	tests/test-run-crash-stages.sh \
	tests/test-run-crash-empty-cache-warns.sh \
	tests/test-run-mount-dir-created.sh \
	tests/test-run-teardown-device-held.sh \
	tests/test-run-no-command.sh \
	tests/test-run-fstests-fixture.sh \
	tests/test-run-fstests.sh \
	tests/test-run-docs-cover-every-option.sh
# largeblock-run's own process handling: a signal at every step, dead
# runs' --cleanup (check-valgrind leaves them out: tests/harden.mk).
run_process_tests = \
	tests/test-run-signal-steps.sh \
	tests/test-run-signal-ctrl-c.sh \
	tests/test-run-signal-in-teardown-sets-status.sh \
	tests/test-run-group-signal-during-mkfs.sh \
	tests/test-run-signal-soak.sh \
	tests/test-run-sigkill-cleanup.sh \
	tests/test-run-cleanup-planted-journal.sh \
	tests/test-run-cleanup-symlink-swap.sh \
	tests/test-run-cleanup-beside-starting-runs.sh
EXTRA_DIST += tests/run-functions.sh tests/write-remount-verify.sh \
	tests/cleanup-functions.sh \
	tests/signal-functions.sh tests/helpers/slow-tool.sh \
	tests/helpers/crash-workload.py

# make check-crash: the full XFS crash table of largeblock-run
# --crash-test (30 power cuts, a few minutes); make check runs a
# bounded form.  Its own log, test-suite-crash.log.
crash_tests = tests/test-run-crash-xfs-full.sh
EXTRA_DIST += $(crash_tests)

check-crash: all
	$(MAKE) $(AM_MAKEFLAGS) check TESTS='$(crash_tests)' \
	  TEST_SUITE_LOG=test-suite-crash.log
.PHONY: check-crash

# tools/largeblock-verify.
integration_tests += \
	tests/test-verify-largeblock-clean-bill.sh \
	tests/test-verify-broken-server-classified.sh \
	tests/test-verify-other-servers-reported.sh \
	tests/test-verify-only-after-restart.sh \
	tests/test-verify-docs-cover-every-option.sh \
	tests/test-verify-server-hangs-up-named.sh \
	tests/test-verify-file-and-device.sh \
	tests/test-verify-largeblock-run-device.sh \
	tests/test-verify-power-cut.sh \
	tests/test-verify-write-refuses-mounted-device.sh \
	tests/test-verify-write-refuses-signatures.sh \
	tests/test-verify-main-file-exports-only-main.sh
EXTRA_DIST += tests/verify-functions.sh tests/helpers/greet-and-hang-up.py

# The installed library: its ABI, its man pages' examples, a program
# built from an installed copy with pkg-config alone, and each public
# header compiling on its own.
integration_tests += \
	tests/test-lib-abi-exports-exactly-the-map.sh \
	tests/test-lib-man-examples-build-and-run.sh \
	tests/test-lib-install.sh \
	tests/test-lib-headers-compile-alone.sh
EXTRA_DIST += tests/lib-functions.sh

# The quick start's install: this build's plugin, programs and man pages,
# and largeblock-run serving the plugin installed with it.
integration_tests += tests/test-install-run-finds-its-plugin.sh

# scripts/run-tests.sh: failures, skips and the summary, not every PASS.
integration_tests += tests/test-run-tests-prints-failures-not-passes.sh

# The Debian packaging (debian/): the library's symbols file follows its
# version script (part of make check), and make check-deb builds the
# packages from a clean copy and runs them from an extracted tree --
# several minutes of compiling again, so not part of make check or CI
# (docs/testing.md).  Its own log, test-suite-deb.log.
integration_tests += tests/test-deb-symbols.sh
deb_tests = tests/test-deb-packages.sh
EXTRA_DIST += $(deb_tests) debian/changelog debian/control \
	debian/copyright debian/rules debian/source/format \
	debian/symbols-from-map debian/liblargeblock1.symbols \
	debian/not-installed debian/largeblock-tools.docs \
	debian/nbdkit-plugin-largeblock.install \
	debian/largeblock-tools.install debian/liblargeblock1.install \
	debian/liblargeblock-dev.install

check-deb: all
	$(MAKE) $(AM_MAKEFLAGS) check TESTS='$(deb_tests)' \
	  TEST_SUITE_LOG=test-suite-deb.log
.PHONY: check-deb

# Hardening (docs/testing.md): protocol abuse, least privilege, resource
# exhaustion, the fuzzers' seeds and past crashes.
integration_tests += \
	tests/test-protocol-abuse.py \
	tests/test-capabilities-dropped.sh \
	tests/test-memory-limit-concurrent.py \
	tests/test-memory-limit-same-folio-no-enospc.py \
	tests/test-alloc-failure-enomem.py \
	tests/test-fuzz-corpus-replay.sh \
	tests/test-fuzz-session-replay.sh

EXTRA_DIST += $(integration_tests)
