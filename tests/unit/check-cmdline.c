/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: server/common/cmdline unit tests.
 *
 * PARAM=VALUE words and COMMAND are found where getopt left them, with
 * and without "--", and counts outside 1..max are refused in one line.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "suites.h"
#include "cmdline.h"

/* argv after getopt: OPTIND is where getopt stopped. */
static const struct {
  const char *words[6];
  int optind;
  int nr_params;
  int command; /* index of COMMAND's first word, 0: none */
} splits[] = {
  { { "prog", "a=1", "b=2", "--", "cmd", "arg" }, 1, 2, 4 },
  { { "prog", "a=1", "b=2" }, 1, 2, 0 },
  { { "prog", "a=1", "--" }, 1, 1, 0 },
  { { "prog", "--", "cmd", "arg" }, 2, 0, 2 }, /* getopt ate the "--" */
  { { "prog", "--", "--", "cmd" }, 2, 0, 2 },  /* COMMAND may be "--" */
  { { "prog", "-v", "a=1", "--", "cmd" }, 2, 1, 4 },
  { { "prog" }, 1, 0, 0 },
};

START_TEST (test_split)
{
  char *argv[7] = { NULL };
  char **params = NULL;
  int argc = 0, nr = -1, cmd;

  while (argc < 6 && splits[_i].words[argc]) {
    argv[argc] = (char *) splits[_i].words[argc];
    argc++;
  }
  cmd = cmdline_split (argc, argv, splits[_i].optind, &params, &nr);
  ck_assert_int_eq (nr, splits[_i].nr_params);
  ck_assert_ptr_eq (params, &argv[splits[_i].optind]);
  ck_assert_int_eq (cmd, splits[_i].command ? splits[_i].command : argc);
}
END_TEST

START_TEST (test_count_accepts)
{
  unsigned n = 0;

  ck_assert_int_eq (cmdline_count ("prog", "disks", "1", 4, &n), 0);
  ck_assert_uint_eq (n, 1);
  ck_assert_int_eq (cmdline_count ("prog", "disks", "4", 4, &n), 0);
  ck_assert_uint_eq (n, 4);
}
END_TEST

static const char *const bad_counts[] = {
  "0", "5", "", "x", "2x", "-1", "18446744073709551617",
};

START_TEST (test_count_refuses)
{
  unsigned n = 7;

  ck_assert_int_eq (cmdline_count ("prog", "disks", bad_counts[_i], 4, &n),
                    -1);
  ck_assert_uint_eq (n, 7); /* untouched */
}
END_TEST

START_TEST (test_nbdkit_from_environment)
{
  setenv ("NBDKIT", "/opt/nbdkit", 1);
  ck_assert_str_eq (cmdline_nbdkit (), "/opt/nbdkit");
  setenv ("NBDKIT", "", 1);
  ck_assert_str_eq (cmdline_nbdkit (), "nbdkit");
  unsetenv ("NBDKIT");
  ck_assert_str_eq (cmdline_nbdkit (), "nbdkit");
}
END_TEST

static Suite *
cmdline_suite (void)
{
  Suite *s = suite_create ("cmdline");
  TCase *tc = tcase_create ("cmdline");

  tcase_add_loop_test (tc, test_split, 0, sizeof splits / sizeof splits[0]);
  tcase_add_test (tc, test_count_accepts);
  tcase_add_loop_test (tc, test_count_refuses, 0,
                       sizeof bad_counts / sizeof bad_counts[0]);
  tcase_add_test (tc, test_nbdkit_from_environment);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (cmdline_suite);
