/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the main of both Check runners -- check-lib (the lib/
 * suites) and check-server (the server/ suites); each is this file plus
 * its list of suite files in tests/local.mk.  Exit status is the number
 * of failed tests (capped), so automake sees any failure.
 *
 *   check-lib          every suite
 *   check-lib SUITE    just SUITE (tests/unit/check-SUITE.c); make check
 *                      runs each suite as a test of its own,
 *                      tests/unit/check-SUITE.tap, so make -j overlaps them
 *   check-lib --list   the suites' names, one a line (for
 *                      tests/test-unit-every-suite-runs.sh)
 *
 * The suites join the list below from their constructors
 * (LB_UNIT_SUITE in suites.h), before main runs; main only reads it.
 *
 * Set CK_TAP_LOG_FILE_NAME=- for one TAP line per test case (the .tap
 * scripts do), CK_VERBOSITY for more or less output.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

/* The registered suites, sorted by name. */
static struct lb_unit_suite *suites;

/* "tests/unit/check-NAME.c" -> NAME, in BUF. */
static const char *
suite_name (const struct lb_unit_suite *suite, char *buf, size_t len)
{
  const char *base = strrchr (suite->file, '/');
  size_t n;

  base = base ? base + 1 : suite->file;
  if (strncmp (base, "check-", 6) == 0)
    base += 6;
  n = strcspn (base, ".");
  if (n >= len)
    n = len - 1;
  memcpy (buf, base, n);
  buf[n] = '\0';
  return buf;
}

void
lb_unit_suite_register (struct lb_unit_suite *suite)
{
  struct lb_unit_suite **p = &suites;
  char a[64], b[64];

  suite_name (suite, a, sizeof a);
  while (*p && strcmp (suite_name (*p, b, sizeof b), a) < 0)
    p = &(*p)->next;
  suite->next = *p;
  *p = suite;
}

int
main (int argc, char *argv[])
{
  SRunner *sr = NULL;
  const struct lb_unit_suite *s;
  char name[64];
  int failed;

  if (argc > 2) {
    fprintf (stderr, "usage: %s [SUITE | --list]\n", argv[0]);
    return 100;
  }
  if (argc == 2 && strcmp (argv[1], "--list") == 0) {
    for (s = suites; s; s = s->next)
      printf ("%s\n", suite_name (s, name, sizeof name));
    return 0;
  }
  for (s = suites; s; s = s->next) {
    if (argc == 2 && strcmp (argv[1], suite_name (s, name, sizeof name)) != 0)
      continue;
    if (sr == NULL)
      sr = srunner_create (s->make ());
    else
      srunner_add_suite (sr, s->make ());
  }
  if (sr == NULL) {
    fprintf (stderr, "%s: no suite named '%s'\n", argv[0],
             argc == 2 ? argv[1] : "");
    return 100;
  }

#ifdef LB_UNIT_ALWAYS_FORK
  /* check-server: a child per test, whatever CK_FORK says (check-valgrind
   * sets it to "no" for the lib/ suites): the process layer's tests
   * block, catch and raise signals and change process groups, state
   * that must not leak from one test into the next. */
  srunner_set_fork_status (sr, CK_FORK);
#endif
  srunner_run_all (sr, CK_ENV);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed > 100 ? 100 : failed;
}
