/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/align unit tests.
 *
 * Every class a request can fall into, for every request type, in several
 * geometries; the precedence between broken rules; the overflow of
 * offset + count; and the human reason for each class.
 */
#include <config.h>

#include <stdint.h>
#include <string.h>

#include "suites.h"
#include "largeblock/align.h"
#include "enum-counts.h"

static struct lb_geometry
make_geometry (uint64_t size, uint32_t physical, uint32_t logical,
               uint32_t max_request)
{
  struct lb_geometry g;

  test_geometry (&g, size, physical, logical, max_request);
  return g;
}

static const struct {
  uint32_t physical, logical, max_request;
} geometries[] = {
  { 4096, 512, 1 << 20 },
  { 16384, 16384, 1 << 20 },
  { 65536, 4096, 1 << 20 },
  { 2 << 20, 65536, 4 << 20 },
};
#define NR_GEOMETRIES (sizeof geometries / sizeof geometries[0])

/* Loop index: geometry * LB_REQ_NR_TYPES + request type. */
START_TEST (test_every_class_every_type)
{
  const uint64_t size = 64ull << 20;
  unsigned gi = (unsigned) _i / LB_REQ_NR_TYPES;
  enum lb_req_type t = (enum lb_req_type) (_i % LB_REQ_NR_TYPES);
  struct lb_geometry g = make_geometry (size, geometries[gi].physical,
                                        geometries[gi].logical,
                                        geometries[gi].max_request);
  uint64_t lb = g.logical_bytes, big = g.max_request_bytes + lb;
  int data = t == LB_REQ_READ || t == LB_REQ_WRITE;

  ck_assert_int_eq (lb_align_classify (&g, t, 0, lb), LB_ALIGN_OK);
  ck_assert_int_eq (lb_align_classify (&g, t, size - lb, lb), LB_ALIGN_OK);
  ck_assert_int_eq (lb_align_classify (&g, t, lb, g.max_request_bytes),
                    LB_ALIGN_OK);
  ck_assert_int_eq (lb_align_classify (&g, t, 0, 0), LB_ALIGN_ZERO_LENGTH);
  ck_assert_int_eq (lb_align_classify (&g, t, size, lb), LB_ALIGN_PAST_END);
  ck_assert_int_eq (lb_align_classify (&g, t, size - lb, 2 * lb),
                    LB_ALIGN_PAST_END);
  ck_assert_int_eq (lb_align_classify (&g, t, size + lb, lb),
                    LB_ALIGN_PAST_END);
  /* offset + count wraps around 2^64: still past the end */
  ck_assert_int_eq (lb_align_classify (&g, t, lb, UINT64_MAX - lb / 2),
                    LB_ALIGN_PAST_END);
  ck_assert_int_eq (lb_align_classify (&g, t, UINT64_MAX, 2),
                    LB_ALIGN_PAST_END);
  /* only reads and writes are bounded by max-request */
  ck_assert_int_eq (lb_align_classify (&g, t, 0, big),
                    data ? LB_ALIGN_TOO_LARGE : LB_ALIGN_OK);
  ck_assert_int_eq (lb_align_classify (&g, t, 0, size),
                    data ? LB_ALIGN_TOO_LARGE : LB_ALIGN_OK);
  ck_assert_int_eq (lb_align_classify (&g, t, 1, lb),
                    LB_ALIGN_MISALIGNED_OFFSET);
  ck_assert_int_eq (lb_align_classify (&g, t, lb - 1, lb),
                    LB_ALIGN_MISALIGNED_OFFSET);
  ck_assert_int_eq (lb_align_classify (&g, t, lb, lb - 1),
                    LB_ALIGN_MISALIGNED_LENGTH);
  ck_assert_int_eq (lb_align_classify (&g, t, 0, lb + 1),
                    LB_ALIGN_MISALIGNED_LENGTH);
  /* precedence: misaligned offset beats misaligned length */
  ck_assert_int_eq (lb_align_classify (&g, t, 1, 1),
                    LB_ALIGN_MISALIGNED_OFFSET);
  /* precedence: past the end beats misalignment and size */
  ck_assert_int_eq (lb_align_classify (&g, t, size - 1, 3), LB_ALIGN_PAST_END);
  /* precedence: too large beats misaligned (reads and writes) */
  ck_assert_int_eq (lb_align_classify (&g, t, 1, big + 1),
                    data ? LB_ALIGN_TOO_LARGE : LB_ALIGN_MISALIGNED_OFFSET);
}
END_TEST

START_TEST (test_misaligned_predicate)
{
  ck_assert (!lb_align_is_misaligned (LB_ALIGN_OK));
  ck_assert (!lb_align_is_misaligned (LB_ALIGN_ZERO_LENGTH));
  ck_assert (!lb_align_is_misaligned (LB_ALIGN_PAST_END));
  ck_assert (!lb_align_is_misaligned (LB_ALIGN_TOO_LARGE));
  ck_assert (lb_align_is_misaligned (LB_ALIGN_MISALIGNED_OFFSET));
  ck_assert (lb_align_is_misaligned (LB_ALIGN_MISALIGNED_LENGTH));
}
END_TEST

START_TEST (test_describe)
{
  struct lb_geometry g = make_geometry (1 << 20, 16384, 4096, 65536);
  char buf[256];

  ck_assert_str_eq (lb_align_describe (&g, LB_REQ_WRITE, 1000, 4096,
                                       LB_ALIGN_MISALIGNED_OFFSET, buf,
                                       sizeof buf),
                    "write offset 1000 is not a multiple of logical-blksize "
                    "4096");
  ck_assert_str_eq (lb_align_describe (&g, LB_REQ_TRIM, 4096, 100,
                                       LB_ALIGN_MISALIGNED_LENGTH, buf,
                                       sizeof buf),
                    "trim length 100 is not a multiple of logical-blksize "
                    "4096");
  ck_assert_str_eq (lb_align_describe (&g, LB_REQ_READ, 0, 131072,
                                       LB_ALIGN_TOO_LARGE, buf, sizeof buf),
                    "read of 131072 bytes is larger than max-request 65536");
  ck_assert_str_eq (lb_align_describe (&g, LB_REQ_ZERO, 1048576, 4096,
                                       LB_ALIGN_PAST_END, buf, sizeof buf),
                    "zero of 4096 bytes at offset 1048576 goes past the end "
                    "of the disk (1048576 bytes)");
  ck_assert_str_eq (lb_align_describe (&g, LB_REQ_CACHE, 8192, 0,
                                       LB_ALIGN_ZERO_LENGTH, buf, sizeof buf),
                    "cache at offset 8192 has zero length");
  ck_assert_str_eq (lb_align_describe (&g, LB_REQ_EXTENTS, 0, 4096,
                                       LB_ALIGN_OK, buf, sizeof buf),
                    "extents of 4096 bytes at offset 0 is aligned");
  /* a short buffer truncates, never overflows */
  lb_align_describe (&g, LB_REQ_WRITE, 1000, 4096, LB_ALIGN_MISALIGNED_OFFSET,
                     buf, 8);
  ck_assert_str_eq (buf, "write o");
}
END_TEST

START_TEST (test_type_names)
{
  static const char *const names[LB_REQ_NR_TYPES] = {
    "read", "write", "trim", "zero", "cache", "extents", "flush",
  };

  for (int t = 0; t < LB_REQ_NR_TYPES; t++)
    ck_assert_str_eq (lb_req_type_name ((enum lb_req_type) t), names[t]);
  ck_assert_str_eq (lb_req_type_name (LB_REQ_NR_TYPES), "unknown");
}
END_TEST

static Suite *
align_suite (void)
{
  Suite *s = suite_create ("align");
  TCase *tc = tcase_create ("classify");

  tcase_add_loop_test (tc, test_every_class_every_type, 0,
                       NR_GEOMETRIES * LB_REQ_NR_TYPES);
  tcase_add_test (tc, test_misaligned_predicate);
  tcase_add_test (tc, test_describe);
  tcase_add_test (tc, test_type_names);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (align_suite);
