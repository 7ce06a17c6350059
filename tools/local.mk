# largeblock: tools/ -- largeblock-verify and its lib/pattern module.
# Included at the end of Makefile.am.

lib_liblargeblock_la_SOURCES += lib/pattern.c lib/pattern.h
tests_unit_check_lib_SOURCES += tests/unit/check-pattern.c

# Installed into $(bindir) through its own directory variable, so that this
# fragment needs no "bin_PROGRAMS =" of its own (automake refuses "+=" on
# an undefined variable, and other fragments may define it).
toolsbindir = $(bindir)
toolsbin_PROGRAMS = tools/largeblock-verify
tools_largeblock_verify_SOURCES = \
	tools/largeblock-verify.c \
	tools/report.c \
	tools/report.h \
	tools/verify-integrity.c \
	tools/verify-probe.c \
	tools/verify.h
tools_largeblock_verify_CFLAGS = $(AM_CFLAGS) $(LIBNBD_CFLAGS)
tools_largeblock_verify_LDADD = lib/liblargeblock.la $(LIBNBD_LIBS)

# A deliberately broken nbdkit plugin: the bugs the verifier must name.
check_LTLIBRARIES = tests/nbdkit-broken-plugin.la
tests_nbdkit_broken_plugin_la_SOURCES = tests/broken-plugin.c
tests_nbdkit_broken_plugin_la_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
tests_nbdkit_broken_plugin_la_LDFLAGS = \
	-module -avoid-version -shared -no-undefined -rpath /nowhere

integration_tests += \
	tests/test-verify-largeblock-clean-bill.sh
EXTRA_DIST += tests/verify-functions.sh
integration_tests += \
	tests/test-verify-broken-server-classified.sh \
	tests/test-verify-other-servers-reported.sh
integration_tests += tests/test-verify-only-after-restart.sh

man_MANS += docs/largeblock-verify.1
EXTRA_DIST += docs/largeblock-verify.pod
CLEANFILES += docs/largeblock-verify.1
docs/largeblock-verify.1: docs/largeblock-verify.pod
	$(AM_V_GEN)$(MKDIR_P) docs && $(POD2MAN) --section=1 \
	  --center=largeblock --release=largeblock-$(VERSION) \
	  --name=largeblock-verify $< $@

integration_tests += tests/test-verify-docs-cover-every-option.sh
