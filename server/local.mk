# ---- server/: largeblock-run and the service files ----
bin_PROGRAMS += server/largeblock-run
server_largeblock_run_SOURCES = server/largeblock-run.c
server_largeblock_run_CFLAGS = $(AM_CFLAGS) $(CAPNG_CFLAGS)
server_largeblock_run_LDADD = lib/liblargeblock.la $(CAPNG_LIBS)

man_MANS += docs/largeblock-run.1
EXTRA_DIST += docs/largeblock-run.pod
docs/largeblock-run.1: docs/largeblock-run.pod
	$(AM_V_GEN)$(MKDIR_P) docs && $(POD2MAN) --section=1 \
	  --center=largeblock --release=largeblock-$(VERSION) \
	  --name=largeblock-run $< $@

integration_tests += \
	tests/test-run-xfs-16k.sh \
	tests/test-run-failures-leave-nothing.sh \
	tests/test-run-nbd-stub-client.sh \
	tests/test-run-attach-nbd-unavailable.sh \
	tests/test-run-nbd-xfs.sh \
	tests/test-run-signal-steps.sh \
	tests/test-run-signal-ctrl-c.sh \
	tests/test-run-signal-soak.sh \
	tests/test-run-sigkill-cleanup.sh
EXTRA_DIST += tests/run-functions.sh tests/write-remount-verify.sh \
	tests/signal-functions.sh tests/helpers/slow-tool.sh

# systemd units for a long-lived export; override with
# make systemdunitdir=/lib/systemd/system
systemdunitdir = $(prefix)/lib/systemd/system
systemdunit_DATA = server/largeblock.socket server/largeblock.service
EXTRA_DIST += $(systemdunit_DATA) docs/vm-testing.md

# lib/mkfscmd: the mkfs command line for a geometry (pure, unit-tested).
lib_liblargeblock_la_SOURCES += lib/mkfscmd.c lib/mkfscmd.h
tests_unit_check_lib_SOURCES += tests/unit/check-mkfscmd.c
