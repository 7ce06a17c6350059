/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/statsread unit tests.
 *
 * What lib/disk/stats and lib/disk/wcache write reads back to the same
 * counters (after real cuts); the counters come from the top-level
 * write_cache object only, whatever else carries the same keys; member
 * order, space and unknown members do not matter; a statsfile without a
 * write cache is ENOENT; every malformed document in a table is EINVAL
 * with a one-line reason; and the file reader names the file and refuses
 * an oversized one.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suites.h"
#include "ramstore.h"
#include "stats.h"
#include "statsread.h"
#include "wcache.h"

#define MEMBERS \
  "\"mode\": \"atomic\", \"seed\": 42, \"size\": 1, \"bytes_peak\": 2, " \
  "\"implicit_flushes\": 3, \"written_through\": 4, \"cuts\": 5, " \
  "\"blocks_kept\": 6, \"blocks_lost\": 7, \"blocks_torn\": 8, " \
  "\"logical_kept\": 9, \"logical_lost\": 10"
#define DOC(wc) "{ \"store\": \"ram\", \"write_cache\": " wc " }"

static int
parse (const char *text, struct lb_statsread_wcache *wc, char *err,
       size_t errlen)
{
  return lb_statsread_wcache (text, strlen (text), wc, err, errlen);
}

static void
assert_members (const struct lb_statsread_wcache *wc)
{
  ck_assert_int_eq (wc->mode, LB_CUT_ATOMIC);
  ck_assert_uint_eq (wc->seed, 42);
  ck_assert_uint_eq (wc->size_bytes, 1);
  ck_assert_uint_eq (wc->bytes_peak, 2);
  ck_assert_uint_eq (wc->implicit_flushes, 3);
  ck_assert_uint_eq (wc->written_through, 4);
  ck_assert_uint_eq (wc->cuts, 5);
  ck_assert_uint_eq (wc->blocks_kept, 6);
  ck_assert_uint_eq (wc->blocks_lost, 7);
  ck_assert_uint_eq (wc->blocks_torn, 8);
  ck_assert_uint_eq (wc->logical_kept, 9);
  ck_assert_uint_eq (wc->logical_lost, 10);
}

/* The writer's own output, after writes and two cuts in torn mode. */
START_TEST (test_reads_back_what_the_writer_wrote)
{
  struct lb_wcache_config c = { .mode = LB_CUT_TORN,
                                .seed = 12345678901234567890u,
                                .cache_bytes = 1 << 20 };
  struct lb_geometry g;
  struct lb_store_usage usage;
  struct lb_stats s;
  struct lb_wcache_stats st;
  struct lb_statsread_wcache wc;
  struct lb_cut_report rep;
  struct lb_store *cache;
  unsigned char buf[16384];
  char *text = NULL, err[256];
  size_t len = 0;
  FILE *fp;

  test_geometry (&g, 1 << 20, 16384, 4096, 1 << 20);
  cache = lb_wcache_new (lb_ramstore_new (&g, 0), &c);
  ck_assert_ptr_nonnull (cache);
  memset (buf, 9, sizeof buf);
  for (int cut = 0; cut < 2; cut++) {
    for (uint64_t off = 0; off < (64u << 10); off += sizeof buf)
      ck_assert_int_eq (cache->ops->pwrite (cache, buf, sizeof buf, off,
                                            false),
                        0);
    ck_assert_int_eq (lb_wcache_cut (cache, &rep), 0);
  }
  lb_stats_init (&s);
  cache->ops->usage (cache, &usage);
  fp = open_memstream (&text, &len);
  ck_assert_ptr_nonnull (fp);
  ck_assert_int_eq (lb_stats_write_json (fp, "ram", &g, "einval", &usage, &s,
                                         cache),
                    0);
  ck_assert_int_eq (fclose (fp), 0);

  ck_assert_msg (lb_statsread_wcache (text, len, &wc, err, sizeof err) == 0,
                 "%s in:\n%s", err, text);
  lb_wcache_get_stats (cache, &st);
  ck_assert_int_eq (wc.mode, LB_CUT_TORN);
  ck_assert_uint_eq (wc.seed, c.seed);
  ck_assert_uint_eq (wc.size_bytes, c.cache_bytes);
  ck_assert_uint_eq (wc.bytes_peak, st.cache_bytes_peak);
  ck_assert_uint_eq (wc.cuts, 2);
  ck_assert_uint_eq (wc.blocks_kept, st.total.blocks_kept);
  ck_assert_uint_eq (wc.blocks_lost, st.total.blocks_lost);
  ck_assert_uint_eq (wc.blocks_torn, st.total.blocks_torn);
  ck_assert_uint_eq (wc.blocks_kept + wc.blocks_lost + wc.blocks_torn, 8);
  ck_assert_uint_eq (wc.logical_kept, st.total.logical_kept);
  ck_assert_uint_eq (wc.logical_lost, st.total.logical_lost);
  free (text);
  cache->ops->destroy (cache);
}
END_TEST

/* Documents that must read as MEMBERS say, however they dress it. */
static const char *const good_docs[] = {
  DOC ("{ " MEMBERS " }"),
  /* decoys before and after: the same keys elsewhere */
  "{ \"geometry\": { \"cuts\": 99, \"seed\": 1, \"write_cache\": 0 },\n"
  "  \"note\": \"\\\"write_cache\\\": { \\\"cuts\\\": 77 }\",\n"
  "  \"list\": [ { \"cuts\": 98 }, [], [ 1, -2.5e+3, true, false, null ] ],\n"
  "  \"write_cache\": { " MEMBERS " },\n"
  "  \"after\": { \"write_cachex\": { \"cuts\": 97 } } }",
  /* other order, no space, unknown members of every type */
  "{\"write_cache\":{\"logical_lost\":10,\"logical_kept\":9,\"new\":[{}],"
  "\"blocks_torn\":8,\"blocks_lost\":7,\"blocks_kept\":6,\"cuts\":5,"
  "\"written_through\":4,\"implicit_flushes\":3,\"bytes_peak\":2,"
  "\"size\":1,\"seed\":42,\"mode\":\"atomic\",\"x\":\"\\u00e9\\n\"}}",
  /* an unknown member after the counters */
  DOC ("{ " MEMBERS ", \"more\": 0.5 }"),
  "\r\n\t " DOC ("{ " MEMBERS " }") " \n",
};
#define NR_GOOD_DOCS (sizeof good_docs / sizeof good_docs[0])

START_TEST (test_reads_the_right_object)
{
  struct lb_statsread_wcache wc;
  char err[256];

  ck_assert_msg (parse (good_docs[_i], &wc, err, sizeof err) == 0, "%s in %s",
                 err, good_docs[_i]);
  assert_members (&wc);
}
END_TEST

START_TEST (test_no_write_cache_is_enoent)
{
  struct lb_statsread_wcache wc;
  char err[256] = "";

  errno = 0;
  ck_assert_int_eq (parse ("{ \"store\": \"ram\", \"geometry\": { "
                           "\"write_cache\": { " MEMBERS " } } }",
                           &wc, err, sizeof err),
                    -1);
  ck_assert_int_eq (errno, ENOENT);
  ck_assert_ptr_nonnull (strstr (err, "no write_cache object"));
}
END_TEST

START_TEST (test_largest_counter)
{
  struct lb_statsread_wcache wc;
  char err[256];

  ck_assert_int_eq (parse (DOC ("{ " MEMBERS ", \"cuts\": "
                                "18446744073709551615 }"),
                           &wc, err, sizeof err),
                    -1); /* cuts twice */
  ck_assert_int_eq (parse ("{\"write_cache\": {\"mode\": \"lose\", \"seed\": "
                           "18446744073709551615, \"size\": 0, "
                           "\"bytes_peak\": 0, \"implicit_flushes\": 0, "
                           "\"written_through\": 0, \"cuts\": 0, "
                           "\"blocks_kept\": 0, \"blocks_lost\": 0, "
                           "\"blocks_torn\": 0, \"logical_kept\": 0, "
                           "\"logical_lost\": 0}}",
                           &wc, err, sizeof err),
                    0);
  ck_assert_uint_eq (wc.seed, UINT64_MAX);
  ck_assert_int_eq (wc.mode, LB_CUT_LOSE);
}
END_TEST

static const struct bad_case {
  const char *text;
  const char *reason; /* a part of the message */
} bad_cases[] = {
  { "", "empty" },
  { " \n ", "empty" },
  { "[]", "expected an object" },
  { "\"write_cache\"", "expected an object" },
  { "{", "expected a string" },
  { "{ \"write_cache\": ", "expected a value" },
  { "{ \"write_cache\": { \"mode\": \"torn\", \"seed\": 4", "expected ','" },
  { DOC ("{ " MEMBERS " }") " x", "something after the object" },
  { DOC ("{ " MEMBERS " }") " {}", "something after the object" },
  { DOC ("{ " MEMBERS ", }"), "expected a string" },
  { "{ \"a\": 1, }", "expected a string" },
  { "{ \"a\" 1 }", "expected ':'" },
  { "{ \"a\": 1 \"b\": 2 }", "expected ','" },
  { "{ \"a\": [1 2] }", "expected ',' or ']'" },
  { "{ \"a\": [1,] }", "expected a value" },
  { "{ \"a\": tru }", "expected a value" },
  { "{ \"a\": 01 }", "expected ','" },
  { "{ \"a\": 1. }", "bad number" },
  { "{ \"a\": - }", "bad number" },
  { "{ \"a\": \"x }", "unterminated string" },
  { "{ \"a\": \"x\ty\" }", "control character" },
  { "{ \"a\": \"\\x\" }", "bad escape" },
  { "{ \"a\": \"\\u12g4\" }", "bad \\u escape" },
  { "{ \"write_cache\": [] }", "write_cache is not an object" },
  { "{ \"write_cache\": 5 }", "write_cache is not an object" },
  { "{ \"write_cache\": { " MEMBERS " }, \"write_cache\": { " MEMBERS " } }",
    "write_cache appears twice" },
  { DOC ("{ " MEMBERS ", \"cuts\": 5 }"), "cuts appears twice" },
  { DOC ("{ \"mode\": \"torn\" }"), "seed is missing" },
  { DOC ("{ \"seed\": 1, \"size\": 1, \"bytes_peak\": 2, "
         "\"implicit_flushes\": 3, \"written_through\": 4, \"cuts\": 5, "
         "\"blocks_kept\": 6, \"blocks_lost\": 7, \"blocks_torn\": 8, "
         "\"logical_kept\": 9, \"logical_lost\": 10 }"),
    "mode is missing" },
  { DOC ("{ \"mode\": \"atomic\", \"seed\": 42, \"size\": 1, "
         "\"bytes_peak\": 2, \"implicit_flushes\": 3, "
         "\"written_through\": 4, \"blocks_kept\": 6, \"blocks_lost\": 7, "
         "\"blocks_torn\": 8, \"logical_kept\": 9, \"logical_lost\": 10 }"),
    "cuts is missing" },
  { DOC ("{ \"cuts\": -1 }"), "cuts is not an unsigned integer" },
  { DOC ("{ \"cuts\": 1.5 }"), "cuts is not an integer" },
  { DOC ("{ \"cuts\": 1e3 }"), "cuts is not an integer" },
  { DOC ("{ \"cuts\": \"2\" }"), "cuts is not an unsigned integer" },
  { DOC ("{ \"cuts\": null }"), "cuts is not an unsigned integer" },
  { DOC ("{ \"cuts\": 18446744073709551616 }"), "cuts is beyond 2^64-1" },
  { DOC ("{ \"cuts\": 007 }"), "cuts has a leading zero" },
  { DOC ("{ \"mode\": \"bogus\" }"), "mode is not lose, atomic or torn" },
  { DOC ("{ \"mode\": \"atomicatomicatomic\" }"),
    "mode is not lose, atomic or torn" },
  { DOC ("{ \"mode\": 1 }"), "mode is not a string" },
  { "{ \"a\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
    "[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
    "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]] }",
    "nested too deeply" },
};
#define NR_BAD_CASES (sizeof bad_cases / sizeof bad_cases[0])

START_TEST (test_malformed_is_einval)
{
  const struct bad_case *c = &bad_cases[_i];
  struct lb_statsread_wcache wc;
  char err[256] = "";

  memset (&wc, 0xff, sizeof wc);
  errno = 0;
  ck_assert_msg (parse (c->text, &wc, err, sizeof err) == -1, "accepted: %s",
                 c->text);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_msg (strstr (err, c->reason) != NULL, "'%s' lacks '%s' for %s",
                 err, c->reason, c->text);
  ck_assert_ptr_null (strchr (err, '\n'));
  ck_assert_uint_eq (wc.cuts, 0); /* zeroed on failure */
}
END_TEST

/* A NUL byte inside: the length, not a terminator, ends the text. */
START_TEST (test_nul_byte_is_einval)
{
  static const char text[] = "{ \"a\": 1 }\0";
  struct lb_statsread_wcache wc;
  char err[256];

  ck_assert_int_eq (lb_statsread_wcache (text, sizeof text - 1, &wc, err,
                                         sizeof err),
                    -1);
  ck_assert_int_eq (errno, EINVAL);
  /* and a document cut short is never read past its length */
  ck_assert_int_eq (lb_statsread_wcache (good_docs[0], 20, &wc, err,
                                         sizeof err),
                    -1);
  ck_assert_int_eq (errno, EINVAL);
}
END_TEST

START_TEST (test_file)
{
  char dir[] = "/tmp/check-statsread.XXXXXX", path[64], err[256];
  struct lb_statsread_wcache wc;
  FILE *fp;

  ck_assert_ptr_nonnull (mkdtemp (dir));
  snprintf (path, sizeof path, "%s/stats", dir);
  errno = 0;
  ck_assert_int_eq (lb_statsread_wcache_file (path, &wc, err, sizeof err), -1);
  ck_assert_int_eq (errno, ENOENT);
  ck_assert_ptr_nonnull (strstr (err, path));

  fp = fopen (path, "w"); /* empty, as the plugin leaves it at start */
  ck_assert_ptr_nonnull (fp);
  fclose (fp);
  ck_assert_int_eq (lb_statsread_wcache_file (path, &wc, err, sizeof err), -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_ptr_nonnull (strstr (err, path));
  ck_assert_ptr_nonnull (strstr (err, "empty"));

  fp = fopen (path, "w");
  fputs (good_docs[1], fp);
  fclose (fp);
  ck_assert_msg (lb_statsread_wcache_file (path, &wc, err, sizeof err) == 0,
                 "%s", err);
  assert_members (&wc);

  fp = fopen (path, "w"); /* valid JSON, but beyond any statsfile */
  fputs ("{ \"pad\": \"", fp);
  for (int i = 0; i < (1 << 20); i++)
    fputc ('x', fp);
  fputs ("\", \"write_cache\": { " MEMBERS " } }", fp);
  fclose (fp);
  ck_assert_int_eq (lb_statsread_wcache_file (path, &wc, err, sizeof err), -1);
  ck_assert_int_eq (errno, EFBIG);
  unlink (path);
  rmdir (dir);
}
END_TEST

static Suite *
statsread_suite (void)
{
  Suite *s = suite_create ("statsread");
  TCase *tc = tcase_create ("json");

  tcase_add_test (tc, test_reads_back_what_the_writer_wrote);
  tcase_add_loop_test (tc, test_reads_the_right_object, 0, NR_GOOD_DOCS);
  tcase_add_test (tc, test_no_write_cache_is_enoent);
  tcase_add_test (tc, test_largest_counter);
  tcase_add_loop_test (tc, test_malformed_is_einval, 0, NR_BAD_CASES);
  tcase_add_test (tc, test_nul_byte_is_einval);
  tcase_add_test (tc, test_file);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (statsread_suite);
