# SPDX-License-Identifier: BSD-3-Clause
# largeblock: the hardening targets beyond make check (docs/testing.md):
# make check-valgrind, make soak, and scripts/check-sanitizers.sh (the
# --enable-sanitizers builds).  Their helpers are in tests/local.mk, the
# fuzzers in fuzz/local.mk.

EXTRA_DIST += scripts/check-sanitizers.sh

# ---- make check-valgrind: the test suite under memcheck ----
# (All of it but the bench's smoke tests, instrumented_tests in
# tests/local.mk, less valgrind_skipped_tests below;
# "make check-valgrind VALGRIND_TESTS='tests/test-foo.sh ...'" runs just
# those.)
# The unit tests run under valgrind directly; every nbdkit the tests start
# runs under it through tests/helpers/nbdkit-wrapper.sh (in the
# foreground, stopped with SIGTERM, as lbtest.Server and start_server
# already do).  Each process logs to its own file: a report anywhere,
# including in processes whose exit status a test cannot see (nbdkit --run
# returns its command's status), fails the target.  Errors and definite
# leaks count; nbdkit's and glibc's own are suppressed in
# tests/helpers/valgrind.supp, each with a reason.  Check's per-test
# timeouts are stretched for valgrind's slowdown.  The unit suites run
# their tests in one process (CK_FORK=no; check-server forks anyway):
# a child per test point meant a leak check per child, and the geometry
# suite's 975 points took 578 s instead of 20 s; the one leak check at
# exit sees the same definite leaks.
# --track-origins=yes finds the same errors, only saying in addition where
# an uninitialised value came from, at a third more time; it is off, and
# "make check-valgrind VALGRIND_OPTS=--track-origins=yes
# VALGRIND_TESTS=..." turns it on to chase a report.
VALGRIND = valgrind
VALGRIND_OPTS =
VALGRIND_LOG_DIR = $(abs_top_builddir)/tests/valgrind-logs
VALGRIND_CMD = $(VALGRIND) --quiet --error-exitcode=99 \
	--leak-check=full --show-leak-kinds=definite \
	--errors-for-leak-kinds=definite $(VALGRIND_OPTS) \
	--suppressions=$(abs_top_srcdir)/tests/helpers/valgrind.supp \
	--log-file=$(VALGRIND_LOG_DIR)/vg.%p.log
EXTRA_DIST += tests/helpers/valgrind.supp

# Left out: largeblock-run's own process-handling tests
# (run_process_tests: signals at every step, --cleanup of dead runs).
# They test largeblock-run, which valgrind does not run (check-sanitizers'
# ASan pass does); under valgrind they only stretch nbdkit's start and
# stop past their hang bounds, and the plugin paths they reach (mkfs,
# mount, teardown) run in test-run-xfs-16k, test-run-crash-xfs and the rest.  For the
# same reason largeblock-run's failure paths (every stage failing, with
# or without --crash-test): the longest two tests under valgrind (about
# 2 minutes each), where the plugin only starts and stops.  Likewise the
# tests whose subject is what largeblock-run or largeblock-verify does
# (its options, mount points, messages, how it classifies other or broken
# servers, how it judges a power cut), not the data path through the
# plugin: under valgrind they took 580 s of test time (a third of the
# target's), and the plugin requests they make are the ones
# test-run-xfs-16k, test-run-crash-xfs, test-verify-largeblock-clean-bill
# and the test-plugin-power-cut* tests make, which stay (the replay
# server's, test-run-explore-xfs's, are test-plugin-replay-*'s).  And
# the tests that start no server: the format and documentation
# checks (source_check_tests, which the ASan pass leaves out too).
valgrind_skipped_tests = $(run_process_tests) $(source_check_tests) \
	tests/test-run-failures-leave-nothing.sh \
	tests/test-run-crash-stages.sh \
	tests/test-run-nbd-stub-client.sh \
	tests/test-run-mount-dir-created.sh \
	tests/test-run-no-command.sh \
	tests/test-run-crash-empty-cache-warns.sh \
	tests/test-run-explore-xfs.sh \
	tests/test-run-crash-fsck-waits-for-release.sh \
	tests/test-run-teardown-device-held.sh \
	tests/test-run-fstests-fixture.sh \
	tests/test-verify-largeblock-run-device.sh \
	tests/test-verify-broken-server-classified.sh \
	tests/test-verify-only-after-restart.sh \
	tests/test-verify-other-servers-reported.sh \
	tests/test-verify-power-cut.sh \
	tests/test-vm-kernel-deb-layouts.sh
# Tests that run none of the project's compiled code: the format, licence
# and documentation checks, the build-structure checks, and the CI
# script's own test.  Under valgrind or a sanitizer they would check the
# same text again.
source_check_tests = \
	tests/test-format.sh \
	tests/test-docs-no-markup-in-verbatim.sh \
	tests/test-run-docs-cover-every-option.sh \
	tests/test-verify-docs-cover-every-option.sh \
	tests/test-vm-docs-cover-every-option.sh \
	tests/test-unit-every-suite-runs.sh \
	tests/test-spdx-every-source-file.sh \
	tests/test-lib-headers-compile-alone.sh \
	tests/test-verify-main-file-exports-only-main.sh \
	tests/test-run-tests-prints-failures-not-passes.sh
# (VALGRIND_TESTS empty: instrumented_tests less these.)
VALGRIND_TESTS =
check-valgrind:
	rm -rf $(VALGRIND_LOG_DIR) && $(MKDIR_P) $(VALGRIND_LOG_DIR)
	@tests="$(VALGRIND_TESTS)"; \
	if test -z "$$tests"; then \
	  for t in $(instrumented_tests); do \
	    case " $(valgrind_skipped_tests) " in \
	    *" $$t "*) ;; *) tests="$$tests $$t" ;; esac; \
	  done; \
	fi; \
	CK_TIMEOUT_MULTIPLIER=$${CK_TIMEOUT_MULTIPLIER:-30} CK_FORK=no \
	$(MAKE) $(AM_MAKEFLAGS) check TESTS="$$tests" \
	  LB_VALGRIND="$(VALGRIND_CMD)" \
	  LOG_COMPILER="$(VALGRIND_CMD)"; status=$$?; \
	bad=0; for f in $(VALGRIND_LOG_DIR)/vg.*.log; do \
	  if test -s "$$f"; then echo "==== $$f"; cat "$$f"; bad=1; fi; \
	done; \
	n=`ls $(VALGRIND_LOG_DIR) | wc -l`; \
	if test $$bad = 0; then \
	  echo "check-valgrind: $$n processes, no errors, no definite leaks"; \
	else echo "check-valgrind: valgrind reports above"; status=1; fi; \
	exit $$status
.PHONY: check-valgrind
clean-local: clean-valgrind-logs
clean-valgrind-logs:
	rm -rf $(VALGRIND_LOG_DIR)
.PHONY: clean-valgrind-logs

# ---- make check-concurrency: what scripts/check-sanitizers.sh runs
# under TSan: the lib/ unit suites, stress-ramstore, and the
# multi-connection, file-disk and power-cut stress tests ----
concurrency_tests = $(unit_lib_tests) tests/stress-ramstore \
	tests/test-plugin-stress-multiconn.py tests/test-plugin-stress-file.sh \
	tests/test-plugin-power-cut-stress.py
# They need only these; scripts/check-sanitizers.sh's TSan build makes
# just them (concurrency-programs), not the whole tree, and
# check-concurrency runs the tests without make check's "all".
concurrency_programs = plugins/largeblock/nbdkit-largeblock-plugin.la \
	tests/unit/check-lib$(EXEEXT) tests/stress-ramstore$(EXEEXT) \
	$(unit_lib_tests)
concurrency-programs: $(concurrency_programs)
check-concurrency: concurrency-programs
	$(MAKE) $(AM_MAKEFLAGS) check-TESTS TESTS="$(concurrency_tests)"
.PHONY: concurrency-programs check-concurrency
# TSAN_OPTIONS (Makefile.am) names this file; each entry says why.
EXTRA_DIST += tests/helpers/tsan.supp

# ---- soak: make soak (SOAK_SECONDS, default 600) ----
SOAK_SECONDS = 600
EXTRA_DIST += tests/soak.py
soak: all
	$(AM_TESTS_ENVIRONMENT) SOAK_SECONDS=$(SOAK_SECONDS) \
	  $(PYTHON_NBD) $(srcdir)/tests/soak.py
.PHONY: soak
