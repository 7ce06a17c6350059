/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run: runs the server/ Check suites (the process layer,
 * the mkfs command builder, kernel versions); exit status is the
 * number of failed tests (capped).  CK_TAP_LOG_FILE_NAME=- for TAP
 * (tests/unit-server.tap).
 */
#include <config.h>

#include "suites.h"

int
main (void)
{
  SRunner *sr = srunner_create (proc_suite ());
  int failed;

  srunner_add_suite (sr, mkfscmd_suite ());
  srunner_add_suite (sr, kernel_version_suite ());
  /* Always a child per test, whatever CK_FORK says (check-valgrind sets
   * it to "no" for the lib/ suites): the process layer's tests block,
   * catch and raise signals and change process groups, state that
   * must not leak from one test into the next. */
  srunner_set_fork_status (sr, CK_FORK);
  srunner_run_all (sr, CK_ENV);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed > 100 ? 100 : failed;
}
