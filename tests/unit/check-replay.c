/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/disk/replay unit tests (and the write cache's replay
 * entry points, wcache-replay.c).
 *
 * Byte identity: a live write cache over a RAM store runs a workload
 * with a crash log -- multi-block, partial-block and sub-logical writes,
 * FUA writes (over cached blocks too), zeros, trims, flushes, a live cut
 * in the middle (so the last cut is number 2) -- and is cut at every
 * flush or cut of the workload and at its end; the durable image after
 * each live cut must equal, byte for byte, the replayed state of the
 * epoch that cut closed (the cut's own log) and of the epoch the flush
 * closes in the log of the whole workload, with the same mode and seed:
 * three modes, three geometries (16k/4k, 64k/4k, 16k/16k; the last
 * block short), three seeds, with a roomy cache and with one so small
 * that it flushes by itself, and over a RAM store with so little memory
 * that blocks are written through and written back (under valgrind, one
 * seed a case, in turn).  A log's own cut is
 * replayed with its record's mode, seed and number, not the state's.
 *
 * States for every epoch built in increasing, then decreasing, order
 * are the same images; a state's writes reach neither the base nor
 * another state; a state copies only the blocks its epoch touched and
 * the blocks written to it, on a 1 GiB disk; another epoch while a state
 * is open is EBUSY, an epoch past the log EINVAL; states built from four
 * threads at once are the same image.  The index: what closes each
 * epoch, its records, blocks and cuts.  Damaged logs the write cache
 * cannot have written are refused in one line.  Export names parse and
 * format both ways, and every bad one is refused in one line.
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suites.h"
#include "cowstore.h"
#include "crashlog.h"
#include "largeblock/geometry.h"
#include "prng.h"
#include "ramstore.h"
#include "replay.h"
#include "wcache.h"

#define KiB 1024u

static char dir[64];
static char err[256];
static unsigned nr_paths;

static void
setup (void)
{
  strcpy (dir, "/tmp/lbreplay.XXXXXX");
  ck_assert_ptr_nonnull (mkdtemp (dir));
  nr_paths = 0;
}

static void
teardown (void)
{
  char p[96];

  for (unsigned i = 0; i < nr_paths; i++) {
    snprintf (p, sizeof p, "%s/log%u", dir, i);
    unlink (p);
  }
  rmdir (dir);
}

/* A fresh log path in dir (teardown removes it). */
static const char *
new_path (char *buf, size_t len)
{
  snprintf (buf, len, "%s/log%u", dir, nr_paths++);
  return buf;
}

/* ---- workloads ---- */

struct geo_case {
  uint32_t physical, logical;
};
static const struct geo_case geos[] = {
  { 16 * KiB, 4 * KiB },
  { 64 * KiB, 4 * KiB },
  { 16 * KiB, 16 * KiB },
};
#define NR_GEOS (sizeof geos / sizeof geos[0])

enum op_kind {
  OP_WRITE,
  OP_FUA,       /* a write with FUA */
  OP_ZERO,      /* NO_HOLE */
  OP_ZERO_TRIM, /* may trim */
  OP_TRIM,
  OP_FLUSH,
  OP_CUT, /* a live cut: lb_wcache_cut_once (cache, 1) */
};

/* at = at_p blocks + at_l logical blocks + at_b bytes; len likewise. */
struct op {
  enum op_kind kind;
  uint32_t at_p, at_l, at_b, len_p, len_l, len_b;
};

struct workload {
  const char *name;
  const struct op *ops;
  size_t nr_ops;
  uint64_t cache_blocks;  /* cache_bytes in lb_wcache_min_bytes; 0: roomy */
  uint64_t memory_blocks; /* the RAM store's limit in blocks; 0: none */
};

static const struct op everyday_ops[] = {
  { OP_WRITE, 0, 0, 0, 2, 0, 0 }, /* two whole blocks */
  { OP_WRITE, 2, 1, 0, 0, 1, 0 }, /* one logical block inside one */
  { OP_WRITE, 3, 1, 0, 1, 0, 0 }, /* across a block boundary */
  { OP_FLUSH, 0, 0, 0, 0, 0, 0 },
  { OP_FUA, 4, 0, 0, 0, 1, 0 }, /* FUA, part of a block */
  { OP_WRITE, 5, 0, 0, 1, 0, 0 },
  { OP_FUA, 5, 1, 0, 0, 2, 0 },  /* FUA over a cached block */
  { OP_ZERO, 6, 0, 0, 1, 0, 0 }, /* a whole block */
  { OP_TRIM, 7, 1, 0, 0, 1, 0 },
  { OP_WRITE, 0, 2, 0, 0, 1, 0 },
  { OP_WRITE, 9, 0, 100, 0, 0, 700 }, /* less than a logical block */
  { OP_FLUSH, 0, 0, 0, 0, 0, 0 },
  { OP_WRITE, 8, 0, 0, 2, 1, 0 },
  { OP_TRIM, 8, 0, 0, 1, 0, 0 },   /* a whole cached block */
  { OP_WRITE, 12, 0, 0, 0, 2, 0 }, /* the short last block, whole */
  { OP_ZERO_TRIM, 3, 0, 0, 0, 1, 0 },
  { OP_CUT, 0, 0, 0, 0, 0, 0 },
  { OP_WRITE, 1, 3, 0, 0, 1, 0 },
  { OP_WRITE, 9, 0, 0, 1, 0, 0 },
  { OP_FUA, 0, 1, 0, 0, 1, 0 }, /* into a durable block: copied up */
  { OP_FLUSH, 0, 0, 0, 0, 0, 0 },
  { OP_WRITE, 10, 1, 0, 0, 2, 0 },
  { OP_ZERO, 10, 2, 0, 0, 1, 0 },
  { OP_FUA, 11, 0, 0, 0, 1, 0 },
  { OP_WRITE, 0, 0, 0, 3, 0, 0 },
  { OP_ZERO_TRIM, 1, 0, 0, 1, 0, 0 },
};

/* With a memory limit of three blocks: block 2 durable, blocks 0 and 1
 * cached (the limit reached), block 2 zeroed in the cache; a FUA write
 * to it finds no memory for its buffer, so the cache writes it back
 * first; after a flush, rewrites find no memory and go through.
 */
static const struct op memory_ops[] = {
  { OP_WRITE, 2, 0, 0, 1, 0, 0 }, { OP_FLUSH, 0, 0, 0, 0, 0, 0 },
  { OP_WRITE, 0, 0, 0, 1, 0, 0 }, { OP_WRITE, 1, 0, 0, 1, 0, 0 },
  { OP_ZERO, 2, 0, 0, 1, 0, 0 },  { OP_FUA, 2, 0, 0, 0, 1, 0 },
  { OP_WRITE, 0, 1, 0, 0, 1, 0 }, { OP_FLUSH, 0, 0, 0, 0, 0, 0 },
  { OP_WRITE, 0, 0, 0, 0, 1, 0 }, { OP_WRITE, 1, 0, 0, 1, 0, 0 },
  { OP_WRITE, 2, 0, 0, 0, 1, 0 },
};

#define NR(a) (sizeof a / sizeof a[0])
static const struct workload workloads[] = {
  { "everyday", everyday_ops, NR (everyday_ops), 0, 0 },
  { "small cache", everyday_ops, NR (everyday_ops), 3, 0 },
  { "memory limit", memory_ops, NR (memory_ops), 0, 3 },
};
#define NR_WORKLOADS NR (workloads)

static struct lb_geometry geom;

/* 12 blocks and 2 logical blocks: the last block is short (but for
 * 16k/16k, where it is 2 whole blocks).
 */
static void
use_geometry (unsigned i)
{
  test_geometry (&geom, 12 * (uint64_t) geos[i].physical + 2 * geos[i].logical,
                 geos[i].physical, geos[i].logical, 1u << 20);
}

static uint64_t
op_at (const struct op *o)
{
  return (uint64_t) o->at_p * geom.physical_bytes +
    (uint64_t) o->at_l * geom.logical_bytes + o->at_b;
}

static uint32_t
op_len (const struct op *o)
{
  return o->len_p * geom.physical_bytes + o->len_l * geom.logical_bytes +
    o->len_b;
}

/* Op nr's data: its own bytes, the same in every run. */
static void
op_data (unsigned char *buf, uint32_t len, size_t nr)
{
  struct lb_prng r;

  lb_prng_init (&r, nr + 1);
  for (uint32_t i = 0; i < len; i++)
    buf[i] = (unsigned char) lb_prng_next (&r);
}

static int
apply_op (struct lb_store *cache, const struct op *o, size_t nr)
{
  static unsigned char buf[1 << 20];
  struct lb_cut_report rep;

  switch (o->kind) {
  case OP_WRITE:
  case OP_FUA:
    op_data (buf, op_len (o), nr);
    return cache->ops->pwrite (cache, buf, op_len (o), op_at (o),
                               o->kind == OP_FUA);
  case OP_ZERO: return cache->ops->zero (cache, op_len (o), op_at (o), 0);
  case OP_ZERO_TRIM:
    return cache->ops->zero (cache, op_len (o), op_at (o), LB_ZERO_MAY_TRIM);
  case OP_TRIM: return cache->ops->trim (cache, op_len (o), op_at (o));
  case OP_FLUSH: return cache->ops->flush (cache);
  case OP_CUT: return lb_wcache_cut_once (cache, 1, &rep) == 1 ? 0 : -1;
  }
  return -1;
}

static struct lb_store *
new_live_cache (const struct workload *w, enum lb_cut_mode mode, uint64_t seed,
                struct lb_crashlog *log)
{
  struct lb_wcache_config c = {
    .mode = mode,
    .seed = seed,
    .cache_bytes = w->cache_blocks
      ? w->cache_blocks * lb_wcache_min_bytes (&geom)
      : 64u << 20,
    .log = log,
  };
  struct lb_store *d = lb_ramstore_new (&geom,
                                        w->memory_blocks *
                                          geom.physical_bytes);
  struct lb_store *cache;

  ck_assert_ptr_nonnull (d);
  cache = lb_wcache_new (d, &c);
  ck_assert_ptr_nonnull (cache);
  return cache;
}

static struct lb_crashlog *
new_log (const char *path)
{
  const struct lb_crashlog_geometry g = { geom.size_bytes, geom.physical_bytes,
                                          geom.logical_bytes };
  struct lb_crashlog *log = lb_crashlog_create (path, &g, 64u << 20, err,
                                                sizeof err);

  ck_assert_msg (log != NULL, "%s", err);
  return log;
}

/* Run w's first stop ops live with a log at path; then, if image is not
 * NULL, cut the power (mode, seed) and read the durable image into it.
 */
static void
live_run (const struct workload *w, size_t stop, enum lb_cut_mode mode,
          uint64_t seed, const char *path, unsigned char *image,
          struct lb_cut_report *rep)
{
  struct lb_crashlog *log = new_log (path);
  struct lb_store *cache = new_live_cache (w, mode, seed, log);

  for (size_t i = 0; i < stop; i++) {
    int r = apply_op (cache, &w->ops[i], i);

    /* Only the memory limit may refuse a write (ENOSPC). */
    ck_assert_msg (r == 0 || (w->memory_blocks && errno == ENOSPC),
                   "%s: op %zu: %m", w->name, i);
  }
  if (image) {
    ck_assert_int_eq (lb_wcache_cut (cache, rep), 0);
    ck_assert_int_eq (cache->ops->pread (cache, image,
                                         (uint32_t) geom.size_bytes, 0),
                      0);
  }
  cache->ops->destroy (cache);
  ck_assert_int_eq (lb_crashlog_close (log, err, sizeof err), 0);
}

static struct lb_replay *
open_replay (const char *path)
{
  struct lb_replay *rp = lb_replay_open (path, err, sizeof err);

  ck_assert_msg (rp != NULL, "%s", err);
  return rp;
}

/* The state (epoch, mode, seed) of rp, read whole into image. */
static void
replay_image (struct lb_replay *rp, uint64_t epoch, enum lb_cut_mode mode,
              uint64_t seed, unsigned char *image, struct lb_cut_report *rep)
{
  struct lb_replay_point p = { epoch, mode, seed };
  struct lb_store *s = lb_replay_state (rp, &p, rep, err, sizeof err);

  ck_assert_msg (s != NULL, "%s", err);
  ck_assert_int_eq (s->ops->pread (s, image, (uint32_t) geom.size_bytes, 0),
                    0);
  s->ops->destroy (s);
}

static void
assert_same_image (const unsigned char *live, const unsigned char *replayed,
                   const char *what)
{
  for (uint64_t i = 0; i < geom.size_bytes; i++)
    if (live[i] != replayed[i])
      ck_abort_msg ("%s: the replayed image differs from the live cut at "
                    "byte %ju (block %ju): %02x, live %02x",
                    what, (uintmax_t) i, (uintmax_t) lb_folio_idx (&geom, i),
                    replayed[i], live[i]);
}

static void
report_add (struct lb_cut_report *sum, const struct lb_cut_report *r)
{
  sum->blocks_kept += r->blocks_kept;
  sum->blocks_lost += r->blocks_lost;
  sum->blocks_torn += r->blocks_torn;
}

/* Every stop of w (each flush and cut, and the end) for one mode and
 * seed: the live cut there against both replays.  Adds the live cuts'
 * reports to *sum.
 */
static void
check_identity (const struct workload *w, enum lb_cut_mode mode, uint64_t seed,
                struct lb_cut_report *sum)
{
  unsigned char *live = malloc (geom.size_bytes);
  unsigned char *replayed = malloc (geom.size_bytes);
  char full_path[96], path[96], what[160];
  struct lb_replay *full, *rp;
  struct lb_replay_epoch_info info;
  struct lb_cut_report live_rep, rep;

  ck_assert (live && replayed);
  live_run (w, w->nr_ops, mode, seed, new_path (full_path, sizeof full_path),
            NULL, NULL);
  full = open_replay (full_path);
  for (size_t stop = 0; stop <= w->nr_ops; stop++) {
    uint64_t k;

    if (stop < w->nr_ops && w->ops[stop].kind != OP_FLUSH &&
        w->ops[stop].kind != OP_CUT)
      continue;
    snprintf (what, sizeof what, "%s, %u/%u, %s, seed %ju, stop %zu", w->name,
              geom.physical_bytes, geom.logical_bytes, lb_cut_mode_name (mode),
              (uintmax_t) seed, stop);
    live_run (w, stop, mode, seed, new_path (path, sizeof path), live,
              &live_rep);
    report_add (sum, &live_rep);

    /* The live cut's own log: its cut closes the last epoch but one. */
    rp = open_replay (path);
    k = lb_replay_epochs (rp) - 2;
    ck_assert_int_eq (lb_replay_epoch_info (rp, k, &info), 0);
    ck_assert_int_eq (info.end, LB_REPLAY_END_CUT);
    replay_image (rp, k, mode, seed, replayed, &rep);
    assert_same_image (live, replayed, what);
    ck_assert_uint_eq (rep.cut, live_rep.cut);
    ck_assert_uint_eq (rep.blocks_kept, live_rep.blocks_kept);
    ck_assert_uint_eq (rep.blocks_lost, live_rep.blocks_lost);
    ck_assert_uint_eq (rep.blocks_torn, live_rep.blocks_torn);
    lb_replay_close (rp);
    unlink (path);

    /* The whole workload's log, at the epoch that flush (or cut, or the
     * end) closes: states in increasing epoch order, over one base.
     */
    ck_assert_int_eq (lb_replay_epoch_info (full, k, &info), 0);
    ck_assert_int_eq (info.end,
                      stop == w->nr_ops               ? LB_REPLAY_END_LOG
                        : w->ops[stop].kind == OP_CUT ? LB_REPLAY_END_CUT
                                                      : LB_REPLAY_END_FLUSH);
    replay_image (full, k, mode, seed, replayed, NULL);
    assert_same_image (live, replayed, what);
  }
  lb_replay_close (full);
  free (live);
  free (replayed);
}

/* Loop index: workload, geometry, mode. */
START_TEST (test_identity_with_live_cut)
{
  const struct workload *w = &workloads[_i / (NR_GEOS * 3)];
  enum lb_cut_mode mode = (enum lb_cut_mode) (_i % 3);
  static const uint64_t seeds[] = { 0, 1, 42 };
  struct lb_cut_report sum = { 0 };
  /* Under valgrind (make check-valgrind), one seed a case, in turn. */
  bool sampled = getenv ("LB_VALGRIND") != NULL;

  use_geometry ((unsigned) (_i / 3 % NR_GEOS));
  for (size_t i = 0; i < NR (seeds); i++)
    if (!sampled || i == (size_t) _i % NR (seeds))
      check_identity (w, mode, seeds[i], &sum);
  /* Not vacuous: the cuts had unflushed blocks to keep, lose, tear. */
  if (mode == LB_CUT_LOSE)
    ck_assert (sum.blocks_lost > 0 && sum.blocks_kept == 0);
  else
    ck_assert (sum.blocks_lost + sum.blocks_torn > 0 &&
               sum.blocks_kept + sum.blocks_torn > 0);
  if (mode == LB_CUT_TORN && geom.logical_bytes < geom.physical_bytes &&
      w->memory_blocks == 0)
    ck_assert (sum.blocks_torn > 0);
}
END_TEST

/* The records a log holds, by type and flags. */
struct record_counts {
  unsigned implicit, fua, through, writeback, cut;
};

static void
count_records (const char *path, struct record_counts *n)
{
  struct lb_crashlog_geometry g;
  uint64_t limit;
  struct lb_crashlog_reader *r = lb_crashlog_reader_open (path, &g, &limit,
                                                          err, sizeof err);
  struct lb_crashlog_record rec;

  ck_assert_msg (r != NULL, "%s", err);
  memset (n, 0, sizeof *n);
  while (lb_crashlog_reader_next (r, &rec, err, sizeof err) == 1) {
    n->implicit += rec.type == LB_CRASHLOG_FLUSH &&
      (rec.flags & LB_CRASHLOG_IMPLICIT);
    n->writeback += rec.type == LB_CRASHLOG_WRITEBACK;
    n->cut += rec.type == LB_CRASHLOG_CUT;
    if (rec.type == LB_CRASHLOG_WRITE) {
      n->fua += (rec.flags & LB_CRASHLOG_FUA) != 0;
      n->through += (rec.flags & LB_CRASHLOG_THROUGH) != 0;
    }
  }
  lb_crashlog_reader_close (r);
}

/* The workloads make the records they are there for. */
START_TEST (test_workloads_log_every_kind)
{
  char path[96];
  struct record_counts n;

  use_geometry (0);
  live_run (&workloads[0], workloads[0].nr_ops, LB_CUT_TORN, 0,
            new_path (path, sizeof path), NULL, NULL);
  count_records (path, &n);
  ck_assert (n.fua > 0 && n.cut == 1 && n.implicit == 0);
  live_run (&workloads[1], workloads[1].nr_ops, LB_CUT_TORN, 0,
            new_path (path, sizeof path), NULL, NULL);
  count_records (path, &n);
  ck_assert (n.implicit > 0);
  live_run (&workloads[2], workloads[2].nr_ops, LB_CUT_TORN, 0,
            new_path (path, sizeof path), NULL, NULL);
  count_records (path, &n);
  ck_assert (n.writeback > 0 && n.through > 0 && n.implicit > 0);
}
END_TEST

/* A log's cut is replayed with its own record: live cut 1 (lose, seed 5)
 * in the middle, the final live cut as number 2 with torn, seed 9; the
 * replay of torn, seed 9 must match (using the state's mode for the
 * first cut would keep what lose lost).
 */
START_TEST (test_log_cut_replayed_as_recorded)
{
  const struct workload *w = &workloads[0];
  unsigned char *live, *replayed;
  char path[96];
  struct lb_crashlog *log;
  struct lb_store *cache;
  struct lb_cut_report rep;
  struct lb_replay *rp;

  use_geometry (0);
  live = malloc (geom.size_bytes);
  replayed = malloc (geom.size_bytes);
  log = new_log (new_path (path, sizeof path));
  cache = new_live_cache (w, LB_CUT_LOSE, 5, log);
  for (size_t i = 0; i < w->nr_ops; i++)
    ck_assert_int_eq (apply_op (cache, &w->ops[i], i), 0);
  ck_assert_int_eq (lb_wcache_cut_as (cache, LB_CUT_TORN, 9, 2, &rep), 0);
  ck_assert_uint_eq (lb_wcache_generation (cache), 2);
  ck_assert_int_eq (cache->ops->pread (cache, live, (uint32_t) geom.size_bytes,
                                       0),
                    0);
  cache->ops->destroy (cache);
  ck_assert_int_eq (lb_crashlog_close (log, err, sizeof err), 0);

  rp = open_replay (path);
  replay_image (rp, lb_replay_epochs (rp) - 2, LB_CUT_TORN, 9, replayed, &rep);
  ck_assert_uint_eq (rep.cut, 2);
  assert_same_image (live, replayed, "a log's cut as recorded");
  lb_replay_close (rp);
  free (live);
  free (replayed);
}
END_TEST

/* ---- states and the base ---- */

/* The whole "everyday" workload's log at 16k/4k, and its replay. */
static struct lb_replay *
everyday_replay (void)
{
  char path[96];

  use_geometry (0);
  live_run (&workloads[0], workloads[0].nr_ops, LB_CUT_ATOMIC, 3,
            new_path (path, sizeof path), NULL, NULL);
  return open_replay (path);
}

START_TEST (test_epochs_in_any_order)
{
  struct lb_replay *rp = everyday_replay ();
  uint64_t n = lb_replay_epochs (rp);
  unsigned char *images = malloc (n * geom.size_bytes);
  unsigned char *again = malloc (geom.size_bytes);

  ck_assert_uint_eq (n, 5); /* 3 flushes, 1 cut, the end */
  for (uint64_t k = 0; k < n; k++)
    replay_image (rp, k, LB_CUT_TORN, 11, images + k * geom.size_bytes, NULL);
  for (uint64_t k = n; k-- > 0;) {
    replay_image (rp, k, LB_CUT_TORN, 11, again, NULL);
    assert_same_image (images + k * geom.size_bytes, again, "decreasing");
  }
  /* Epoch 2 twice in a row, then from a fresh replay. */
  replay_image (rp, 2, LB_CUT_TORN, 11, again, NULL);
  assert_same_image (images + 2 * geom.size_bytes, again, "again");
  lb_replay_close (rp);
  rp = everyday_replay ();
  replay_image (rp, 2, LB_CUT_TORN, 11, again, NULL);
  assert_same_image (images + 2 * geom.size_bytes, again, "fresh");
  lb_replay_close (rp);
  free (images);
  free (again);
}
END_TEST

static struct lb_store *
state_at (struct lb_replay *rp, uint64_t epoch)
{
  struct lb_replay_point p = { epoch, LB_CUT_TORN, 1 };
  struct lb_store *s = lb_replay_state (rp, &p, NULL, err, sizeof err);

  ck_assert_msg (s != NULL, "%s", err);
  return s;
}

START_TEST (test_state_writes_stay_in_its_overlay)
{
  struct lb_replay *rp = everyday_replay ();
  unsigned char *before = malloc (geom.size_bytes);
  unsigned char *b = malloc (geom.size_bytes);
  unsigned char ones[4096];
  struct lb_store *s1, *s2, *s3;

  memset (ones, 0xff, sizeof ones);
  s1 = state_at (rp, 1);
  s2 = state_at (rp, 1);
  ck_assert_int_eq (s1->ops->pread (s1, before, (uint32_t) geom.size_bytes, 0),
                    0);
  ck_assert_int_eq (s1->ops->pwrite (s1, ones, sizeof ones, 5000, false), 0);
  ck_assert_int_eq (s1->ops->zero (s1, geom.physical_bytes,
                                   6 * (uint64_t) geom.physical_bytes, 0),
                    0);
  ck_assert_int_eq (s1->ops->pread (s1, b, sizeof ones, 5000), 0);
  ck_assert_mem_eq (b, ones, sizeof ones);
  /* The other state, and one made after the writes, do not see them. */
  ck_assert_int_eq (s2->ops->pread (s2, b, (uint32_t) geom.size_bytes, 0), 0);
  assert_same_image (before, b, "another state");
  s3 = state_at (rp, 1);
  ck_assert_int_eq (s3->ops->pread (s3, b, (uint32_t) geom.size_bytes, 0), 0);
  assert_same_image (before, b, "a later state");
  s1->ops->destroy (s1);
  s2->ops->destroy (s2);
  s3->ops->destroy (s3);
  s1 = state_at (rp, 1);
  ck_assert_int_eq (s1->ops->pread (s1, b, (uint32_t) geom.size_bytes, 0), 0);
  assert_same_image (before, b, "after the writer is gone");
  s1->ops->destroy (s1);
  lb_replay_close (rp);
  free (before);
  free (b);
}
END_TEST

/* nbdkit may unload the plugin (lb_replay_close) before a connection
 * that just hung up destroys its state: the state keeps working and its
 * destroy frees the replay (valgrind and ASan check nothing leaks or is
 * read after it is freed).
 */
START_TEST (test_state_outlives_close)
{
  struct lb_replay *rp = everyday_replay ();
  unsigned char *before = malloc (geom.size_bytes);
  unsigned char *after = malloc (geom.size_bytes);
  struct lb_store *s = state_at (rp, 1);

  ck_assert_int_eq (s->ops->pread (s, before, (uint32_t) geom.size_bytes, 0),
                    0);
  lb_replay_close (rp);
  ck_assert_int_eq (s->ops->pread (s, after, (uint32_t) geom.size_bytes, 0),
                    0);
  assert_same_image (before, after, "after the close");
  s->ops->destroy (s);
  free (before);
  free (after);
}
END_TEST

START_TEST (test_other_epoch_busy_while_open)
{
  struct lb_replay *rp = everyday_replay ();
  struct lb_replay_point p = { 0, LB_CUT_LOSE, 0 };
  struct lb_store *s = state_at (rp, 2), *t;

  ck_assert_ptr_null (lb_replay_state (rp, &p, NULL, err, sizeof err));
  ck_assert_int_eq (errno, EBUSY);
  ck_assert_str_eq (err,
                    "epoch=0: 1 state(s) of epoch 2 are still open over "
                    "the shared base image; close them first");
  p.epoch = 3;
  ck_assert_ptr_null (lb_replay_state (rp, &p, NULL, err, sizeof err));
  ck_assert_int_eq (errno, EBUSY);
  t = state_at (rp, 2); /* the same epoch is fine */
  s->ops->destroy (s);
  p.epoch = 0;
  ck_assert_ptr_null (lb_replay_state (rp, &p, NULL, err, sizeof err));
  ck_assert_int_eq (errno, EBUSY);
  t->ops->destroy (t);
  s = state_at (rp, 0);
  s->ops->destroy (s);
  lb_replay_close (rp);
}
END_TEST

START_TEST (test_epoch_past_the_log_einval)
{
  struct lb_replay *rp = everyday_replay ();
  struct lb_replay_point p = { 5, LB_CUT_TORN, 0 };
  struct lb_replay_epoch_info info;
  char want[256];

  ck_assert_ptr_null (lb_replay_state (rp, &p, NULL, err, sizeof err));
  ck_assert_int_eq (errno, EINVAL);
  snprintf (want, sizeof want, "epoch=5: %s/log0 has 5 epochs (0 to 4)", dir);
  ck_assert_str_eq (err, want);
  p.epoch = UINT64_MAX;
  ck_assert_ptr_null (lb_replay_state (rp, &p, NULL, err, sizeof err));
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_int_eq (lb_replay_epoch_info (rp, 5, &info), -1);
  ck_assert_int_eq (errno, EINVAL);
  lb_replay_close (rp);
}
END_TEST

/* The index of the "everyday" workload at 16k/4k. */
START_TEST (test_epoch_index)
{
  struct lb_replay *rp = everyday_replay ();
  struct lb_crashlog_geometry g;
  struct lb_replay_epoch_info info;
  static const struct {
    enum lb_replay_end end;
    uint64_t first_seq, end_seq, blocks, cuts_before;
  } want[] = {
    /* write 2 blocks, 1, 2 (across): records 0-4, blocks 0 1 2 3 4 */
    { LB_REPLAY_END_FLUSH, 0, 5, 5, 0 },
    /* FUA 4, write 5, FUA 5, zero 6, trim 7, write 0, write 9 */
    { LB_REPLAY_END_FLUSH, 6, 13, 6, 0 },
    /* write 8 9 10, trim 8, write 12, zero 3 */
    { LB_REPLAY_END_CUT, 14, 20, 5, 0 },
    /* write 1, write 9, FUA 0 */
    { LB_REPLAY_END_FLUSH, 21, 24, 3, 1 },
    /* write 10, zero 10, FUA 11, write 0 1 2, zero 1 */
    { LB_REPLAY_END_LOG, 25, 32, 5, 1 },
  };

  lb_replay_geometry (rp, &g);
  ck_assert_uint_eq (g.disk_size, geom.size_bytes);
  ck_assert_uint_eq (g.blksize, 16 * KiB);
  ck_assert_uint_eq (g.logical_blksize, 4 * KiB);
  ck_assert_uint_eq (lb_replay_disk_geometry (rp)->physical_bytes, 16 * KiB);
  ck_assert_uint_eq (lb_replay_epochs (rp), NR (want));
  for (size_t k = 0; k < NR (want); k++) {
    ck_assert_int_eq (lb_replay_epoch_info (rp, k, &info), 0);
    ck_assert_msg (info.end == want[k].end &&
                     info.first_seq == want[k].first_seq &&
                     info.end_seq == want[k].end_seq &&
                     info.blocks_written == want[k].blocks &&
                     info.cuts_before == want[k].cuts_before,
                   "epoch %zu: %s, records %ju..%ju, %ju blocks, %ju cuts "
                   "before",
                   k, lb_replay_end_name (info.end),
                   (uintmax_t) info.first_seq, (uintmax_t) info.end_seq,
                   (uintmax_t) info.blocks_written,
                   (uintmax_t) info.cuts_before);
  }
  ck_assert_str_eq (lb_replay_end_name (LB_REPLAY_END_IMPLICIT_FLUSH),
                    "implicit flush");
  lb_replay_close (rp);
}
END_TEST

/* A 1 GiB disk: a state copies the blocks its epoch touched (into the
 * cut's resolution) and the blocks written to it, nothing more.
 */
START_TEST (test_state_costs_blocks_changed_not_disk)
{
  const struct workload big = { "big", everyday_ops, NR (everyday_ops), 0, 0 };
  char path[96];
  struct lb_replay *rp;
  struct lb_replay_epoch_info info;
  struct lb_store *s;
  struct lb_store_usage u;
  unsigned char buf[16 * KiB];

  test_geometry (&geom, 1ull << 30, 16 * KiB, 4 * KiB, 1u << 20);
  live_run (&big, big.nr_ops, LB_CUT_TORN, 0, new_path (path, sizeof path),
            NULL, NULL);
  rp = open_replay (path);
  for (uint64_t k = 0; k < lb_replay_epochs (rp); k++) {
    s = state_at (rp, k);
    ck_assert_int_eq (lb_replay_epoch_info (rp, k, &info), 0);
    ck_assert_uint_le (lb_cowstore_blocks (s), info.blocks_written);
    memset (buf, 'r', sizeof buf);
    ck_assert_int_eq (s->ops->pwrite (s, buf, sizeof buf, 500ull << 20, false),
                      0);
    ck_assert_int_eq (s->ops->pwrite (s, buf, 8 * KiB, 700ull << 20, false),
                      0);
    ck_assert_uint_le (lb_cowstore_blocks (s), info.blocks_written + 2);
    s->ops->usage (s, &u);
    ck_assert_uint_le (u.folios_allocated, info.blocks_written + 2);
    s->ops->destroy (s);
  }
  lb_replay_close (rp);
}
END_TEST

struct reader_thread {
  struct lb_replay *rp;
  const unsigned char *want;
  int failed;
};

static void *
build_and_read (void *opaque)
{
  struct reader_thread *t = opaque;
  struct lb_replay_point p = { 3, LB_CUT_TORN, 11 };
  unsigned char *b = malloc (geom.size_bytes);
  char e[256];

  for (int i = 0; i < 4 && !t->failed; i++) {
    struct lb_store *s = lb_replay_state (t->rp, &p, NULL, e, sizeof e);

    if (s == NULL || b == NULL ||
        s->ops->pread (s, b, (uint32_t) geom.size_bytes, 0) == -1 ||
        memcmp (b, t->want, geom.size_bytes) != 0)
      t->failed = 1;
    if (s && b && s->ops->pwrite (s, b, 512, 4096, false) == -1)
      t->failed = 1;
    if (s)
      s->ops->destroy (s);
  }
  free (b);
  return NULL;
}

START_TEST (test_states_built_from_threads)
{
  struct lb_replay *rp = everyday_replay ();
  unsigned char *want = malloc (geom.size_bytes);
  struct reader_thread t[4];
  pthread_t th[4];

  replay_image (rp, 3, LB_CUT_TORN, 11, want, NULL);
  for (int i = 0; i < 4; i++) {
    t[i] = (struct reader_thread) { rp, want, 0 };
    ck_assert_int_eq (pthread_create (&th[i], NULL, build_and_read, &t[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join (th[i], NULL);
    ck_assert_int_eq (t[i].failed, 0);
  }
  lb_replay_close (rp);
  free (want);
}
END_TEST

/* ---- logs the cache cannot have written ---- */

static const struct bad_log {
  const char *name;
  struct lb_crashlog_record recs[2];
  size_t nr;
  const char *fault; /* the message after "PATH: " */
} bad_logs[] = {
  { "piece across blocks",
    { { .type = LB_CRASHLOG_TRIM, .offset = 12 * KiB, .length = 8 * KiB } },
    1,
    "record 0: a piece across a block boundary (the cache logs one record "
    "per physical block)" },
  { "empty piece",
    { { .type = LB_CRASHLOG_ZERO, .offset = 0, .length = 0 } },
    1,
    "record 0: a piece of no bytes" },
  { "write-back of part of a block",
    { { .type = LB_CRASHLOG_WRITEBACK, .offset = 0, .length = 4 * KiB } },
    1,
    "record 0: a write-back that is not one whole block" },
  { "cut numbered 2 first",
    { { .type = LB_CRASHLOG_CUT, .flags = 1, .offset = 3, .length = 2 } },
    1,
    "record 0: cut number 2 after 0 cuts (cuts are numbered 1, 2, ...)" },
  { "second cut numbered 1",
    { { .type = LB_CRASHLOG_CUT, .offset = 3, .length = 1 },
      { .type = LB_CRASHLOG_CUT, .offset = 3, .length = 1 } },
    2,
    "record 1: cut number 1 after 1 cuts (cuts are numbered 1, 2, ...)" },
};
#define NR_BAD_LOGS NR (bad_logs)

START_TEST (test_bad_log_refused)
{
  const struct bad_log *b = &bad_logs[_i];
  const struct lb_crashlog_geometry g = { 1u << 20, 16 * KiB, 4 * KiB };
  char path[96], want[512];
  struct lb_crashlog *log;

  new_path (path, sizeof path);
  log = lb_crashlog_create (path, &g, 1u << 20, err, sizeof err);
  ck_assert_msg (log != NULL, "%s", err);
  for (size_t i = 0; i < b->nr; i++)
    ck_assert_msg (lb_crashlog_add (log, &b->recs[i], LB_CRASHLOG_ROOM_FREE,
                                    err, sizeof err) == 0,
                   "%s: %s", b->name, err);
  ck_assert_int_eq (lb_crashlog_close (log, err, sizeof err), 0);
  ck_assert_ptr_null (lb_replay_open (path, err, sizeof err));
  ck_assert_int_eq (errno, EINVAL);
  snprintf (want, sizeof want, "%s: %s", path, b->fault);
  ck_assert_str_eq (err, want);
}
END_TEST

START_TEST (test_bad_geometry_refused)
{
  /* The reader takes 12k/4k (a multiple); the disk cannot have it. */
  const struct lb_crashlog_geometry g = { 12 * 64 * KiB, 12 * KiB, 4 * KiB };
  char path[96], want[512];
  struct lb_crashlog *log;

  log = lb_crashlog_create (new_path (path, sizeof path), &g, 1u << 20, err,
                            sizeof err);
  ck_assert_msg (log != NULL, "%s", err);
  ck_assert_int_eq (lb_crashlog_close (log, err, sizeof err), 0);
  ck_assert_ptr_null (lb_replay_open (path, err, sizeof err));
  ck_assert_int_eq (errno, EINVAL);
  snprintf (want, sizeof want, "%s: the log's disk: ", path);
  ck_assert_msg (strncmp (err, want, strlen (want)) == 0, "%s", err);
  ck_assert_msg (strstr (err, "12288") != NULL, "%s", err);
  ck_assert_ptr_null (lb_replay_open ("/nonexistent/log", err, sizeof err));
  ck_assert_int_eq (errno, ENOENT);
}
END_TEST

/* An empty log: one epoch, the empty disk. */
START_TEST (test_empty_log_one_epoch)
{
  const struct lb_crashlog_geometry g = { 1u << 20, 16 * KiB, 4 * KiB };
  char path[96];
  struct lb_crashlog *log;
  struct lb_replay *rp;
  struct lb_replay_epoch_info info;
  struct lb_store *s;
  unsigned char b[4096], zero[4096] = { 0 };

  log = lb_crashlog_create (new_path (path, sizeof path), &g, 1u << 20, err,
                            sizeof err);
  ck_assert_msg (log != NULL, "%s", err);
  ck_assert_int_eq (lb_crashlog_close (log, err, sizeof err), 0);
  rp = open_replay (path);
  ck_assert_uint_eq (lb_replay_epochs (rp), 1);
  ck_assert_int_eq (lb_replay_epoch_info (rp, 0, &info), 0);
  ck_assert_int_eq (info.end, LB_REPLAY_END_LOG);
  ck_assert_uint_eq (info.end_seq, 0);
  s = state_at (rp, 0);
  ck_assert_int_eq (s->ops->pread (s, b, sizeof b, 1000), 0);
  ck_assert_mem_eq (b, zero, sizeof b);
  s->ops->destroy (s);
  lb_replay_close (rp);
}
END_TEST

/* ---- the write cache's replay entry points ---- */

START_TEST (test_wcache_replay_refuses_what_it_cannot_have_logged)
{
  struct lb_wcache_config c = { .cache_bytes = LB_WCACHE_UNBOUNDED };
  struct lb_store *cache, *d;
  struct lb_cut_report rep;
  unsigned char buf[32 * KiB] = { 0 };
  struct lb_crashlog_record across = { .type = LB_CRASHLOG_WRITE,
                                       .offset = 12 * KiB,
                                       .length = 8 * KiB,
                                       .data = buf };
  struct lb_crashlog_record wb = { .type = LB_CRASHLOG_WRITEBACK,
                                   .offset = 16 * KiB,
                                   .length = 16 * KiB };
  struct lb_crashlog_record cut = {
    .type = LB_CRASHLOG_CUT, .flags = LB_CUT_ATOMIC, .offset = 1, .length = 1
  };

  use_geometry (0);
  cache = lb_wcache_new (lb_ramstore_new (&geom, 0), &c);
  ck_assert_ptr_nonnull (cache);
  ck_assert_int_eq (lb_wcache_replay_record (cache, &across, NULL), -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_int_eq (lb_wcache_replay_record (cache, &wb, NULL), -1);
  ck_assert_int_eq (errno, EINVAL); /* the cache holds no block 1 */
  ck_assert_int_eq (lb_wcache_replay_record (cache, &cut, &rep), 0);
  ck_assert_uint_eq (rep.cut, 1);
  ck_assert_int_eq (lb_wcache_replay_record (cache, &cut, &rep), -1);
  ck_assert_int_eq (errno, EINVAL); /* cut 1 again */
  ck_assert_int_eq (lb_wcache_cut_as (cache, LB_CUT_TORN, 0, 1, &rep), -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_int_eq (lb_wcache_cut_as (cache, LB_CUT_TORN, 0, 5, &rep), 0);
  ck_assert_uint_eq (lb_wcache_generation (cache), 5);
  /* Release gives the durable store back, alive. */
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, 4 * KiB, 0, true), 0);
  d = lb_wcache_release (cache);
  ck_assert_int_eq (d->ops->pread (d, buf, 4 * KiB, 0), 0);
  d->ops->destroy (d);
}
END_TEST

/* ---- export names ---- */

static const struct {
  const char *name;
  struct lb_replay_point p;
  const char *canonical;
} good_names[] = {
  { "epoch=3", { 3, LB_CUT_TORN, 0 }, "epoch=3,mode=torn,seed=0" },
  { "epoch=0,mode=lose,seed=1",
    { 0, LB_CUT_LOSE, 1 },
    "epoch=0,mode=lose,seed=1" },
  { "seed=18446744073709551615,mode=atomic,epoch=7",
    { 7, LB_CUT_ATOMIC, UINT64_MAX },
    "epoch=7,mode=atomic,seed=18446744073709551615" },
  { "mode=torn,epoch=007", { 7, LB_CUT_TORN, 0 }, "epoch=7,mode=torn,seed=0" },
};

START_TEST (test_point_names_round_trip)
{
  struct lb_replay_point p, q;
  char buf[128];

  for (size_t i = 0; i < NR (good_names); i++) {
    ck_assert_msg (lb_replay_point_parse (good_names[i].name, &p, err,
                                          sizeof err) == 0,
                   "%s", err);
    ck_assert_uint_eq (p.epoch, good_names[i].p.epoch);
    ck_assert_int_eq (p.mode, good_names[i].p.mode);
    ck_assert_uint_eq (p.seed, good_names[i].p.seed);
    lb_replay_point_format (&p, buf, sizeof buf);
    ck_assert_str_eq (buf, good_names[i].canonical);
    ck_assert_int_eq (lb_replay_point_parse (buf, &q, err, sizeof err), 0);
    ck_assert_mem_eq (&p, &q, sizeof p);
  }
}
END_TEST

#define SYNTAX "(the syntax: epoch=K[,mode=lose|atomic|torn][,seed=S])"
static const struct {
  const char *name, *message;
} bad_names[] = {
  { "", "export name \"\": no epoch " SYNTAX },
  { "mode=torn,seed=1", "export name \"mode=torn,seed=1\": no epoch " SYNTAX },
  { "epoch=1,size=2",
    "export name \"epoch=1,size=2\": unknown key \"size\" (keys: epoch, "
    "mode, seed)" },
  { "epoch=1,epoch=2",
    "export name \"epoch=1,epoch=2\": key \"epoch\" given twice" },
  { "epoch=x",
    "export name \"epoch=x\": epoch \"x\" is not a decimal number "
    "from 0 to 18446744073709551615" },
  { "epoch=",
    "export name \"epoch=\": epoch \"\" is not a decimal number "
    "from 0 to 18446744073709551615" },
  { "epoch=-1",
    "export name \"epoch=-1\": epoch \"-1\" is not a decimal "
    "number from 0 to 18446744073709551615" },
  { "epoch=1,seed=18446744073709551616",
    "export name \"epoch=1,seed=18446744073709551616\": seed "
    "\"18446744073709551616\" is not a decimal number from 0 to "
    "18446744073709551615" },
  { "epoch=1,mode=shred",
    "export name \"epoch=1,mode=shred\": mode \"shred\" is not lose, atomic "
    "or torn" },
  { "epoch=1,mode=atomicatomicatomic",
    "export name \"epoch=1,mode=atomicatomicatomic\": mode "
    "\"atomicatomicatomic\" is not lose, atomic or torn" },
  { "epoch=1,", "export name \"epoch=1,\": an empty item " SYNTAX },
  { "epoch=1,,seed=2",
    "export name \"epoch=1,,seed=2\": an empty item " SYNTAX },
  { "epoch1", "export name \"epoch1\": \"epoch1\" is not KEY=VALUE " SYNTAX },
  { "epoch =1",
    "export name \"epoch =1\": unknown key \"epoch \" (keys: "
    "epoch, mode, seed)" },
  { "epoch=1\n",
    "export name \"epoch=1?\": epoch \"1?\" is not a decimal "
    "number from 0 to 18446744073709551615" },
};
#define NR_BAD_NAMES NR (bad_names)

START_TEST (test_bad_point_name_refused)
{
  struct lb_replay_point p = { 99, LB_CUT_ATOMIC, 99 };

  ck_assert_int_eq (lb_replay_point_parse (bad_names[_i].name, &p, err,
                                           sizeof err),
                    -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_str_eq (err, bad_names[_i].message);
  ck_assert_uint_eq (p.epoch, 99); /* untouched */
}
END_TEST

static Suite *
replay_suite (void)
{
  Suite *s = suite_create ("replay");
  TCase *tc = tcase_create ("identity");

  tcase_set_timeout (tc, 600);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_loop_test (tc, test_identity_with_live_cut, 0,
                       NR_WORKLOADS * NR_GEOS * 3);
  tcase_add_test (tc, test_workloads_log_every_kind);
  tcase_add_test (tc, test_log_cut_replayed_as_recorded);
  suite_add_tcase (s, tc);

  tc = tcase_create ("states");
  tcase_set_timeout (tc, 120);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_epochs_in_any_order);
  tcase_add_test (tc, test_state_writes_stay_in_its_overlay);
  tcase_add_test (tc, test_other_epoch_busy_while_open);
  tcase_add_test (tc, test_state_outlives_close);
  tcase_add_test (tc, test_epoch_past_the_log_einval);
  tcase_add_test (tc, test_epoch_index);
  tcase_add_test (tc, test_state_costs_blocks_changed_not_disk);
  tcase_add_test (tc, test_states_built_from_threads);
  tcase_add_loop_test (tc, test_bad_log_refused, 0, NR_BAD_LOGS);
  tcase_add_test (tc, test_bad_geometry_refused);
  tcase_add_test (tc, test_empty_log_one_epoch);
  tcase_add_test (tc, test_wcache_replay_refuses_what_it_cannot_have_logged);
  suite_add_tcase (s, tc);

  tc = tcase_create ("names");
  tcase_add_test (tc, test_point_names_round_trip);
  tcase_add_loop_test (tc, test_bad_point_name_refused, 0, NR_BAD_NAMES);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (replay_suite);
