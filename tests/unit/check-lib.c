/* largeblock: runs every lib/ Check suite; exit status is the number of
 * failed tests (capped), so automake sees any failure.
 *
 * Set CK_TAP_LOG_FILE_NAME=- for one TAP line per test case (make check
 * does, through tests/unit-lib.tap), CK_VERBOSITY for more or less output.
 */
#include <config.h>

#include <stdlib.h>

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

int
main (void)
{
  SRunner *sr = srunner_create (geometry_suite ());
  int failed;

  srunner_add_suite (sr, align_suite ());
  srunner_add_suite (sr, params_suite ());
  srunner_add_suite (sr, stats_suite ());
  srunner_add_suite (sr, statsread_suite ());
  srunner_add_suite (sr, slab_suite ());
  srunner_add_suite (sr, extents_suite ());
  srunner_add_suite (sr, ramstore_suite ());
  srunner_add_suite (sr, reclaim_suite ());
  srunner_add_suite (sr, filestore_suite ());
  srunner_add_suite (sr, pattern_suite ());
  srunner_add_suite (sr, aligned_io_suite ());
  srunner_add_suite (sr, wcache_suite ());
  srunner_add_suite (sr, cutclass_suite ());
  srunner_add_suite (sr, cutfifo_suite ());

  srunner_run_all (sr, CK_ENV);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed > 100 ? 100 : failed;
}
