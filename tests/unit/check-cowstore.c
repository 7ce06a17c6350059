/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/disk/cowstore unit tests.
 *
 * Over a RAM base with a pattern: reads fall through to the base; a
 * partial write copies its whole block up (the rest of the block keeps
 * the base's bytes) and never reaches the base; whole-block writes and
 * zeros take no copy of the base; zeros and trims read as zeros, whole
 * ones as holes in extents, which otherwise give the base's runs between
 * the overlay's blocks (merged, clipped, the first run only for
 * req_one); the block count and usage follow the blocks held; destroy
 * calls release once.  Writers on four threads over shared blocks each
 * find their own bytes (run under TSan by scripts/check-sanitizers.sh).
 */
#include <config.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"
#include "cowstore.h"
#include "largeblock/geometry.h"
#include "ramstore.h"

#define KiB 1024u
#define BLK (16 * KiB)
#define NR_BLOCKS 16

static struct lb_geometry g;
static struct lb_store *base, *cow;
static unsigned releases;
static unsigned char pattern[NR_BLOCKS * BLK];

static void
released (void *opaque)
{
  ck_assert_ptr_eq (opaque, &releases);
  releases++;
}

/* Blocks 0-7 of the base hold a pattern, 8-15 are holes. */
static void
setup (void)
{
  test_geometry (&g, NR_BLOCKS * BLK, BLK, 4 * KiB, 1u << 20);
  base = lb_ramstore_new (&g, 0);
  ck_assert_ptr_nonnull (base);
  for (size_t i = 0; i < sizeof pattern; i++)
    pattern[i] = i < 8 * BLK ? (unsigned char) (i * 7 + i / 4096) : 0;
  ck_assert_int_eq (base->ops->pwrite (base, pattern, 8 * BLK, 0, false), 0);
  releases = 0;
  cow = lb_cowstore_new (base, released, &releases);
  ck_assert_ptr_nonnull (cow);
}

static void
teardown (void)
{
  if (cow)
    cow->ops->destroy (cow);
  base->ops->destroy (base);
}

static void
expect_bytes (struct lb_store *s, uint64_t offset, uint32_t count,
              const unsigned char *want)
{
  unsigned char *b = malloc (count);

  ck_assert_int_eq (s->ops->pread (s, b, count, offset), 0);
  ck_assert_mem_eq (b, want, count);
  free (b);
}

START_TEST (test_reads_fall_through)
{
  expect_bytes (cow, 0, sizeof pattern, pattern);
  expect_bytes (cow, 100, 3 * BLK, pattern + 100);
  ck_assert_uint_eq (lb_cowstore_blocks (cow), 0);
}
END_TEST

START_TEST (test_partial_write_copies_the_block_up)
{
  unsigned char x[4 * KiB], want[sizeof pattern];

  memset (x, 'x', sizeof x);
  memcpy (want, pattern, sizeof want);
  /* Across blocks 1 and 2, and in a hole of the base. */
  ck_assert_int_eq (cow->ops->pwrite (cow, x, sizeof x, 2 * BLK - 1000, false),
                    0);
  ck_assert_int_eq (cow->ops->pwrite (cow, x, 512, 9 * BLK + 512, true), 0);
  memcpy (want + 2 * BLK - 1000, x, sizeof x);
  memcpy (want + 9 * BLK + 512, x, 512);
  expect_bytes (cow, 0, sizeof want, want);
  ck_assert_uint_eq (lb_cowstore_blocks (cow), 3);
  /* The base never changed. */
  expect_bytes (base, 0, sizeof pattern, pattern);
}
END_TEST

START_TEST (test_zero_and_trim_read_as_zeros)
{
  unsigned char want[sizeof pattern];
  struct lb_store_usage u;

  memcpy (want, pattern, sizeof want);
  ck_assert_int_eq (cow->ops->zero (cow, BLK, 0, 0), 0); /* whole */
  ck_assert_int_eq (cow->ops->zero (cow, 4 * KiB, BLK + 4 * KiB,
                                    LB_ZERO_MAY_TRIM),
                    0);
  ck_assert_int_eq (cow->ops->trim (cow, 2 * BLK, 3 * BLK), 0);
  memset (want, 0, BLK);
  memset (want + BLK + 4 * KiB, 0, 4 * KiB);
  memset (want + 3 * BLK, 0, 2 * BLK);
  expect_bytes (cow, 0, sizeof want, want);
  ck_assert_uint_eq (lb_cowstore_blocks (cow), 4);
  /* Only the partly zeroed block needed a buffer. */
  cow->ops->usage (cow, &u);
  ck_assert_uint_eq (u.folios_allocated, 1);
  ck_assert_uint_eq (u.bytes_resident, BLK);
  /* A write into a zeroed block starts from zeros. */
  ck_assert_int_eq (cow->ops->pwrite (cow, "ab", 2, 10, false), 0);
  want[10] = 'a';
  want[11] = 'b';
  expect_bytes (cow, 0, BLK, want);
  expect_bytes (base, 0, sizeof pattern, pattern);
}
END_TEST

struct run {
  uint64_t offset, length;
  bool hole;
};

struct runs {
  struct run r[32];
  size_t n;
};

static int
collect (uint64_t offset, uint64_t length, bool hole, void *opaque)
{
  struct runs *rs = opaque;

  ck_assert_uint_lt (rs->n, 32);
  rs->r[rs->n++] = (struct run) { offset, length, hole };
  return 0;
}

static void
expect_runs (uint64_t offset, uint32_t count, bool req_one,
             const struct run *want, size_t n)
{
  struct runs got = { .n = 0 };

  ck_assert_int_eq (cow->ops->extents (cow, count, offset, req_one, collect,
                                       &got),
                    0);
  ck_assert_uint_eq (got.n, n);
  for (size_t i = 0; i < n; i++) {
    ck_assert_uint_eq (got.r[i].offset, want[i].offset);
    ck_assert_uint_eq (got.r[i].length, want[i].length);
    ck_assert_int_eq (got.r[i].hole, want[i].hole);
  }
}

START_TEST (test_extents_overlay_over_base)
{
  unsigned char x[BLK];
  const struct run all[] = {
    { 0, 2 * BLK, false },  /* base data */
    { 2 * BLK, BLK, true }, /* overlay: zeroed whole */
    { 3 * BLK, 5 * BLK, false }, { 8 * BLK, 2 * BLK, true }, /* base holes */
    { 10 * BLK, BLK, false }, /* overlay: written */
    { 11 * BLK, 5 * BLK, true },
  };
  const struct run middle[] = {
    { 2 * BLK + 10, BLK - 10, true },
    { 3 * BLK, BLK, false },
  };

  memset (x, 'x', sizeof x);
  ck_assert_int_eq (cow->ops->zero (cow, BLK, 2 * BLK, 0), 0);
  ck_assert_int_eq (cow->ops->pwrite (cow, x, 100, 10 * BLK, false), 0);
  expect_runs (0, sizeof pattern, false, all, 6);
  expect_runs (2 * BLK + 10, 2 * BLK - 10, false, middle, 2);
  expect_runs (2 * BLK + 10, 2 * BLK - 10, true, middle, 1);
  expect_runs (0, sizeof pattern, true, all, 1);
}
END_TEST

START_TEST (test_destroy_releases_once)
{
  cow->ops->destroy (cow);
  cow = NULL;
  ck_assert_uint_eq (releases, 1);
  expect_bytes (base, 0, sizeof pattern, pattern);
}
END_TEST

struct writer {
  unsigned id;
  int failed;
};

/* Each writer owns logical block id of every block, so all of them copy
 * up and change the same blocks at once.
 */
static void *
write_own_quarter (void *opaque)
{
  struct writer *w = opaque;
  unsigned char mine[4 * KiB], back[4 * KiB];

  memset (mine, 'a' + w->id, sizeof mine);
  for (unsigned round = 0; round < 20; round++)
    for (unsigned b = 0; b < NR_BLOCKS; b++) {
      uint64_t at = (uint64_t) b * BLK + w->id * 4 * KiB;

      if (cow->ops->pwrite (cow, mine, sizeof mine, at, false) == -1 ||
          cow->ops->pread (cow, back, sizeof back, at) == -1 ||
          memcmp (mine, back, sizeof mine) != 0)
        w->failed = 1;
    }
  return NULL;
}

START_TEST (test_writers_on_shared_blocks)
{
  struct writer w[4];
  pthread_t th[4];
  unsigned char want[4 * KiB];

  for (unsigned i = 0; i < 4; i++) {
    w[i] = (struct writer) { i, 0 };
    ck_assert_int_eq (pthread_create (&th[i], NULL, write_own_quarter, &w[i]),
                      0);
  }
  for (unsigned i = 0; i < 4; i++) {
    pthread_join (th[i], NULL);
    ck_assert_int_eq (w[i].failed, 0);
  }
  for (unsigned i = 0; i < 4; i++) {
    memset (want, 'a' + i, sizeof want);
    expect_bytes (cow, 5 * BLK + i * 4 * KiB, sizeof want, want);
  }
  ck_assert_uint_eq (lb_cowstore_blocks (cow), NR_BLOCKS);
  expect_bytes (base, 0, sizeof pattern, pattern);
}
END_TEST

static Suite *
cowstore_suite (void)
{
  Suite *s = suite_create ("cowstore");
  TCase *tc = tcase_create ("core");

  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_reads_fall_through);
  tcase_add_test (tc, test_partial_write_copies_the_block_up);
  tcase_add_test (tc, test_zero_and_trim_read_as_zeros);
  tcase_add_test (tc, test_extents_overlay_over_base);
  tcase_add_test (tc, test_destroy_releases_once);
  tcase_add_test (tc, test_writers_on_shared_blocks);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (cowstore_suite);
