# SPDX-License-Identifier: BSD-3-Clause
# largeblock: server/run/ -- largeblock-run and its man page.

bin_PROGRAMS += server/run/largeblock-run
server_run_largeblock_run_SOURCES = \
	server/run/largeblock-run.c server/run/run.h \
	server/run/attach-loop.c server/run/attach-nbd.c \
	server/run/crash.c server/run/disk-steps.c server/run/journal.c \
	server/run/explore.c server/run/explore-log.c server/run/explore-log.h \
	server/run/step.c \
	server/run/fstests.c server/run/fstests.h \
	server/run/kstate.c server/run/kstate.h \
	server/run/mkfscmd.c server/run/mkfscmd.h
server_run_largeblock_run_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/server/common -I$(top_srcdir)/server/run
server_run_largeblock_run_CFLAGS = $(AM_CFLAGS) $(CAPNG_CFLAGS)
server_run_largeblock_run_LDADD = server/common/libcommon.la \
	lib/libstatsread.la lib/libdisk.la lib/libcore.la $(CAPNG_LIBS)

man_MANS += server/run/largeblock-run.1
EXTRA_DIST += server/run/largeblock-run.pod docs/crash-testing.md
server/run/largeblock-run.1: server/run/largeblock-run.pod
	$(AM_V_GEN)$(MKDIR_P) server/run && $(POD2MAN) --section=1 \
	  --center=largeblock --release=largeblock-$(VERSION) \
	  --name=largeblock-run $< $@
