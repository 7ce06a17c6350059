# SPDX-License-Identifier: BSD-3-Clause
# largeblock: fuzz/ -- fuzzing (docs/testing.md) and the replay programs
# make check runs the seeds and past crashes through.
#
# "make fuzz" runs each libFuzzer harness and each session target (AFL++
# through nbdkit -s, fuzz/session-targets) for FUZZ_SECONDS (default 60);
# "make check" replays the seeds and past crashes with the normal build
# (tests/test-fuzz-*-replay.sh, listed in tests/local.mk).
FUZZ_SECONDS = 60
# FUZZ_JOBS=2: the libFuzzer harnesses and the session targets side by
# side (scripts/fuzz.sh).
FUZZ_JOBS = 1
FUZZ_HARNESSES = parse-size params pattern statsread
FUZZ_SESSION_TARGETS = session session-allow session-file
check_PROGRAMS += fuzz/fuzz-parse-size-replay fuzz/fuzz-params-replay \
	fuzz/fuzz-pattern-replay fuzz/fuzz-statsread-replay
fuzz_fuzz_parse_size_replay_SOURCES = fuzz/fuzz-parse-size.c fuzz/replay.c
fuzz_fuzz_parse_size_replay_LDADD = lib/libcore.la
fuzz_fuzz_params_replay_SOURCES = fuzz/fuzz-params.c fuzz/replay.c
fuzz_fuzz_params_replay_LDADD = lib/libdisk.la lib/libcore.la
fuzz_fuzz_pattern_replay_SOURCES = fuzz/fuzz-pattern.c fuzz/replay.c
fuzz_fuzz_pattern_replay_LDADD = lib/libpattern.la
fuzz_fuzz_statsread_replay_SOURCES = fuzz/fuzz-statsread.c fuzz/replay.c
fuzz_fuzz_statsread_replay_LDADD = lib/libstatsread.la lib/libdisk.la \
	lib/libcore.la
EXTRA_DIST += scripts/fuzz.sh $(FUZZ_HARNESSES:%=fuzz/corpus/%) \
	$(FUZZ_HARNESSES:%=fuzz/regressions/%) \
	scripts/fuzz-session.sh fuzz/session-targets fuzz/session.dict \
	fuzz/record-sessions.py \
	fuzz/corpus/session fuzz/regressions/session

fuzz: all
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) abs_top_builddir=$(abs_top_builddir) \
	  NBDKIT_REAL='$(NBDKIT)' \
	  $(srcdir)/scripts/fuzz.sh $(FUZZ_HARNESSES) $(FUZZ_SESSION_TARGETS)
.PHONY: fuzz
clean-local: clean-fuzz
clean-fuzz:
	rm -rf fuzz/work
.PHONY: clean-fuzz
