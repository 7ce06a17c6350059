# SPDX-License-Identifier: BSD-3-Clause
# largeblock: lib/ -- the C library behind the plugin and the programs
# (pure C, no nbdkit), as libtool convenience libraries, one per concern,
# and the installed verification library built from the public ones
# (their headers in include/largeblock/).  The plugin's engine, which is
# never installed, is the folder lib/disk/ and its library lib/libdisk.la.
#
# A shared module (the plugin) takes a convenience library whole
# (--whole-archive), so a module that only programs use gets a library of
# its own: the plugin then carries exactly the code it calls.

# Geometry, the alignment policy and error reporting: everyone, and the
# installed library.
noinst_LTLIBRARIES += lib/libcore.la
lib_libcore_la_SOURCES = \
	lib/align.c include/largeblock/align.h lib/enum-counts.h \
	lib/error.c lib/error.h \
	lib/geometry.c include/largeblock/geometry.h

# The plugin's engine, in lib/disk/ (private, never installed): the disk
# parameters, the two stores behind one interface and their folio
# allocator, the write cache and its power cut, statistics, the crash
# log and the crash states rebuilt from it (a copy-on-write overlay over
# a shared base).  Plugin, server, bench, tests, fuzz (with
# lib/libcore.la after it).
noinst_LTLIBRARIES += lib/libdisk.la
lib_libdisk_la_SOURCES = \
	lib/disk/disk.c lib/disk/disk.h \
	lib/disk/extents.c lib/disk/extents.h \
	lib/disk/filestore.c lib/disk/filestore.h \
	lib/disk/locking.c lib/disk/locking.h \
	lib/disk/nbdkitargs.c lib/disk/nbdkitargs.h \
	lib/disk/params.c lib/disk/params.h \
	lib/disk/ramstore.c lib/disk/ramstore.h \
	lib/disk/reclaim.c lib/disk/reclaim.h \
	lib/disk/replayexport.c lib/disk/replayexport.h \
	lib/disk/slab.c lib/disk/slab.h \
	lib/disk/stats.c lib/disk/stats.h \
	lib/disk/store.h \
	lib/disk/prng.h \
	lib/disk/wcache.c lib/disk/wcache.h lib/disk/wcache-impl.h \
	lib/disk/wcache-cut.c lib/disk/wcache-replay.c \
	lib/disk/cutfifo.c lib/disk/cutfifo.h \
	lib/disk/crashlog.c lib/disk/crashlog.h \
	lib/disk/cowstore.c lib/disk/cowstore.h \
	lib/disk/replay.c lib/disk/replay.h

# The C files of libcore, libdisk, libpattern and libstatsread, one a
# line: the libFuzzer harnesses (scripts/fuzz.sh) are linked from these,
# so they never lag behind the lists above.
print-fuzz-lib-sources:
	@for f in $(lib_libcore_la_SOURCES) $(lib_libdisk_la_SOURCES) \
	    $(lib_libpattern_la_SOURCES) $(lib_libstatsread_la_SOURCES); do \
	  case $$f in *.c) echo "$$f" ;; esac; \
	done
.PHONY: print-fuzz-lib-sources

# Least privilege: dropping capabilities after start-up (libcap-ng).
# The plugin.
noinst_LTLIBRARIES += lib/libcaps.la
lib_libcaps_la_SOURCES = lib/caps.c lib/caps.h
lib_libcaps_la_CPPFLAGS = $(AM_CPPFLAGS) $(CAPNG_CFLAGS)
lib_libcaps_la_LIBADD = $(CAPNG_LIBS)

# Verification blocks: the self-describing pattern largeblock-verify
# writes and checks.  tools/, fuzz/, the unit tests and the installed
# library; not the plugin.
noinst_LTLIBRARIES += lib/libpattern.la
lib_libpattern_la_SOURCES = lib/pattern.c include/largeblock/pattern.h

# What a power cut left in a region of stamped blocks (old, new, torn,
# foreign) and what each power-cut mode allows.  tools/ and the unit
# tests, with lib/libpattern.la and lib/libdisk.la after it.
noinst_LTLIBRARIES += lib/libcutclass.la
lib_libcutclass_la_SOURCES = lib/cutclass.c lib/cutclass.h

# Reading a statsfile back (the write cache's counters).  The programs
# (server/) and the unit tests, with lib/libdisk.la after it; not the
# plugin, which only writes it.
noinst_LTLIBRARIES += lib/libstatsread.la
lib_libstatsread_la_SOURCES = lib/statsread.c lib/statsread.h

# Aligned I/O on file descriptors (O_DIRECT).  The installed library and
# the unit tests.
noinst_LTLIBRARIES += lib/libalignedio.la
lib_libalignedio_la_SOURCES = lib/aligned-io.c include/largeblock/aligned-io.h

# ---- the installed library: liblargeblock.so.1, liblargeblock.a ----
# Built from the public convenience libraries above; the version script
# exports exactly the functions of the public headers, each at the node
# that added it (LARGEBLOCK_1.0, LARGEBLOCK_1.1: lb_version), and
# tests/test-lib-abi-exports-exactly-the-map.sh holds it to that.
# -version-info is current:revision:age (libtool's rules: an added
# interface bumps current and age); the SONAME stays liblargeblock.so.1.
lib_LTLIBRARIES += lib/liblargeblock.la
lib_liblargeblock_la_SOURCES = include/largeblock/largeblock.h \
	lib/version.c
nodist_lib_liblargeblock_la_SOURCES = include/largeblock/version.h
lib_liblargeblock_la_LIBADD = lib/libcore.la lib/libpattern.la \
	lib/libalignedio.la
lib_liblargeblock_la_LDFLAGS = -version-info 2:0:1 -no-undefined -pthread \
	-Wl,--version-script=$(srcdir)/lib/liblargeblock.syms
EXTRA_lib_liblargeblock_la_DEPENDENCIES = lib/liblargeblock.syms
EXTRA_DIST += lib/liblargeblock.syms lib/largeblock.pc.in

# The public headers, all under include/largeblock/ and nowhere else:
# users write #include <largeblock/largeblock.h> with largeblock.pc's
# -I${includedir}, so no generic name (geometry.h) of ours is on their path.
largeblockincludedir = $(includedir)/largeblock
largeblockinclude_HEADERS = include/largeblock/largeblock.h \
	include/largeblock/geometry.h include/largeblock/align.h \
	include/largeblock/pattern.h include/largeblock/aligned-io.h
# Made by configure from version.h.in.
nodist_largeblockinclude_HEADERS = include/largeblock/version.h

pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = lib/largeblock.pc

# Only what the library's users need, for tests/test-lib-install.sh:
# make install-lib DESTDIR=...
install-lib: install-libLTLIBRARIES install-largeblockincludeHEADERS \
	install-nodist_largeblockincludeHEADERS \
	install-pkgconfigDATA install-man3 install-lib-man3-links
.PHONY: install-lib

# ---- the section 3 pages: largeblock(3) and one per group ----
# Every function a group page names in its NAME section also gets a page
# of its own: a ".so" link to the group page (lib/man3-links.sh), so
# "man lb_pread_full" opens lb_aligned_io(3).
# largeblock.pod shows docs/largeblock-example.c verbatim (the tests
# check that, and build and run every page's example).
lib_man3_pods = docs/largeblock.pod docs/lb_geometry.pod docs/lb_align.pod \
	docs/lb_aligned_io.pod docs/lb_pattern.pod
man_MANS += docs/largeblock.3 docs/lb_geometry.3 docs/lb_align.3 \
	docs/lb_aligned_io.3 docs/lb_pattern.3
EXTRA_DIST += $(lib_man3_pods) docs/largeblock-example.c
LIB_POD2MAN = $(MKDIR_P) docs && $(POD2MAN) --section=3 --center=largeblock \
	--release=largeblock-$(VERSION)
docs/largeblock.3: docs/largeblock.pod
	$(AM_V_GEN)$(LIB_POD2MAN) --name=largeblock $< $@
docs/lb_geometry.3: docs/lb_geometry.pod
	$(AM_V_GEN)$(LIB_POD2MAN) --name=lb_geometry $< $@
docs/lb_align.3: docs/lb_align.pod
	$(AM_V_GEN)$(LIB_POD2MAN) --name=lb_align $< $@
docs/lb_aligned_io.3: docs/lb_aligned_io.pod
	$(AM_V_GEN)$(LIB_POD2MAN) --name=lb_aligned_io $< $@
docs/lb_pattern.3: docs/lb_pattern.pod
	$(AM_V_GEN)$(LIB_POD2MAN) --name=lb_pattern $< $@

EXTRA_DIST += lib/man3-links.sh
install-data-local: install-lib-man3-links
install-lib-man3-links:
	@$(NORMAL_INSTALL)
	$(MKDIR_P) '$(DESTDIR)$(man3dir)'
	$(SHELL) '$(srcdir)/lib/man3-links.sh' '$(srcdir)' $(lib_man3_pods) | \
	while read fn page; do \
	  echo ".so man3/$$page.3" >'$(DESTDIR)$(man3dir)/'"$$fn.3" || exit 1; \
	done
uninstall-local: uninstall-lib-man3-links
uninstall-lib-man3-links:
	@$(NORMAL_UNINSTALL)
	$(SHELL) '$(srcdir)/lib/man3-links.sh' '$(srcdir)' $(lib_man3_pods) | \
	while read fn page; do rm -f '$(DESTDIR)$(man3dir)/'"$$fn.3"; done
.PHONY: install-lib-man3-links uninstall-lib-man3-links
