/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/pattern unit tests.
 *
 * Every class the checker can name is built on purpose -- a good block, a
 * never-written block, a stale generation, a block misdirected from
 * another offset, torn writes with chosen sectors dropped, foreign data --
 * and the class and its details are asserted.  A round trip over many
 * seeds, offsets, generations and block sizes always reads back good.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "suites.h"
#include "largeblock/pattern.h"
#include "enum-counts.h"

#define BLOCK 16384u
#define SECTOR LB_PATTERN_SECTOR_BYTES

static uint8_t got[LB_PATTERN_MAX_BLOCK_BYTES];
static uint8_t scratch[LB_PATTERN_MAX_BLOCK_BYTES];

static struct lb_pattern_key
key_of (uint64_t seed, uint64_t offset, uint32_t generation, uint32_t size)
{
  struct lb_pattern_key k = {
    .seed = seed,
    .offset_bytes = offset,
    .generation = generation,
    .block_bytes = size,
  };
  return k;
}

static enum lb_pattern_class
check (const struct lb_pattern_key *k, struct lb_pattern_result *r)
{
  return lb_pattern_check (k, got, scratch, r);
}

START_TEST (test_round_trip)
{
  static const uint32_t sizes[] = { 512, 1024, 4096, 16384, 65536 };
  struct lb_pattern_result r;
  uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t) (_i + 1);

  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (uint32_t gen = 0; gen < 4; gen++) {
      uint64_t off = (uint64_t) (_i * 7919 + gen) * sizes[s];
      struct lb_pattern_key k = key_of (seed, off, gen, sizes[s]);
      lb_pattern_fill (&k, got);
      ck_assert_int_eq (check (&k, &r), LB_PATTERN_GOOD);
      ck_assert_uint_eq (r.nr_bad_sectors, 0);
    }
}
END_TEST

START_TEST (test_blocks_differ)
{
  struct lb_pattern_key a = key_of (1, 0, 1, BLOCK), b = a;
  static uint8_t other[BLOCK];

  lb_pattern_fill (&a, got);
  b.offset_bytes = BLOCK;
  lb_pattern_fill (&b, other);
  ck_assert (memcmp (got + LB_PATTERN_HEADER_BYTES,
                     other + LB_PATTERN_HEADER_BYTES,
                     BLOCK - LB_PATTERN_HEADER_BYTES) != 0);
  b = a;
  b.generation = 2;
  lb_pattern_fill (&b, other);
  ck_assert (memcmp (got, other, BLOCK) != 0);
  b = a;
  b.seed = 2;
  lb_pattern_fill (&b, other);
  ck_assert (memcmp (got, other, BLOCK) != 0);
}
END_TEST

START_TEST (test_zeros)
{
  struct lb_pattern_key k = key_of (5, 3 * BLOCK, 0, BLOCK);
  struct lb_pattern_result r;

  memset (got, 0, BLOCK);
  ck_assert_int_eq (check (&k, &r), LB_PATTERN_GOOD);
  k.generation = 3;
  ck_assert_int_eq (check (&k, &r), LB_PATTERN_NEVER_WRITTEN);
}
END_TEST

START_TEST (test_stale)
{
  struct lb_pattern_key k = key_of (5, 3 * BLOCK, 2, BLOCK);
  struct lb_pattern_result r;

  lb_pattern_fill (&k, got);
  k.generation = 4;
  ck_assert_int_eq (check (&k, &r), LB_PATTERN_STALE);
  ck_assert_uint_eq (r.found_generation, 2);
  ck_assert (r.found_intact);
  /* data left behind by a trim or zero that did not happen */
  k.generation = 0;
  ck_assert_int_eq (check (&k, &r), LB_PATTERN_STALE);
  ck_assert_uint_eq (r.found_generation, 2);
}
END_TEST

START_TEST (test_misdirected)
{
  struct lb_pattern_key k = key_of (7, 5 * BLOCK, 3, BLOCK), there = k;
  struct lb_pattern_result r;
  char msg[256];

  there.offset_bytes = 9 * BLOCK;
  there.generation = 2;
  lb_pattern_fill (&there, got);
  ck_assert_int_eq (check (&k, &r), LB_PATTERN_MISDIRECTED);
  ck_assert_uint_eq (r.found_offset_bytes, 9 * BLOCK);
  ck_assert_uint_eq (r.found_generation, 2);
  ck_assert (r.found_intact);
  ck_assert_str_eq (lb_pattern_describe (&k, &r, msg, sizeof msg),
                    "misdirected: block at 81920 holds the block stamped "
                    "for 147456 (generation 2, intact)");
  got[BLOCK - 1] ^= 1;
  ck_assert_int_eq (check (&k, &r), LB_PATTERN_MISDIRECTED);
  ck_assert (!r.found_intact);
}
END_TEST

/* Loop index: which sectors a torn write dropped (bit s = sector s). */
static const uint32_t torn_masks[] = { 0x1, 0x2, 0x8000, 0xa0, 0x7ffe };

START_TEST (test_torn_over_old_generation)
{
  struct lb_pattern_key k = key_of (11, 2 * BLOCK, 2, BLOCK), old = k;
  static uint8_t oldbuf[BLOCK];
  struct lb_pattern_result r;
  uint32_t mask = torn_masks[_i], nr = 0, first = 32;

  old.generation = 1;
  lb_pattern_fill (&old, oldbuf);
  lb_pattern_fill (&k, got);
  for (uint32_t s = 0; s < BLOCK / SECTOR; s++)
    if (mask >> s & 1) {
      memcpy (got + s * SECTOR, oldbuf + s * SECTOR, SECTOR);
      nr++;
      first = first < s ? first : s;
    }
  ck_assert_int_eq (check (&k, &r), LB_PATTERN_TORN);
  ck_assert_uint_eq (r.nr_bad_sectors, nr);
  ck_assert_uint_eq (r.first_bad_sector, first);
  for (uint32_t s = 0; s < BLOCK / SECTOR; s++)
    ck_assert_int_eq (lb_pattern_sector_bad (&r, s), mask >> s & 1);
}
END_TEST

START_TEST (test_torn_description)
{
  struct lb_pattern_key k = key_of (11, 0, 1, 8 * SECTOR);
  struct lb_pattern_result r;
  char msg[256];

  lb_pattern_fill (&k, got);
  memset (got + 3 * SECTOR, 0, SECTOR);
  memset (got + 5 * SECTOR, 0, 3 * SECTOR);
  ck_assert_int_eq (check (&k, &r), LB_PATTERN_TORN);
  ck_assert_str_eq (lb_pattern_describe (&k, &r, msg, sizeof msg),
                    "torn: block at 0 generation 1, sectors 3,5-7 of 8 "
                    "differ");
}
END_TEST

/* One 512-byte block: no sector can match, so the header decides. */
START_TEST (test_torn_single_sector_by_checksum)
{
  struct lb_pattern_key k = key_of (3, 4096, 1, 512);
  struct lb_pattern_result r;

  lb_pattern_fill (&k, got);
  got[300] ^= 0x40;
  ck_assert_int_eq (check (&k, &r), LB_PATTERN_TORN);
  ck_assert_uint_eq (r.nr_bad_sectors, 1);
  ck_assert_uint_eq (r.first_bad_sector, 0);
  ck_assert (!r.found_intact);
}
END_TEST

START_TEST (test_foreign)
{
  struct lb_pattern_key k = key_of (3, 0, 1, BLOCK), other = k;
  struct lb_pattern_result r;

  memset (got, 0xa5, BLOCK);
  ck_assert_int_eq (check (&k, &r), LB_PATTERN_FOREIGN);
  other.seed = 4; /* another run's block */
  lb_pattern_fill (&other, got);
  ck_assert_int_eq (check (&k, &r), LB_PATTERN_FOREIGN);
  other = k; /* another block size */
  other.block_bytes = BLOCK / 2;
  lb_pattern_fill (&other, got);
  lb_pattern_fill (&other, got + BLOCK / 2);
  ck_assert_int_eq (check (&k, &r), LB_PATTERN_FOREIGN);
  other = k; /* newer than ever written */
  other.generation = 9;
  lb_pattern_fill (&other, got);
  ck_assert_int_eq (check (&k, &r), LB_PATTERN_FOREIGN);
  /* expected zeros, got junk */
  k.generation = 0;
  memset (got, 0xa5, BLOCK);
  ck_assert_int_eq (check (&k, &r), LB_PATTERN_FOREIGN);
}
END_TEST

START_TEST (test_fill_range_and_names)
{
  struct lb_pattern_key k = key_of (8, 4096, 2, 4096), one = k;
  static uint8_t range[3 * 4096];
  struct lb_pattern_result r;

  lb_pattern_fill_range (&k, range, sizeof range);
  for (int b = 0; b < 3; b++) {
    one.offset_bytes = 4096 + (uint64_t) b * 4096;
    ck_assert_int_eq (lb_pattern_check (&one, range + b * 4096, scratch, &r),
                      LB_PATTERN_GOOD);
  }
  ck_assert (lb_pattern_block_size_ok (512));
  ck_assert (lb_pattern_block_size_ok (65536));
  ck_assert (!lb_pattern_block_size_ok (256));
  ck_assert (!lb_pattern_block_size_ok (131072));
  ck_assert (!lb_pattern_block_size_ok (3072));
  ck_assert_str_eq (lb_pattern_class_name (LB_PATTERN_NEVER_WRITTEN),
                    "never-written");
  ck_assert_str_eq (lb_pattern_class_name (LB_PATTERN_NR_CLASSES), "unknown");
}
END_TEST

static Suite *
pattern_suite (void)
{
  Suite *s = suite_create ("pattern");
  TCase *tc = tcase_create ("classify");

  tcase_add_loop_test (tc, test_round_trip, 0, 200);
  tcase_add_test (tc, test_blocks_differ);
  tcase_add_test (tc, test_zeros);
  tcase_add_test (tc, test_stale);
  tcase_add_test (tc, test_misdirected);
  tcase_add_loop_test (tc, test_torn_over_old_generation, 0,
                       sizeof torn_masks / sizeof torn_masks[0]);
  tcase_add_test (tc, test_torn_description);
  tcase_add_test (tc, test_torn_single_sector_by_checksum);
  tcase_add_test (tc, test_foreign);
  tcase_add_test (tc, test_fill_range_and_names);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (pattern_suite);
