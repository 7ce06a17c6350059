/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/disk/ramstore unit tests.
 *
 * Proves the RAM store's data semantics against a byte-array model for
 * several geometries: zeros where nothing was written, writes across folio
 * boundaries, trim/zero releasing whole folios and zeroing partial ends,
 * long trims over many lock groups giving back every folio (in runs),
 * NO_HOLE keeping folios, FAST_ZERO refusing slow zeroing, memory-limit
 * ENOSPC changing nothing (and never refusing a write for memory a trim is
 * still giving back), exact folio accounting, extents that are
 * coalesced, clipped to the request and fast on a 7E disk.
 */
#include <config.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"
#include "largeblock/geometry.h"
#include "ramstore.h"

struct geo_case {
  uint64_t size;
  uint32_t physical, logical;
};

static const struct geo_case geos[] = {
  { 1 << 20, 4096, 512 },      { 1 << 20, 16384, 4096 },
  { 1 << 20, 16384, 16384 },   { 2 << 20, 65536, 65536 },
  { 4 << 20, 2 << 20, 65536 }, { 1 << 20, 512, 512 },
  { 100 * 1024, 16384, 4096 }, /* last folio is partial */
};
#define NR_GEOS (sizeof geos / sizeof geos[0])

static void
make_geometry (struct lb_geometry *g, uint64_t size, uint32_t physical,
               uint32_t logical)
{
  test_geometry (g, size, physical, logical,
                 physical > (32u << 20) ? physical : (32u << 20));
}

static uint64_t
allocated (struct lb_store *s)
{
  struct lb_store_usage u;

  s->ops->usage (s, &u);
  ck_assert_uint_eq (u.bytes_resident,
                     u.folios_allocated * s->geom->physical_bytes);
  return u.folios_allocated;
}

/* The whole disk equals the model. */
static void
assert_matches (struct lb_store *s, const unsigned char *model)
{
  uint64_t size = s->geom->size_bytes;
  unsigned char *buf = malloc (size);

  ck_assert_ptr_nonnull (buf);
  ck_assert_int_eq (s->ops->pread (s, buf, (uint32_t) size, 0), 0);
  for (uint64_t i = 0; i < size; i++)
    if (buf[i] != model[i])
      ck_abort_msg ("byte %llu: store %u, model %u", (unsigned long long) i,
                    buf[i], model[i]);
  free (buf);
}

static void
fill (unsigned char *p, size_t n, unsigned seed)
{
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char) ((i * 131 + seed * 7 + 1) | 1); /* never 0 */
}

START_TEST (test_unwritten_reads_zero)
{
  const struct geo_case *c = &geos[_i];
  struct lb_geometry g;
  struct lb_store *s;
  unsigned char *model;

  make_geometry (&g, c->size, c->physical, c->logical);
  s = lb_ramstore_new (&g, 0);
  model = calloc (1, c->size);
  assert_matches (s, model);
  ck_assert_uint_eq (allocated (s), 0);
  free (model);
  s->ops->destroy (s);
}
END_TEST

START_TEST (test_writes_across_folios_match_model)
{
  const struct geo_case *c = &geos[_i];
  struct lb_geometry g;
  struct lb_store *s;
  unsigned char *model, *buf;
  uint64_t size = c->size;

  make_geometry (&g, size, c->physical, c->logical);
  s = lb_ramstore_new (&g, 0);
  model = calloc (1, size);
  buf = malloc (size);
  srand (_i + 1);
  for (int n = 0; n < 64; n++) {
    uint64_t nblocks = size / c->logical;
    uint64_t off = ((uint64_t) rand () % nblocks) * c->logical;
    uint64_t len = (1 + (uint64_t) rand () % 8) * c->logical;

    if (off + len > size)
      len = size - off;
    fill (buf, len, (unsigned) n);
    ck_assert_int_eq (s->ops->pwrite (s, buf, (uint32_t) len, off, false), 0);
    memcpy (model + off, buf, len);
  }
  assert_matches (s, model);
  /* Byte-granular access works too (the store itself has no policy). */
  fill (buf, 3, 99);
  ck_assert_int_eq (s->ops->pwrite (s, buf, 3, c->physical - 1, false), 0);
  memcpy (model + c->physical - 1, buf, 3);
  assert_matches (s, model);
  free (buf);
  free (model);
  s->ops->destroy (s);
}
END_TEST

START_TEST (test_trim_releases_whole_folios_zeroes_ends)
{
  const struct geo_case *c = &geos[_i];
  struct lb_geometry g;
  struct lb_store *s;
  unsigned char *model;
  uint64_t size = c->size, off, len;

  make_geometry (&g, size, c->physical, c->logical);
  s = lb_ramstore_new (&g, 0);
  model = malloc (size);
  fill (model, size, 1);
  ck_assert_int_eq (s->ops->pwrite (s, model, (uint32_t) size, 0, false), 0);
  ck_assert_uint_eq (allocated (s), g.nr_folios);

  /* From the middle of folio 0 to the middle of the last-but-one folio:
   * those two keep their other halves, the last folio is untouched, and
   * everything between goes. */
  if (g.nr_folios >= 3) {
    off = c->physical / 2;
    len = (g.nr_folios - 2) * c->physical;
    ck_assert_int_eq (s->ops->trim (s, (uint32_t) len, off), 0);
    memset (model + off, 0, len);
    ck_assert_uint_eq (allocated (s), 3);
    assert_matches (s, model);
  }
  /* Trimming to the end of the disk releases the (maybe partial) last
   * folio too. */
  off = (g.nr_folios - 1) * (uint64_t) c->physical;
  ck_assert_int_eq (s->ops->trim (s, (uint32_t) (size - off), off), 0);
  memset (model + off, 0, size - off);
  assert_matches (s, model);
  ck_assert_uint_eq (allocated (s), g.nr_folios >= 3 ? 2 : g.nr_folios - 1);
  free (model);
  s->ops->destroy (s);
}
END_TEST

/* A trim over many lock groups and stripes: every folio it covers is
 * given back and the accounting is exact when it returns, for a disk
 * written in order (long runs of memory neighbours per stripe) and one
 * written backwards in scattered pieces (short runs); freed folios are
 * reused and read back as zeros where not written again.
 */
START_TEST (test_trim_long_run_frees_all)
{
  static const uint32_t physicals[] = { 512, 4096, 16384, 65536 };
  const uint32_t physical = physicals[_i / 2];
  const bool scattered = _i % 2;
  /* Under valgrind (make check-valgrind) a quarter: still many lock
   * groups long, and each copy of the model costs 50 times more there.
   */
  const uint64_t size = getenv ("LB_VALGRIND") ? 12 << 20 : 48 << 20;
  struct lb_geometry g;
  struct lb_store *s;
  unsigned char *model = calloc (1, size);
  const uint32_t piece = 256 << 10;

  ck_assert_ptr_nonnull (model);
  make_geometry (&g, size, physical, 512);
  s = lb_ramstore_new (&g, 0);
  fill (model, size, 3);
  for (uint64_t n = 0; n < size / piece; n++) {
    uint64_t k = scattered ? (n * 7) % (size / piece) : n;
    uint64_t off = scattered ? size - (k + 1) * piece : k * piece;

    ck_assert_int_eq (s->ops->pwrite (s, model + off, piece, off, false), 0);
  }
  ck_assert_uint_eq (allocated (s), g.nr_folios);

  /* All but a logical block at either end: the two end folios stay. */
  ck_assert_int_eq (s->ops->trim (s, (uint32_t) (size - 1024), 512), 0);
  memset (model + 512, 0, size - 1024);
  ck_assert_uint_eq (allocated (s), 2);
  assert_matches (s, model);

  /* Every folio freed is reused: rewrite part of the disk, unaligned. */
  fill (model + 3 * physical + physical / 2, 5 * physical, 4);
  ck_assert_int_eq (s->ops->pwrite (s, model + 3 * physical + physical / 2,
                                    5 * physical, 3 * physical + physical / 2,
                                    false),
                    0);
  ck_assert_uint_eq (allocated (s), 2 + 6);
  assert_matches (s, model);

  ck_assert_int_eq (s->ops->zero (s, (uint32_t) size, 0, LB_ZERO_MAY_TRIM), 0);
  ck_assert_uint_eq (allocated (s), 0);
  memset (model, 0, size);
  assert_matches (s, model);
  free (model);
  s->ops->destroy (s);
}
END_TEST

START_TEST (test_zero_flags)
{
  struct lb_geometry g;
  struct lb_store *s;
  unsigned char buf[65536], out[65536];

  make_geometry (&g, 1 << 20, 16384, 4096);
  s = lb_ramstore_new (&g, 0);
  fill (buf, sizeof buf, 3);
  ck_assert_int_eq (s->ops->pwrite (s, buf, sizeof buf, 0, false), 0);
  ck_assert_uint_eq (allocated (s), 4);

  /* FAST + NO_HOLE would memset: refused, data untouched. */
  errno = 0;
  ck_assert_int_eq (s->ops->zero (s, 16384, 0, LB_ZERO_FAST), -1);
  ck_assert_int_eq (errno, ENOTSUP);
  ck_assert_int_eq (s->ops->pread (s, out, sizeof out, 0), 0);
  ck_assert_mem_eq (out, buf, sizeof buf);

  /* FAST + MAY_TRIM: fast, releases. */
  ck_assert_int_eq (s->ops->zero (s, 16384, 0,
                                  LB_ZERO_FAST | LB_ZERO_MAY_TRIM),
                    0);
  ck_assert_uint_eq (allocated (s), 3);

  /* NO_HOLE keeps folio 1 allocated and allocates absent folio 10. */
  ck_assert_int_eq (s->ops->zero (s, 16384, 16384, 0), 0);
  ck_assert_int_eq (s->ops->zero (s, 16384, 10 * 16384, 0), 0);
  ck_assert_uint_eq (allocated (s), 4);
  memset (buf, 0, 32768);
  ck_assert_int_eq (s->ops->pread (s, out, sizeof out, 0), 0);
  ck_assert_mem_eq (out, buf, sizeof buf);
  ck_assert_int_eq (s->ops->pread (s, out, 16384, 10 * 16384), 0);
  ck_assert (out[0] == 0 && out[16383] == 0);
  s->ops->destroy (s);
}
END_TEST

START_TEST (test_memory_limit_enospc_changes_nothing)
{
  struct lb_geometry g;
  struct lb_store *s;
  unsigned char buf[5 * 16384], out[5 * 16384];

  make_geometry (&g, 1 << 20, 16384, 4096);
  s = lb_ramstore_new (&g, 4 * 16384);
  fill (buf, sizeof buf, 5);
  ck_assert_int_eq (s->ops->pwrite (s, buf, 3 * 16384, 0, false), 0);
  /* Needs folios 3..5 (3 new) with only one left: refused whole. */
  errno = 0;
  ck_assert_int_eq (s->ops->pwrite (s, buf, 3 * 16384, 3 * 16384, false), -1);
  ck_assert_int_eq (errno, ENOSPC);
  ck_assert_uint_eq (allocated (s), 3);
  ck_assert_int_eq (s->ops->pread (s, out, 16384, 3 * 16384), 0);
  ck_assert (out[0] == 0 && out[16383] == 0);
  /* Overwriting allocated folios and filling the last one still work. */
  ck_assert_int_eq (s->ops->pwrite (s, buf, 4 * 16384, 0, false), 0);
  ck_assert_uint_eq (allocated (s), 4);
  /* NO_HOLE zero is a write: limited too. */
  errno = 0;
  ck_assert_int_eq (s->ops->zero (s, 16384, 8 * 16384, 0), -1);
  ck_assert_int_eq (errno, ENOSPC);
  /* Trim gives the room back. */
  ck_assert_int_eq (s->ops->trim (s, 2 * 16384, 0), 0);
  ck_assert_int_eq (s->ops->pwrite (s, buf, 2 * 16384, 8 * 16384, false), 0);
  struct lb_store_usage u;
  s->ops->usage (s, &u);
  ck_assert_uint_eq (u.folios_allocated, 4);
  ck_assert_uint_eq (u.folios_peak, 4);
  s->ops->destroy (s);
}
END_TEST

/* Trimmed memory goes back after the trim returns, but still counts until
 * then: a write right after a trim of everything, at the limit, must wait
 * for it, never fail; the statistics right after a trim are exact.
 */
START_TEST (test_write_right_after_trim_at_limit)
{
  enum { FOLIO = 16384, NR = 64, ROUNDS = 200 };
  struct lb_geometry g;
  struct lb_store *s;
  unsigned char *buf = malloc (NR * FOLIO);

  make_geometry (&g, NR * FOLIO, FOLIO, 4096);
  s = lb_ramstore_new (&g, NR * FOLIO);
  fill (buf, NR * FOLIO, 9);
  for (unsigned round = 0; round < ROUNDS; round++) {
    ck_assert_msg (s->ops->pwrite (s, buf, NR * FOLIO, 0, false) == 0,
                   "round %u: write at the limit after a trim: %s", round,
                   strerror (errno));
    ck_assert_int_eq (s->ops->trim (s, NR * FOLIO, 0), 0);
    if (round % 50 == 0)
      ck_assert_uint_eq (allocated (s), 0);
  }
  ck_assert_int_eq (s->ops->flush (s), 0);
  ck_assert_uint_eq (allocated (s), 0);
  s->ops->destroy (s);
  free (buf);
}
END_TEST

struct collected {
  uint64_t off[64], len[64];
  bool hole[64];
  int n;
};

static int
collect (uint64_t offset, uint64_t length, bool hole, void *opaque)
{
  struct collected *c = opaque;

  ck_assert_int_lt (c->n, 64);
  c->off[c->n] = offset;
  c->len[c->n] = length;
  c->hole[c->n] = hole;
  c->n++;
  return 0;
}

START_TEST (test_extents_coalesced_and_clipped)
{
  struct lb_geometry g;
  struct lb_store *s;
  struct collected c = { .n = 0 };
  unsigned char buf[32768];

  make_geometry (&g, 1 << 20, 16384, 512);
  s = lb_ramstore_new (&g, 0);
  fill (buf, sizeof buf, 1);
  /* Data in folios 2, 3 and 6. */
  s->ops->pwrite (s, buf, 32768, 2 * 16384, false);
  s->ops->pwrite (s, buf, 512, 6 * 16384 + 1024, false);

  /* From mid-folio 1 to mid-folio 6: hole, data (2-3), hole (4-5), data. */
  ck_assert_int_eq (s->ops->extents (s, 5 * 16384, 16384 + 512, false, collect,
                                     &c),
                    0);
  ck_assert_int_eq (c.n, 4);
  ck_assert (c.hole[0] && !c.hole[1] && c.hole[2] && !c.hole[3]);
  ck_assert_uint_eq (c.off[0], 16384 + 512);
  ck_assert_uint_eq (c.off[1], 2 * 16384);
  ck_assert_uint_eq (c.len[1], 2 * 16384);
  ck_assert_uint_eq (c.off[3], 6 * 16384);
  ck_assert_uint_eq (c.off[3] + c.len[3], 6 * 16384 + 512); /* clipped */
  for (int i = 1; i < c.n; i++)
    ck_assert_uint_eq (c.off[i], c.off[i - 1] + c.len[i - 1]);

  /* req_one: just the first run, clipped. */
  c.n = 0;
  ck_assert_int_eq (s->ops->extents (s, 1000, 2 * 16384 + 100, true, collect,
                                     &c),
                    0);
  ck_assert_int_eq (c.n, 1);
  ck_assert (!c.hole[0]);
  ck_assert_uint_eq (c.off[0], 2 * 16384 + 100);
  ck_assert_uint_eq (c.len[0], 1000);
  s->ops->destroy (s);
}
END_TEST

START_TEST (test_huge_sparse_disk)
{
  struct lb_geometry g;
  struct lb_store *s;
  struct collected c = { .n = 0 };
  struct lb_store_usage u;
  const uint64_t size = (uint64_t) 7 << 60;
  const uint64_t one_t = (uint64_t) 1 << 40;
  unsigned char buf[512], out[512];

  /* 512-byte folios: the deepest index (2^53 folios, 6 levels). */
  make_geometry (&g, size, 512, 512);
  s = lb_ramstore_new (&g, 0);
  s->ops->usage (s, &u);
  ck_assert_uint_lt (u.metadata_bytes, 1 << 20); /* O(1) start */

  fill (buf, sizeof buf, 7);
  ck_assert_int_eq (s->ops->pwrite (s, buf, 512, one_t, false), 0);
  ck_assert_int_eq (s->ops->pwrite (s, buf, 512, size - 512, false), 0);
  ck_assert_int_eq (s->ops->pread (s, out, 512, size - 512), 0);
  ck_assert_mem_eq (out, buf, 512);

  /* 4 GiB - 512 around the folio: hole, data, hole; this walk would take
   * 8 million steps folio by folio. */
  ck_assert_int_eq (s->ops->extents (s, UINT32_MAX - 511,
                                     one_t - ((uint64_t) 1 << 31), false,
                                     collect, &c),
                    0);
  ck_assert_int_eq (c.n, 3);
  ck_assert (c.hole[0] && !c.hole[1] && c.hole[2]);
  ck_assert_uint_eq (c.off[1], one_t);
  ck_assert_uint_eq (c.len[1], 512);

  /* A 4 GiB trim over it releases it, again without walking holes. */
  ck_assert_int_eq (s->ops->trim (s, UINT32_MAX - 511,
                                  one_t - ((uint64_t) 1 << 31)),
                    0);
  ck_assert_uint_eq (allocated (s), 1);
  s->ops->destroy (s);
}
END_TEST

static Suite *
ramstore_suite (void)
{
  Suite *s = suite_create ("ramstore");
  TCase *tc = tcase_create ("ramstore");

  tcase_set_timeout (tc, 120);
  tcase_add_loop_test (tc, test_unwritten_reads_zero, 0, NR_GEOS);
  tcase_add_loop_test (tc, test_writes_across_folios_match_model, 0, NR_GEOS);
  tcase_add_loop_test (tc, test_trim_releases_whole_folios_zeroes_ends, 0,
                       NR_GEOS);
  tcase_add_loop_test (tc, test_trim_long_run_frees_all, 0, 8);
  tcase_add_test (tc, test_zero_flags);
  tcase_add_test (tc, test_memory_limit_enospc_changes_nothing);
  tcase_add_test (tc, test_write_right_after_trim_at_limit);
  tcase_add_test (tc, test_extents_coalesced_and_clipped);
  tcase_add_test (tc, test_huge_sparse_disk);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (ramstore_suite);
