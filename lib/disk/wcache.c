/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: a volatile write cache over a store -- see wcache.h.
 *
 * Owns the cache entries, the requests through them and the
 * connections; the power (generations, the cut, its reports and the
 * statistics) is wcache-cut.c's, the shared
 * structures wcache-impl.h's (each field there says what protects it).
 * An entry exists for each folio (physical block) with data written
 * since the last flush: the folio's newest content (or NULL when the
 * newest content is all zeros) and a bit per logical block written.
 * Invariant: an entry's logical blocks whose bit is clear hold exactly
 * the durable store's content, so "newest" is the entry and "old" is the
 * durable store, block by block.
 *
 * Locking (the plugin's lock order is locking.h's; functions that need
 * a stripe lock are *_locked and assert it):
 * - Entries live in NR_STRIPES hash tables, stripe = folio index modulo
 *   NR_STRIPES, each behind its own read/write lock.  Reads take the
 *   read lock of one folio's stripe at a time (also to read the durable
 *   store, so a cut cannot change a block under a reader); writes, trims,
 *   zeros and flushes take the write lock of one stripe at a time, and
 *   reach the durable store only under it; extents, and connecting, hold
 *   stripe 0's read lock.  No request holds two.
 * - A cut holds cut_lock and every stripe's write lock (wcache-cut.c).
 *   A connected store checks its generation under each stripe lock it
 *   takes, so nothing a stale connection sends reaches the post-cut
 *   image.
 * - Counters are relaxed atomics.
 * - Memory: bytes_used is reserved (CAS) before a stripe lock is taken,
 *   for the most a block can need, and the unused part given back after;
 *   so the bound is never exceeded and no lock is held while an implicit
 *   flush runs.
 * - Each stripe owns a slab (slab.h) for its entries' content buffers,
 *   used only under the stripe's write lock (slabs have no lock of their
 *   own); freeing a buffer gives its pages back to the OS, unless the
 *   stripe keeps it as a spare (its spare stack, same lock).
 *
 * The crash log (crash-log=, crashlog.h), only when cfg.log is set:
 * - A request reserves log room for all its blocks before it touches
 *   any (log full: ENOSPC, nothing applied).  Each block's record is
 *   appended under that block's stripe write lock, after what can fail
 *   for lack of memory and before the cache's content changes (a cached
 *   piece), or after the durable store took it, whose old bytes are put
 *   back if the append fails (a piece written through): the log holds
 *   every change, in each block's order, and a failed append applies
 *   nothing of its block.
 * - A flush takes every stripe's write lock, in index order as a cut
 *   does, appends its record and writes the whole cache back before it
 *   lets any go: no request runs in between, so the records before the
 *   flush are exactly what it made durable.  This makes flushes stop the
 *   cache while they run, a cost paid only with a log.
 * - A cut appends its record under all of its locks (wcache-cut.c).
 *
 * Replay (wcache-replay.c, replay.h): wc_replay_piece and
 * wc_replay_write_back apply a crash log's records with the functions a
 * request uses (cache_piece_locked, write_through_locked,
 * wc_write_back_locked), under the same stripe lock, taking the path the
 * record names instead of choosing one, so a replayed cache is the live
 * one record by record.
 */
#include <config.h>

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "prng.h"
#include "slab.h"
#include "wcache-impl.h"

/* malloc's size word and its rounding to 16 bytes: what a small block
 * really costs beyond the bytes asked for (glibc), at most.
 */
#define MALLOC_OVERHEAD_BYTES 16

/* What one entry's bookkeeping costs, as cache_bytes counts it: the entry
 * as malloc hands it out, and its share of the hash table, which keeps
 * at most two bucket pointers per entry (maybe_grow_locked doubles the table
 * when entries outnumber buckets; shrink_if_empty_locked gives it back when
 * the stripe empties).  Documented in the plugin's man page (write-cache-size)
 * as 64 + 8 x ceil(logical blocks per physical block / 64) bytes.
 */
static size_t
entry_bytes_for (const struct lb_geometry *g)
{
  uint32_t per_folio = g->physical_bytes >> g->logical_shift;

  return sizeof (struct entry) + (per_folio + 63) / 64 * sizeof (uint64_t) +
    MALLOC_OVERHEAD_BYTES + 2 * sizeof (struct entry *);
}

uint64_t
lb_wcache_min_bytes (const struct lb_geometry *g)
{
  return entry_bytes_for (g) + g->physical_bytes;
}

/* ---- blocks and bits ---- */

static void
mark_dirty_locked (const struct wcache *wc, struct entry *e, uint32_t off,
                   uint32_t len)
{
  uint32_t first = (uint32_t) lb_bytes_to_logical (wc->g, off);
  uint32_t last = (uint32_t) lb_bytes_to_logical (wc->g, off + len - 1);

  assert_entry_held_write (wc, e);
  for (uint32_t i = first; i <= last; i++)
    e->dirty[i / 64] |= UINT64_C (1) << (i % 64);
}

/* Clear the logical blocks that [off, off + len) covers completely. */
static void
mark_clean_locked (const struct wcache *wc, struct entry *e, uint32_t off,
                   uint32_t len)
{
  uint32_t mask = wc->g->logical_bytes - 1;
  uint32_t first = (uint32_t) lb_bytes_to_logical (wc->g, off + mask);
  uint32_t end = (uint32_t) lb_bytes_to_logical (wc->g, off + len);

  assert_entry_held_write (wc, e);
  for (uint32_t i = first; i < end; i++)
    e->dirty[i / 64] &= ~(UINT64_C (1) << (i % 64));
}

static bool
entry_is_clean_locked (const struct wcache *wc, const struct entry *e)
{
  size_t words = (wc->logical_per_folio + 63) / 64;

  assert_entry_held (wc, e);
  for (size_t w = 0; w < words; w++)
    if (e->dirty[w])
      return false;
  return true;
}

/* ---- memory ---- */

static bool
reserve (struct wcache *wc, uint64_t bytes)
{
  uint64_t used = atomic_load_explicit (&wc->bytes_used, memory_order_relaxed);
  uint64_t peak;

  do {
    if (used + bytes > wc->cfg.cache_bytes)
      return false;
  } while (!atomic_compare_exchange_weak_explicit (&wc->bytes_used, &used,
                                                   used + bytes,
                                                   memory_order_relaxed,
                                                   memory_order_relaxed));
  peak = atomic_load_explicit (&wc->bytes_peak, memory_order_relaxed);
  while (used + bytes > peak &&
         !atomic_compare_exchange_weak_explicit (&wc->bytes_peak, &peak,
                                                 used + bytes,
                                                 memory_order_relaxed,
                                                 memory_order_relaxed))
    ;
  return true;
}

void
wc_unreserve (struct wcache *wc, uint64_t bytes)
{
  if (bytes)
    atomic_fetch_sub_explicit (&wc->bytes_used, bytes, memory_order_relaxed);
}

/* A content buffer for e (its write lock held), zero-filled if zeroed: a
 * spare one, else one from the stripe's slab (always zero-filled), charged
 * to the durable store when it has a limit.  Returns false if the memory
 * limit has no room (errno not set).
 */
static bool
entry_get_data_locked (struct wcache *wc, struct wc_stripe *st,
                       struct entry *e, bool zeroed)
{
  const struct lb_store_ops *d = wc->durable->ops;

  lb_assert_held_write (&st->lock);
  assert (e->data == NULL);
  if (st->nr_spare > 0) {
    e->data = st->spare[--st->nr_spare];
    atomic_fetch_sub_explicit (&wc->spares, 1, memory_order_relaxed);
    if (zeroed)
      memset (e->data, 0, wc->g->physical_bytes);
    return true;
  }
  if (d->charge && !d->charge (wc->durable, 1))
    return false;
  e->data = lb_slab_alloc (&st->slab);
  if (e->data == NULL) {
    if (d->uncharge)
      d->uncharge (wc->durable, 1);
    return false;
  }
  e->charged = d->charge != NULL;
  return true;
}

/* Content buffers that a flush or a cut takes out of one stripe go back
 * to the OS in runs of neighbours in memory, one madvise per run
 * (lb_slab_free_run): one per buffer cost a TLB shootdown per block,
 * which made writing through the cache three times slower at 16k blocks.
 * A run is at most RUN_BYTES (or one block): no more than that has left
 * the charge but not yet the process.
 */
#define RUN_BYTES ((size_t) 1 << 20)

struct buffer_run {
  struct wc_stripe *st; /* whose slab the buffers go back to */
  char *first;
  size_t nr, max_nr;
  size_t buffer_bytes;
};

static void
run_init (struct buffer_run *run, struct wcache *wc, struct wc_stripe *st)
{
  run->st = st;
  run->nr = 0;
  run->buffer_bytes = wc->g->physical_bytes;
  run->max_nr = RUN_BYTES > run->buffer_bytes ? RUN_BYTES / run->buffer_bytes
                                              : 1;
}

static void
run_release_locked (struct buffer_run *run)
{
  lb_assert_held_write (&run->st->lock);
  if (run->nr > 0)
    lb_slab_free_run (&run->st->slab, run->first, run->nr);
  run->nr = 0;
}

static void
run_add_locked (struct buffer_run *run, unsigned char *buf)
{
  lb_assert_held_write (&run->st->lock);
  if (run->nr > 0 &&
      (run->nr == run->max_nr ||
       (char *) buf != run->first + run->nr * run->buffer_bytes))
    run_release_locked (run);
  if (run->nr == 0)
    run->first = (char *) buf;
  run->nr++;
}

/* Keep buf as one of st's spares (its write lock held) if the cache has
 * room for one more (cfg.spare_bytes over every stripe).
 */
static bool
keep_spare_locked (struct wcache *wc, struct wc_stripe *st, unsigned char *buf)
{
  lb_assert_held_write (&st->lock);
  if (atomic_fetch_add_explicit (&wc->spares, 1, memory_order_relaxed) >=
      wc->max_spares)
    goto full;
  if (st->nr_spare == st->spare_room) {
    size_t room = st->spare_room ? 2 * st->spare_room : 16;
    unsigned char **a = realloc (st->spare, room * sizeof *a);

    if (a == NULL)
      goto full;
    st->spare = a;
    st->spare_room = room;
  }
  st->spare[st->nr_spare++] = buf;
  return true;

full:
  atomic_fetch_sub_explicit (&wc->spares, 1, memory_order_relaxed);
  return false;
}

/* Take e's content buffer (the stripe's write lock held): kept as a
 * spare while the stripe has room for one, else given back to the OS at
 * once, or with run when there is one.  Returns the cache bytes it held.
 */
static uint64_t
entry_put_data_locked (struct wcache *wc, struct wc_stripe *st,
                       struct entry *e, struct buffer_run *run)
{
  lb_assert_held_write (&st->lock);
  if (e->data == NULL)
    return 0;
  if (e->charged || !keep_spare_locked (wc, st, e->data)) {
    if (run)
      run_add_locked (run, e->data);
    else
      lb_slab_free (&st->slab, e->data);
  }
  e->data = NULL;
  if (e->charged)
    wc->durable->ops->uncharge (wc->durable, 1);
  e->charged = false;
  return wc->g->physical_bytes;
}

/* ---- the hash tables (under the stripe's lock) ---- */

static size_t
bucket_of_locked (const struct wc_stripe *st, uint64_t idx)
{
  lb_assert_held (&st->lock);
  return (size_t) lb_prng_derive (0, idx / NR_STRIPES) & (st->nr_buckets - 1);
}

static struct entry *
lookup_locked (struct wc_stripe *st, uint64_t idx)
{
  struct entry *e;

  lb_assert_held (&st->lock);
  for (e = st->buckets[bucket_of_locked (st, idx)]; e; e = e->next)
    if (e->folio_idx == idx)
      return e;
  return NULL;
}

/* Double the buckets when entries outnumber them (best effort: a failed
 * allocation only makes chains longer).
 */
static void
maybe_grow_locked (struct wc_stripe *st)
{
  size_t n = st->nr_buckets * 2;
  struct entry **b;

  lb_assert_held_write (&st->lock);
  if (st->nr_entries <= st->nr_buckets)
    return;
  b = calloc (n, sizeof *b);
  if (b == NULL)
    return;
  for (size_t i = 0; i < st->nr_buckets; i++)
    while (st->buckets[i]) {
      struct entry *e = st->buckets[i];
      size_t to = (size_t) lb_prng_derive (0, e->folio_idx / NR_STRIPES) &
        (n - 1);

      st->buckets[i] = e->next;
      e->next = b[to];
      b[to] = e;
    }
  free (st->buckets);
  st->buckets = b;
  st->nr_buckets = n;
}

/* An emptied stripe goes back to the smallest table (best effort), so the
 * table never outgrows two buckets per entry the cache holds since it
 * was last flushed: a burst of trims leaves no table behind.
 */
static void
shrink_if_empty_locked (struct wc_stripe *st)
{
  struct entry **b;

  lb_assert_held_write (&st->lock);
  if (st->nr_entries > 0 || st->nr_buckets == MIN_BUCKETS)
    return;
  b = calloc (MIN_BUCKETS, sizeof *b);
  if (b == NULL)
    return;
  free (st->buckets);
  st->buckets = b;
  st->nr_buckets = MIN_BUCKETS;
}

static struct entry *
insert_new_locked (struct wcache *wc, struct wc_stripe *st, uint64_t idx)
{
  struct entry *e = calloc (1, wc->entry_bytes);
  size_t b;

  lb_assert_held_write (&st->lock);
  if (e == NULL)
    return NULL;
  e->folio_idx = idx;
  b = bucket_of_locked (st, idx);
  e->next = st->buckets[b];
  st->buckets[b] = e;
  st->nr_entries++;
  atomic_fetch_add_explicit (&wc->dirty_blocks, 1, memory_order_relaxed);
  maybe_grow_locked (st);
  return e;
}

/* Unlink and free e (its buffer at once, or with run); returns the cache
 * bytes it held.
 */
static uint64_t
remove_entry_locked (struct wcache *wc, struct wc_stripe *st, struct entry *e,
                     struct buffer_run *run)
{
  struct entry **p = &st->buckets[bucket_of_locked (st, e->folio_idx)];
  uint64_t bytes;

  lb_assert_held_write (&st->lock);
  while (*p != e)
    p = &(*p)->next;
  *p = e->next;
  st->nr_entries--;
  atomic_fetch_sub_explicit (&wc->dirty_blocks, 1, memory_order_relaxed);
  bytes = entry_put_data_locked (wc, st, e, run) + wc->entry_bytes;
  free (e);
  return bytes;
}

/* ---- writing an entry back ---- */

/* e's buffer is about to reach the durable store, which charges its own
 * folio for it: give the cache's charge back first, so that writing back
 * never needs more memory than the limit.
 */
void
wc_entry_pass_charge_locked (struct wcache *wc, struct entry *e)
{
  assert_entry_held_write (wc, e);
  if (e->charged)
    wc->durable->ops->uncharge (wc->durable, 1);
  e->charged = false;
}

/* Make the durable block equal to e's newest content. */
int
wc_write_back_locked (struct wcache *wc, struct entry *e)
{
  struct lb_store *d = wc->durable;

  assert_entry_held_write (wc, e);
  wc_entry_pass_charge_locked (wc, e);
  uint64_t at = lb_folio_to_bytes (wc->g, e->folio_idx);
  uint32_t len = folio_len (wc, e->folio_idx);

  if (e->data)
    return d->ops->pwrite (d, e->data, len, at, false);
  return d->ops->zero (d, len, at, e->keep ? 0 : LB_ZERO_MAY_TRIM);
}

static int
by_buffer_address (const void *a, const void *b)
{
  uintptr_t x = (uintptr_t) (*(struct entry *const *) a)->data;
  uintptr_t y = (uintptr_t) (*(struct entry *const *) b)->data;

  return (x > y) - (x < y);
}

/* The stripe's entries sorted by their buffers' address, so that their
 * buffers leave in long runs; NULL if there is no memory for the list
 * (then the drain goes bucket by bucket, in shorter runs).
 */
static struct entry **
entries_by_address_locked (struct wc_stripe *st)
{
  struct entry **list = malloc ((st->nr_entries + 1) * sizeof *list);
  size_t n = 0;

  lb_assert_held (&st->lock);
  if (list == NULL)
    return NULL;
  for (size_t b = 0; b < st->nr_buckets; b++)
    for (struct entry *e = st->buckets[b]; e; e = e->next)
      list[n++] = e;
  qsort (list, n, sizeof *list, by_buffer_address);
  return list;
}

/* Visit and remove every entry of st (its write lock held), adding the
 * cache bytes freed to *freed.  Stops at the first visit that fails,
 * leaving that entry and the ones not visited yet in place.
 */
int
wc_drain_stripe_locked (struct wcache *wc, struct wc_stripe *st,
                        entry_visit_locked_fn visit, void *opaque,
                        uint64_t *freed)
{
  struct entry **list;
  size_t nr = st->nr_entries;
  struct buffer_run run;
  int r = 0;

  lb_assert_held_write (&st->lock);
  if (nr == 0) {
    shrink_if_empty_locked (st);
    return 0;
  }
  list = entries_by_address_locked (st);
  run_init (&run, wc, st);
  if (list)
    for (size_t i = 0; i < nr && r == 0; i++) {
      r = visit (wc, list[i], opaque);
      if (r == 0)
        *freed += remove_entry_locked (wc, st, list[i], &run);
    }
  else
    for (size_t b = 0; b < st->nr_buckets && r == 0; b++)
      while (st->buckets[b] && r == 0) {
        r = visit (wc, st->buckets[b], opaque);
        if (r == 0)
          *freed += remove_entry_locked (wc, st, st->buckets[b], &run);
      }
  run_release_locked (&run);
  free (list);
  shrink_if_empty_locked (st);
  return r;
}

static int
write_back_visit_locked (struct wcache *wc, struct entry *e, void *opaque)
{
  assert_entry_held_write (wc, e);
  (void) opaque;
  return wc_write_back_locked (wc, e);
}

/* Flush every entry of one stripe (its write lock held). */
static int
flush_stripe_locked (struct wcache *wc, struct wc_stripe *st, uint64_t *freed)
{
  lb_assert_held_write (&st->lock);
  return wc_drain_stripe_locked (wc, st, write_back_visit_locked, NULL, freed);
}

/* ---- the crash log (crashlog.h); none of this runs without one ---- */

/* A log append failed: ENOSPC when the log is full, EIO when it is
 * broken (the plugin names the log: LB_FAULT_CRASH_LOG).  Returns -1.
 */
static int
log_failed (void)
{
  int err = errno == ENOSPC ? ENOSPC : EIO;

  lb_set_fault (LB_FAULT_CRASH_LOG);
  errno = err;
  return -1;
}

/* A flush's record and write-back, every stripe's write lock held from
 * the record to the end (see the top comment).  implicit: the cache's
 * own flush, which may use the log's spare room.
 */
static int
flush_all_logged (struct view *v, bool implicit)
{
  struct wcache *wc = v->wc;
  struct lb_crashlog_record rec = {
    .type = LB_CRASHLOG_FLUSH,
    .flags = implicit ? LB_CRASHLOG_IMPLICIT : 0,
  };
  uint64_t freed = 0;
  int r = 0;

  for (unsigned i = 0; i < NR_STRIPES; i++)
    stripe_lock_write (&wc->stripes[i]);
  if (is_stale (v))
    r = wc_stale_error ();
  else if (lb_crashlog_add (wc->cfg.log, &rec,
                            implicit ? LB_CRASHLOG_ROOM_SPARE
                                     : LB_CRASHLOG_ROOM_FREE,
                            NULL, 0) == -1)
    r = log_failed ();
  for (unsigned i = 0; i < NR_STRIPES && r == 0; i++)
    if ((r = flush_stripe_locked (wc, &wc->stripes[i], &freed)) == -1) {
      int err = errno;

      /* Logged as durable, but it is not all there: the log ends. */
      lb_crashlog_break (wc->cfg.log, err);
      errno = err;
    }
  for (unsigned i = NR_STRIPES; i-- > 0;)
    stripe_unlock (&wc->stripes[i]);
  wc_unreserve (wc, freed);
  if (r == 0)
    r = wc->durable->ops->flush (wc->durable);
  return r;
}

int
wc_flush_all (struct view *v, bool implicit)
{
  struct wcache *wc = v->wc;
  uint64_t freed = 0;
  int r = 0;

  if (wc->cfg.log)
    return flush_all_logged (v, implicit);

  /* Each stripe's bytes go back as soon as it is written back: writers
   * waiting for room (reserve_or_flush) go on then, rather than start
   * flushes of their own while this one runs.
   */
  for (unsigned i = 0; i < NR_STRIPES && r == 0; i++) {
    struct wc_stripe *st = &wc->stripes[i];

    freed = 0;
    stripe_lock_write (st);
    if (is_stale (v))
      r = wc_stale_error ();
    else
      r = flush_stripe_locked (wc, st, &freed);
    stripe_unlock (st);
    wc_unreserve (wc, freed);
  }
  if (r == 0)
    r = wc->durable->ops->flush (wc->durable);
  return r;
}

/* Reserve bytes of cache, flushing the cache whenever it is full. */
static int
reserve_or_flush (struct view *v, uint64_t bytes)
{
  struct wcache *wc = v->wc;

  while (!reserve (wc, bytes)) {
    atomic_fetch_add_explicit (&wc->implicit_flushes, 1, memory_order_relaxed);
    if (wc_flush_all (v, true) == -1)
      return -1;
  }
  return 0;
}

/* ---- requests, one physical block at a time ---- */

/* What a request does to one block's piece [off, off + len). */
enum piece_op { PIECE_WRITE, PIECE_WRITE_FUA, PIECE_ZERO };

struct request {
  struct view *v;
  enum piece_op op;
  const unsigned char *buf; /* PIECE_WRITE*: the data of this piece */
  bool keep;                /* PIECE_ZERO: NO_HOLE */
  /* With a crash log: what to call the request's records, and the log
   * room it reserved and has not used yet.
   */
  enum lb_crashlog_type log_type;
  uint64_t log_reserved;
};

/* Reserve log room for every record rq may append: per block its piece
 * (with its data, padded, for a write) and a write-back.
 */
static int
log_reserve (struct request *rq, uint32_t count, uint64_t offset)
{
  struct wcache *wc = rq->v->wc;
  uint64_t blocks, bytes;

  if (wc->cfg.log == NULL || count == 0)
    return 0;
  blocks = lb_folio_idx (wc->g, offset + count - 1) -
    lb_folio_idx (wc->g, offset) + 1;
  bytes = blocks * 2 * LB_CRASHLOG_RECORD_SIZE +
    (rq->buf ? count + blocks * 7 : 0);
  if (lb_crashlog_reserve (wc->cfg.log, bytes, NULL, 0) == -1)
    return log_failed ();
  rq->log_reserved = bytes;
  return 0;
}

static void
log_unreserve (struct request *rq)
{
  if (rq->log_reserved)
    lb_crashlog_unreserve (rq->v->wc->cfg.log, rq->log_reserved);
  rq->log_reserved = 0;
}

/* Append one of rq's records from its reservation, under st's write
 * lock: the lock that orders the block.
 */
static int
log_append_locked (struct wc_stripe *st, struct request *rq,
                   const struct lb_crashlog_record *rec)
{
  lb_assert_held_write (&st->lock);
  if (lb_crashlog_add (rq->v->wc->cfg.log, rec, LB_CRASHLOG_ROOM_RESERVED,
                       NULL, 0) == -1)
    return log_failed ();
  rq->log_reserved -= lb_crashlog_record_bytes (rec->type, rec->length);
  return 0;
}

/* The record of rq's piece [off, off + len) of block idx (flags: FUA or
 * THROUGH for a piece written through); 0 at once without a log.
 */
static int
log_piece_locked (struct wcache *wc, struct wc_stripe *st, struct request *rq,
                  uint64_t idx, uint32_t off, uint32_t len, uint8_t flags)
{
  struct lb_crashlog_record rec = {
    .type = rq->log_type,
    .flags = flags,
    .offset = lb_folio_to_bytes (wc->g, idx) + off,
    .length = len,
    .data = rq->op == PIECE_ZERO ? NULL : rq->buf,
  };

  if (wc->cfg.log == NULL)
    return 0;
  return log_append_locked (st, rq, &rec);
}

/* The record of e's early write-back (its block made durable outside a
 * flush); 0 at once without a log.
 */
static int
log_writeback_locked (struct wcache *wc, struct wc_stripe *st,
                      struct request *rq, const struct entry *e)
{
  struct lb_crashlog_record rec = {
    .type = LB_CRASHLOG_WRITEBACK,
    .offset = lb_folio_to_bytes (wc->g, e->folio_idx),
    .length = folio_len (wc, e->folio_idx),
  };

  if (wc->cfg.log == NULL)
    return 0;
  return log_append_locked (st, rq, &rec);
}

/* st's buffer for a write-through's old bytes (its write lock held);
 * NULL with errno = ENOMEM.
 */
static unsigned char *
undo_buffer_locked (struct wcache *wc, struct wc_stripe *st)
{
  lb_assert_held_write (&st->lock);
  if (st->undo == NULL)
    st->undo = malloc (wc->g->physical_bytes);
  return st->undo;
}

/* What a new content buffer must hold before the piece goes in. */
enum fill {
  FILL_DURABLE, /* the block's durable content */
  FILL_ZEROS,   /* zeros: an all-zero entry's content */
  FILL_NONE,    /* anything: the block is about to be overwritten whole */
};

/* Give e a content buffer, filled as fill says. */
static int
materialize_locked (struct wcache *wc, struct wc_stripe *st, struct entry *e,
                    enum fill fill)
{
  struct lb_store *d = wc->durable;
  uint32_t len = folio_len (wc, e->folio_idx);

  lb_assert_held_write (&st->lock);
  if (!entry_get_data_locked (wc, st, e, fill == FILL_ZEROS)) {
    errno = ENOSPC;
    return -1;
  }
  if (fill == FILL_DURABLE &&
      d->ops->pread (d, e->data, len,
                     lb_folio_to_bytes (wc->g, e->folio_idx)) == -1) {
    int err = errno;

    entry_put_data_locked (wc, st, e, NULL);
    errno = err;
    return -1;
  }
  return 0;
}

/* What an entry costs the cache. */
static uint64_t
entry_cost_locked (const struct wcache *wc, const struct wc_stripe *st,
                   const struct entry *e)
{
  lb_assert_held (&st->lock);
  if (e == NULL)
    return 0;
  return wc->entry_bytes + (e->data ? wc->g->physical_bytes : 0);
}

/* The block's piece written straight to the durable store (FUA, or no
 * memory for an entry).  e, if any, gets the same bytes.
 */
static int
write_through_locked (struct wcache *wc, struct wc_stripe *st, struct entry *e,
                      struct request *rq, uint64_t idx, uint32_t off,
                      uint32_t len)
{
  struct lb_store *d = wc->durable;
  uint64_t at = lb_folio_to_bytes (wc->g, idx) + off;
  uint8_t flags = rq->op == PIECE_WRITE_FUA ? LB_CRASHLOG_FUA
                                            : LB_CRASHLOG_THROUGH;
  unsigned char *undo = NULL;
  int r;

  lb_assert_held_write (&st->lock);
  if (wc->cfg.log && (undo = undo_buffer_locked (wc, st)) == NULL)
    return -1;
  /* An all-zero entry needs a buffer to take the piece; without memory
   * for one it is written back first (a cache may always write early).
   */
  if (e && e->data == NULL && materialize_locked (wc, st, e, FILL_ZEROS) == -1) {
    if (wc_write_back_locked (wc, e) == -1 ||
        log_writeback_locked (wc, st, rq, e) == -1)
      return -1;
    remove_entry_locked (wc, st, e, NULL);
    e = NULL;
  }
  if (undo && d->ops->pread (d, undo, len, at) == -1)
    return -1;
  if (rq->op == PIECE_ZERO)
    r = d->ops->zero (d, len, at, rq->keep ? 0 : LB_ZERO_MAY_TRIM);
  else
    r = d->ops->pwrite (d, rq->buf, len, at, false);
  if (r == 0 && log_piece_locked (wc, st, rq, idx, off, len, flags) == -1) {
    int err = errno;

    /* Not in the log, so not on the disk either. */
    d->ops->pwrite (d, undo, len, at, false);
    errno = err;
    return -1;
  }
  if (r == -1 || e == NULL)
    return r;
  if (rq->op == PIECE_ZERO)
    memset (e->data + off, 0, len);
  else
    memcpy (e->data + off, rq->buf, len);
  mark_clean_locked (wc, e, off, len);
  if (entry_is_clean_locked (wc, e))
    remove_entry_locked (wc, st, e, NULL);
  return 0;
}

/* A new buffer for a piece that is not a whole-block zero: a new entry
 * starts from the durable block, an all-zero one from zeros, and neither
 * needs anything when the piece covers the block.
 */
static enum fill
new_buffer_fill (bool created, bool whole)
{
  if (whole)
    return FILL_NONE;
  return created ? FILL_DURABLE : FILL_ZEROS;
}

/* The piece into the cache.  Returns 0, or -1 with errno; ENOSPC means
 * "no memory for a content buffer" and the caller writes through.
 */
static int
cache_piece_locked (struct wcache *wc, struct wc_stripe *st, struct entry *e,
                    struct request *rq, uint64_t idx, uint32_t off,
                    uint32_t len)
{
  bool whole = off == 0 && len == folio_len (wc, idx);
  bool zero_whole = rq->op == PIECE_ZERO && whole;
  bool created = e == NULL;

  lb_assert_held_write (&st->lock);
  if (created && (e = insert_new_locked (wc, st, idx)) == NULL)
    return -1;
  /* What may fail first, then the log, then the change, which cannot. */
  if ((!zero_whole && e->data == NULL &&
       materialize_locked (wc, st, e, new_buffer_fill (created, whole)) ==
         -1) ||
      log_piece_locked (wc, st, rq, idx, off, len, 0) == -1) {
    int err = errno;

    if (created)
      remove_entry_locked (wc, st, e, NULL);
    errno = err;
    return -1;
  }
  if (zero_whole) {
    entry_put_data_locked (wc, st, e, NULL);
    e->keep = rq->keep;
  }
  if (e->data && rq->op == PIECE_ZERO)
    memset (e->data + off, 0, len);
  else if (e->data)
    memcpy (e->data + off, rq->buf, len);
  mark_dirty_locked (wc, e, off, len);
  return 0;
}

/* Flushes one block's piece may make to find memory: one when the
 * memory limit leaves no room to cache it, and more while writing it
 * through finds the limit taken by the cache's own copies (other
 * connections may cache more between a flush and the retry).
 */
#define MAX_FLUSHES_FOR_ROOM 3

/* Could a flush give the memory limit room?  Only the cache's blocks
 * hold charges; zeroed ones hold none, so this errs towards a useless
 * flush, which MAX_FLUSHES_FOR_ROOM bounds.
 */
static bool
cache_holds_blocks (struct wcache *wc)
{
  return atomic_load_explicit (&wc->dirty_blocks, memory_order_relaxed) > 0;
}

/* One block's piece, under its stripe's write lock.  The cache bytes the
 * block may need are reserved first (flushing when the cache is full), and
 * what it did not use is given back.  A block that finds the memory limit
 * reached flushes the cache once, then is written through; a write
 * through (or a FUA write) that finds the limit reached while the cache
 * holds blocks flushes it and tries again, so the cache's copies never
 * make a write fail that would succeed without the cache.
 */
static int
do_piece (struct request *rq, uint64_t idx, uint32_t off, uint32_t len)
{
  struct wcache *wc = rq->v->wc;
  struct wc_stripe *st = stripe_of (wc, idx);
  uint64_t want = wc->entry_bytes + wc->g->physical_bytes, before;
  unsigned flushes = 0;
  int r;

again:
  if (reserve_or_flush (rq->v, want) == -1)
    return -1;
  stripe_lock_write (st);
  if (is_stale (rq->v)) {
    stripe_unlock (st);
    wc_unreserve (wc, want);
    return wc_stale_error ();
  }
  before = entry_cost_locked (wc, st, lookup_locked (st, idx));
  if (rq->op == PIECE_WRITE_FUA)
    r = write_through_locked (wc, st, lookup_locked (st, idx), rq, idx, off,
                              len);
  else if ((r = cache_piece_locked (wc, st, lookup_locked (st, idx), rq, idx,
                                    off, len)) == -1 &&
           errno == ENOSPC) {
    if (flushes == 0)
      goto flush_for_room;
    atomic_fetch_add_explicit (&wc->written_through, 1, memory_order_relaxed);
    r = write_through_locked (wc, st, lookup_locked (st, idx), rq, idx, off,
                              len);
  }
  if (r == -1 && errno == ENOSPC && flushes < MAX_FLUSHES_FOR_ROOM &&
      cache_holds_blocks (wc))
    goto flush_for_room;
  wc_unreserve (wc,
                want + before -
                  entry_cost_locked (wc, st, lookup_locked (st, idx)));
  stripe_unlock (st);
  return r;

flush_for_room:
  wc_unreserve (wc,
                want + before -
                  entry_cost_locked (wc, st, lookup_locked (st, idx)));
  stripe_unlock (st);
  atomic_fetch_add_explicit (&wc->implicit_flushes, 1, memory_order_relaxed);
  if (wc_flush_all (rq->v, true) == -1)
    return -1;
  flushes++;
  goto again;
}

static int
for_each_piece (struct request *rq, uint32_t count, uint64_t offset)
{
  const struct lb_geometry *g = rq->v->wc->g;
  uint64_t nth;
  int r = 0;

  if (log_reserve (rq, count, offset) == -1)
    return -1;
  nth = atomic_fetch_add_explicit (&rq->v->wc->requests, 1,
                                   memory_order_relaxed) +
    1;
  for (uint64_t done = 0; done < count && r == 0;) {
    uint64_t pos = offset + done;
    uint32_t off = lb_folio_offset (g, pos);
    uint32_t len = g->physical_bytes - off;

    if (len > count - done)
      len = (uint32_t) (count - done);
    r = do_piece (rq, lb_folio_idx (g, pos), off, len);
    if (rq->buf)
      rq->buf += len;
    done += len;
  }
  log_unreserve (rq);
  if (r == 0 && rq->op == PIECE_WRITE_FUA)
    r = rq->v->wc->durable->ops->flush (rq->v->wc->durable);
  return wc_maybe_cut_after (rq->v, nth, r);
}

static int
wc_pwrite (struct lb_store *s, const void *buf, uint32_t count,
           uint64_t offset, bool fua)
{
  struct request rq = { .v = to_view (s),
                        .op = fua ? PIECE_WRITE_FUA : PIECE_WRITE,
                        .buf = buf,
                        .log_type = LB_CRASHLOG_WRITE };

  if (is_stale (rq.v))
    return wc_stale_error ();
  return for_each_piece (&rq, count, offset);
}

/* A zero or a trim (the same to the cache; the log tells them apart). */
static int
zero_request (struct lb_store *s, uint32_t count, uint64_t offset,
              unsigned flags, enum lb_crashlog_type log_type)
{
  struct request rq = { .v = to_view (s),
                        .op = PIECE_ZERO,
                        .keep = !(flags & LB_ZERO_MAY_TRIM),
                        .log_type = log_type };

  if (is_stale (rq.v))
    return wc_stale_error ();
  return for_each_piece (&rq, count, offset);
}

static int
wc_zero (struct lb_store *s, uint32_t count, uint64_t offset, unsigned flags)
{
  return zero_request (s, count, offset, flags, LB_CRASHLOG_ZERO);
}

static int
wc_trim (struct lb_store *s, uint32_t count, uint64_t offset)
{
  return zero_request (s, count, offset, LB_ZERO_MAY_TRIM, LB_CRASHLOG_TRIM);
}

/* ---- replay (wcache-replay.c): a logged piece as the live one ---- */

/* rec's piece (a write, trim or zero inside one block, checked by the
 * caller) the way the record says the live cache applied it: written
 * through for FUA and THROUGH, else into the cache -- never a choice of
 * its own, so never a flush.  As do_piece, under the block's stripe
 * lock, with the cache bytes reserved first (the cache is unbounded).
 */
int
wc_replay_piece (struct wcache *wc, const struct lb_crashlog_record *rec)
{
  uint64_t idx = lb_folio_idx (wc->g, rec->offset);
  uint32_t off = lb_folio_offset (wc->g, rec->offset);
  uint32_t len = (uint32_t) rec->length;
  struct wc_stripe *st = stripe_of (wc, idx);
  uint64_t want = wc->entry_bytes + wc->g->physical_bytes, before;
  bool through = rec->flags & (LB_CRASHLOG_FUA | LB_CRASHLOG_THROUGH);
  struct request rq = {
    .v = &wc->main,
    .op = rec->type != LB_CRASHLOG_WRITE ? PIECE_ZERO
      : (rec->flags & LB_CRASHLOG_FUA)   ? PIECE_WRITE_FUA
                                         : PIECE_WRITE,
    .buf = rec->type == LB_CRASHLOG_WRITE ? rec->data : NULL,
    /* The log does not keep NO_HOLE: a zero keeps its block allocated,
     * a trim may free it; the bytes are zeros either way.
     */
    .keep = rec->type == LB_CRASHLOG_ZERO,
    .log_type = rec->type,
  };
  int r;

  if (!reserve (wc, want)) {
    errno = ENOMEM;
    return -1;
  }
  stripe_lock_write (st);
  before = entry_cost_locked (wc, st, lookup_locked (st, idx));
  if (through)
    r = write_through_locked (wc, st, lookup_locked (st, idx), &rq, idx, off,
                              len);
  else if ((r = cache_piece_locked (wc, st, lookup_locked (st, idx), &rq, idx,
                                    off, len)) == -1 &&
           errno == ENOSPC)
    errno = ENOMEM; /* no content buffer: no memory at all */
  wc_unreserve (wc,
                want + before -
                  entry_cost_locked (wc, st, lookup_locked (st, idx)));
  stripe_unlock (st);
  if (r == 0 && (rec->flags & LB_CRASHLOG_THROUGH))
    atomic_fetch_add_explicit (&wc->written_through, 1, memory_order_relaxed);
  if (r == 0 && rq.op == PIECE_WRITE_FUA)
    r = wc->durable->ops->flush (wc->durable);
  return r;
}

/* A write-back record: block idx's entry made durable and dropped, as
 * write_through_locked does when it has no memory for an all-zero
 * entry's buffer.  EINVAL if the cache holds no entry for idx.
 */
int
wc_replay_write_back (struct wcache *wc, uint64_t idx)
{
  struct wc_stripe *st = stripe_of (wc, idx);
  struct entry *e;
  uint64_t freed = 0;
  int r = -1;

  stripe_lock_write (st);
  e = lookup_locked (st, idx);
  if (e == NULL)
    errno = EINVAL;
  else if ((r = wc_write_back_locked (wc, e)) == 0)
    freed = remove_entry_locked (wc, st, e, NULL);
  stripe_unlock (st);
  wc_unreserve (wc, freed);
  return r;
}

static int
wc_pread (struct lb_store *s, void *buf, uint32_t count, uint64_t offset)
{
  struct view *v = to_view (s);
  struct wcache *wc = v->wc;
  unsigned char *out = buf;
  int r = 0;

  for (uint64_t done = 0; done < count && r == 0;) {
    uint64_t pos = offset + done, idx = lb_folio_idx (wc->g, pos);
    uint32_t off = lb_folio_offset (wc->g, pos);
    uint32_t len = wc->g->physical_bytes - off;
    struct wc_stripe *st = stripe_of (wc, idx);
    struct entry *e;

    if (len > count - done)
      len = (uint32_t) (count - done);
    stripe_lock_read (st);
    if (is_stale (v))
      r = wc_stale_error ();
    else if ((e = lookup_locked (st, idx)) == NULL)
      r = wc->durable->ops->pread (wc->durable, out, len, pos);
    else if (e->data)
      memcpy (out, e->data + off, len);
    else
      memset (out, 0, len);
    stripe_unlock (st);
    out += len;
    done += len;
  }
  return r;
}

static int
wc_flush (struct lb_store *s)
{
  return wc_flush_all (to_view (s), false);
}

/* With unflushed data anywhere, everything is data (always a correct
 * answer); with none, the durable store knows.
 */
static int
wc_extents (struct lb_store *s, uint32_t count, uint64_t offset, bool req_one,
            lb_extent_fn fn, void *opaque)
{
  struct view *v = to_view (s);
  struct wcache *wc = v->wc;
  int r;

  /* Any one stripe's lock keeps a cut from starting or finishing under
   * us: the answer is wholly before the cut or an EIO after it.
   */
  stripe_lock_read (&wc->stripes[0]);
  if (is_stale (v))
    r = wc_stale_error ();
  else if (atomic_load_explicit (&wc->dirty_blocks, memory_order_relaxed))
    r = fn (offset, count, false, opaque);
  else
    r = wc->durable->ops->extents (wc->durable, count, offset, req_one, fn,
                                   opaque);
  stripe_unlock (&wc->stripes[0]);
  return r;
}

static void
wc_usage (struct lb_store *s, struct lb_store_usage *u)
{
  struct wcache *wc = to_view (s)->wc;

  wc->durable->ops->usage (wc->durable, u);
}

/* Free wc; its durable store too unless keep_durable. */
static void
destroy_cache (struct wcache *wc, bool keep_durable)
{
  for (unsigned i = 0; i < NR_STRIPES; i++) {
    struct wc_stripe *st = &wc->stripes[i];

    /* Nobody else can take it now; taken for remove_entry_locked. */
    stripe_lock_write (st);
    for (size_t b = 0; b < st->nr_buckets; b++)
      while (st->buckets[b])
        remove_entry_locked (wc, st, st->buckets[b], NULL);
    stripe_unlock (st);
    free (st->buckets);
    free (st->undo);
    free (st->spare);
    lb_slab_destroy (&st->slab);
    pthread_rwlock_destroy (&st->lock);
  }
  pthread_mutex_destroy (&wc->cut_lock);
  pthread_mutex_destroy (&wc->report_lock);
  if (!keep_durable)
    wc->durable->ops->destroy (wc->durable);
  free (wc);
}

static void
wc_destroy (struct lb_store *s)
{
  struct view *v = to_view (s);

  if (v->follows)
    destroy_cache (v->wc, false);
  else
    free (v);
}

struct lb_store *
lb_wcache_release (struct lb_store *cache)
{
  struct wcache *wc = to_view (cache)->wc;
  struct lb_store *durable = wc->durable;

  destroy_cache (wc, true);
  return durable;
}

/* ---- creation ---- */

static void
view_init (struct view *v, struct wcache *wc, bool follows)
{
  v->store.ops = &wc->ops;
  v->store.geom = wc->g;
  v->store.read_only = wc->durable->read_only;
  v->wc = wc;
  v->follows = follows;
  v->gen = wc_settled_generation (wc);
}

struct lb_store *
lb_wcache_connect (struct lb_store *cache)
{
  struct view *v = malloc (sizeof *v);

  if (v == NULL)
    return NULL;
  view_init (v, to_view (cache)->wc, false);
  return &v->store;
}

static const struct lb_store_ops wcache_ops = {
  .pread = wc_pread,
  .pwrite = wc_pwrite,
  .trim = wc_trim,
  .zero = wc_zero,
  .flush = wc_flush,
  .extents = wc_extents,
  .usage = wc_usage,
  .destroy = wc_destroy,
};

struct lb_store *
lb_wcache_new (struct lb_store *durable, const struct lb_wcache_config *c)
{
  struct wcache *wc;
  unsigned i;

  assert (c->cache_bytes >= lb_wcache_min_bytes (durable->geom));
  if (posix_memalign ((void **) &wc, 64, sizeof *wc) != 0) {
    errno = ENOMEM;
    return NULL;
  }
  memset (wc, 0, sizeof *wc);
  wc->ops = wcache_ops;
  wc->ops.name = durable->ops->name;
  wc->durable = durable;
  wc->g = durable->geom;
  wc->cfg = *c;
  wc->logical_per_folio = wc->g->physical_bytes >> wc->g->logical_shift;
  wc->entry_bytes = entry_bytes_for (wc->g);
  wc->max_spares = c->spare_bytes / wc->g->physical_bytes;
  pthread_mutex_init (&wc->cut_lock, NULL);
  pthread_mutex_init (&wc->report_lock, NULL);
  for (i = 0; i < NR_STRIPES; i++) {
    struct wc_stripe *st = &wc->stripes[i];

    st->buckets = calloc (MIN_BUCKETS, sizeof *st->buckets);
    if (st->buckets == NULL)
      goto err;
    st->nr_buckets = MIN_BUCKETS;
    lb_slab_init (&st->slab, wc->g->physical_bytes);
    pthread_rwlock_init (&st->lock, NULL);
  }
  view_init (&wc->main, wc, true);
  return &wc->main.store;

err:
  while (i-- > 0) {
    free (wc->stripes[i].buckets);
    pthread_rwlock_destroy (&wc->stripes[i].lock);
  }
  pthread_mutex_destroy (&wc->cut_lock);
  pthread_mutex_destroy (&wc->report_lock);
  free (wc);
  errno = ENOMEM;
  return NULL;
}
