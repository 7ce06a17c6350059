/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/disk/nbdkitargs unit tests.
 *
 * Table-driven: nbdkit command lines and whether they ask for -r, the
 * way nbdkit's getopt_long reads them -- short, clustered and long
 * options, abbreviations, the arguments of options that take one (never
 * -r themselves), operands anywhere before "--", and POSIXLY_CORRECT.
 * The /proc/self/cmdline form, NUL-separated, gives the same answers.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "suites.h"
#include "nbdkitargs.h"

#define MAX_WORDS 8

static const struct args_case {
  const char *words[MAX_WORDS]; /* after argv[0] = "nbdkit" */
  bool posixly_correct;
  bool read_only;
} args_cases[] = {
  { { "-U", "-", "largeblock", "file=x" }, false, false },
  { { "-r", "-U", "-", "largeblock", "file=x" }, false, true },
  { { "--readonly", "largeblock", "file=x" }, false, true },
  { { "--read-only", "largeblock", "file=x" }, false, true },
  { { "--read", "largeblock" }, false, true }, /* abbreviation */
  { { "--re", "largeblock" }, false, true },
  { { "--r", "largeblock" }, false, false },         /* --run too */
  { { "--tls", "-r", "largeblock" }, false, false }, /* exact beats prefix */
  { { "--tls-v", "-r", "largeblock" }, false, true },
  { { "-fr", "largeblock" }, false, true }, /* cluster */
  { { "-fvr", "largeblock" }, false, true },
  { { "-U", "-r", "largeblock" }, false, false }, /* -U's argument */
  { { "-P", "-r", "largeblock" }, false, false },
  { { "-Ur", "largeblock" }, false, false }, /* joined argument */
  { { "-fUr", "largeblock" }, false, false },
  { { "-fU", "-r", "largeblock" }, false, false },
  { { "-rU", "sock", "largeblock" }, false, true },
  { { "--run", "-r", "largeblock" }, false, false },
  { { "--run=-r", "largeblock" }, false, false },
  { { "--unix", "-r", "largeblock" }, false, false },
  { { "--filter", "-r", "largeblock" }, false, false },
  { { "--pid", "-r", "largeblock" }, false, false }, /* both pid options */
  { { "largeblock", "file=x", "-r" }, false, true }, /* GNU permutation */
  { { "largeblock", "file=x", "-r" }, true, false }, /* POSIXLY_CORRECT */
  { { "-r", "largeblock" }, true, true },
  { { "--", "largeblock", "-r" }, false, false },
  { { "-", "-r", "largeblock" }, false, true }, /* "-" is an operand */
  { { "largeblock", "file=-r" }, false, false },
  { { "--verbose", "--foreground", "largeblock" }, false, false },
  { { "--no-such-option", "-r" }, false, true },
};
#define NR_ARGS_CASES (sizeof args_cases / sizeof args_cases[0])

static int
case_argv (const struct args_case *c, char **argv)
{
  int argc = 0;

  argv[argc++] = (char *) "nbdkit";
  for (int i = 0; i < MAX_WORDS && c->words[i]; i++)
    argv[argc++] = (char *) c->words[i];
  argv[argc] = NULL;
  return argc;
}

START_TEST (test_args_read_only)
{
  const struct args_case *c = &args_cases[_i];
  char *argv[MAX_WORDS + 2];
  int argc = case_argv (c, argv);

  ck_assert_msg (lb_nbdkit_args_read_only (argc, argv, c->posixly_correct) ==
                   c->read_only,
                 "case %d: expected %s", _i,
                 c->read_only ? "read-only" : "read-write");
}
END_TEST

/* The same case, as /proc/self/cmdline holds it. */
START_TEST (test_cmdline_read_only)
{
  const struct args_case *c = &args_cases[_i];
  char *argv[MAX_WORDS + 2], buf[512];
  int argc = case_argv (c, argv);
  size_t len = 0;

  for (int i = 0; i < argc; i++) {
    size_t n = strlen (argv[i]) + 1;

    ck_assert_uint_le (len + n, sizeof buf);
    memcpy (buf + len, argv[i], n);
    len += n;
  }
  ck_assert_int_eq (lb_nbdkit_cmdline_read_only (buf, len, c->posixly_correct),
                    c->read_only);
}
END_TEST

/* The test runner's own command line has no -r. */
START_TEST (test_self_is_read_write)
{
  ck_assert_int_eq (lb_nbdkit_self_read_only (), 0);
}
END_TEST

static Suite *
nbdkitargs_suite (void)
{
  Suite *s = suite_create ("nbdkitargs");
  TCase *tc = tcase_create ("nbdkitargs");

  tcase_add_loop_test (tc, test_args_read_only, 0, NR_ARGS_CASES);
  tcase_add_loop_test (tc, test_cmdline_read_only, 0, NR_ARGS_CASES);
  tcase_add_test (tc, test_self_is_read_write);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (nbdkitargs_suite);
