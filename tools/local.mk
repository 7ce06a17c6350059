# largeblock: tools/ -- largeblock-verify and its lib/pattern module.
# Included at the end of Makefile.am.

lib_liblargeblock_la_SOURCES += lib/pattern.c lib/pattern.h
tests_unit_check_lib_SOURCES += tests/unit/check-pattern.c
