/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: fixtures the Check suites share (declared in suites.h). */
#include <config.h>

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
