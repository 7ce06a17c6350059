# largeblock: lib/ -- the C library behind the plugin and the programs
# (pure C, no nbdkit), as libtool convenience libraries, one per concern.
#
# A shared module (the plugin) takes a convenience library whole
# (--whole-archive), so a module that only programs use gets a library of
# its own: the plugin then carries exactly the code it calls.

# The disk: parameters, geometry, alignment policy, the two stores and
# their allocator, statistics.  Plugin, server, bench, tests, fuzz.
noinst_LTLIBRARIES += lib/liblargeblock.la
lib_liblargeblock_la_SOURCES = \
	lib/align.c lib/align.h \
	lib/disk.c lib/disk.h \
	lib/error.c lib/error.h \
	lib/extents.c lib/extents.h \
	lib/filestore.c lib/filestore.h \
	lib/geometry.c lib/geometry.h \
	lib/params.c lib/params.h \
	lib/ramstore.c lib/ramstore.h \
	lib/slab.c lib/slab.h \
	lib/stats.c lib/stats.h \
	lib/store.h

# Least privilege: dropping capabilities after start-up (libcap-ng).
# The plugin.
noinst_LTLIBRARIES += lib/libcaps.la
lib_libcaps_la_SOURCES = lib/caps.c lib/caps.h
lib_libcaps_la_CPPFLAGS = $(AM_CPPFLAGS) $(CAPNG_CFLAGS)
lib_libcaps_la_LIBADD = $(CAPNG_LIBS)

# Verification blocks: the self-describing pattern largeblock-verify
# writes and checks.  tools/, fuzz/ and the unit tests; not the plugin.
noinst_LTLIBRARIES += lib/libpattern.la
lib_libpattern_la_SOURCES = lib/pattern.c lib/pattern.h
