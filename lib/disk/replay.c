/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: crash states rebuilt from a crash log -- see replay.h.
 *
 * Owns the log's index (where each epoch starts, what closes it, its
 * cuts and blocks), the shared base image and the building of states.
 *
 * The base: a RAM store and an unbounded write cache over it (base_cache)
 * through which every record before the wanted epoch is replayed; each
 * epoch ends with a flush or a cut, so between epochs the cache is empty
 * and the RAM store alone is the durable image at the next epoch's start.
 * Asking for a later epoch replays on from where the base is; an earlier
 * one starts again from an empty disk.
 *
 * A state: a copy-on-write overlay (cowstore.h) over the base's RAM
 * store, and a fresh unbounded write cache over the overlay that is fed
 * the epoch's records and cut (lb_wcache_cut_as) with the state's mode
 * and seed, as the cut after the epoch's cuts_before.  The cache is then
 * let go (lb_wcache_release, empty after the cut) and the overlay is the
 * state: reads fall through to the base, writes stay in the overlay.
 *
 * Locking (locking.h's row 0):
 * - rp->lock (a mutex) serializes builds: it is held from the EBUSY check
 *   to the state's return, over the log reader, the base and base_epoch.
 *   Everything else -- the write caches, the overlay, the RAM stores --
 *   is taken under it.
 * - open_states counts the states built and not yet destroyed.  A state
 *   is only made under rp->lock, and its destroy (the overlay's release
 *   callback) decrements the count without any lock, so a destroy never
 *   waits for a build.  The base moves only under rp->lock when the
 *   count is 0 -- it cannot rise then, so no state reads a base that moves.
 * - The index and the geometry are fixed after lb_replay_open.
 * - refs (atomic) holds rp: one for lb_replay_close's caller and one per
 *   open state; whoever drops the last frees it, so lb_replay_close with
 *   states still open leaves them working and the last destroy frees.
 */
#include <config.h>

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cowstore.h"
#include "error.h"
#include "locking.h"
#include "ramstore.h"
#include "replay.h"

struct epoch {
  struct lb_crashlog_position start; /* its first record */
  struct lb_replay_epoch_info info;
};

struct lb_replay {
  /* Fixed after lb_replay_open. */
  char *path;
  struct lb_crashlog_geometry cg;
  struct lb_geometry g;
  struct epoch *epochs;
  uint64_t nr_epochs;
  /* Serializes builds; protects the fields below (see the top comment). */
  pthread_mutex_t lock;
  struct lb_crashlog_reader *reader; /* lock */
  struct lb_store *base_cache;       /* lock; NULL: no base yet */
  struct lb_store *base;             /* lock: base_cache's durable store */
  uint64_t base_epoch;               /* lock: base is this epoch's start */
  /* No lock: states built and not destroyed (see the top comment). */
  _Atomic uint64_t open_states;
  /* No lock: open states + 1 until lb_replay_close; the last one frees
   * rp, so a state may outlive the close (nbdkit can unload a plugin
   * before a connection that just hung up has closed).
   */
  _Atomic uint64_t refs;
};

/* Every cache of a replay: never flushes or cuts on its own. */
static const struct lb_wcache_config replay_config = {
  .mode = LB_CUT_TORN,
  .cache_bytes = LB_WCACHE_UNBOUNDED,
};

const char *
lb_replay_end_name (enum lb_replay_end end)
{
  switch (end) {
  case LB_REPLAY_END_FLUSH: return "flush";
  case LB_REPLAY_END_IMPLICIT_FLUSH: return "implicit flush";
  case LB_REPLAY_END_CUT: return "cut";
  case LB_REPLAY_END_LOG: return "end of log";
  }
  abort ();
}

/* ---- the index ---- */

/* What one pass over the log keeps while it indexes. */
struct indexer {
  struct lb_replay *rp;
  struct lb_crashlog_reader *r;
  uint64_t *blocks; /* the current epoch's blocks, repeats and all */
  size_t nr_blocks, cap_blocks;
  uint64_t cap_epochs;
  uint64_t cuts;
};

static int
push_block (struct indexer *ix, uint64_t idx)
{
  if (ix->nr_blocks == ix->cap_blocks) {
    size_t cap = ix->cap_blocks ? 2 * ix->cap_blocks : 256;
    uint64_t *b = realloc (ix->blocks, cap * sizeof *b);

    if (b == NULL)
      return -1;
    ix->blocks = b;
    ix->cap_blocks = cap;
  }
  ix->blocks[ix->nr_blocks++] = idx;
  return 0;
}

static int
by_value (const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

  return (x > y) - (x < y);
}

/* The distinct blocks of the current epoch (and forget them). */
static uint64_t
take_distinct_blocks (struct indexer *ix)
{
  uint64_t n = 0;

  if (ix->nr_blocks == 0)
    return 0;
  qsort (ix->blocks, ix->nr_blocks, sizeof *ix->blocks, by_value);
  for (size_t i = 0; i < ix->nr_blocks; i++)
    if (i == 0 || ix->blocks[i] != ix->blocks[i - 1])
      n++;
  ix->nr_blocks = 0;
  return n;
}

/* Open a new epoch at the reader's position. */
static int
start_epoch (struct indexer *ix)
{
  struct lb_replay *rp = ix->rp;
  struct epoch *ep;

  if (rp->nr_epochs == ix->cap_epochs) {
    uint64_t cap = ix->cap_epochs ? 2 * ix->cap_epochs : 64;

    ep = realloc (rp->epochs, cap * sizeof *ep);
    if (ep == NULL)
      return -1;
    rp->epochs = ep;
    ix->cap_epochs = cap;
  }
  ep = &rp->epochs[rp->nr_epochs++];
  lb_crashlog_reader_tell (ix->r, &ep->start);
  ep->info = (struct lb_replay_epoch_info) {
    .end = LB_REPLAY_END_LOG,
    .first_seq = ep->start.seq,
    .cuts_before = ix->cuts,
  };
  return 0;
}

/* Close the current epoch with rec (NULL: the end of the log at seq). */
static void
end_epoch (struct indexer *ix, const struct lb_crashlog_record *rec,
           uint64_t seq)
{
  struct lb_replay_epoch_info *info =
    &ix->rp->epochs[ix->rp->nr_epochs - 1].info;

  info->end_seq = seq;
  info->blocks_written = take_distinct_blocks (ix);
  if (rec == NULL)
    info->end = LB_REPLAY_END_LOG;
  else if (rec->type == LB_CRASHLOG_CUT)
    info->end = LB_REPLAY_END_CUT;
  else if (rec->flags & LB_CRASHLOG_IMPLICIT)
    info->end = LB_REPLAY_END_IMPLICIT_FLUSH;
  else
    info->end = LB_REPLAY_END_FLUSH;
}

/* The bytes of block idx inside the disk (the last one may be short). */
static uint64_t
block_bytes (const struct lb_geometry *g, uint64_t idx)
{
  uint64_t left = g->size_bytes - lb_folio_to_bytes (g, idx);

  return left < g->physical_bytes ? left : g->physical_bytes;
}

/* What the write cache cannot have logged in rec (crashlog.c checked the
 * rest), or NULL.  A cut's number is checked by the caller.
 */
static const char *
record_fault (const struct lb_geometry *g,
              const struct lb_crashlog_record *rec)
{
  switch (rec->type) {
  case LB_CRASHLOG_WRITE:
  case LB_CRASHLOG_TRIM:
  case LB_CRASHLOG_ZERO:
    if (rec->length == 0)
      return "a piece of no bytes";
    if (lb_folio_idx (g, rec->offset) !=
        lb_folio_idx (g, rec->offset + rec->length - 1))
      return "a piece across a block boundary (the cache logs one "
             "record per physical block)";
    return NULL;
  case LB_CRASHLOG_WRITEBACK:
    if (rec->offset >= g->size_bytes || lb_folio_offset (g, rec->offset) ||
        rec->length != block_bytes (g, lb_folio_idx (g, rec->offset)))
      return "a write-back that is not one whole block";
    return NULL;
  default: return NULL;
  }
}

/* Index one record: check it, count its block, close its epoch. */
static int
index_record (struct indexer *ix, const struct lb_crashlog_record *rec,
              char *err, size_t errlen)
{
  struct lb_replay *rp = ix->rp;
  const char *fault = record_fault (&rp->g, rec);

  if (fault)
    return lb_fail (EINVAL, err, errlen, "%s: record %" PRIu64 ": %s",
                    rp->path, rec->seq, fault);
  switch (rec->type) {
  case LB_CRASHLOG_FLUSH:
  case LB_CRASHLOG_CUT:
    if (rec->type == LB_CRASHLOG_CUT && rec->length != ix->cuts + 1)
      return lb_fail (EINVAL, err, errlen,
                      "%s: record %" PRIu64 ": cut number %" PRIu64
                      " after %" PRIu64 " cuts (cuts are numbered 1, 2, ...)",
                      rp->path, rec->seq, rec->length, ix->cuts);
    end_epoch (ix, rec, rec->seq);
    ix->cuts += rec->type == LB_CRASHLOG_CUT;
    if (start_epoch (ix) == -1)
      return lb_fail (ENOMEM, err, errlen, "%s: indexing it: %m", rp->path);
    return 0;
  default:
    if (push_block (ix, lb_folio_idx (&rp->g, rec->offset)) == -1)
      return lb_fail (ENOMEM, err, errlen, "%s: indexing it: %m", rp->path);
    return 0;
  }
}

/* Read the whole log once, filling rp's epochs. */
static int
index_log (struct lb_replay *rp, char *err, size_t errlen)
{
  struct indexer ix = { .rp = rp, .r = rp->reader };
  struct lb_crashlog_record rec;
  struct lb_crashlog_position end;
  int got, ret = -1;

  if (start_epoch (&ix) == -1) {
    lb_fail (ENOMEM, err, errlen, "%s: indexing it: %m", rp->path);
    goto out;
  }
  while ((got = lb_crashlog_reader_next (rp->reader, &rec, err, errlen)) == 1)
    if (index_record (&ix, &rec, err, errlen) == -1)
      goto out;
  if (got == -1)
    goto out;
  lb_crashlog_reader_tell (rp->reader, &end);
  end_epoch (&ix, NULL, end.seq);
  ret = 0;
out:
  free (ix.blocks);
  return ret;
}

static int
check_geometry (struct lb_replay *rp, char *err, size_t errlen)
{
  char why[256];

  if (lb_geometry_make (&rp->g, rp->cg.disk_size, rp->cg.logical_blksize,
                        rp->cg.blksize, why, sizeof why) == -1)
    return lb_fail (EINVAL, err, errlen, "%s: the log's disk: %s", rp->path,
                    why);
  return 0;
}

struct lb_replay *
lb_replay_open (const char *log_path, char *err, size_t errlen)
{
  struct lb_replay *rp = calloc (1, sizeof *rp);
  uint64_t limit;

  if (rp == NULL || (rp->path = strdup (log_path)) == NULL) {
    lb_fail (ENOMEM, err, errlen, "%s: %m", log_path);
    free (rp);
    return NULL;
  }
  pthread_mutex_init (&rp->lock, NULL);
  atomic_init (&rp->refs, 1);
  rp->reader = lb_crashlog_reader_open (log_path, &rp->cg, &limit, err,
                                        errlen);
  if (rp->reader == NULL || check_geometry (rp, err, errlen) == -1 ||
      index_log (rp, err, errlen) == -1) {
    int saved = errno;

    lb_replay_close (rp);
    errno = saved;
    return NULL;
  }
  return rp;
}

static void
replay_free (struct lb_replay *rp)
{
  if (rp->base_cache)
    rp->base_cache->ops->destroy (rp->base_cache);
  lb_crashlog_reader_close (rp->reader);
  pthread_mutex_destroy (&rp->lock);
  free (rp->epochs);
  free (rp->path);
  free (rp);
}

static void
replay_put (struct lb_replay *rp)
{
  if (atomic_fetch_sub (&rp->refs, 1) == 1)
    replay_free (rp);
}

void
lb_replay_close (struct lb_replay *rp)
{
  if (rp)
    replay_put (rp);
}

void
lb_replay_geometry (const struct lb_replay *rp, struct lb_crashlog_geometry *g)
{
  *g = rp->cg;
}

const struct lb_geometry *
lb_replay_disk_geometry (const struct lb_replay *rp)
{
  return &rp->g;
}

uint64_t
lb_replay_epochs (const struct lb_replay *rp)
{
  return rp->nr_epochs;
}

int
lb_replay_epoch_info (const struct lb_replay *rp, uint64_t epoch,
                      struct lb_replay_epoch_info *info)
{
  if (epoch >= rp->nr_epochs) {
    errno = EINVAL;
    return -1;
  }
  *info = rp->epochs[epoch].info;
  return 0;
}

/* ---- replaying ---- */

/* Replay the records from position at up to (not including) record
 * end_seq into cache.  EIO when the log no longer reads as it did.
 */
static int
replay_records_locked (struct lb_replay *rp, struct lb_store *cache,
                       const struct lb_crashlog_position *at, uint64_t end_seq,
                       char *err, size_t errlen)
{
  struct lb_crashlog_record rec;
  char why[256];
  int got;

  lb_assert_held (&rp->lock);
  if (lb_crashlog_reader_seek (rp->reader, at, why, sizeof why) == -1)
    return lb_fail (EIO, err, errlen, "%s", why);
  for (uint64_t seq = at->seq; seq < end_seq; seq++) {
    got = lb_crashlog_reader_next (rp->reader, &rec, why, sizeof why);
    if (got != 1)
      return lb_fail (EIO, err, errlen, "%s: reading it again: %s", rp->path,
                      got == 0 ? "it ends early" : why);
    if (lb_wcache_replay_record (cache, &rec, NULL) == -1)
      return lb_fail (errno, err, errlen,
                      "%s: record %" PRIu64 ": replaying it: %m", rp->path,
                      rec.seq);
  }
  return 0;
}

static void
base_drop_locked (struct lb_replay *rp)
{
  lb_assert_held (&rp->lock);
  if (rp->base_cache)
    rp->base_cache->ops->destroy (rp->base_cache);
  rp->base_cache = rp->base = NULL;
  rp->base_epoch = 0;
}

/* An empty disk: the image at the start of epoch 0. */
static int
base_reset_locked (struct lb_replay *rp, char *err, size_t errlen)
{
  lb_assert_held (&rp->lock);
  base_drop_locked (rp);
  rp->base = lb_ramstore_new (&rp->g, 0);
  if (rp->base == NULL ||
      (rp->base_cache = lb_wcache_new (rp->base, &replay_config)) == NULL) {
    if (rp->base)
      rp->base->ops->destroy (rp->base);
    rp->base = NULL;
    return lb_fail (ENOMEM, err, errlen, "%s: the base image: %m", rp->path);
  }
  return 0;
}

/* Make the base the image at the start of epoch (no state is open, or
 * epoch is the base's already).  A failure drops the base.
 */
static int
base_move_locked (struct lb_replay *rp, uint64_t epoch, char *err,
                  size_t errlen)
{
  lb_assert_held (&rp->lock);
  if ((rp->base_cache == NULL || epoch < rp->base_epoch) &&
      base_reset_locked (rp, err, errlen) == -1)
    return -1;
  if (epoch == rp->base_epoch)
    return 0;
  if (replay_records_locked (rp, rp->base_cache,
                             &rp->epochs[rp->base_epoch].start,
                             rp->epochs[epoch].info.first_seq, err,
                             errlen) == -1) {
    base_drop_locked (rp);
    return -1;
  }
  rp->base_epoch = epoch;
  return 0;
}

/* A state's destroy: the base is free of it (see the top comment). */
static void
state_released (void *opaque)
{
  struct lb_replay *rp = opaque;

  atomic_fetch_sub (&rp->open_states, 1);
  replay_put (rp);
}

/* The state at p over the base (at p's epoch): an overlay, its epoch's
 * records through a fresh cache, the cut.
 */
static struct lb_store *
build_state_locked (struct lb_replay *rp, const struct lb_replay_point *p,
                    struct lb_cut_report *r, char *err, size_t errlen)
{
  const struct epoch *ep = &rp->epochs[p->epoch];
  struct lb_store *overlay, *cache;
  struct lb_cut_report rep;

  lb_assert_held (&rp->lock);
  overlay = lb_cowstore_new (rp->base, state_released, rp);
  if (overlay == NULL) {
    lb_fail (ENOMEM, err, errlen, "%s: a state's overlay: %m", rp->path);
    return NULL;
  }
  atomic_fetch_add (&rp->refs, 1);
  atomic_fetch_add (&rp->open_states, 1);
  cache = lb_wcache_new (overlay, &replay_config);
  if (cache == NULL) {
    overlay->ops->destroy (overlay);
    lb_fail (ENOMEM, err, errlen, "%s: a state's cache: %m", rp->path);
    return NULL;
  }
  if (replay_records_locked (rp, cache, &ep->start, ep->info.end_seq, err,
                             errlen) == -1)
    goto fail;
  if (lb_wcache_cut_as (cache, p->mode, p->seed, ep->info.cuts_before + 1,
                        &rep) == -1) {
    lb_fail (errno, err, errlen, "%s: epoch %" PRIu64 ": the cut: %m",
             rp->path, p->epoch);
    goto fail;
  }
  if (r)
    *r = rep;
  return lb_wcache_release (cache);

fail : {
  int saved = errno;

  cache->ops->destroy (cache); /* and the overlay */
  errno = saved;
}
  return NULL;
}

struct lb_store *
lb_replay_state (struct lb_replay *rp, const struct lb_replay_point *p,
                 struct lb_cut_report *r, char *err, size_t errlen)
{
  struct lb_store *s = NULL;
  uint64_t nr_open;

  if (p->mode > LB_CUT_TORN) {
    lb_fail (EINVAL, err, errlen, "mode %d is not a power-cut mode",
             (int) p->mode);
    return NULL;
  }
  if (p->epoch >= rp->nr_epochs) {
    lb_fail (EINVAL, err, errlen,
             "epoch=%" PRIu64 ": %s has %" PRIu64 " epochs (0 to %" PRIu64 ")",
             p->epoch, rp->path, rp->nr_epochs, rp->nr_epochs - 1);
    return NULL;
  }
  lb_mutex_lock (&rp->lock);
  nr_open = atomic_load (&rp->open_states);
  if (nr_open > 0 && p->epoch != rp->base_epoch)
    lb_fail (EBUSY, err, errlen,
             "epoch=%" PRIu64 ": %" PRIu64 " state(s) of epoch %" PRIu64
             " are still open over the shared base image; close them "
             "first",
             p->epoch, nr_open, rp->base_epoch);
  else if (base_move_locked (rp, p->epoch, err, errlen) == 0)
    s = build_state_locked (rp, p, r, err, errlen);
  lb_mutex_unlock (&rp->lock);
  return s;
}

/* ---- export names ---- */

#define POINT_SYNTAX "epoch=K[,mode=lose|atomic|torn][,seed=S]"

enum point_key { KEY_EPOCH, KEY_MODE, KEY_SEED, NR_KEYS };
static const char *const key_names[NR_KEYS] = { "epoch", "mode", "seed" };

/* A decimal uint64 of exactly the n characters at s. */
static bool
parse_u64 (const char *s, size_t n, uint64_t *v)
{
  uint64_t x = 0;

  if (n == 0)
    return false;
  for (size_t i = 0; i < n; i++) {
    unsigned d = (unsigned char) s[i] - '0';

    if (d > 9 || x > (UINT64_MAX - d) / 10)
      return false;
    x = x * 10 + d;
  }
  *v = x;
  return true;
}

static int
parse_mode (const char *name, const char *val, size_t n, enum lb_cut_mode *m,
            char *err, size_t errlen)
{
  char buf[16];

  if (n < sizeof buf) {
    memcpy (buf, val, n);
    buf[n] = '\0';
    if (lb_cut_mode_from_name (buf, m) == 0)
      return 0;
  }
  return lb_fail (EINVAL, err, errlen,
                  "export name \"%s\": mode \"%.*s\" is not lose, atomic or "
                  "torn",
                  name, (int) n, val);
}

/* One KEY=VALUE item, the n characters at item, of the export name. */
static int
parse_item (const char *name, const char *item, size_t n,
            struct lb_replay_point *p, bool seen[NR_KEYS], char *err,
            size_t errlen)
{
  const char *eq = memchr (item, '=', n), *val;
  size_t klen, vlen;
  unsigned k;

  if (n == 0)
    return lb_fail (
      EINVAL, err, errlen,
      "export name \"%s\": an empty item (the syntax: " POINT_SYNTAX ")",
      name);
  if (eq == NULL)
    return lb_fail (EINVAL, err, errlen,
                    "export name \"%s\": \"%.*s\" is not KEY=VALUE (the "
                    "syntax: " POINT_SYNTAX ")",
                    name, (int) n, item);
  klen = (size_t) (eq - item);
  val = eq + 1;
  vlen = n - klen - 1;
  for (k = 0; k < NR_KEYS; k++)
    if (strlen (key_names[k]) == klen &&
        memcmp (item, key_names[k], klen) == 0)
      break;
  if (k == NR_KEYS)
    return lb_fail (EINVAL, err, errlen,
                    "export name \"%s\": unknown key \"%.*s\" (keys: epoch, "
                    "mode, seed)",
                    name, (int) klen, item);
  if (seen[k])
    return lb_fail (EINVAL, err, errlen,
                    "export name \"%s\": key \"%s\" given twice", name,
                    key_names[k]);
  seen[k] = true;
  if (k == KEY_MODE)
    return parse_mode (name, val, vlen, &p->mode, err, errlen);
  if (!parse_u64 (val, vlen, k == KEY_EPOCH ? &p->epoch : &p->seed))
    return lb_fail (EINVAL, err, errlen,
                    "export name \"%s\": %s \"%.*s\" is not a decimal number "
                    "from 0 to %" PRIu64,
                    name, key_names[k], (int) vlen, val, UINT64_MAX);
  return 0;
}

int
lb_replay_point_parse (const char *name, struct lb_replay_point *p, char *err,
                       size_t errlen)
{
  struct lb_replay_point pt = { .mode = LB_CUT_TORN };
  bool seen[NR_KEYS] = { false };
  const char *item = name;

  if (*name == '\0')
    return lb_fail (EINVAL, err, errlen,
                    "export name \"\": no epoch (the syntax: " POINT_SYNTAX
                    ")");
  for (;;) {
    size_t n = strcspn (item, ",");

    if (parse_item (name, item, n, &pt, seen, err, errlen) == -1)
      return -1;
    if (item[n] == '\0')
      break;
    item += n + 1;
  }
  if (!seen[KEY_EPOCH])
    return lb_fail (EINVAL, err, errlen,
                    "export name \"%s\": no epoch (the syntax: " POINT_SYNTAX
                    ")",
                    name);
  *p = pt;
  return 0;
}

void
lb_replay_point_format (const struct lb_replay_point *p, char *buf, size_t len)
{
  snprintf (buf, len, "epoch=%" PRIu64 ",mode=%s,seed=%" PRIu64, p->epoch,
            lb_cut_mode_name (p->mode), p->seed);
}
