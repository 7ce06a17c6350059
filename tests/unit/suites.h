/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: how a Check suite joins its runner, and the fixtures the
 * suites share.
 *
 * A suite is one file, tests/unit/check-NAME.c, ending in
 * LB_UNIT_SUITE (its Suite-making function).  Listing the file in
 * tests/local.mk (unit_lib_suites or unit_server_suites) is the one other
 * edit: that list compiles it into its runner (tests/unit/runner.c,
 * check-lib or check-server) and generates its test,
 * tests/unit/check-NAME.tap. The suite's name is NAME, taken from the file's
 * name, so the file, the runner's name for it and its test cannot disagree.
 *
 * Registration runs in constructors, before main, single-threaded.
 */
#ifndef LARGEBLOCK_TEST_SUITES_H
#define LARGEBLOCK_TEST_SUITES_H

#include <check.h>
#include <stdint.h>

#include "largeblock/geometry.h"

struct lb_unit_suite {
  const char *file; /* __FILE__ of tests/unit/check-NAME.c */
  Suite *(*make) (void);
  struct lb_unit_suite *next; /* the runner's list, by name */
};

/* Adds SUITE to the runner's list (runner.c). */
void lb_unit_suite_register (struct lb_unit_suite *suite);

/* The last line of tests/unit/check-NAME.c: MAKE_FN builds its Suite. */
#define LB_UNIT_SUITE(make_fn) \
  static struct lb_unit_suite lb_unit_suite_ = { __FILE__, make_fn, NULL }; \
  __attribute__ ((constructor)) static void lb_unit_suite_register_ (void) \
  { \
    lb_unit_suite_register (&lb_unit_suite_); \
  } \
  struct lb_unit_suite_semicolon_

/* A geometry the test asserts is valid (shared by the suites;
 * tests/unit/fixtures.c). */
void test_geometry (struct lb_geometry *g, uint64_t size, uint32_t physical,
                    uint32_t logical, uint32_t max_request);

#endif
