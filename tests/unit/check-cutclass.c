/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/cutclass unit tests.
 *
 * Hand-built post-cut images for every class -- a physical block all old,
 * all new, torn at logical-block boundaries (every mask of a 4k/16k block,
 * and a sweep of geometries up to 128 logical blocks), and foreign in each
 * way a logical block can be wrong: zeros, torn inside itself, the block
 * of another offset, another generation, another seed.  Then every
 * (mode, class) pair against the rules, every violation's message, and
 * every layout rule's message.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cutclass.h"
#include "suites.h"

#define SEED 0x5eedu
#define OLD_GEN 1u
#define NEW_GEN 2u

static uint8_t img[LB_PATTERN_MAX_BLOCK_BYTES];
static uint8_t scratch[LB_PATTERN_MAX_BLOCK_BYTES];

static struct lb_cutclass_layout
layout_of (uint32_t logical, uint32_t physical)
{
  struct lb_cutclass_layout l = {
    .seed = SEED,
    .old_gen = OLD_GEN,
    .new_gen = NEW_GEN,
    .logical_bytes = logical,
    .physical_bytes = physical,
  };
  return l;
}

/* Logical block i of the physical block at off: generation gen of the
 * block stamped for stamp_off with seed.
 */
static void
put_logical (const struct lb_cutclass_layout *l, uint32_t i, uint64_t seed,
             uint64_t stamp_off, uint32_t gen)
{
  struct lb_pattern_key k = {
    .seed = seed,
    .offset_bytes = stamp_off,
    .generation = gen,
    .block_bytes = l->logical_bytes,
  };
  lb_pattern_fill (&k, img + (size_t) i * l->logical_bytes);
}

/* The physical block at off with logical block i new where bit i of
 * new_mask is set (bitmap over up to 128 bits), else old.
 */
static void
build (const struct lb_cutclass_layout *l, uint64_t off,
       const uint8_t *new_mask)
{
  for (uint32_t i = 0; i < l->physical_bytes / l->logical_bytes; i++)
    put_logical (l, i, l->seed, off + (uint64_t) i * l->logical_bytes,
                 (new_mask[i / 8] >> (i % 8)) & 1 ? l->new_gen : l->old_gen);
}

static enum lb_cutclass
check (const struct lb_cutclass_layout *l, uint64_t off,
       struct lb_cutclass_result *r)
{
  return lb_cutclass_check (l, off, img, scratch, r);
}

/* Every one of the 16 masks of a 4k-logical/16k-physical block. */
START_TEST (test_every_mask_4k_16k)
{
  struct lb_cutclass_layout l = layout_of (4096, 16384);
  uint8_t mask[16] = { (uint8_t) _i };
  struct lb_cutclass_result r;
  uint64_t off = 16384 * 7;
  enum lb_cutclass want = _i == 0 ? LB_CUTCLASS_OLD
    : _i == 15                    ? LB_CUTCLASS_NEW
                                  : LB_CUTCLASS_TORN;
  char map[5];

  build (&l, off, mask);
  ck_assert_int_eq (check (&l, off, &r), want);
  ck_assert_int_eq (r.cls, want);
  ck_assert_uint_eq (r.nr_logical, 4);
  ck_assert_uint_eq (r.nr_foreign, 0);
  ck_assert_uint_eq (r.nr_new, __builtin_popcount ((unsigned) _i));
  ck_assert_uint_eq (r.nr_old, 4 - r.nr_new);
  for (int i = 0; i < 4; i++)
    map[i] = (_i >> i) & 1 ? 'n' : 'o';
  map[4] = '\0';
  ck_assert_str_eq (r.map, map);
}
END_TEST

/* Geometries from one logical block per physical to 128: all old, all
 * new, the first logical block new, the last one new.
 */
START_TEST (test_geometries)
{
  static const uint32_t geoms[][2] = {
    { 512, 512 },    { 512, 4096 },  { 4096, 16384 },  { 16384, 16384 },
    { 4096, 65536 }, { 512, 65536 }, { 65536, 65536 }, { 16384, 65536 },
  };
  struct lb_cutclass_layout l = layout_of (geoms[_i][0], geoms[_i][1]);
  uint32_t n = l.physical_bytes / l.logical_bytes;
  uint64_t off = (uint64_t) l.physical_bytes * 3;
  struct lb_cutclass_result r;
  uint8_t mask[16];

  ck_assert_ptr_null (lb_cutclass_layout_invalid (&l));
  memset (mask, 0, sizeof mask);
  build (&l, off, mask);
  ck_assert_int_eq (check (&l, off, &r), LB_CUTCLASS_OLD);
  ck_assert_uint_eq (strlen (r.map), n);
  memset (mask, 0xff, sizeof mask);
  build (&l, off, mask);
  ck_assert_int_eq (check (&l, off, &r), LB_CUTCLASS_NEW);
  memset (mask, 0, sizeof mask);
  mask[0] = 1;
  build (&l, off, mask);
  ck_assert_int_eq (check (&l, off, &r),
                    n == 1 ? LB_CUTCLASS_NEW : LB_CUTCLASS_TORN);
  ck_assert_int_eq (r.map[0], 'n');
  memset (mask, 0, sizeof mask);
  mask[(n - 1) / 8] = (uint8_t) (1u << ((n - 1) % 8));
  build (&l, off, mask);
  ck_assert_int_eq (check (&l, off, &r),
                    n == 1 ? LB_CUTCLASS_NEW : LB_CUTCLASS_TORN);
  ck_assert_int_eq (r.map[n - 1], 'n');
  ck_assert_uint_eq (r.nr_new, 1);
}
END_TEST

/* Generation 0 as the old generation: zeros are old, not foreign. */
START_TEST (test_old_zeros)
{
  struct lb_cutclass_layout l = layout_of (4096, 16384);
  struct lb_cutclass_result r;
  uint8_t mask[16] = { 0x5 };

  l.old_gen = 0;
  build (&l, 0, mask);
  ck_assert_int_eq (check (&l, 0, &r), LB_CUTCLASS_TORN);
  ck_assert_str_eq (r.map,
                    "non"
                    "o");
  memset (img, 0, 16384);
  ck_assert_int_eq (check (&l, 0, &r), LB_CUTCLASS_OLD);
}
END_TEST

/* Ways a logical block can be neither generation (index = _i). */
enum {
  F_ZEROS,
  F_TORN_INSIDE,
  F_MISDIRECTED,
  F_OTHER_GEN,
  F_OTHER_SEED,
  F_NR
};

static const char *const foreign_what[F_NR] = {
  "never-written: block at", "torn: block at",    "misdirected: block at",
  "foreign: block at",       "foreign: block at",
};

START_TEST (test_foreign)
{
  struct lb_cutclass_layout l = layout_of (4096, 16384);
  uint64_t off = 16384 * 5, at = off + 2 * 4096;
  uint8_t mask[16] = { 0x1 }, other[4096];
  struct lb_cutclass_result r;
  char msg[512];

  build (&l, off, mask); /* torn: "noo o" */
  switch (_i) {
  case F_ZEROS: memset (img + 2 * 4096, 0, 4096); break;
  case F_TORN_INSIDE:
    /* the first half of logical block 2 new, the second half old */
    put_logical (&l, 2, SEED, at, NEW_GEN);
    memcpy (other, img + 2 * 4096, 4096);
    put_logical (&l, 2, SEED, at, OLD_GEN);
    memcpy (img + 2 * 4096, other, 2048);
    break;
  case F_MISDIRECTED: put_logical (&l, 2, SEED, at + 16384, NEW_GEN); break;
  case F_OTHER_GEN: put_logical (&l, 2, SEED, at, NEW_GEN + 1); break;
  case F_OTHER_SEED: put_logical (&l, 2, SEED + 1, at, NEW_GEN); break;
  }
  /* a second foreign block after the first: the first is described */
  memset (img + 3 * 4096, 0xee, 4096);
  ck_assert_int_eq (check (&l, off, &r), LB_CUTCLASS_FOREIGN);
  ck_assert_str_eq (r.map, "noxx");
  ck_assert_uint_eq (r.nr_foreign, 2);
  ck_assert_uint_eq (r.first_foreign, 2);
  ck_assert_uint_eq (r.foreign_key.offset_bytes, at);
  lb_cutclass_describe (&l, off, &r, msg, sizeof msg);
  ck_assert_msg (strstr (msg,
                         "physical block at 81920: logical block 2 "
                         "(at 90112) is neither generation 1 nor 2: ") &&
                   strstr (msg, foreign_what[_i]),
                 "%s", msg);
  for (int m = LB_CUT_LOSE; m <= LB_CUT_TORN; m++)
    ck_assert (!lb_cutclass_allowed (m, r.cls));
}
END_TEST

/* Every (mode, class): lose only old; atomic old, new; torn all three. */
START_TEST (test_allowed)
{
  static const bool want[3][LB_CUTCLASS__COUNT] = {
    [LB_CUT_LOSE] = { true, false, false, false },
    [LB_CUT_ATOMIC] = { true, true, false, false },
    [LB_CUT_TORN] = { true, true, true, false },
  };

  for (int m = LB_CUT_LOSE; m <= LB_CUT_TORN; m++)
    for (int c = 0; c < LB_CUTCLASS__COUNT; c++)
      ck_assert_msg (lb_cutclass_allowed (m, c) == want[m][c], "%s %s",
                     lb_cut_mode_name (m), lb_cutclass_name (c));
}
END_TEST

/* Each violation's message; foreign is named before anything else. */
static const struct {
  enum lb_cut_mode mode;
  uint64_t counts[LB_CUTCLASS__COUNT]; /* old new torn foreign */
  const char *msg;                     /* NULL: holds */
} summaries[] = {
  { LB_CUT_LOSE, { 9, 0, 0, 0 }, NULL },
  { LB_CUT_LOSE,
    { 9, 1, 0, 0 },
    "1 physical block is new, but power-cut-mode lose loses every "
    "unflushed write" },
  { LB_CUT_LOSE,
    { 9, 2, 3, 0 },
    "3 physical blocks are torn, but power-cut-mode lose loses every "
    "unflushed write" },
  { LB_CUT_ATOMIC, { 4, 5, 0, 0 }, NULL },
  { LB_CUT_ATOMIC,
    { 4, 5, 3, 0 },
    "3 physical blocks are torn, but power-cut-mode atomic keeps or loses "
    "each physical block whole, never a mix" },
  { LB_CUT_ATOMIC,
    { 0, 0, 3, 1 },
    "1 physical block is foreign, but power-cut-mode atomic keeps or loses "
    "each physical block whole, never a mix" },
  { LB_CUT_TORN, { 1, 2, 3, 0 }, NULL },
  { LB_CUT_TORN, { 0, 0, 0, 0 }, NULL },
  { LB_CUT_TORN,
    { 1, 2, 3, 4 },
    "4 physical blocks are foreign, but power-cut-mode torn keeps or loses "
    "each logical block whole" },
};

START_TEST (test_summary_check)
{
  struct lb_cutclass_summary s;
  char err[256] = "";
  int r;

  memcpy (s.blocks, summaries[_i].counts, sizeof s.blocks);
  errno = 0;
  r = lb_cutclass_summary_check (&s, summaries[_i].mode, err, sizeof err);
  if (!summaries[_i].msg) {
    ck_assert_int_eq (r, 0);
    return;
  }
  ck_assert_int_eq (r, -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_str_eq (err, summaries[_i].msg);
}
END_TEST

static const struct {
  uint32_t logical, physical, old_gen, new_gen;
  const char *msg;
} layouts[] = {
  { 4096, 16384, 1, 2, NULL },
  { 256, 16384, 1, 2, "not a power of two from 512 to 64k" },
  { 3000, 12000, 1, 2, "not a power of two from 512 to 64k" },
  { 4096, 2048, 1, 2, "not a multiple of the logical block" },
  { 4096, 12288, 1, 2, "the physical block is not a power of two" },
  { 4096, 0, 1, 2, "the physical block is not a power of two" },
  { 512, 131072, 1, 2, "more than 128 logical blocks" },
  { 4096, 16384, 2, 2, "the old and the new generation are the same" },
};

START_TEST (test_layout_rules)
{
  struct lb_cutclass_layout l = layout_of (layouts[_i].logical,
                                           layouts[_i].physical);
  const char *why;

  l.old_gen = layouts[_i].old_gen;
  l.new_gen = layouts[_i].new_gen;
  why = lb_cutclass_layout_invalid (&l);
  if (!layouts[_i].msg)
    ck_assert_ptr_null (why);
  else
    ck_assert_msg (why && strstr (why, layouts[_i].msg), "%s",
                   why ? why : "(valid)");
}
END_TEST

START_TEST (test_names)
{
  ck_assert_str_eq (lb_cutclass_name (LB_CUTCLASS_OLD), "old");
  ck_assert_str_eq (lb_cutclass_name (LB_CUTCLASS_NEW), "new");
  ck_assert_str_eq (lb_cutclass_name (LB_CUTCLASS_TORN), "torn");
  ck_assert_str_eq (lb_cutclass_name (LB_CUTCLASS_FOREIGN), "foreign");
  ck_assert_str_eq (lb_cutclass_name (LB_CUTCLASS__COUNT), "unknown");
}
END_TEST

#define NELEMS(a) ((int) (sizeof (a) / sizeof (a)[0]))

static Suite *
cutclass_suite (void)
{
  Suite *s = suite_create ("cutclass");
  TCase *tc = tcase_create ("classify");

  tcase_add_loop_test (tc, test_every_mask_4k_16k, 0, 16);
  tcase_add_loop_test (tc, test_geometries, 0, 8);
  tcase_add_test (tc, test_old_zeros);
  tcase_add_loop_test (tc, test_foreign, 0, F_NR);
  tcase_add_test (tc, test_allowed);
  tcase_add_loop_test (tc, test_summary_check, 0, NELEMS (summaries));
  tcase_add_loop_test (tc, test_layout_rules, 0, NELEMS (layouts));
  tcase_add_test (tc, test_names);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (cutclass_suite);
