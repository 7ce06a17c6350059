# SPDX-License-Identifier: BSD-3-Clause
# largeblock: server/common/ -- what largeblock-run (server/run/) and
# largeblock-vm (server/vm/) share, built once: the process layer
# (proc), starting and checking a server (serve), the plugin they serve
# (plugin-choice), kernel versions and their command line's shape
# (cmdline).  Never installed.

noinst_LTLIBRARIES += server/common/libcommon.la
server_common_libcommon_la_SOURCES = \
	server/common/cmdline.c server/common/cmdline.h \
	server/common/kernel-version.c server/common/kernel-version.h \
	server/common/plugin-choice.c server/common/plugin-choice.h \
	server/common/proc.c server/common/proc.h \
	server/common/serve.c server/common/serve.h
server_common_libcommon_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DLARGEBLOCK_PLUGINDIR='"$(plugindir)"'
server_common_libcommon_la_CFLAGS = $(AM_CFLAGS) $(CAPNG_CFLAGS)
