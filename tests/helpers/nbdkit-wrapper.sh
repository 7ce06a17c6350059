#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# largeblock: run the system nbdkit under the test harness's checkers.
#
# Makefile.am points $NBDKIT at this script when NBDKIT_PRELOAD or
# LB_VALGRIND is set; exec keeps the PID, so pid files and signals still
# reach nbdkit itself (valgrind runs its guest in the same process).
#
# NBDKIT_PRELOAD (a --enable-sanitizers build): the plugin is instrumented
# but nbdkit is not, and ASan/TSan must be the first library in the
# process, so the runtime is preloaded, with tests/helpers/asan-init-first.c
# (built by make check), which initialises it before any other library's
# constructor runs: without it, nbdkit deadlocks in exit() once it has
# formatted an error message (see that file).  Reports are fatal (exit
# status 66, options in Makefile.am).  Leak checking is off in nbdkit because
# nbdkit 1.32's own allocations and every --run child (which inherits
# LD_PRELOAD) would report leaks that are not ours; the unit tests, which
# are instrumented directly, keep it, and "make check-valgrind" checks
# the plugin for leaks.
#
# LB_VALGRIND ("make check-valgrind"): the valgrind command line nbdkit
# runs under; it logs to one file per process, checked afterwards.
: "${NBDKIT_REAL:?run through make check}"
if [ -n "${NBDKIT_PRELOAD:-}" ]; then
    init_first="${abs_top_builddir:?}/tests/helpers/.libs/libasan-init-first.so"
    [ -f "$init_first" ] || {
        echo "nbdkit-wrapper.sh: $init_first is missing (make check builds it)" >&2
        exit 1; }
    LD_PRELOAD="$NBDKIT_PRELOAD:$init_first${LD_PRELOAD:+:$LD_PRELOAD}"
    ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"
    export LD_PRELOAD ASAN_OPTIONS
fi
# shellcheck disable=SC2086 # LB_VALGRIND is a command line
exec ${LB_VALGRIND:-} "$NBDKIT_REAL" "$@"
