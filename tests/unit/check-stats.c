/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/disk/stats unit tests.
 *
 * Counters land in the right request type and nowhere else, counting is
 * exact under concurrent updates, and the JSON report carries every key
 * of the SPEC with the right values.  A stdio write error is reported.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"
#include "stats.h"

START_TEST (test_counts_by_type)
{
  struct lb_stats s;
  enum lb_req_type t = (enum lb_req_type) _i;

  lb_stats_init (&s);
  lb_stats_count (&s, t, 16384);
  lb_stats_count (&s, t, 4096);
  lb_stats_count_misaligned (&s, t);
  lb_stats_count_error (&s, t);
  lb_stats_count_error (&s, t);

  for (int u = 0; u < LB_REQ_NR_TYPES; u++) {
    bool same = u == (int) t;
    ck_assert_uint_eq (s.requests[u], same ? 2 : 0);
    ck_assert_uint_eq (s.bytes[u], same ? 20480 : 0);
    ck_assert_uint_eq (s.misaligned[u], same ? 1 : 0);
    ck_assert_uint_eq (s.errors[u], same ? 2 : 0);
  }
}
END_TEST

#define THREADS 4
#define PER_THREAD 100000

static void *
count_many (void *arg)
{
  struct lb_stats *s = arg;

  for (int i = 0; i < PER_THREAD; i++) {
    lb_stats_count (s, LB_REQ_WRITE, 3);
    lb_stats_count_error (s, LB_REQ_READ);
  }
  return NULL;
}

START_TEST (test_concurrent_counts_are_exact)
{
  struct lb_stats s;
  pthread_t th[THREADS];

  lb_stats_init (&s);
  for (int i = 0; i < THREADS; i++)
    ck_assert_int_eq (pthread_create (&th[i], NULL, count_many, &s), 0);
  for (int i = 0; i < THREADS; i++)
    pthread_join (th[i], NULL);
  ck_assert_uint_eq (s.requests[LB_REQ_WRITE], THREADS * PER_THREAD);
  ck_assert_uint_eq (s.bytes[LB_REQ_WRITE], 3ull * THREADS * PER_THREAD);
  ck_assert_uint_eq (s.errors[LB_REQ_READ], THREADS * PER_THREAD);
  ck_assert_uint_eq (s.requests[LB_REQ_READ], 0);
}
END_TEST

/* Render the report of a known state into a string. */
static char *
render (const struct lb_stats *s)
{
  struct lb_geometry g;
  struct lb_store_usage usage = {
    .folios_allocated = 3,
    .folios_peak = 7,
    .bytes_resident = 3 * 16384,
    .metadata_bytes = 4242,
  };
  char *text = NULL;
  size_t len = 0;
  FILE *fp = open_memstream (&text, &len);

  ck_assert_ptr_nonnull (fp);
  test_geometry (&g, 1ull << 30, 16384, 4096, 1 << 20);
  ck_assert_int_eq (lb_stats_write_json (fp, "ram", &g, "einval", &usage, s,
                                         NULL),
                    0);
  ck_assert_int_eq (fclose (fp), 0);
  return text;
}

START_TEST (test_json_has_every_key_and_value)
{
  struct lb_stats s;
  char *text;

  lb_stats_init (&s);
  lb_stats_count (&s, LB_REQ_WRITE, 65536);
  lb_stats_count (&s, LB_REQ_TRIM, 16384);
  lb_stats_count_misaligned (&s, LB_REQ_READ);
  lb_stats_count_error (&s, LB_REQ_ZERO);
  text = render (&s);

  static const char *const expected[] = {
    "\"store\": \"ram\",",
    "\"geometry\": { \"size\": 1073741824, \"blksize\": 16384, "
    "\"logical_blksize\": 4096, \"max_request\": 1048576, "
    "\"misaligned\": \"einval\" }",
    "\"folios_allocated\": 3,",
    "\"folios_peak\": 7,",
    "\"bytes_resident\": 49152,",
    "\"metadata_bytes\": 4242,",
    "\"requests\": { \"read\": 0, \"write\": 1, \"trim\": 1, \"zero\": 0, "
    "\"cache\": 0, \"extents\": 0, \"flush\": 0 }",
    "\"bytes\": { \"read\": 0, \"write\": 65536, \"trim\": 16384, "
    "\"zero\": 0, \"cache\": 0, \"extents\": 0, \"flush\": 0 }",
    "\"misaligned\": { \"read\": 1, \"write\": 0,",
    "\"errors\": { \"read\": 0, \"write\": 0, \"trim\": 0, \"zero\": 1,",
  };
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
    ck_assert_msg (strstr (text, expected[i]) != NULL, "missing %s in:\n%s",
                   expected[i], text);
  ck_assert_int_eq (text[0], '{');
  ck_assert_str_eq (text + strlen (text) - 3, "\n}\n");
  free (text);
}
END_TEST

/* The report must be one JSON document: let a real parser judge it. */
START_TEST (test_json_parses)
{
  struct lb_stats s;
  char *text;
  FILE *py;

  lb_stats_init (&s);
  lb_stats_count (&s, LB_REQ_FLUSH, 0);
  text = render (&s);
  py = popen ("python3 -c 'import json,sys; d=json.load(sys.stdin); "
              "assert d[\"requests\"][\"flush\"] == 1; "
              "assert d[\"store\"] == \"ram\"; "
              "assert d[\"geometry\"][\"blksize\"] == 16384' "
              "2>/dev/null",
              "w");
  if (py == NULL) {
    free (text);
    return; /* no shell: the string checks stand */
  }
  fputs (text, py);
  ck_assert_int_eq (pclose (py), 0);
  free (text);
}
END_TEST

START_TEST (test_write_error_is_reported)
{
  struct lb_geometry g;
  struct lb_store_usage usage = { 0 };
  struct lb_stats s;
  FILE *fp = fopen ("/dev/full", "w");

  if (fp == NULL)
    return; /* no /dev/full in this sandbox */
  setvbuf (fp, NULL, _IONBF, 0);
  lb_stats_init (&s);
  test_geometry (&g, 1 << 20, 4096, 512, 1 << 20);
  errno = 0;
  ck_assert_int_eq (lb_stats_write_json (fp, "file", &g, "rmw", &usage, &s,
                                         NULL),
                    -1);
  ck_assert_int_eq (errno, ENOSPC);
  fclose (fp);
}
END_TEST

static Suite *
stats_suite (void)
{
  Suite *s = suite_create ("stats");
  TCase *tc = tcase_create ("counters");

  tcase_add_loop_test (tc, test_counts_by_type, 0, LB_REQ_NR_TYPES);
  tcase_add_test (tc, test_concurrent_counts_are_exact);
  suite_add_tcase (s, tc);

  tc = tcase_create ("json");
  /* It starts python3, which takes seconds on a loaded machine. */
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_json_has_every_key_and_value);
  tcase_add_test (tc, test_json_parses);
  tcase_add_test (tc, test_write_error_is_reported);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (stats_suite);
