# largeblock hardening: sanitizers, valgrind, protocol abuse, fuzzing, soak.
# Included at the end of Makefile.am.

# --enable-sanitizers: nbdkit is not instrumented, so the tests run it
# through this wrapper, which preloads the sanitizer runtime -- and
# tests/helpers/asan-init-first.c, which initialises it before libp11-kit's
# constructor can leave glibc's locale lock broken (test-only, not
# installed; -rpath makes libtool build a shared object).
EXTRA_DIST += tests/helpers/nbdkit-wrapper.sh scripts/check-sanitizers.sh
check_LTLIBRARIES += tests/helpers/libasan-init-first.la
tests_helpers_libasan_init_first_la_SOURCES = tests/helpers/asan-init-first.c
tests_helpers_libasan_init_first_la_LDFLAGS = -module -avoid-version -shared \
	-rpath $(abs_builddir)/tests/helpers -Wl,-z,initfirst

# ---- make check-valgrind: the whole test suite under memcheck ----
# The unit tests run under valgrind directly; every nbdkit the tests start
# runs under it through tests/helpers/nbdkit-wrapper.sh (in the foreground, stopped
# with SIGTERM, as lbtest.Server and start_server already do).  Each
# process logs to its own file: a report anywhere, including in processes
# whose exit status a test cannot see (nbdkit --run returns its command's
# status), fails the target.  Errors and definite leaks count; nbdkit's
# and glibc's own are suppressed in tests/helpers/valgrind.supp, each with a reason.
# Check's per-test timeouts are stretched for valgrind's slowdown.
VALGRIND = valgrind
VALGRIND_LOG_DIR = $(abs_top_builddir)/tests/valgrind-logs
VALGRIND_CMD = $(VALGRIND) --quiet --error-exitcode=99 \
	--leak-check=full --show-leak-kinds=definite \
	--errors-for-leak-kinds=definite --track-origins=yes \
	--suppressions=$(abs_top_srcdir)/tests/helpers/valgrind.supp \
	--log-file=$(VALGRIND_LOG_DIR)/vg.%p.log
EXTRA_DIST += tests/helpers/valgrind.supp

check-valgrind:
	rm -rf $(VALGRIND_LOG_DIR) && $(MKDIR_P) $(VALGRIND_LOG_DIR)
	@CK_TIMEOUT_MULTIPLIER=$${CK_TIMEOUT_MULTIPLIER:-30} \
	$(MAKE) $(AM_MAKEFLAGS) check LB_VALGRIND="$(VALGRIND_CMD)" \
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

# ---- protocol abuse ----
integration_tests += tests/test-protocol-abuse.py
EXTRA_DIST += docs/testing.md

# ---- least privilege: lib/caps drops capabilities (libcap-ng) ----
lib_liblargeblock_la_SOURCES += lib/caps.c lib/caps.h
lib_liblargeblock_la_CPPFLAGS = $(AM_CPPFLAGS) $(CAPNG_CFLAGS)
lib_liblargeblock_la_LIBADD = $(CAPNG_LIBS)
integration_tests += tests/test-capabilities-dropped.sh

# ---- resource exhaustion ----
# An LD_PRELOAD shim failing large anonymous mmaps (test-only, not
# installed; -rpath makes libtool build a shared object).
check_LTLIBRARIES += tests/helpers/libfail-mmap.la
tests_helpers_libfail_mmap_la_SOURCES = tests/helpers/fail-mmap.c
tests_helpers_libfail_mmap_la_LDFLAGS = -module -avoid-version -shared \
	-rpath $(abs_builddir)/tests/helpers
tests_helpers_libfail_mmap_la_LIBADD = -ldl
integration_tests += tests/test-memory-limit-concurrent.py \
	tests/test-alloc-failure-enomem.py

# ---- fuzzing (docs/testing.md) ----
# "make fuzz" runs each libFuzzer harness and each session target (AFL++
# through nbdkit -s, fuzz/session-targets) for FUZZ_SECONDS (default 60);
# "make check" replays the seeds and past crashes with the normal build.
FUZZ_SECONDS = 60
FUZZ_HARNESSES = parse-size params pattern
FUZZ_SESSION_TARGETS = session session-allow session-file
check_PROGRAMS += fuzz/fuzz-parse-size-replay fuzz/fuzz-params-replay \
	fuzz/fuzz-pattern-replay
fuzz_fuzz_parse_size_replay_SOURCES = fuzz/fuzz-parse-size.c fuzz/replay.c
fuzz_fuzz_parse_size_replay_LDADD = lib/liblargeblock.la
fuzz_fuzz_params_replay_SOURCES = fuzz/fuzz-params.c fuzz/replay.c
fuzz_fuzz_params_replay_LDADD = lib/liblargeblock.la
fuzz_fuzz_pattern_replay_SOURCES = fuzz/fuzz-pattern.c fuzz/replay.c
fuzz_fuzz_pattern_replay_LDADD = lib/liblargeblock.la
integration_tests += tests/test-fuzz-corpus-replay.sh \
	tests/test-fuzz-session-replay.sh
EXTRA_DIST += scripts/fuzz.sh $(FUZZ_HARNESSES:%=fuzz/corpus/%) \
	$(FUZZ_HARNESSES:%=fuzz/regressions/%) \
	scripts/fuzz-session.sh fuzz/session-targets fuzz/session.dict \
	fuzz/record-sessions.py \
	fuzz/corpus/session fuzz/regressions/session

fuzz: all
	FUZZ_SECONDS=$(FUZZ_SECONDS) abs_top_builddir=$(abs_top_builddir) \
	  NBDKIT_REAL='$(NBDKIT)' \
	  $(srcdir)/scripts/fuzz.sh $(FUZZ_HARNESSES) $(FUZZ_SESSION_TARGETS)
.PHONY: fuzz
clean-local: clean-fuzz
clean-fuzz:
	rm -rf fuzz/work
.PHONY: clean-fuzz

# ---- soak: make soak (SOAK_SECONDS, default 600) ----
SOAK_SECONDS = 600
EXTRA_DIST += tests/soak.py
soak: all
	$(AM_TESTS_ENVIRONMENT) SOAK_SECONDS=$(SOAK_SECONDS) \
	  $(PYTHON_NBD) $(srcdir)/tests/soak.py
.PHONY: soak
