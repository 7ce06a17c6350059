# SPDX-License-Identifier: BSD-3-Clause
# ---- server/: largeblock-run and the service files ----
bin_PROGRAMS += server/largeblock-run
server_largeblock_run_SOURCES = \
	server/largeblock-run.c server/run.h \
	server/attach-loop.c server/attach-nbd.c \
	server/crash.c server/disk.c server/journal.c server/step.c \
	server/fstests.c server/fstests.h \
	server/kernel-version.c server/kernel-version.h \
	server/kstate.c server/kstate.h \
	server/mkfscmd.c server/mkfscmd.h \
	server/plugin-choice.c server/plugin-choice.h \
	server/proc.c server/proc.h \
	server/serve.c server/serve.h
server_largeblock_run_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/server \
	-DLARGEBLOCK_PLUGINDIR='"$(plugindir)"'
server_largeblock_run_CFLAGS = $(AM_CFLAGS) $(CAPNG_CFLAGS)
server_largeblock_run_LDADD = lib/libstatsread.la lib/libdisk.la lib/libcore.la \
	$(CAPNG_LIBS)

man_MANS += docs/largeblock-run.1
EXTRA_DIST += docs/largeblock-run.pod
docs/largeblock-run.1: docs/largeblock-run.pod
	$(AM_V_GEN)$(MKDIR_P) docs && $(POD2MAN) --section=1 \
	  --center=largeblock --release=largeblock-$(VERSION) \
	  --name=largeblock-run $< $@

# systemd units for a long-lived export; override with
# make systemdunitdir=/lib/systemd/system
systemdunitdir = $(prefix)/lib/systemd/system
systemdunit_DATA = server/largeblock.socket server/largeblock.service
EXTRA_DIST += $(systemdunit_DATA) docs/vm-testing.md docs/crash-testing.md

# ---- largeblock-vm: guests under QEMU ----
bin_PROGRAMS += server/largeblock-vm
server_largeblock_vm_SOURCES = \
	server/largeblock-vm.c server/vm.h \
	server/vm-step.c server/vm-kernel.c server/vm-guest.c \
	server/vm-qemu.c \
	server/kernel-version.c server/kernel-version.h \
	server/plugin-choice.c server/plugin-choice.h \
	server/proc.c server/proc.h \
	server/serve.c server/serve.h
server_largeblock_vm_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/server \
	-DLARGEBLOCK_PKGLIBEXECDIR='"$(pkglibexecdir)"' \
	-DLARGEBLOCK_PLUGINDIR='"$(plugindir)"'
server_largeblock_vm_CFLAGS = $(AM_CFLAGS) $(CAPNG_CFLAGS) $(LIBNBD_CFLAGS)
server_largeblock_vm_LDADD = lib/libdisk.la lib/libcore.la $(CAPNG_LIBS) \
	$(LIBNBD_LIBS)
# The guest's /init and the file work, found next to largeblock-vm in the
# build tree and here once installed.
pkglibexec_SCRIPTS = server/largeblock-vm-helper server/largeblock-vm-init

man_MANS += docs/largeblock-vm.1
EXTRA_DIST += docs/largeblock-vm.pod
docs/largeblock-vm.1: docs/largeblock-vm.pod
	$(AM_V_GEN)$(MKDIR_P) docs && $(POD2MAN) --section=1 \
	  --center=largeblock --release=largeblock-$(VERSION) \
	  --name=largeblock-vm $< $@
