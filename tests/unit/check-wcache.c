/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/disk/wcache unit tests.
 *
 * Random write/FUA/trim/zero/flush sequences run against the write cache
 * (over a RAM store) and against a model that keeps, per byte, the durable
 * and the newest content and, per logical block, whether it holds
 * unflushed data.  Reads before the cut must return the newest content.
 * After a cut every logical block is checked exactly: clean blocks are
 * the newest content; unflushed ones are wholly old or wholly new (never
 * a mix inside a logical block), all old in lose mode, all old or all new
 * inside a physical block in atomic mode.  The cut's counts match the
 * model, torn mode tears, a seed replays the identical image, connections
 * open at the cut see EIO and new ones the post-cut image, a full cache
 * flushes implicitly, power-cut-after cuts at the Nth request, a
 * request for cut N cuts once, however many ask for it at once, and the
 * cut is reported before any connection sees it, and buffers kept for
 * reuse never show what they held.  The lock assertions
 * (locking.h) abort a child that lacks the lock, and pass in on_cut.
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "suites.h"
#include "largeblock/geometry.h"
#include "locking.h"
#include "prng.h"
#include "ramstore.h"
#include "wcache.h"

struct geo_case {
  uint64_t size;
  uint32_t physical, logical;
};

static const struct geo_case geos[] = {
  { 512 * 1024, 16384, 4096 },
  { 512 * 1024, 16384, 16384 },
  { 2 << 20, 65536, 4096 },
  { 16384 * 20 + 4096 * 3, 16384, 4096 }, /* the last block is short */
};
#define NR_GEOS (sizeof geos / sizeof geos[0])
#define NR_MODES 3

struct model {
  const struct lb_geometry *g;
  unsigned char *durable, *newest;
  bool *dirty; /* per logical block */
};

struct fixture {
  struct lb_geometry g;
  struct lb_store *cache;
  struct model m;
};

/* A cache over a RAM store; spares: it keeps freed buffers for reuse,
 * as many as the whole cache (as the plugin does without memory-limit).
 */
static void
fixture_init_spares (struct fixture *f, const struct geo_case *gc,
                     enum lb_cut_mode mode, uint64_t seed,
                     uint64_t cache_bytes, uint64_t cut_after, bool spares)
{
  struct lb_wcache_config c = { .mode = mode,
                                .seed = seed,
                                .cache_bytes = cache_bytes,
                                .cut_after = cut_after };
  struct lb_store *ram;

  test_geometry (&f->g, gc->size, gc->physical, gc->logical, 32u << 20);
  ram = lb_ramstore_new (&f->g, 0);
  ck_assert_ptr_nonnull (ram);
  if (c.cache_bytes == 0)
    c.cache_bytes = 64u << 20;
  c.spare_bytes = spares ? c.cache_bytes : 0;
  f->cache = lb_wcache_new (ram, &c);
  ck_assert_ptr_nonnull (f->cache);
  f->m.g = &f->g;
  f->m.durable = calloc (1, gc->size);
  f->m.newest = calloc (1, gc->size);
  f->m.dirty = calloc (lb_bytes_to_logical (&f->g, gc->size), sizeof (bool));
  ck_assert (f->m.durable && f->m.newest && f->m.dirty);
}

static void
fixture_init (struct fixture *f, const struct geo_case *gc,
              enum lb_cut_mode mode, uint64_t seed, uint64_t cache_bytes,
              uint64_t cut_after)
{
  fixture_init_spares (f, gc, mode, seed, cache_bytes, cut_after, false);
}

static void
fixture_free (struct fixture *f)
{
  f->cache->ops->destroy (f->cache);
  free (f->m.durable);
  free (f->m.newest);
  free (f->m.dirty);
}

static void
model_mark (struct model *m, uint64_t offset, uint64_t count, bool dirty)
{
  uint64_t first = lb_bytes_to_logical (m->g, offset);
  uint64_t end = lb_bytes_to_logical (m->g, offset + count);

  for (uint64_t i = first; i < end; i++)
    m->dirty[i] = dirty;
}

static void
model_flush (struct model *m)
{
  memcpy (m->durable, m->newest, m->g->size_bytes);
  memset (m->dirty, 0, lb_bytes_to_logical (m->g, m->g->size_bytes));
}

/* A logical-block-aligned range of up to three physical blocks. */
static void
random_range (struct lb_prng *r, const struct lb_geometry *g, uint64_t *offset,
              uint32_t *count)
{
  uint64_t nr = lb_bytes_to_logical (g, g->size_bytes);
  uint64_t per = g->physical_bytes >> g->logical_shift;
  uint64_t first = lb_prng_next (r) % nr;
  uint64_t len = 1 + lb_prng_next (r) % (3 * per);

  if (first + len > nr)
    len = nr - first;
  *offset = lb_logical_to_bytes (g, first);
  *count = (uint32_t) lb_logical_to_bytes (g, len);
}

/* One random request; flushes only when may_flush (so a sequence can end
 * with unflushed data for the cut).
 */
static void
one_op (struct fixture *f, struct lb_store *s, struct lb_prng *r,
        unsigned char *buf, bool may_flush)
{
  unsigned kind = lb_prng_next (r) % 20;
  uint64_t offset;
  uint32_t count;

  random_range (r, &f->g, &offset, &count);
  if (kind == 0 && !may_flush)
    kind = 4;
  if (kind == 0) {
    ck_assert_int_eq (s->ops->flush (s), 0);
    model_flush (&f->m);
  }
  else if (kind <= 3) {
    ck_assert_int_eq (kind == 1
                        ? s->ops->trim (s, count, offset)
                        : s->ops->zero (s, count, offset,
                                        kind == 2 ? LB_ZERO_MAY_TRIM : 0),
                      0);
    memset (f->m.newest + offset, 0, count);
    model_mark (&f->m, offset, count, true);
  }
  else {
    bool fua = kind <= 6;

    for (uint32_t i = 0; i < count; i += 8) {
      uint64_t word = lb_prng_next (r) | 1;

      memcpy (buf + i, &word, 8);
    }
    ck_assert_int_eq (s->ops->pwrite (s, buf, count, offset, fua), 0);
    memcpy (f->m.newest + offset, buf, count);
    if (fua)
      memcpy (f->m.durable + offset, buf, count);
    model_mark (&f->m, offset, count, !fua);
  }
}

static void
run_ops (struct fixture *f, struct lb_store *s, uint64_t op_seed,
         unsigned nr_ops)
{
  unsigned char *buf = malloc (3 * f->g.physical_bytes);
  struct lb_prng r;

  lb_prng_init (&r, op_seed);
  for (unsigned i = 0; i < nr_ops; i++)
    one_op (f, s, &r, buf, i + 20 < nr_ops);
  free (buf);
}

static unsigned char *
read_image (struct lb_store *s)
{
  uint64_t size = s->geom->size_bytes;
  unsigned char *img = malloc (size);

  ck_assert_ptr_nonnull (img);
  for (uint64_t at = 0; at < size; at += 65536) {
    uint32_t n = size - at < 65536 ? (uint32_t) (size - at) : 65536;

    ck_assert_int_eq (s->ops->pread (s, img + at, n, at), 0);
  }
  return img;
}

/* What the image shows of one physical block's unflushed logical blocks:
 * counts of those that show the newest content and the durable one (a
 * block whose two contents are equal counts for neither).
 */
struct seen {
  unsigned dirty, is_new, is_old;
};

static void
check_logical (const struct model *m, const unsigned char *img, uint64_t lba,
               struct seen *sn)
{
  uint32_t n = m->g->logical_bytes;
  uint64_t at = lb_logical_to_bytes (m->g, lba);
  bool as_new = memcmp (img + at, m->newest + at, n) == 0;
  bool as_old = memcmp (img + at, m->durable + at, n) == 0;

  if (!m->dirty[lba]) {
    ck_assert_msg (as_new, "flushed logical block %llu changed by the cut",
                   (unsigned long long) lba);
    return;
  }
  sn->dirty++;
  ck_assert_msg (as_new || as_old,
                 "logical block %llu is neither old nor new (torn inside "
                 "a logical block)",
                 (unsigned long long) lba);
  if (as_new && !as_old)
    sn->is_new++;
  if (as_old && !as_new)
    sn->is_old++;
}

/* Check the post-cut image against the model and the mode; the report's
 * block counts must cover exactly the physical blocks with unflushed data.
 */
static void
check_cut (const struct model *m, const unsigned char *img,
           enum lb_cut_mode mode, const struct lb_cut_report *rep)
{
  const struct lb_geometry *g = m->g;
  uint64_t nr_logical = lb_bytes_to_logical (g, g->size_bytes);
  uint64_t per = g->physical_bytes >> g->logical_shift;
  uint64_t dirty_blocks = 0, dirty_logical = 0;

  for (uint64_t first = 0; first < nr_logical; first += per) {
    struct seen sn = { 0 };

    for (uint64_t i = first; i < first + per && i < nr_logical; i++)
      check_logical (m, img, i, &sn);
    if (sn.dirty == 0)
      continue;
    dirty_blocks++;
    dirty_logical += sn.dirty;
    if (mode == LB_CUT_LOSE)
      ck_assert_msg (sn.is_new == 0, "lose mode kept new data in block %llu",
                     (unsigned long long) (first / per));
    if (mode == LB_CUT_ATOMIC)
      ck_assert_msg (sn.is_new == 0 || sn.is_old == 0,
                     "atomic mode mixed old and new in block %llu",
                     (unsigned long long) (first / per));
  }
  ck_assert_uint_eq (rep->blocks_kept + rep->blocks_lost + rep->blocks_torn,
                     dirty_blocks);
  ck_assert_uint_eq (rep->logical_kept + rep->logical_lost, dirty_logical);
  if (mode == LB_CUT_LOSE)
    ck_assert_uint_eq (rep->blocks_kept + rep->blocks_torn, 0);
  if (mode != LB_CUT_TORN)
    ck_assert_uint_eq (rep->blocks_torn, 0);
}

static void
assert_matches_newest (const struct fixture *f, struct lb_store *s)
{
  unsigned char *img = read_image (s);

  ck_assert (memcmp (img, f->m.newest, f->g.size_bytes) == 0);
  free (img);
}

/* _i = geometry * modes + mode. */
START_TEST (test_random_ops_then_cut_obey_the_mode)
{
  const struct geo_case *gc = &geos[_i / NR_MODES];
  enum lb_cut_mode mode = (enum lb_cut_mode) (_i % NR_MODES);
  struct lb_wcache_stats st;
  struct lb_cut_report rep;
  struct fixture f;
  unsigned char *img;

  for (uint64_t seed = 1; seed <= 4; seed++) {
    /* Even seeds with a cache that keeps its freed buffers: every flush
     * hands old contents to the next entries.
     */
    fixture_init_spares (&f, gc, mode, seed * 7919, 0, 0, seed % 2 == 0);
    run_ops (&f, f.cache, seed, 300);
    assert_matches_newest (&f, f.cache);
    ck_assert_int_eq (lb_wcache_cut (f.cache, &rep), 0);
    ck_assert_uint_eq (rep.cut, 1);
    ck_assert_uint_eq (rep.seed, seed * 7919);
    img = read_image (f.cache);
    check_cut (&f.m, img, mode, &rep);
    if (mode == LB_CUT_TORN && gc->logical < gc->physical)
      ck_assert_uint_gt (rep.blocks_torn, 0);
    if (mode == LB_CUT_ATOMIC)
      ck_assert_uint_gt (rep.blocks_kept, 0);
    if (mode == LB_CUT_TORN)
      ck_assert_uint_gt (rep.logical_kept, 0);
    lb_wcache_get_stats (f.cache, &st);
    ck_assert_uint_eq (st.dirty_blocks, 0);
    ck_assert_uint_eq (st.cache_bytes, 0);
    ck_assert_uint_eq (st.total.cut, 1);
    free (img);
    fixture_free (&f);
  }
}
END_TEST

/* Run a sequence, cut with seed, return the image. */
static unsigned char *
image_after_cut (const struct geo_case *gc, enum lb_cut_mode mode,
                 uint64_t seed)
{
  struct lb_cut_report rep;
  struct fixture f;
  unsigned char *img;

  fixture_init (&f, gc, mode, seed, 0, 0);
  run_ops (&f, f.cache, 99, 400);
  ck_assert_int_eq (lb_wcache_cut (f.cache, &rep), 0);
  img = read_image (f.cache);
  fixture_free (&f);
  return img;
}

START_TEST (test_same_seed_same_image)
{
  const struct geo_case *gc = &geos[_i / NR_MODES];
  enum lb_cut_mode mode = (enum lb_cut_mode) (_i % NR_MODES);
  unsigned char *a = image_after_cut (gc, mode, 42);
  unsigned char *b = image_after_cut (gc, mode, 42);
  unsigned char *c = image_after_cut (gc, mode, 43);

  ck_assert (memcmp (a, b, gc->size) == 0);
  if (mode != LB_CUT_LOSE)
    ck_assert_msg (memcmp (a, c, gc->size) != 0,
                   "seeds 42 and 43 chose the same survivors");
  free (a);
  free (b);
  free (c);
}
END_TEST

START_TEST (test_connections_open_at_the_cut_get_eio)
{
  struct lb_cut_report rep;
  struct lb_store *old, *fresh;
  unsigned char buf[4096] = { 1 };
  struct fixture f;

  fixture_init (&f, &geos[0], LB_CUT_LOSE, 1, 0, 0);
  old = lb_wcache_connect (f.cache);
  ck_assert_ptr_nonnull (old);
  ck_assert_int_eq (old->ops->pwrite (old, buf, 4096, 0, false), 0);
  ck_assert_int_eq (old->ops->pwrite (old, buf, 4096, 16384, true), 0);
  ck_assert_int_eq (lb_wcache_cut (f.cache, &rep), 0);
  ck_assert_uint_eq (rep.blocks_lost, 1);
  ck_assert_uint_eq (lb_wcache_generation (f.cache), 1);

  errno = 0;
  ck_assert_int_eq (old->ops->pread (old, buf, 4096, 0), -1);
  ck_assert_int_eq (errno, EIO);
  errno = 0;
  ck_assert_int_eq (old->ops->pwrite (old, buf, 4096, 0, false), -1);
  ck_assert_int_eq (errno, EIO);
  ck_assert_int_eq (old->ops->flush (old), -1);
  ck_assert_int_eq (old->ops->trim (old, 4096, 0), -1);
  ck_assert_int_eq (old->ops->zero (old, 4096, 0, 0), -1);

  fresh = lb_wcache_connect (f.cache);
  ck_assert_int_eq (fresh->ops->pread (fresh, buf, 4096, 0), 0);
  ck_assert_int_eq (buf[0], 0); /* lost */
  ck_assert_int_eq (fresh->ops->pread (fresh, buf, 4096, 16384), 0);
  ck_assert_int_eq (buf[0], 1); /* FUA */
  ck_assert_int_eq (fresh->ops->pwrite (fresh, buf, 4096, 0, false), 0);
  old->ops->destroy (old);
  fresh->ops->destroy (fresh);
  fixture_free (&f);
}
END_TEST

/* A cache of three blocks: writing ten blocks one by one flushes it
 * before the 4th, 7th and 10th; a lose cut then keeps blocks 0-8 only.
 */
START_TEST (test_full_cache_flushes_implicitly)
{
  const struct geo_case *gc = &geos[0];
  unsigned char buf[16384], back[16384];
  struct lb_wcache_stats st;
  struct lb_cut_report rep;
  struct lb_geometry g;
  struct fixture f;

  test_geometry (&g, gc->size, gc->physical, gc->logical, 32u << 20);
  fixture_init (&f, gc, LB_CUT_LOSE, 5, 3 * lb_wcache_min_bytes (&g), 0);
  for (unsigned i = 0; i < 10; i++) {
    memset (buf, 'a' + i, sizeof buf);
    ck_assert_int_eq (f.cache->ops->pwrite (f.cache, buf, 16384, i * 16384,
                                            false),
                      0);
  }
  lb_wcache_get_stats (f.cache, &st);
  ck_assert_uint_eq (st.implicit_flushes, 3);
  ck_assert_uint_eq (st.cache_bytes_peak, 3 * lb_wcache_min_bytes (&g));
  ck_assert_uint_eq (st.dirty_blocks, 1);
  ck_assert_int_eq (lb_wcache_cut (f.cache, &rep), 0);
  ck_assert_uint_eq (rep.blocks_lost, 1);
  for (unsigned i = 0; i < 10; i++) {
    memset (buf, i < 9 ? 'a' + i : 0, sizeof buf);
    ck_assert_int_eq (f.cache->ops->pread (f.cache, back, 16384, i * 16384),
                      0);
    ck_assert (memcmp (buf, back, sizeof buf) == 0);
  }
  fixture_free (&f);
}
END_TEST

/* A spare buffer still holds the block it cached last: a new entry must
 * never show those bytes -- not a partial write to a new block (durable
 * content around it), not one to an all-zero entry (zeros around it).
 */
START_TEST (test_spare_buffers_show_no_old_content)
{
  const struct geo_case *gc = &geos[0];
  unsigned char buf[16384], back[16384], want[16384];
  struct fixture f;

  fixture_init_spares (&f, gc, LB_CUT_LOSE, 3, 0, 0, true);
  memset (buf, 'x', sizeof buf);
  for (unsigned i = 0; i < 8; i++)
    ck_assert_int_eq (f.cache->ops->pwrite (f.cache, buf, 16384, i * 16384,
                                            false),
                      0);
  ck_assert_int_eq (f.cache->ops->flush (f.cache), 0);
  /* Block 8: durable zeros, 4k of 'y' in the middle. */
  memset (buf, 'y', 4096);
  ck_assert_int_eq (f.cache->ops->pwrite (f.cache, buf, 4096, 8 * 16384 + 4096,
                                          false),
                    0);
  memset (want, 0, sizeof want);
  memset (want + 4096, 'y', 4096);
  ck_assert_int_eq (f.cache->ops->pread (f.cache, back, 16384, 8 * 16384), 0);
  ck_assert (memcmp (back, want, sizeof want) == 0);
  /* Block 0: zeroed whole (an all-zero entry), then 4k of 'y'. */
  ck_assert_int_eq (f.cache->ops->zero (f.cache, 16384, 0, 0), 0);
  ck_assert_int_eq (f.cache->ops->pwrite (f.cache, buf, 4096, 4096, false), 0);
  ck_assert_int_eq (f.cache->ops->pread (f.cache, back, 16384, 0), 0);
  ck_assert (memcmp (back, want, sizeof want) == 0);
  ck_assert_int_eq (f.cache->ops->flush (f.cache), 0);
  ck_assert_int_eq (f.cache->ops->pread (f.cache, back, 16384, 0), 0);
  ck_assert (memcmp (back, want, sizeof want) == 0);
  fixture_free (&f);
}
END_TEST

START_TEST (test_cut_after_nth_request)
{
  struct lb_wcache_stats st;
  unsigned char buf[4096];
  struct lb_store *conn;
  struct fixture f;

  memset (buf, 7, sizeof buf);
  fixture_init (&f, &geos[0], LB_CUT_LOSE, 3, 0, 3);
  conn = lb_wcache_connect (f.cache);
  ck_assert_int_eq (conn->ops->pwrite (conn, buf, 4096, 0, true), 0);
  ck_assert_int_eq (conn->ops->trim (conn, 4096, 16384), 0);
  ck_assert_int_eq (conn->ops->flush (conn), 0); /* not counted */
  errno = 0;
  ck_assert_int_eq (conn->ops->pwrite (conn, buf, 4096, 32768, false), -1);
  ck_assert_int_eq (errno, EIO);
  lb_wcache_get_stats (f.cache, &st);
  ck_assert_uint_eq (st.total.cut, 1);
  ck_assert_uint_eq (st.last.blocks_lost, 1);
  ck_assert_int_eq (conn->ops->pread (conn, buf, 4096, 0), -1);
  conn->ops->destroy (conn);
  conn = lb_wcache_connect (f.cache);
  ck_assert_int_eq (conn->ops->pread (conn, buf, 4096, 0), 0);
  ck_assert_int_eq (buf[0], 7);
  ck_assert_int_eq (conn->ops->pread (conn, buf, 4096, 32768), 0);
  ck_assert_int_eq (buf[0], 0);
  conn->ops->destroy (conn);
  fixture_free (&f);
}
END_TEST

/* A cut on demand before the Nth request (lb_wcache_cut, or a "cut 1"
 * through lb_wcache_cut_once): the Nth, from the connection that
 * recovers, does not cut again.
 */
START_TEST (test_cut_after_not_after_an_earlier_cut)
{
  struct lb_wcache_stats st;
  struct lb_cut_report rep;
  unsigned char buf[4096];
  struct lb_store *conn;
  struct fixture f;

  memset (buf, 7, sizeof buf);
  fixture_init (&f, &geos[0], LB_CUT_LOSE, 3, 0, 2);
  conn = lb_wcache_connect (f.cache);
  ck_assert_int_eq (conn->ops->pwrite (conn, buf, 4096, 0, false), 0);
  if (_i == 0)
    ck_assert_int_eq (lb_wcache_cut (f.cache, &rep), 0);
  else
    ck_assert_int_eq (lb_wcache_cut_once (f.cache, 1, &rep), 1);
  conn->ops->destroy (conn);
  conn = lb_wcache_connect (f.cache);
  ck_assert_int_eq (conn->ops->pwrite (conn, buf, 4096, 0, false), 0);
  ck_assert_int_eq (conn->ops->pwrite (conn, buf, 4096, 4096, false), 0);
  lb_wcache_get_stats (f.cache, &st);
  ck_assert_uint_eq (st.total.cut, 1);
  conn->ops->destroy (conn);
  fixture_free (&f);
}
END_TEST

/* Cut number N at most once: a request for a cut that has happened does
 * nothing (the data written since stays cached), a later N cuts again,
 * and 0 always cuts.
 */
START_TEST (test_cut_once_by_number)
{
  struct lb_wcache_stats st;
  struct lb_cut_report rep;
  unsigned char buf[4096];
  struct fixture f;

  memset (buf, 7, sizeof buf);
  fixture_init (&f, &geos[0], LB_CUT_LOSE, 3, 0, 0);
  ck_assert_int_eq (lb_wcache_cut_once (f.cache, 1, &rep), 1);
  ck_assert_uint_eq (rep.cut, 1);
  ck_assert_int_eq (f.cache->ops->pwrite (f.cache, buf, 4096, 0, false), 0);
  rep.cut = 99;
  ck_assert_int_eq (lb_wcache_cut_once (f.cache, 1, &rep), 0);
  ck_assert_uint_eq (rep.cut, 0);
  ck_assert_uint_eq (lb_wcache_generation (f.cache), 1);
  lb_wcache_get_stats (f.cache, &st);
  ck_assert_uint_eq (st.dirty_blocks, 1); /* untouched by the no-op */
  ck_assert_int_eq (lb_wcache_cut_once (f.cache, 3, &rep), 1);
  ck_assert_uint_eq (rep.cut, 2);
  ck_assert_uint_eq (rep.blocks_lost, 1);
  ck_assert_int_eq (lb_wcache_cut_once (f.cache, 2, &rep), 0);
  ck_assert_int_eq (lb_wcache_cut_once (f.cache, 0, &rep), 1);
  ck_assert_uint_eq (rep.cut, 3);
  ck_assert_int_eq (lb_wcache_cut_once (f.cache, UINT64_MAX, &rep), 1);
  ck_assert_uint_eq (lb_wcache_generation (f.cache), 4);
  lb_wcache_get_stats (f.cache, &st);
  ck_assert_uint_eq (st.total.cut, 4);
  fixture_free (&f);
}
END_TEST

#define CUTTERS 4

struct cutter {
  struct lb_store *cache;
  atomic_int *made;
};

static void *
ask_for_cut_1 (void *arg)
{
  struct cutter *c = arg;
  struct lb_cut_report rep;

  if (lb_wcache_cut_once (c->cache, 1, &rep) == 1)
    atomic_fetch_add (c->made, 1);
  return NULL;
}

/* Threads asking for cut 1 at once, as the FIFO and power-cut-after may:
 * exactly one cuts.
 */
START_TEST (test_cut_once_races_cut_once)
{
  for (int round = 0; round < 50; round++) {
    struct cutter c[CUTTERS];
    pthread_t th[CUTTERS];
    atomic_int made = 0;
    struct fixture f;

    fixture_init (&f, &geos[0], LB_CUT_TORN, round, 0, 0);
    for (int i = 0; i < CUTTERS; i++) {
      c[i] = (struct cutter) { .cache = f.cache, .made = &made };
      ck_assert_int_eq (pthread_create (&th[i], NULL, ask_for_cut_1, &c[i]),
                        0);
    }
    for (int i = 0; i < CUTTERS; i++)
      pthread_join (th[i], NULL);
    ck_assert_int_eq (made, 1);
    ck_assert_uint_eq (lb_wcache_generation (f.cache), 1);
    fixture_free (&f);
  }
}
END_TEST

/* The cut's report (the log line and statsfile in the plugin) comes
 * before any connection can see the cut: a slow on_cut is over, and
 * counted in the statistics, by the time any request of an open
 * connection fails with EIO, whichever request it is; and a connection
 * made while the report is being written waits for the cut and sees the
 * post-cut image, never EIO.
 */
enum {
  WATCH_PREAD,
  WATCH_PWRITE,
  WATCH_EXTENTS,
  WATCH_POWER,
  WATCH_CONNECT,
  NR_WATCHES
};

struct report_watch {
  struct lb_store *cache, *conn;
  int op; /* WATCH_* */
  atomic_bool reporting, reported, watching;
  uint64_t cuts_seen_in_report;
  bool reported_when_seen;
};

static void
slow_report (const struct lb_cut_report *r, void *opaque)
{
  struct report_watch *w = opaque;
  struct lb_wcache_stats st;

  atomic_store (&w->reporting, true);
  lb_wcache_get_stats (w->cache, &st);
  w->cuts_seen_in_report = st.total.cut;
  usleep (50 * 1000);
  atomic_store (&w->reported, true);
}

static int
ignore_extent (uint64_t offset, uint64_t length, bool hole, void *opaque)
{
  return 0;
}

static int
watched_request (struct lb_store *conn, int op)
{
  unsigned char buf[4096] = { 2 };

  switch (op) {
  case WATCH_PREAD: return conn->ops->pread (conn, buf, sizeof buf, 0);
  case WATCH_PWRITE:
    return conn->ops->pwrite (conn, buf, sizeof buf, 16384, false);
  case WATCH_EXTENTS:
    return conn->ops->extents (conn, 65536, 0, false, ignore_extent, NULL);
  default: return lb_wcache_check_power (conn);
  }
}

static void *
watch_until_eio (void *arg)
{
  struct report_watch *w = arg;

  atomic_store (&w->watching, true);
  while (watched_request (w->conn, w->op) == 0)
    ;
  ck_assert_int_eq (errno, EIO);
  w->reported_when_seen = atomic_load (&w->reported);
  return NULL;
}

static void *
connect_during_report (void *arg)
{
  struct report_watch *w = arg;
  unsigned char buf[4096] = { 2 };
  struct lb_store *fresh;

  atomic_store (&w->watching, true);
  while (!atomic_load (&w->reporting))
    ;
  fresh = lb_wcache_connect (w->cache);
  ck_assert_ptr_nonnull (fresh);
  w->reported_when_seen = atomic_load (&w->reported);
  ck_assert_int_eq (fresh->ops->pread (fresh, buf, sizeof buf, 0), 0);
  ck_assert_int_eq (buf[0], 0); /* the unflushed write was lost */
  fresh->ops->destroy (fresh);
  return NULL;
}

START_TEST (test_report_precedes_eio)
{
  const struct geo_case *gc = &geos[0];
  struct lb_wcache_config c = { .mode = LB_CUT_LOSE,
                                .seed = 3,
                                .cache_bytes = 1u << 20,
                                .on_cut = slow_report };
  struct report_watch w = { .op = _i };
  unsigned char buf[4096] = { 1 };
  struct lb_cut_report rep;
  struct lb_geometry g;
  pthread_t th;

  c.opaque = &w;
  test_geometry (&g, gc->size, gc->physical, gc->logical, 32u << 20);
  w.cache = lb_wcache_new (lb_ramstore_new (&g, 0), &c);
  ck_assert_ptr_nonnull (w.cache);
  w.conn = lb_wcache_connect (w.cache);
  ck_assert_int_eq (w.conn->ops->pwrite (w.conn, buf, 4096, 0, false), 0);
  ck_assert_int_eq (pthread_create (&th, NULL,
                                    _i == WATCH_CONNECT ? connect_during_report
                                                        : watch_until_eio,
                                    &w),
                    0);
  while (!atomic_load (&w.watching))
    ;
  ck_assert_int_eq (lb_wcache_cut (w.cache, &rep), 0);
  pthread_join (th, NULL);
  ck_assert (w.reported_when_seen);
  ck_assert_uint_eq (w.cuts_seen_in_report, 1);
  w.conn->ops->destroy (w.conn);
  w.cache->ops->destroy (w.cache);
}
END_TEST

/* A memory limit with no room for a cache buffer: writes go through. */
/* One cached block costs what the plugin's man page says
 * (write-cache-size): 64 + 8 x ceil(logical blocks per block / 64) bytes
 * of bookkeeping and the block's content; for every pair of sizes.
 */
START_TEST (test_min_bytes_is_the_documented_formula)
{
  for (unsigned pshift = 9; pshift <= 25; pshift++)
    for (unsigned lshift = 9; lshift <= 16 && lshift <= pshift; lshift++) {
      uint64_t per_block = UINT64_C (1) << (pshift - lshift);
      struct lb_geometry g;

      test_geometry (&g, UINT64_C (1) << pshift, 1u << pshift, 1u << lshift,
                     32u << 20);
      ck_assert_uint_eq (lb_wcache_min_bytes (&g),
                         64 + 8 * ((per_block + 63) / 64) +
                           (UINT64_C (1) << pshift));
    }
}
END_TEST

/* A cache over a RAM store of geos[0] with room for two folios. */
static struct lb_store *
two_folio_cache (struct lb_geometry *g)
{
  const struct geo_case *gc = &geos[0];
  struct lb_wcache_config c = { .mode = LB_CUT_LOSE,
                                .seed = 1,
                                .cache_bytes = 64u << 20 };
  struct lb_store *cache;

  test_geometry (g, gc->size, gc->physical, gc->logical, 32u << 20);
  cache = lb_wcache_new (lb_ramstore_new (g, 2 * 16384), &c);
  ck_assert_ptr_nonnull (cache);
  return cache;
}

START_TEST (test_memory_limit_writes_through)
{
  unsigned char buf[16384], back[16384];
  struct lb_wcache_stats st;
  struct lb_cut_report rep;
  struct lb_geometry g;
  struct lb_store *cache = two_folio_cache (&g);

  memset (buf, 9, sizeof buf);
  /* Blocks 0 and 1 cached (two folios charged): the third write finds no
   * memory, flushes the cache (the durable store now holds the two), still
   * finds none, and fails with ENOSPC.
   */
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, 16384, 0, false), 0);
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, 16384, 16384, false), 0);
  errno = 0;
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, 16384, 32768, false), -1);
  ck_assert_int_eq (errno, ENOSPC);
  /* Rewriting a durable block needs a cache folio there is no room for:
   * it is written through, and survives a cut.
   */
  ck_assert_int_eq (cache->ops->flush (cache), 0);
  memset (buf, 3, sizeof buf);
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, 16384, 0, false), 0);
  lb_wcache_get_stats (cache, &st);
  ck_assert_uint_gt (st.written_through, 0);
  ck_assert_int_eq (lb_wcache_cut (cache, &rep), 0);
  ck_assert_int_eq (cache->ops->pread (cache, back, 16384, 0), 0);
  ck_assert (memcmp (buf, back, sizeof buf) == 0);
  cache->ops->destroy (cache);
}
END_TEST

/* The cache's copies never make a write fail that fits the limit: with
 * room for two folios, block 0 durable and a newer copy of it cached
 * (two folios charged), a FUA write of block 1 -- which the disk has
 * room for -- flushes the cache and succeeds, instead of ENOSPC.
 */
START_TEST (test_memory_limit_fua_write_flushes_the_copies)
{
  unsigned char buf[16384], back[16384];
  struct lb_wcache_stats st;
  struct lb_cut_report rep;
  struct lb_geometry g;
  struct lb_store *cache = two_folio_cache (&g);

  memset (buf, 1, sizeof buf);
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, 16384, 0, false), 0);
  ck_assert_int_eq (cache->ops->flush (cache), 0);
  memset (buf, 2, sizeof buf);
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, 16384, 0, false), 0);
  lb_wcache_get_stats (cache, &st);
  ck_assert_uint_eq (st.dirty_blocks, 1);
  memset (buf, 3, sizeof buf);
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, 16384, 16384, true), 0);
  /* Both are durable now: a cut keeps them. */
  ck_assert_int_eq (lb_wcache_cut (cache, &rep), 0);
  for (unsigned i = 0; i < 2; i++) {
    memset (buf, 2 + i, sizeof buf);
    ck_assert_int_eq (cache->ops->pread (cache, back, 16384, i * 16384), 0);
    ck_assert (memcmp (buf, back, sizeof buf) == 0);
  }
  cache->ops->destroy (cache);
}
END_TEST

/* Threads write, read and flush their own blocks through their own
 * connections (reconnecting after EIO) while the main thread cuts the
 * power again and again: nothing crashes, and every logical block any
 * read returns is whole (one byte value throughout), cut or no cut.
 * Run under TSan to check the locking.
 */
struct stress {
  struct fixture *f;
  atomic_bool stop;
  unsigned id;
};

static void *
stress_worker (void *arg)
{
  struct stress *sx = arg;
  const struct lb_geometry *g = &sx->f->g;
  uint32_t lb = g->logical_bytes;
  struct lb_store *conn = lb_wcache_connect (sx->f->cache);
  unsigned char *buf = malloc (lb), *back = malloc (lb);
  struct lb_prng r;

  lb_prng_init (&r, sx->id);
  while (!atomic_load (&sx->stop)) {
    uint64_t lba = sx->id + 4 * (lb_prng_next (&r) % 16);
    uint64_t at = lb_logical_to_bytes (g, lba);
    int rc;

    memset (buf, (int) (lb_prng_next (&r) % 255) + 1, lb);
    rc = conn->ops->pwrite (conn, buf, lb, at, lb_prng_next (&r) % 8 == 0);
    if (rc == 0)
      rc = conn->ops->pread (conn, back, lb, at);
    if (rc == 0) {
      for (uint32_t i = 1; i < lb; i++)
        ck_assert_int_eq (back[i], back[0]);
      if (lb_prng_next (&r) % 16 == 0)
        rc = conn->ops->flush (conn);
    }
    if (rc == -1) {
      ck_assert_int_eq (errno, EIO);
      conn->ops->destroy (conn);
      conn = lb_wcache_connect (sx->f->cache);
    }
  }
  conn->ops->destroy (conn);
  free (buf);
  free (back);
  return NULL;
}

START_TEST (test_concurrent_requests_and_cuts)
{
  struct stress sx[4];
  pthread_t t[4];
  struct lb_cut_report rep;
  struct fixture f;

  fixture_init (&f, &geos[0], (enum lb_cut_mode) _i, 11, 0, 0);
  for (unsigned i = 0; i < 4; i++) {
    sx[i].f = &f;
    sx[i].id = i;
    atomic_init (&sx[i].stop, false);
    ck_assert_int_eq (pthread_create (&t[i], NULL, stress_worker, &sx[i]), 0);
  }
  for (unsigned c = 1; c <= 20; c++) {
    for (volatile unsigned spin = 0; spin < 100000; spin++)
      ;
    ck_assert_int_eq (lb_wcache_cut (f.cache, &rep), 0);
    ck_assert_uint_eq (rep.cut, c);
  }
  for (unsigned i = 0; i < 4; i++) {
    atomic_store (&sx[i].stop, true);
    pthread_join (t[i], NULL);
  }
  fixture_free (&f);
}
END_TEST

/* ---- lock assertions (lib/disk/locking.h) ---- */

/* The exit status of a child that called abort (): it catches SIGABRT
 * and exits, so that valgrind, which reports every process that dies of
 * a signal, stays quiet.
 */
#define ABORTED_STATUS 134

static void
exit_aborted (int sig)
{
  _exit (ABORTED_STATUS);
}

/* Run fn in a child whose stderr comes back in msg; whether the child
 * called abort ().
 */
static bool
child_aborts (void (*fn) (void *), void *arg, char *msg, size_t len)
{
  int fds[2], status;
  ssize_t n, got = 0;
  pid_t pid;

  ck_assert_int_eq (pipe (fds), 0);
  pid = fork ();
  ck_assert_int_ne (pid, -1);
  if (pid == 0) {
    signal (SIGABRT, exit_aborted);
    dup2 (fds[1], STDERR_FILENO);
    close (fds[0]);
    fn (arg);
    _exit (0);
  }
  close (fds[1]);
  while ((size_t) got < len - 1 &&
         (n = read (fds[0], msg + got, len - 1 - (size_t) got)) > 0)
    got += n;
  msg[got] = '\0';
  close (fds[0]);
  ck_assert_int_eq (waitpid (pid, &status, 0), pid);
  return WIFEXITED (status) && WEXITSTATUS (status) == ABORTED_STATUS;
}

static pthread_mutex_t test_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t test_rwlock = PTHREAD_RWLOCK_INITIALIZER;

static void
mutex_not_held (void *arg)
{
  lb_assert_held (&test_mutex);
}

static void
mutex_held (void *arg)
{
  lb_mutex_lock (&test_mutex);
  lb_assert_held_write (&test_mutex);
  lb_mutex_unlock (&test_mutex);
}

static void
rwlock_read_held_asked_for_write (void *arg)
{
  lb_rwlock_rdlock (&test_rwlock);
  lb_assert_held (&test_rwlock);
  lb_assert_held_write (&test_rwlock);
}

static void
rwlock_write_held (void *arg)
{
  lb_rwlock_wrlock (&test_rwlock);
  lb_assert_held (&test_rwlock);
  lb_assert_held_write (&test_rwlock);
  lb_rwlock_unlock (&test_rwlock);
}

static void
rwlock_released (void *arg)
{
  lb_rwlock_wrlock (&test_rwlock);
  lb_rwlock_unlock (&test_rwlock);
  lb_assert_held (&test_rwlock);
}

/* The write cache's own contract: on_cut's assertion outside a cut. */
static void
cut_locks_not_held (void *arg)
{
  lb_wcache_assert_cut_held (arg);
}

struct lock_case {
  const char *name;
  void (*fn) (void *);
  bool aborts; /* in a build with the assertions (no NDEBUG) */
};

static const struct lock_case lock_cases[] = {
  { "mutex not held", mutex_not_held, true },
  { "mutex held", mutex_held, false },
  { "rwlock read-held, write asked", rwlock_read_held_asked_for_write, true },
  { "rwlock write-held", rwlock_write_held, false },
  { "rwlock released", rwlock_released, true },
  { "wcache cut locks outside a cut", cut_locks_not_held, true },
};
#define NR_LOCK_CASES (sizeof lock_cases / sizeof lock_cases[0])

START_TEST (test_lock_assertions_abort_without_the_lock)
{
  const struct lock_case *lc = &lock_cases[_i];
  struct fixture f;
  char msg[512];
  bool aborted;

  fixture_init (&f, &geos[0], LB_CUT_ATOMIC, 1, 0, 0);
  aborted = child_aborts (lc->fn, f.cache, msg, sizeof msg);
#ifdef NDEBUG
  ck_assert_msg (!aborted, "%s: aborted under NDEBUG: %s", lc->name, msg);
#else
  ck_assert_msg (aborted == lc->aborts, "%s: %s (stderr: %s)", lc->name,
                 aborted ? "aborted" : "did not abort", msg);
  if (lc->aborts)
    ck_assert_msg (strstr (msg, "lockdep: ") && strstr (msg, "not held"),
                   "%s: stderr: %s", lc->name, msg);
#endif
  fixture_free (&f);
}
END_TEST

/* Held by another thread is not held by this one. */
struct holder {
  pthread_mutex_t *m;
  pthread_barrier_t taken, done;
};

static void *
hold_mutex (void *arg)
{
  struct holder *h = arg;

  lb_mutex_lock (h->m);
  pthread_barrier_wait (&h->taken);
  pthread_barrier_wait (&h->done);
  lb_mutex_unlock (h->m);
  return NULL;
}

START_TEST (test_lock_held_by_another_thread_is_not_held)
{
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  struct holder h = { .m = &m };
  pthread_t t;

  pthread_barrier_init (&h.taken, NULL, 2);
  pthread_barrier_init (&h.done, NULL, 2);
  ck_assert_int_eq (pthread_create (&t, NULL, hold_mutex, &h), 0);
  pthread_barrier_wait (&h.taken);
#ifndef NDEBUG
  ck_assert (!lb_lockdep_held (&m, false));
#endif
  pthread_barrier_wait (&h.done);
  pthread_join (t, NULL);
  pthread_barrier_destroy (&h.taken);
  pthread_barrier_destroy (&h.done);
}
END_TEST

/* on_cut runs with every cut lock held: its assertion passes. */
static void
assert_in_cut (const struct lb_cut_report *r, void *opaque)
{
  lb_wcache_assert_cut_held (*(struct lb_store **) opaque);
}

START_TEST (test_on_cut_holds_the_cut_locks)
{
  struct lb_geometry g;
  struct lb_store *cache = NULL;
  struct lb_wcache_config c = { .mode = LB_CUT_TORN,
                                .seed = 3,
                                .cache_bytes = 1u << 20,
                                .on_cut = assert_in_cut,
                                .opaque = &cache };
  struct lb_cut_report rep;
  char buf[4096];

  test_geometry (&g, 1u << 20, 16384, 4096, 32u << 20);
  cache = lb_wcache_new (lb_ramstore_new (&g, 0), &c);
  ck_assert_ptr_nonnull (cache);
  memset (buf, 7, sizeof buf);
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, sizeof buf, 0, false), 0);
  ck_assert_int_eq (lb_wcache_cut (cache, &rep), 0);
  ck_assert_uint_eq (rep.cut, 1);
  cache->ops->destroy (cache);
}
END_TEST

static Suite *
wcache_suite (void)
{
  Suite *s = suite_create ("wcache");
  TCase *tc = tcase_create ("core");

  tcase_set_timeout (tc, 120);
  tcase_add_loop_test (tc, test_random_ops_then_cut_obey_the_mode, 0,
                       NR_GEOS * NR_MODES);
  tcase_add_loop_test (tc, test_same_seed_same_image, 0, NR_GEOS * NR_MODES);
  tcase_add_test (tc, test_connections_open_at_the_cut_get_eio);
  tcase_add_test (tc, test_full_cache_flushes_implicitly);
  tcase_add_test (tc, test_spare_buffers_show_no_old_content);
  tcase_add_test (tc, test_cut_after_nth_request);
  tcase_add_loop_test (tc, test_cut_after_not_after_an_earlier_cut, 0, 2);
  tcase_add_test (tc, test_cut_once_by_number);
  tcase_add_test (tc, test_cut_once_races_cut_once);
  tcase_add_loop_test (tc, test_report_precedes_eio, 0, NR_WATCHES);
  tcase_add_test (tc, test_min_bytes_is_the_documented_formula);
  tcase_add_test (tc, test_memory_limit_writes_through);
  tcase_add_test (tc, test_memory_limit_fua_write_flushes_the_copies);
  tcase_add_loop_test (tc, test_concurrent_requests_and_cuts, 0, NR_MODES);
  suite_add_tcase (s, tc);

  tc = tcase_create ("locks");
  tcase_add_loop_test (tc, test_lock_assertions_abort_without_the_lock, 0,
                       NR_LOCK_CASES);
  tcase_add_test (tc, test_lock_held_by_another_thread_is_not_held);
  tcase_add_test (tc, test_on_cut_holds_the_cut_locks);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (wcache_suite);
