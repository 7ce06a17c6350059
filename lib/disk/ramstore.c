/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the sparse folio RAM store.
 *
 * Index: a radix tree of 512-slot nodes over folio indexes, as deep as the
 * disk needs (one level per 9 bits of folio count: 7E of 512-byte folios
 * is 6 levels).  Bottom-level slots point at folios; higher slots point at
 * nodes.  Only the root exists at start, so creating any size is O(1).
 *
 * Locking:
 * - Walking the tree is lock-free.  Nodes are created on demand and
 *   published with compare-and-swap (the loser frees its copy), and are
 *   never freed while the store lives, so a walker can never see a node
 *   disappear.  (A node costs 4 KiB per 512 folio slots it ever held.)
 * - Folio slots are guarded by striped read/write locks.  Folios are
 *   grouped in aligned runs of GROUP_BYTES (64 KiB, or one folio if
 *   larger), and stripe = group index modulo NR_STRIPES, so a large
 *   request over small folios takes one lock per group, not per folio.
 *   Readers copy out of a folio under the read lock, so a concurrent trim
 *   cannot free it mid-copy; writes, trims and zeros change a slot or a
 *   folio's bytes under the write lock.  A reader that finds a group's
 *   slots empty needs no lock at all: those folios were absent at that
 *   instant, and zeros are a valid answer.
 * - Trim (and zero without NO_HOLE) takes each group's write lock once,
 *   empties the group's slots and keeps the folios aside, unreachable, in
 *   runs of memory neighbours (struct release_batch).  When it ends it
 *   queues the runs for the reclaim worker (reclaim.h), which gives each
 *   back to the OS with one madvise, outside every lock, and then to its
 *   stripe's allocator under that stripe's write lock: the reply does not
 *   wait for the kernel to free the pages.  The folios stop counting as
 *   allocated (in the disk) before the reply, but count as releasing --
 *   against memory-limit -- until they are back; flush, the statistics
 *   and a write refused at the memory limit wait for the worker
 *   (lb_reclaim_wait), so what they see is exact.
 * - Counters (allocated, releasing, peak, charged) are atomics.
 * - No request holds two stripe locks at once, so there is no lock order
 *   among them; against the plugin's other locks they are row 3 of
 *   locking.h's table (a write cache above takes them under its own).
 *   Functions that need a stripe's lock are *_locked and assert it.
 * - Each stripe owns a folio allocator (slab.h) used only under that
 *   stripe's write lock, so allocation takes no lock of its own.
 *
 * Memory limit: a write first counts the folios it will create and charges
 * them all at once; if that exceeds the limit it fails with ENOSPC before
 * touching anything -- unless only other writes' reservations are in the
 * way (two writes to one absent folio both reserve it), then it retries. (Only
 * a trim racing the same write can make the write need more than it charged;
 * then it charges one folio at a time and may stop part-way with ENOSPC, which
 * overlapping concurrent requests allow.)
 */
#include <config.h>

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "extents.h"
#include "locking.h"
#include "ramstore.h"
#include "reclaim.h"
#include "slab.h"

#define NODE_SHIFT 9
#define NODE_SLOTS (1u << NODE_SHIFT)
#define NR_STRIPES 256
#define GROUP_SHIFT 16 /* lock groups span 64 KiB of folios */

struct node {
  _Atomic (void *) slot[NODE_SLOTS];
};

struct ram_stripe {
  /* Protects the folio slots of this stripe's lock groups (their
   * contents and the folios' bytes) and the slab: read side to copy out
   * of a folio, write side to change a slot or a folio.
   */
  pthread_rwlock_t lock;
  struct lb_slab slab; /* lock (write side): this stripe's folios */
} __attribute__ ((aligned (64)));

/* Fixed after ram_new but for the atomics (no lock) and the stripes.
 * The tree's inner slots are published by CAS and never change after;
 * its bottom-level slots are protected by their stripe's lock.
 */
struct ramstore {
  struct lb_store store; /* must be first */
  const struct lb_geometry *g;
  unsigned levels;      /* 1: the root's slots are folios */
  unsigned group_shift; /* log2 of folios per lock group */
  struct node *root;
  uint64_t limit_folios;      /* 0: unlimited */
  _Atomic uint64_t charged;   /* allocated + releasing + reserved + held */
  _Atomic uint64_t allocated; /* folios in the index */
  _Atomic uint64_t releasing; /* out of the index, memory not back yet */
  _Atomic uint64_t held;      /* charged by a layer above (ram_charge) */
  _Atomic uint64_t peak;
  _Atomic uint64_t nr_nodes;
  struct lb_reclaim *reclaim; /* NULL: trims give memory back inline */
  struct ram_stripe stripes[NR_STRIPES];
};

static struct ramstore *
to_ramstore (struct lb_store *s)
{
  return (struct ramstore *) s;
}

static unsigned
stripe_idx_of (const struct ramstore *rs, uint64_t folio_idx)
{
  return (unsigned) ((folio_idx >> rs->group_shift) % NR_STRIPES);
}

static struct ram_stripe *
stripe_of (struct ramstore *rs, uint64_t folio_idx)
{
  return &rs->stripes[stripe_idx_of (rs, folio_idx)];
}

/* Folio slots one slot at `level` spans (level 1: one folio). */
static unsigned
span_shift (unsigned level)
{
  return NODE_SHIFT * (level - 1);
}

static unsigned
slot_in_node (uint64_t folio_idx, unsigned level)
{
  return (unsigned) (folio_idx >> span_shift (level)) & (NODE_SLOTS - 1);
}

/* ---- the index ---- */

static struct node *
child_or_create (struct ramstore *rs, _Atomic (void *) *slot)
{
  void *child = atomic_load_explicit (slot, memory_order_acquire);
  void *expected = NULL;
  struct node *fresh;

  if (child != NULL)
    return child;
  fresh = calloc (1, sizeof *fresh);
  if (fresh == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  if (atomic_compare_exchange_strong_explicit (slot, &expected, fresh,
                                               memory_order_acq_rel,
                                               memory_order_acquire)) {
    atomic_fetch_add_explicit (&rs->nr_nodes, 1, memory_order_relaxed);
    return fresh;
  }
  free (fresh);
  return expected;
}

/* The bottom-level slot of folio_idx, creating nodes on the way when
 * create is set.  NULL: absent (errno = ENOMEM if creating failed).
 */
static _Atomic (void *) *
folio_slot (struct ramstore *rs, uint64_t folio_idx, bool create)
{
  struct node *n = rs->root;

  assert (folio_idx < rs->g->nr_folios);
  for (unsigned level = rs->levels; level > 1; level--) {
    _Atomic (void *) *slot = &n->slot[slot_in_node (folio_idx, level)];

    n = create ? child_or_create (rs, slot)
               : atomic_load_explicit (slot, memory_order_acquire);
    if (n == NULL)
      return NULL;
  }
  return &n->slot[slot_in_node (folio_idx, 1)];
}

/* Visit [first, last] in folio order: for each bottom node touched, fn gets
 * its slots for the run; for each absent subtree, fn gets slots = NULL and
 * the run it covers, without descending.  fn returns 0 to go on, 1 to
 * stop, -1 for an error.
 */
typedef int (*range_fn) (struct ramstore *rs, uint64_t first, uint64_t nr,
                         _Atomic (void *) *slots, void *opaque);

static int
walk_node (struct ramstore *rs, struct node *n, unsigned level, uint64_t base,
           uint64_t first, uint64_t last, range_fn fn, void *opaque)
{
  const unsigned shift = span_shift (level);
  unsigned i = (unsigned) ((first - base) >> shift);
  int r;

  if (level == 1)
    return fn (rs, first, last - first + 1, &n->slot[i], opaque);

  for (; i < NODE_SLOTS; i++) {
    uint64_t child_base = base + ((uint64_t) i << shift);
    uint64_t child_last = child_base + ((uint64_t) 1 << shift) - 1;
    uint64_t lo = first > child_base ? first : child_base;
    uint64_t hi = last < child_last ? last : child_last;
    struct node *child;

    if (child_base > last)
      break;
    child = atomic_load_explicit (&n->slot[i], memory_order_acquire);
    r = child
      ? walk_node (rs, child, level - 1, child_base, lo, hi, fn, opaque)
      : fn (rs, lo, hi - lo + 1, NULL, opaque);
    if (r != 0)
      return r;
  }
  return 0;
}

static int
walk_range (struct ramstore *rs, uint64_t first, uint64_t last, range_fn fn,
            void *opaque)
{
  return walk_node (rs, rs->root, rs->levels, 0, first, last, fn, opaque);
}

static void
free_nodes (struct node *n, unsigned level)
{
  if (level > 1)
    for (unsigned i = 0; i < NODE_SLOTS; i++) {
      struct node *child = atomic_load_explicit (&n->slot[i],
                                                 memory_order_relaxed);
      if (child)
        free_nodes (child, level - 1);
    }
  free (n);
}

/* ---- accounting ---- */

static bool
charge (struct ramstore *rs, uint64_t nr)
{
  uint64_t before;

  if (nr == 0)
    return true;
  before = atomic_fetch_add_explicit (&rs->charged, nr, memory_order_relaxed);
  if (rs->limit_folios && before + nr > rs->limit_folios) {
    atomic_fetch_sub_explicit (&rs->charged, nr, memory_order_relaxed);
    return false;
  }
  return true;
}

static void
uncharge (struct ramstore *rs, uint64_t nr)
{
  if (nr)
    atomic_fetch_sub_explicit (&rs->charged, nr, memory_order_relaxed);
}

static void
note_allocated (struct ramstore *rs)
{
  uint64_t now = atomic_fetch_add_explicit (&rs->allocated, 1,
                                            memory_order_release) +
    1;
  uint64_t peak = atomic_load_explicit (&rs->peak, memory_order_relaxed);

  while (now > peak &&
         !atomic_compare_exchange_weak_explicit (&rs->peak, &peak, now,
                                                 memory_order_relaxed,
                                                 memory_order_relaxed))
    ;
}

/* ---- releasing folios in runs ---- */

/* Folios a trim has taken out of their slots but not yet given back:
 * per stripe, one open run of folios that are neighbours in memory
 * (folios of one stripe come from that stripe's slab, and a sequentially
 * written range gives each stripe consecutive addresses), and the runs
 * already closed.  When the request ends every run goes to the reclaim
 * queue (reclaim.h), which gives it back after the reply; without one (a
 * store of sub-page folios, or the queue refused) runs are given back at
 * once, each with one madvise under its stripe's write lock.  Detached
 * folios are no longer reachable from the index, so nothing else can
 * touch them in between.
 */
struct release_batch {
  struct lb_reclaim_run open[NR_STRIPES];
  struct lb_reclaim_run *closed;
  size_t nr_closed, cap_closed;
  bool defer; /* closed runs go to rs->reclaim */
};

/* Give a run back now: to the OS, then to its stripe's allocator; the
 * folios stop counting as allocated.  Caller holds the stripe's write
 * lock.
 */
static void
give_back_locked (struct ramstore *rs, const struct lb_reclaim_run *run)
{
  lb_assert_held_write (&rs->stripes[run->owner].lock);
  lb_slab_free_run (&rs->stripes[run->owner].slab, run->first, run->nr);
  atomic_fetch_sub_explicit (&rs->allocated, run->nr, memory_order_relaxed);
  uncharge (rs, run->nr);
}

/* The reclaim worker's half: the madvise without the lock. */
static void
give_back_later (void *opaque, const struct lb_reclaim_run *run)
{
  struct ramstore *rs = opaque;
  struct ram_stripe *st = &rs->stripes[run->owner];
  bool discarded = lb_slab_discard_run (&st->slab, run->first, run->nr);

  lb_rwlock_wrlock (&st->lock);
  if (discarded)
    lb_slab_recycle_run (&st->slab, run->first, run->nr);
  else
    lb_slab_free_run (&st->slab, run->first, run->nr);
  lb_rwlock_unlock (&st->lock);
  atomic_fetch_sub_explicit (&rs->releasing, run->nr, memory_order_release);
  uncharge (rs, run->nr);
}

static bool
keep_closed (struct release_batch *b, const struct lb_reclaim_run *run)
{
  if (b->nr_closed == b->cap_closed) {
    size_t cap = b->cap_closed ? 2 * b->cap_closed : 64;
    struct lb_reclaim_run *p = realloc (b->closed, cap * sizeof *p);

    if (p == NULL)
      return false;
    b->closed = p;
    b->cap_closed = cap;
  }
  b->closed[b->nr_closed++] = *run;
  return true;
}

/* Close stripe i's open run.  Caller holds its write lock. */
static void
close_run_locked (struct ramstore *rs, unsigned i, struct release_batch *b)
{
  struct lb_reclaim_run *run = &b->open[i];

  lb_assert_held_write (&rs->stripes[i].lock);
  if (run->nr == 0)
    return;
  if (!b->defer || !keep_closed (b, run))
    give_back_locked (rs, run);
  run->nr = 0;
}

/* Add a detached folio of stripe i.  Caller holds its write lock. */
static void
release_later_locked (struct ramstore *rs, unsigned i, struct release_batch *b,
                      char *folio)
{
  struct lb_reclaim_run *run = &b->open[i];

  lb_assert_held_write (&rs->stripes[i].lock);
  if (run->nr > 0 &&
      folio ==
        (char *) run->first + (size_t) run->nr * rs->g->physical_bytes &&
      run->nr < UINT32_MAX) {
    run->nr++;
    return;
  }
  close_run_locked (rs, i, b);
  *run = (struct lb_reclaim_run) { .first = folio, .nr = 1, .owner = i };
}

/* The request is done: queue every run, or give them back now. */
static void
finish_batch (struct ramstore *rs, struct release_batch *b)
{
  uint64_t queued = 0;

  for (unsigned i = 0; i < NR_STRIPES; i++) {
    if (b->open[i].nr == 0)
      continue;
    if (b->defer && keep_closed (b, &b->open[i])) {
      b->open[i].nr = 0;
      continue;
    }
    lb_rwlock_wrlock (&rs->stripes[i].lock);
    close_run_locked (rs, i, b);
    lb_rwlock_unlock (&rs->stripes[i].lock);
  }
  for (size_t k = 0; k < b->nr_closed; k++)
    queued += b->closed[k].nr;
  /* The folios have left the disk (folios_allocated, the peak) but their
   * memory is still ours (memory-limit) until the worker gives it back.
   * releasing grows before allocated shrinks: over_limit_without_
   * reservations, which reads them in the other order, never counts
   * these folios zero times. */
  atomic_fetch_add_explicit (&rs->releasing, queued, memory_order_release);
  atomic_fetch_sub_explicit (&rs->allocated, queued, memory_order_release);
  if (b->nr_closed > 0 &&
      lb_reclaim_queue (rs->reclaim, b->closed, b->nr_closed) == -1) {
    atomic_fetch_add_explicit (&rs->allocated, queued, memory_order_release);
    atomic_fetch_sub_explicit (&rs->releasing, queued, memory_order_release);
    for (size_t k = 0; k < b->nr_closed; k++) {
      struct ram_stripe *st = &rs->stripes[b->closed[k].owner];

      lb_rwlock_wrlock (&st->lock);
      give_back_locked (rs, &b->closed[k]);
      lb_rwlock_unlock (&st->lock);
    }
  }
  free (b->closed);
}

/* ---- splitting a request ---- */

/* Part of a request inside one lock group: folios [first, first + nr), whose
 * bottom-level slots are contiguous.
 */
struct group_span {
  uint64_t offset; /* byte offset on the disk */
  uint64_t first;
  uint32_t nr;
  uint32_t bytes;
  size_t done; /* bytes of the request before this span */
};

typedef int (*group_fn) (struct ramstore *rs, const struct group_span *gs,
                         void *opaque);

/* Split [offset, offset + count) at lock group boundaries: one lock per
 * group per request.
 */
static int
for_each_group (struct ramstore *rs, uint64_t offset, uint64_t count,
                group_fn fn, void *opaque)
{
  const struct lb_geometry *g = rs->g;
  const uint64_t group_bytes = UINT64_C (1)
    << (g->physical_shift + rs->group_shift);
  size_t done = 0;

  while (count > 0) {
    uint64_t room = group_bytes - (offset & (group_bytes - 1));
    struct group_span gs = {
      .offset = offset,
      .first = lb_folio_idx (g, offset),
      .bytes = (uint32_t) (count < room ? count : room),
      .done = done,
    };

    gs.nr = (uint32_t) (lb_folio_idx (g, offset + gs.bytes - 1) - gs.first +
                        1);
    if (fn (rs, &gs, opaque) == -1)
      return -1;
    offset += gs.bytes;
    count -= gs.bytes;
    done += gs.bytes;
  }
  return 0;
}

/* Bytes of a span's piece in one folio, starting pos bytes into the span
 * and in_folio bytes into that folio.
 */
static uint32_t
piece_bytes (const struct lb_geometry *g, const struct group_span *gs,
             uint32_t pos, uint32_t in_folio)
{
  uint32_t room = g->physical_bytes - in_folio;

  return gs->bytes - pos < room ? gs->bytes - pos : room;
}

/* Visit a span folio by folio: slot i of the span holds bytes
 * [in_folio, in_folio + len) of the piece at pos bytes into the span.
 */
#define for_each_piece(g, gs, i, pos, in_folio, len) \
  for (uint32_t i = 0, pos = 0, \
                in_folio = lb_folio_offset ((g), (gs)->offset), len; \
       pos < (gs)->bytes && \
       ((len = piece_bytes ((g), (gs), pos, in_folio)), true); \
       i++, pos += len, in_folio = 0)

static bool
any_present (_Atomic (void *) *slots, uint32_t nr)
{
  for (uint32_t i = 0; i < nr; i++)
    if (atomic_load_explicit (&slots[i], memory_order_acquire))
      return true;
  return false;
}

static int
read_group (struct ramstore *rs, const struct group_span *gs, void *opaque)
{
  char *dst = (char *) opaque + gs->done;
  _Atomic (void *) *slots = folio_slot (rs, gs->first, false);
  struct ram_stripe *st;

  if (slots == NULL || !any_present (slots, gs->nr)) {
    memset (dst, 0, gs->bytes);
    return 0;
  }
  st = stripe_of (rs, gs->first);
  lb_rwlock_rdlock (&st->lock);
  for_each_piece (rs->g, gs, i, pos, in_folio, len) {
    char *folio = atomic_load_explicit (&slots[i], memory_order_acquire);

    if (folio)
      memcpy (dst + pos, folio + in_folio, len);
    else
      memset (dst + pos, 0, len);
  }
  lb_rwlock_unlock (&st->lock);
  return 0;
}

static int
ram_pread (struct lb_store *s, void *buf, uint32_t count, uint64_t offset)
{
  return for_each_group (to_ramstore (s), offset, count, read_group, buf);
}

/* State of a write (or a NO_HOLE zero: src == NULL writes zeros). */
struct write_state {
  const char *src;
  uint64_t reserved; /* folios charged in advance, unused yet */
};

static int
count_absent_group (struct ramstore *rs, const struct group_span *gs,
                    void *opaque)
{
  _Atomic (void *) *slots = folio_slot (rs, gs->first, false);
  uint64_t *absent = opaque;

  for (uint32_t i = 0; i < gs->nr; i++)
    if (slots == NULL ||
        atomic_load_explicit (&slots[i], memory_order_acquire) == NULL)
      (*absent)++;
  return 0;
}

/* Charge, in one step, every folio the write will have to create.
 *
 * The charge also holds the reservations of writes in flight, and two
 * writes to one absent folio both reserve it although only one will
 * create it.  So a refused charge is final only when the folios that
 * exist, plus those a layer above holds (the write cache's blocks), plus
 * those this write still needs are over the limit; otherwise other
 * writes' reservations are in the way, and they drop them (or turn
 * them into folios) as soon as they finish: wait a little and retry.
 */
static bool
over_limit_without_reservations (struct ramstore *rs, uint64_t offset,
                                 uint64_t count)
{
  /* Read the existing folios first and count the absent ones after.  A
   * folio is counted only once its slot is published (release), so one
   * counted here is never also absent; one created in between is in
   * neither count, which errs towards retrying, never towards a false
   * ENOSPC.
   */
  uint64_t allocated = atomic_load_explicit (&rs->allocated,
                                             memory_order_acquire);
  uint64_t releasing = atomic_load_explicit (&rs->releasing,
                                             memory_order_acquire);
  uint64_t held = atomic_load_explicit (&rs->held, memory_order_acquire);
  uint64_t absent = 0;

  for_each_group (rs, offset, count, count_absent_group, &absent);
  return allocated + releasing + held + absent > rs->limit_folios;
}

static bool
reclaim_pending (struct ramstore *rs)
{
  return rs->reclaim && lb_reclaim_busy (rs->reclaim);
}

#define RESERVE_SPINS 100    /* sched_yield first: reservations are brief */
#define RESERVE_SLEEPS 10000 /* then 100 us naps, about 1 s in all */

static int
reserve_for_write (struct ramstore *rs, uint64_t offset, uint64_t count,
                   struct write_state *ws)
{
  ws->reserved = 0;
  if (rs->limit_folios == 0)
    return 0;
  for (unsigned tries = 0; tries < RESERVE_SPINS + RESERVE_SLEEPS; tries++) {
    uint64_t absent = 0;
    bool reclaiming;

    for_each_group (rs, offset, count, count_absent_group, &absent);
    if (charge (rs, absent)) {
      ws->reserved = absent;
      return 0;
    }
    /* Trimmed folios still count until the worker gives them back.  Ask
     * whether it has any before counting: if not, every trim that replied
     * before now is back, and the count below sees it.
     */
    reclaiming = reclaim_pending (rs);
    if (over_limit_without_reservations (rs, offset, count)) {
      if (!reclaiming)
        break;
      lb_reclaim_wait (rs->reclaim);
      continue;
    }
    if (tries < RESERVE_SPINS)
      sched_yield ();
    else
      nanosleep (&(struct timespec) { .tv_nsec = 100 * 1000 }, NULL);
  }
  errno = ENOSPC;
  return -1;
}

/* A folio for an empty slot: from the reservation, else charged now. */
static void *
new_folio_locked (struct ramstore *rs, struct ram_stripe *st,
                  struct write_state *ws)
{
  void *folio;

  lb_assert_held_write (&st->lock);
  if (ws->reserved > 0)
    ws->reserved--;
  else if (!charge (rs, 1)) {
    errno = ENOSPC;
    return NULL;
  }
  folio = lb_slab_alloc (&st->slab);
  if (folio == NULL) {
    uncharge (rs, 1);
    return NULL;
  }
  return folio;
}

static int
write_group (struct ramstore *rs, const struct group_span *gs, void *opaque)
{
  struct write_state *ws = opaque;
  _Atomic (void *) *slots = folio_slot (rs, gs->first, true);
  struct ram_stripe *st = stripe_of (rs, gs->first);
  int r = 0;

  if (slots == NULL)
    return -1;
  lb_rwlock_wrlock (&st->lock);
  for_each_piece (rs->g, gs, i, pos, in_folio, len) {
    char *folio = atomic_load_explicit (&slots[i], memory_order_relaxed);

    if (folio == NULL) {
      folio = new_folio_locked (rs, st, ws);
      if (folio == NULL) {
        r = -1;
        break;
      }
      atomic_store_explicit (&slots[i], folio, memory_order_release);
      note_allocated (rs); /* after the slot: see reserve_for_write */
    }
    if (ws->src)
      memcpy (folio + in_folio, ws->src + gs->done + pos, len);
    else
      memset (folio + in_folio, 0, len);
  }
  lb_rwlock_unlock (&st->lock);
  return r;
}

static int
write_range (struct ramstore *rs, const void *src, uint64_t count,
             uint64_t offset)
{
  struct write_state ws = { .src = src };
  int r, saved_errno;

  if (reserve_for_write (rs, offset, count, &ws) == -1)
    return -1;
  r = for_each_group (rs, offset, count, write_group, &ws);
  saved_errno = errno;
  uncharge (rs, ws.reserved);
  errno = saved_errno;
  return r;
}

static int
ram_pwrite (struct lb_store *s, const void *buf, uint32_t count,
            uint64_t offset, bool fua)
{
  /* RAM has nothing to make durable: FUA is complete on return. */
  return write_range (to_ramstore (s), buf, count, offset);
}

/* Zero parts of folios that stay allocated (the partial ends of a trim
 * or zero); absent folios already read as zeros.
 */
static int
zero_part_group (struct ramstore *rs, const struct group_span *gs,
                 void *opaque)
{
  _Atomic (void *) *slots = folio_slot (rs, gs->first, false);
  struct ram_stripe *st = stripe_of (rs, gs->first);

  if (slots == NULL)
    return 0;
  lb_rwlock_wrlock (&st->lock);
  for_each_piece (rs->g, gs, i, pos, in_folio, len) {
    char *folio = atomic_load_explicit (&slots[i], memory_order_relaxed);

    if (folio)
      memset (folio + in_folio, 0, len);
  }
  lb_rwlock_unlock (&st->lock);
  return 0;
}

/* Detach the folios of [first, first + nr) -- bottom-level slots, split
 * at lock groups: one write lock per group that has any folio.
 */
static int
release_run (struct ramstore *rs, uint64_t first, uint64_t nr,
             _Atomic (void *) *slots, void *opaque)
{
  const uint64_t group_folios = UINT64_C (1) << rs->group_shift;
  struct release_batch *b = opaque;

  if (slots == NULL)
    return 0; /* nothing allocated under here */
  for (uint64_t i = 0, n; i < nr; i += n) {
    unsigned si = stripe_idx_of (rs, first + i);
    struct ram_stripe *st = &rs->stripes[si];

    n = group_folios - ((first + i) & (group_folios - 1));
    if (n > nr - i)
      n = nr - i;
    if (!any_present (&slots[i], (uint32_t) n))
      continue;
    lb_rwlock_wrlock (&st->lock);
    for (uint64_t j = i; j < i + n; j++) {
      char *folio = atomic_load_explicit (&slots[j], memory_order_relaxed);

      if (folio == NULL)
        continue;
      atomic_store_explicit (&slots[j], NULL, memory_order_release);
      release_later_locked (rs, si, b, folio);
    }
    lb_rwlock_unlock (&st->lock);
  }
  return 0;
}

/* Release every folio wholly inside [offset, offset + count) and zero the
 * partial ends.  The disk's last folio counts as whole when the range
 * reaches the end of the disk.
 */
static int
release_range (struct ramstore *rs, uint64_t offset, uint64_t count)
{
  const struct lb_geometry *g = rs->g;
  const uint64_t mask = g->physical_bytes - 1;
  uint64_t end = offset + count;
  uint64_t whole_start = (offset + mask) & ~mask;
  uint64_t whole_end = end == g->size_bytes ? end : end & ~mask;
  struct release_batch batch = { .defer = rs->reclaim != NULL };

  if (whole_start >= whole_end)
    return for_each_group (rs, offset, count, zero_part_group, NULL);

  if (offset < whole_start)
    for_each_group (rs, offset, whole_start - offset, zero_part_group, NULL);
  walk_range (rs, lb_folio_idx (g, whole_start),
              lb_folio_idx (g, whole_end - 1), release_run, &batch);
  finish_batch (rs, &batch);
  if (whole_end < end)
    for_each_group (rs, whole_end, end - whole_end, zero_part_group, NULL);
  return 0;
}

static int
ram_trim (struct lb_store *s, uint32_t count, uint64_t offset)
{
  return release_range (to_ramstore (s), offset, count);
}

static int
ram_zero (struct lb_store *s, uint32_t count, uint64_t offset, unsigned flags)
{
  struct ramstore *rs = to_ramstore (s);

  if (flags & LB_ZERO_MAY_TRIM)
    return release_range (rs, offset, count);
  /* NO_HOLE: the range must stay (or become) allocated, which costs a
   * memset of every byte: no faster than a write.
   */
  if (flags & LB_ZERO_FAST) {
    errno = ENOTSUP;
    return -1;
  }
  return write_range (rs, NULL, count, offset);
}

/* RAM is not persistent: nothing to make durable.  The wait gives a
 * flush one more meaning, a barrier for memory: after it, the memory of
 * every trim that replied before it is back with the OS.
 */
static int
ram_flush (struct lb_store *s)
{
  struct ramstore *rs = to_ramstore (s);

  if (rs->reclaim)
    lb_reclaim_wait (rs->reclaim);
  return 0;
}

/* ---- extents ---- */

/* Each absent subtree is one hole; each folio slot is a run of its own,
 * which the builder merges with its neighbours.
 */
static int
extent_run (struct ramstore *rs, uint64_t first, uint64_t nr,
            _Atomic (void *) *slots, void *opaque)
{
  struct lb_extents *reply = opaque;
  int r;

  if (slots == NULL)
    return lb_extents_add (reply, lb_folio_to_bytes (rs->g, first),
                           lb_folio_to_bytes (rs->g, first + nr), true);
  for (uint64_t i = 0; i < nr; i++) {
    bool hole = atomic_load_explicit (&slots[i], memory_order_acquire) == NULL;
    r = lb_extents_add (reply, lb_folio_to_bytes (rs->g, first + i),
                        lb_folio_to_bytes (rs->g, first + i + 1), hole);
    if (r != 0)
      return r;
  }
  return 0;
}

static int
ram_extents (struct lb_store *s, uint32_t count, uint64_t offset, bool req_one,
             lb_extent_fn fn, void *opaque)
{
  struct ramstore *rs = to_ramstore (s);
  struct lb_extents reply;

  lb_extents_init (&reply, offset, count, req_one, fn, opaque);
  if (walk_range (rs, lb_folio_idx (rs->g, offset),
                  lb_folio_idx (rs->g, offset + count - 1), extent_run,
                  &reply) == -1)
    return -1;
  return lb_extents_finish (&reply);
}

/* ---- lifetime and reporting ---- */

static void
ram_usage (struct lb_store *s, struct lb_store_usage *u)
{
  struct ramstore *rs = to_ramstore (s);
  uint64_t slab_meta = 0;

  if (rs->reclaim)
    lb_reclaim_wait (rs->reclaim);
  for (unsigned i = 0; i < NR_STRIPES; i++) {
    lb_rwlock_rdlock (&rs->stripes[i].lock);
    slab_meta += lb_slab_metadata_bytes (&rs->stripes[i].slab);
    lb_rwlock_unlock (&rs->stripes[i].lock);
  }
  u->folios_allocated = atomic_load (&rs->allocated);
  u->folios_peak = atomic_load (&rs->peak);
  u->bytes_resident = u->folios_allocated * rs->g->physical_bytes;
  u->metadata_bytes = (atomic_load (&rs->nr_nodes) + 1) *
      sizeof (struct node) +
    sizeof *rs + slab_meta;
}

static void
ram_destroy (struct lb_store *s)
{
  struct ramstore *rs = to_ramstore (s);

  lb_reclaim_free (rs->reclaim);
  free_nodes (rs->root, rs->levels);
  for (unsigned i = 0; i < NR_STRIPES; i++) {
    lb_slab_destroy (&rs->stripes[i].slab);
    pthread_rwlock_destroy (&rs->stripes[i].lock);
  }
  free (rs);
}

static bool
ram_charge (struct lb_store *s, uint64_t nr_folios)
{
  struct ramstore *rs = to_ramstore (s);

  if (!charge (rs, nr_folios))
    return false;
  atomic_fetch_add_explicit (&rs->held, nr_folios, memory_order_release);
  return true;
}

static void
ram_uncharge (struct lb_store *s, uint64_t nr_folios)
{
  struct ramstore *rs = to_ramstore (s);

  atomic_fetch_sub_explicit (&rs->held, nr_folios, memory_order_release);
  uncharge (rs, nr_folios);
}

static const struct lb_store_ops ramstore_ops = {
  .name = "ram",
  .pread = ram_pread,
  .pwrite = ram_pwrite,
  .trim = ram_trim,
  .zero = ram_zero,
  .flush = ram_flush,
  .extents = ram_extents,
  .usage = ram_usage,
  .destroy = ram_destroy,
  .charge = ram_charge,
  .uncharge = ram_uncharge,
};

/* Levels needed so the root spans nr_folios. */
static unsigned
levels_for (uint64_t nr_folios)
{
  unsigned levels = 1;

  while (levels * NODE_SHIFT < 64 &&
         (nr_folios - 1) >> (levels * NODE_SHIFT) != 0)
    levels++;
  return levels;
}

struct lb_store *
lb_ramstore_new (const struct lb_geometry *g, uint64_t memory_limit_bytes)
{
  struct ramstore *rs;

  if (posix_memalign ((void **) &rs, 64, sizeof *rs) != 0) {
    errno = ENOMEM;
    return NULL;
  }
  memset (rs, 0, sizeof *rs);
  rs->root = calloc (1, sizeof *rs->root);
  if (rs->root == NULL) {
    free (rs);
    errno = ENOMEM;
    return NULL;
  }
  rs->store.ops = &ramstore_ops;
  rs->store.geom = g;
  rs->g = g;
  rs->levels = levels_for (g->nr_folios);
  /* Groups never straddle a bottom node: at most 128 of its 512 slots. */
  rs->group_shift = g->physical_shift >= GROUP_SHIFT
    ? 0
    : GROUP_SHIFT - g->physical_shift;
  rs->limit_folios = memory_limit_bytes >> g->physical_shift;
  for (unsigned i = 0; i < NR_STRIPES; i++) {
    pthread_rwlock_init (&rs->stripes[i].lock, NULL);
    lb_slab_init (&rs->stripes[i].slab, g->physical_bytes);
  }
  /* Sub-page folios share pages: giving one back is a memset or a page's
   * madvise, done under the stripe's lock anyway.  Without a queue (out of
   * memory) trims give memory back inline.
   */
  if (g->physical_bytes >= (uint64_t) sysconf (_SC_PAGESIZE))
    rs->reclaim = lb_reclaim_new (give_back_later, rs);
  return &rs->store;
}
