/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run: server/common/kernel-version unit tests.
 *
 * Releases as uname -r gives them (distribution suffixes, -rc, two-digit
 * minors, a major above 6) compare by major then minor; what does not
 * start with two numbers is never called older.
 */
#include <config.h>

#include "suites.h"
#include "kernel-version.h"

static const struct {
  const char *release;
  bool older_than_6_15;
} releases[] = {
  { "6.1.0-28-amd64", true },
  { "6.12.118+deb12-cloud-amd64", true },
  { "6.14.11", true },
  { "5.19.0", true },
  { "6.15.0", false },
  { "6.15-rc1", false },
  { "6.18.44-fc-v1272", false },
  { "6.100.0", false },
  { "7.0.0", false },
  { "7.2.1-arch1-1", false },
  { "10.1", false },
  { "6", false },
  { "", false },
  { "linux", false },
};

START_TEST (test_release_older_than)
{
  ck_assert_msg (kernel_release_older_than (releases[_i].release, 6, 15) ==
                   releases[_i].older_than_6_15,
                 "%s", releases[_i].release);
}
END_TEST

START_TEST (test_running_kernel_named)
{
  char release[128] = "";

  kernel_running_older_than (6, 15, release, sizeof release);
  ck_assert (release[0] != '\0');
  ck_assert (!kernel_running_older_than (0, 0, NULL, 0));
  ck_assert (kernel_running_older_than (1000, 0, NULL, 0));
}
END_TEST

static Suite *
kernel_version_suite (void)
{
  Suite *s = suite_create ("kernel-version");
  TCase *tc = tcase_create ("kernel-version");

  tcase_add_loop_test (tc, test_release_older_than, 0,
                       (int) (sizeof releases / sizeof releases[0]));
  tcase_add_test (tc, test_running_kernel_named);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (kernel_version_suite);
