/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: runs the lib/ Check suites; exit status is the number of
 * failed tests (capped), so automake sees any failure.
 *
 *   check-lib          every suite
 *   check-lib SUITE    just SUITE (a name in the table below); make check
 *                      runs each suite as a test of its own,
 *                      tests/unit-lib-SUITE.tap, so make -j overlaps them
 *   check-lib --list   the suites' names, one a line (for
 *                      tests/test-unit-lib-every-suite-runs.sh)
 *
 * Set CK_TAP_LOG_FILE_NAME=- for one TAP line per test case (the .tap
 * scripts do), CK_VERBOSITY for more or less output.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

void
test_geometry (struct lb_geometry *g, uint64_t size, uint32_t physical,
               uint32_t logical, uint32_t max_request)
{
  struct lb_geometry_request req;
  char err[256];

  lb_geometry_request_defaults (&req);
  req.size_bytes = size;
  req.size_str = "test";
  req.physical_bytes = physical;
  req.logical_bytes = logical;
  req.max_request_bytes = max_request;
  ck_assert_msg (lb_geometry_init (g, &req, err, sizeof err) == 0, "%s", err);
}

static const struct {
  const char *name;
  Suite *(*make) (void);
} suites[] = {
  { "geometry", geometry_suite },   { "align", align_suite },
  { "params", params_suite },       { "stats", stats_suite },
  { "statsread", statsread_suite }, { "slab", slab_suite },
  { "extents", extents_suite },     { "ramstore", ramstore_suite },
  { "reclaim", reclaim_suite },     { "filestore", filestore_suite },
  { "pattern", pattern_suite },     { "aligned_io", aligned_io_suite },
  { "wcache", wcache_suite },       { "cutclass", cutclass_suite },
  { "cutfifo", cutfifo_suite },     { "nbdkitargs", nbdkitargs_suite },
};
#define NR_SUITES (sizeof suites / sizeof suites[0])

int
main (int argc, char *argv[])
{
  SRunner *sr = NULL;
  size_t i;
  int failed;

  if (argc > 2) {
    fprintf (stderr, "usage: %s [SUITE | --list]\n", argv[0]);
    return 100;
  }
  if (argc == 2 && strcmp (argv[1], "--list") == 0) {
    for (i = 0; i < NR_SUITES; i++)
      printf ("%s\n", suites[i].name);
    return 0;
  }
  for (i = 0; i < NR_SUITES; i++) {
    if (argc == 2 && strcmp (argv[1], suites[i].name) != 0)
      continue;
    if (sr == NULL)
      sr = srunner_create (suites[i].make ());
    else
      srunner_add_suite (sr, suites[i].make ());
  }
  if (sr == NULL) {
    fprintf (stderr, "%s: no suite named '%s'\n", argv[0], argv[1]);
    return 100;
  }

  srunner_run_all (sr, CK_ENV);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed > 100 ? 100 : failed;
}
