/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the write cache's insides, shared by its two halves --
 * wcache.c (the cache: entries, requests, flushes, connections) and
 * wcache-cut.c (the power cut, its reports and statistics).  Private to
 * them; everyone else uses wcache.h.
 *
 * Every field says what protects it.  "stripe lock" is the lock of the
 * stripe the entry or field lives in (stripe = folio index modulo
 * NR_STRIPES); "fixed" means written before the cache is shared and
 * never again.  The lock order is locking.h's; the rules behind it are
 * in wcache.c's top comment.
 */
#ifndef LARGEBLOCK_WCACHE_IMPL_H
#define LARGEBLOCK_WCACHE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "locking.h"
#include "slab.h"
#include "wcache.h"

#define NR_STRIPES 32
#define MIN_BUCKETS 64

/* One folio with data written since the last flush.  Every field is
 * protected by its stripe lock (written under the write side, read under
 * either).
 */
struct entry {
  struct entry *next;  /* stripe lock: the bucket's chain */
  uint64_t folio_idx;  /* fixed once the entry is in its bucket */
  unsigned char *data; /* stripe lock; NULL: newest content is all zeros */
  bool charged;        /* stripe lock: data is charged to the durable store */
  bool keep;           /* stripe lock: all-zero entry from a NO_HOLE zero */
  uint64_t dirty[];    /* stripe lock: bit per logical block since flush */
};

struct wc_stripe {
  /* Protects every field below and every entry in the buckets; a
   * reader holds the read side, anything that changes them (or reaches
   * the durable store for a write) the write side.
   */
  pthread_rwlock_t lock;
  struct lb_slab slab;    /* lock (write side): the entries' buffers */
  struct entry **buckets; /* lock */
  size_t nr_buckets;      /* lock; a power of two */
  size_t nr_entries;      /* lock */
  unsigned char *undo;    /* lock (write side): with a crash log, a
                             write-through's old bytes; NULL until used */
} __attribute__ ((aligned (64)));

/* A store over the cache: the cache's own (follows every generation) or
 * one connection's.  Fixed after view_init; each view has one user.
 */
struct view {
  struct lb_store store; /* must be first */
  struct wcache *wc;
  uint64_t gen; /* the generation it was connected in */
  bool follows; /* the cache's own store: never stale */
};

struct wcache {
  struct view main; /* must be first */
  /* Fixed. */
  struct lb_store_ops ops;
  struct lb_store *durable;
  const struct lb_geometry *g;
  struct lb_wcache_config cfg;
  uint32_t logical_per_folio;
  size_t entry_bytes; /* header and dirty bits */
  /* Atomics, no lock; gen is stored only under cut_lock and every
   * stripe's write lock (wcache-cut.c).
   */
  _Atomic uint64_t gen;
  _Atomic uint64_t requests; /* writes, trims, zeros (for cut_after) */
  _Atomic uint64_t bytes_used, bytes_peak;
  _Atomic uint64_t implicit_flushes, written_through, dirty_blocks;
  /* Serializes cuts: taken before any stripe lock (locking.h). */
  pthread_mutex_t cut_lock;
  /* Protects last and total only; a leaf (takes nothing under it). */
  pthread_mutex_t report_lock;
  struct lb_cut_report last, total; /* report_lock */
  struct wc_stripe stripes[NR_STRIPES];
};

static inline struct view *
to_view (struct lb_store *s)
{
  return (struct view *) s;
}

static inline struct wc_stripe *
stripe_of (struct wcache *wc, uint64_t idx)
{
  return &wc->stripes[idx % NR_STRIPES];
}

/* e's stripe lock is held (for writing).  Macros, so that a failure
 * names the function that needed the lock.
 */
#define entry_stripe_lock(wc, e) \
  (&(wc)->stripes[(e)->folio_idx % NR_STRIPES].lock)
#define assert_entry_held(wc, e) lb_assert_held (entry_stripe_lock (wc, e))
#define assert_entry_held_write(wc, e) \
  lb_assert_held_write (entry_stripe_lock (wc, e))

static inline void
stripe_lock_read (struct wc_stripe *st)
{
  lb_rwlock_rdlock (&st->lock);
}

static inline void
stripe_lock_write (struct wc_stripe *st)
{
  lb_rwlock_wrlock (&st->lock);
}

static inline void
stripe_unlock (struct wc_stripe *st)
{
  lb_rwlock_unlock (&st->lock);
}

/* The bytes of block idx inside the disk (the last one may be short). */
static inline uint32_t
folio_len (const struct wcache *wc, uint64_t idx)
{
  uint64_t left = wc->g->size_bytes - lb_folio_to_bytes (wc->g, idx);

  return left < wc->g->physical_bytes ? (uint32_t) left
                                      : wc->g->physical_bytes;
}

/* A connection that outlived a cut: every request fails (EIO). */
static inline bool
is_stale (const struct view *v)
{
  return !v->follows &&
    v->gen != atomic_load_explicit (&v->wc->gen, memory_order_acquire);
}

/* The generation, once any cut in progress is over (wcache-cut.c). */
uint64_t wc_settled_generation (struct wcache *wc);

/* After the nth write, trim or zero (from 1) reached the cache with
 * result r: cut the power if power-cut-after names it (the reply is then
 * EIO), else return r.
 */
int wc_maybe_cut_after (struct view *v, uint64_t nth, int r);

/* Give back bytes of cache reserved before. */
void wc_unreserve (struct wcache *wc, uint64_t bytes);

/* EIO, marked as the power cut's (lb_take_fault), so callers need not
 * log every request of a dead connection.  Returns -1.
 */
int wc_stale_error (void);

/* e's buffer is about to reach the durable store: give the cache's
 * charge back first.  Its stripe's write lock held.
 */
void wc_entry_pass_charge_locked (struct wcache *wc, struct entry *e);

/* Make the durable block equal to e's newest content.  Its stripe's
 * write lock held.
 */
int wc_write_back_locked (struct wcache *wc, struct entry *e);

/* What a drain does to each entry before removing it (the entry's
 * stripe's write lock held): 0, or -1 to stop.
 */
typedef int (*entry_visit_locked_fn) (struct wcache *wc, struct entry *e,
                                      void *opaque);

/* Flush the whole cache (the client's flush, or implicit: the cache's
 * own), through v.
 */
int wc_flush_all (struct view *v, bool implicit);

/* Replay (wcache-replay.c): rec's piece -- a write, trim or zero inside
 * one block -- applied as the record says the live cache applied it
 * (written through for FUA and THROUGH, else cached), never flushing.
 */
int wc_replay_piece (struct wcache *wc, const struct lb_crashlog_record *rec);

/* Replay: block idx's entry written back and dropped; EINVAL when the
 * cache holds none.
 */
int wc_replay_write_back (struct wcache *wc, uint64_t idx);

/* Visit and remove every entry of st (its write lock held), adding the
 * cache bytes freed to *freed.  Stops at the first visit that fails,
 * leaving that entry and the ones not visited yet in place.
 */
int wc_drain_stripe_locked (struct wcache *wc, struct wc_stripe *st,
                            entry_visit_locked_fn visit, void *opaque,
                            uint64_t *freed);

#endif /* LARGEBLOCK_WCACHE_IMPL_H */
