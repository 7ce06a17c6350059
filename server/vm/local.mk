# SPDX-License-Identifier: BSD-3-Clause
# largeblock: server/vm/ -- largeblock-vm (guests under QEMU), the
# scripts it runs, and its man page.

bin_PROGRAMS += server/vm/largeblock-vm
server_vm_largeblock_vm_SOURCES = \
	server/vm/largeblock-vm.c server/vm/vm.h \
	server/vm/vm-step.c server/vm/vm-kernel.c server/vm/vm-guest.c \
	server/vm/vm-qemu.c
server_vm_largeblock_vm_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/server/common \
	-DLARGEBLOCK_PKGLIBEXECDIR='"$(pkglibexecdir)"' \
	-DLARGEBLOCK_PLUGINDIR='"$(plugindir)"'
server_vm_largeblock_vm_CFLAGS = $(AM_CFLAGS) $(CAPNG_CFLAGS) $(LIBNBD_CFLAGS)
server_vm_largeblock_vm_LDADD = server/common/libcommon.la \
	lib/libdisk.la lib/libcore.la $(CAPNG_LIBS) $(LIBNBD_LIBS)
# The guest's /init and the file work, found next to largeblock-vm in the
# build tree and here once installed; dist_, as automake leaves scripts
# out of the tarball otherwise.
dist_pkglibexec_SCRIPTS = server/vm/largeblock-vm-helper \
	server/vm/largeblock-vm-init

man_MANS += server/vm/largeblock-vm.1
EXTRA_DIST += server/vm/largeblock-vm.pod docs/vm-testing.md
server/vm/largeblock-vm.1: server/vm/largeblock-vm.pod
	$(AM_V_GEN)$(MKDIR_P) server/vm && $(POD2MAN) --section=1 \
	  --center=largeblock --release=largeblock-$(VERSION) \
	  --name=largeblock-vm $< $@
