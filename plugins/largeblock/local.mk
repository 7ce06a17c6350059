# SPDX-License-Identifier: BSD-3-Clause
# largeblock: plugins/largeblock/ -- the nbdkit plugin, its man page, and
# the systemd units that serve it as a long-lived export.

plugin_LTLIBRARIES += plugins/largeblock/nbdkit-largeblock-plugin.la
plugins_largeblock_nbdkit_largeblock_plugin_la_SOURCES = \
	plugins/largeblock/largeblock.c
plugins_largeblock_nbdkit_largeblock_plugin_la_CFLAGS = \
	$(AM_CFLAGS) $(NBDKIT_CFLAGS)
# Only the libraries it calls: each is linked in whole (see lib/local.mk).
plugins_largeblock_nbdkit_largeblock_plugin_la_LIBADD = \
	lib/libdisk.la lib/libcore.la lib/libcaps.la
plugins_largeblock_nbdkit_largeblock_plugin_la_LDFLAGS = \
	-module -avoid-version -shared -no-undefined -pthread \
	-Wl,--version-script=$(srcdir)/plugins/largeblock/plugin.syms
EXTRA_plugins_largeblock_nbdkit_largeblock_plugin_la_DEPENDENCIES = \
	plugins/largeblock/plugin.syms
EXTRA_DIST += plugins/largeblock/plugin.syms

# The C files the plugin is built from, its own and those of the lib/
# libraries it links, one a line: scripts/fuzz-session.sh rebuilds the
# plugin with AFL from this list, so it never lags behind lib/local.mk.
print-plugin-sources:
	@for f in $(plugins_largeblock_nbdkit_largeblock_plugin_la_SOURCES) \
	    $(lib_libdisk_la_SOURCES) $(lib_libcore_la_SOURCES) \
	    $(lib_libcaps_la_SOURCES); do \
	  case $$f in *.c) echo "$$f" ;; esac; \
	done
.PHONY: print-plugin-sources

# nbdkit loads the .so by name; the libtool archive is only clutter there.
# (libtool's uninstall finds the .so through the .la, so remove it here.)
install-data-hook:
	rm -f $(DESTDIR)$(plugindir)/nbdkit-largeblock-plugin.la
uninstall-hook:
	rm -f $(DESTDIR)$(plugindir)/nbdkit-largeblock-plugin.so

man_MANS += docs/nbdkit-largeblock-plugin.1
EXTRA_DIST += docs/nbdkit-largeblock-plugin.pod
docs/nbdkit-largeblock-plugin.1: docs/nbdkit-largeblock-plugin.pod
	$(AM_V_GEN)$(MKDIR_P) docs && $(POD2MAN) --section=1 \
	  --center=largeblock --release=largeblock-$(VERSION) \
	  --name=nbdkit-largeblock-plugin $< $@

# systemd units for a long-lived export: nbdkit serving this plugin,
# socket-activated (no program of server/ takes part); override with
# make systemdunitdir=/lib/systemd/system
systemdunitdir = $(prefix)/lib/systemd/system
systemdunit_DATA = plugins/largeblock/largeblock.socket \
	plugins/largeblock/largeblock.service
EXTRA_DIST += $(systemdunit_DATA)
