# SPDX-License-Identifier: BSD-3-Clause
# largeblock: tools/ -- largeblock-verify and its man page.

bin_PROGRAMS += tools/largeblock-verify
tools_largeblock_verify_SOURCES = \
	tools/largeblock-verify.c \
	tools/json.c \
	tools/json.h \
	tools/report.c \
	tools/report.h \
	tools/target-claim.c \
	tools/target-fd.c \
	tools/target-nbd.c \
	tools/target.h \
	tools/verify-integrity.c \
	tools/verify-power-cut.c \
	tools/verify-probe.c \
	tools/verify.h
tools_largeblock_verify_CFLAGS = $(AM_CFLAGS) $(LIBNBD_CFLAGS) $(BLKID_CFLAGS)
tools_largeblock_verify_LDADD = lib/libcutclass.la lib/libpattern.la lib/libalignedio.la \
	lib/libdisk.la lib/libcore.la $(LIBNBD_LIBS) $(BLKID_LIBS)

man_MANS += tools/largeblock-verify.1
EXTRA_DIST += tools/largeblock-verify.pod
tools/largeblock-verify.1: tools/largeblock-verify.pod
	$(AM_V_GEN)$(MKDIR_P) tools && $(POD2MAN) --section=1 \
	  --center=largeblock --release=largeblock-$(VERSION) \
	  --name=largeblock-verify $< $@
