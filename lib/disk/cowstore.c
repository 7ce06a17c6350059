/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the copy-on-write overlay -- see cowstore.h.
 *
 * Owns the overlay's blocks: one per physical block changed since the
 * overlay was made, holding the block's whole content, or no buffer when
 * the block is all zeros (a zero or trim of the whole block).  Index:
 * NR_STRIPES hash tables, stripe = block index modulo NR_STRIPES, with
 * chained buckets that double when blocks outnumber them.
 *
 * Locking (locking.h's row 2b):
 * - Each stripe's rwlock protects its table, its blocks and their bytes.
 *   A read holds the read side of one block's stripe while it copies out
 *   of the overlay or reads the base, so no copy-up runs beside it; a
 *   write, zero or trim holds the write side while it copies the block up
 *   from the base and changes it.  No request holds two stripe locks.
 *   The base store's own locks are taken under one; a write cache above
 *   (a replay builds its cut through one) takes these under its own.
 * - The base is only read, and its owner keeps it unchanged while the
 *   overlay lives (replay.h refuses to move it with EBUSY).
 * - Counters are relaxed atomics.
 * - Buffers come from malloc: an overlay holds few blocks and lives for
 *   one connection.
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cowstore.h"
#include "extents.h"
#include "locking.h"
#include "prng.h"

#define NR_STRIPES 64
#define MIN_BUCKETS 16

/* One block of the overlay.  Its stripe's lock protects every field. */
struct cow_block {
  struct cow_block *next;
  uint64_t idx;        /* fixed once in its bucket */
  unsigned char *data; /* the block's bytes; NULL: all zeros */
};

struct cow_stripe {
  /* Protects the fields below and the blocks in the buckets: read side
   * to look up and copy out, write side to add or change a block.
   */
  pthread_rwlock_t lock;
  struct cow_block **buckets; /* lock */
  size_t nr_buckets;          /* lock; a power of two */
  size_t nr_blocks;           /* lock */
} __attribute__ ((aligned (64)));

struct cowstore {
  struct lb_store store; /* must be first */
  /* Fixed. */
  struct lb_store *base;
  void (*release) (void *opaque);
  void *opaque;
  /* Relaxed atomics. */
  _Atomic uint64_t blocks, buffers, buffers_peak;
  struct cow_stripe stripes[NR_STRIPES];
};

static inline struct cowstore *
to_cow (struct lb_store *s)
{
  return (struct cowstore *) s;
}

static struct cow_stripe *
stripe_of (struct cowstore *cs, uint64_t idx)
{
  return &cs->stripes[idx % NR_STRIPES];
}

/* The bytes of block idx inside the disk (the last one may be short). */
static uint32_t
block_len (const struct cowstore *cs, uint64_t idx)
{
  const struct lb_geometry *g = cs->store.geom;
  uint64_t left = g->size_bytes - lb_folio_to_bytes (g, idx);

  return left < g->physical_bytes ? (uint32_t) left : g->physical_bytes;
}

/* ---- the index (under the stripe's lock) ---- */

static size_t
bucket_of_locked (const struct cow_stripe *st, uint64_t idx)
{
  lb_assert_held (&st->lock);
  return (size_t) lb_prng_derive (0, idx / NR_STRIPES) & (st->nr_buckets - 1);
}

static struct cow_block *
lookup_locked (struct cow_stripe *st, uint64_t idx)
{
  lb_assert_held (&st->lock);
  for (struct cow_block *b = st->buckets[bucket_of_locked (st, idx)]; b;
       b = b->next)
    if (b->idx == idx)
      return b;
  return NULL;
}

/* Double the buckets when blocks outnumber them (best effort). */
static void
maybe_grow_locked (struct cow_stripe *st)
{
  size_t n = st->nr_buckets * 2;
  struct cow_block **nb;

  lb_assert_held_write (&st->lock);
  if (st->nr_blocks <= st->nr_buckets || (nb = calloc (n, sizeof *nb)) == NULL)
    return;
  for (size_t i = 0; i < st->nr_buckets; i++)
    while (st->buckets[i]) {
      struct cow_block *b = st->buckets[i];
      size_t to = (size_t) lb_prng_derive (0, b->idx / NR_STRIPES) & (n - 1);

      st->buckets[i] = b->next;
      b->next = nb[to];
      nb[to] = b;
    }
  free (st->buckets);
  st->buckets = nb;
  st->nr_buckets = n;
}

static void
count_buffer (struct cowstore *cs)
{
  uint64_t now = atomic_fetch_add_explicit (&cs->buffers, 1,
                                            memory_order_relaxed) +
    1;
  uint64_t peak = atomic_load_explicit (&cs->buffers_peak,
                                        memory_order_relaxed);

  while (now > peak &&
         !atomic_compare_exchange_weak_explicit (&cs->buffers_peak, &peak, now,
                                                 memory_order_relaxed,
                                                 memory_order_relaxed))
    ;
}

static void
drop_buffer (struct cowstore *cs, struct cow_block *b)
{
  if (b->data == NULL)
    return;
  free (b->data);
  b->data = NULL;
  atomic_fetch_sub_explicit (&cs->buffers, 1, memory_order_relaxed);
}

/* Give b a buffer: the base's block when from_base, else zeros. */
static int
fill_buffer_locked (struct cowstore *cs, struct cow_stripe *st,
                    struct cow_block *b, bool from_base)
{
  uint32_t len = block_len (cs, b->idx);

  lb_assert_held_write (&st->lock);
  b->data = from_base ? malloc (cs->store.geom->physical_bytes)
                      : calloc (1, cs->store.geom->physical_bytes);
  if (b->data == NULL) {
    errno = ENOMEM;
    return -1;
  }
  if (from_base &&
      cs->base->ops->pread (cs->base, b->data, len,
                            lb_folio_to_bytes (cs->store.geom, b->idx)) ==
        -1) {
    int err = errno;

    free (b->data);
    b->data = NULL;
    errno = err;
    return -1;
  }
  count_buffer (cs);
  return 0;
}

/* Block idx in the overlay, added if absent: copied up from the base
 * unless the caller replaces all of it (whole).  NULL with errno.
 */
static struct cow_block *
get_block_locked (struct cowstore *cs, struct cow_stripe *st, uint64_t idx,
                  bool whole)
{
  struct cow_block *b = lookup_locked (st, idx);
  size_t bucket;

  lb_assert_held_write (&st->lock);
  if (b)
    return b;
  if ((b = calloc (1, sizeof *b)) == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  b->idx = idx;
  if (!whole && fill_buffer_locked (cs, st, b, true) == -1) {
    int err = errno;

    free (b);
    errno = err;
    return NULL;
  }
  bucket = bucket_of_locked (st, idx);
  b->next = st->buckets[bucket];
  st->buckets[bucket] = b;
  st->nr_blocks++;
  atomic_fetch_add_explicit (&cs->blocks, 1, memory_order_relaxed);
  maybe_grow_locked (st);
  return b;
}

/* ---- requests, one block's piece at a time ---- */

typedef int (*piece_fn) (struct cowstore *cs, uint64_t idx, uint32_t off,
                         uint32_t len, void *opaque);

/* Call fn for each block's piece of [offset, offset + count), in order
 * (fn moves its own buffer cursor, opaque, past the piece); stop at the
 * first failure.
 */
static int for_each_piece (struct cowstore *cs, uint32_t count,
                           uint64_t offset, piece_fn fn, void *opaque)
{
  const struct lb_geometry *g = cs->store.geom;

  for (uint64_t done = 0; done < count;) {
    uint64_t pos = offset + done;
    uint32_t off = lb_folio_offset (g, pos);
    uint32_t len = g->physical_bytes - off;

    if (len > count - done)
      len = (uint32_t) (count - done);
    if (fn (cs, lb_folio_idx (g, pos), off, len, opaque) == -1)
      return -1;
    done += len;
  }
  return 0;
}

static int
read_piece (struct cowstore *cs, uint64_t idx, uint32_t off, uint32_t len,
            void *opaque)
{
  unsigned char **out = opaque;
  struct cow_stripe *st = stripe_of (cs, idx);
  struct cow_block *b;
  int r = 0;

  lb_rwlock_rdlock (&st->lock);
  if ((b = lookup_locked (st, idx)) == NULL)
    r = cs->base->ops->pread (cs->base, *out, len,
                              lb_folio_to_bytes (cs->store.geom, idx) + off);
  else if (b->data)
    memcpy (*out, b->data + off, len);
  else
    memset (*out, 0, len);
  lb_rwlock_unlock (&st->lock);
  *out += len;
  return r;
}

/* A write (data) or a zero (data NULL) of one block's piece. */
static int
change_piece (struct cowstore *cs, uint64_t idx, uint32_t off, uint32_t len,
              void *opaque)
{
  const unsigned char **in = opaque;
  struct cow_stripe *st = stripe_of (cs, idx);
  bool whole = off == 0 && len == block_len (cs, idx);
  struct cow_block *b;
  int r = -1;

  lb_rwlock_wrlock (&st->lock);
  if ((b = get_block_locked (cs, st, idx, whole)) == NULL)
    goto out;
  if (*in == NULL && (whole || b->data == NULL))
    drop_buffer (cs, b); /* all zeros now, or already */
  else if (b->data == NULL && fill_buffer_locked (cs, st, b, false) == -1)
    goto out;
  if (*in && b->data)
    memcpy (b->data + off, *in, len);
  else if (b->data)
    memset (b->data + off, 0, len);
  r = 0;
out:
  lb_rwlock_unlock (&st->lock);
  if (*in)
    *in += len;
  return r;
}

static int
cow_pread (struct lb_store *s, void *buf, uint32_t count, uint64_t offset)
{
  unsigned char *out = buf;

  return for_each_piece (to_cow (s), count, offset, read_piece, &out);
}

static int
cow_pwrite (struct lb_store *s, const void *buf, uint32_t count,
            uint64_t offset, bool fua)
{
  const unsigned char *in = buf;

  (void) fua; /* the overlay is as durable as it gets */
  return for_each_piece (to_cow (s), count, offset, change_piece, &in);
}

static int
cow_zero (struct lb_store *s, uint32_t count, uint64_t offset, unsigned flags)
{
  const unsigned char *in = NULL;

  (void) flags; /* always fast; the bytes are zeros either way */
  return for_each_piece (to_cow (s), count, offset, change_piece, &in);
}

static int
cow_trim (struct lb_store *s, uint32_t count, uint64_t offset)
{
  return cow_zero (s, count, offset, LB_ZERO_MAY_TRIM);
}

static int
cow_flush (struct lb_store *s)
{
  (void) s;
  return 0;
}

/* ---- extents: the overlay's blocks, the base's answer between them ---- */

static int
add_base_run (uint64_t offset, uint64_t length, bool hole, void *opaque)
{
  /* The builder ignores runs after a req_one answer: never an error. */
  return lb_extents_add (opaque, offset, offset + length, hole) == -1 ? -1 : 0;
}

/* The base's runs over blocks [first, end) (none of them in the
 * overlay), clipped to the request by the builder.
 */
static int
add_base_blocks (struct cowstore *cs, struct lb_extents *reply, uint64_t first,
                 uint64_t end)
{
  const struct lb_geometry *g = cs->store.geom;
  uint64_t from = lb_folio_to_bytes (g, first),
           to = lb_folio_to_bytes (g, end);

  if (first == end)
    return 0;
  if (from < reply->req_start_bytes)
    from = reply->req_start_bytes;
  if (to > reply->req_end_bytes)
    to = reply->req_end_bytes;
  return cs->base->ops->extents (cs->base, (uint32_t) (to - from), from, false,
                                 add_base_run, reply);
}

/* Whether block idx is in the overlay, and if so whether it is a hole
 * (all zeros, no buffer).
 */
static bool
in_overlay (struct cowstore *cs, uint64_t idx, bool *hole)
{
  struct cow_stripe *st = stripe_of (cs, idx);
  struct cow_block *b;

  lb_rwlock_rdlock (&st->lock);
  b = lookup_locked (st, idx);
  if (b)
    *hole = b->data == NULL;
  lb_rwlock_unlock (&st->lock);
  return b != NULL;
}

static int
cow_extents (struct lb_store *s, uint32_t count, uint64_t offset, bool req_one,
             lb_extent_fn fn, void *opaque)
{
  struct cowstore *cs = to_cow (s);
  const struct lb_geometry *g = s->geom;
  uint64_t first = lb_folio_idx (g, offset);
  uint64_t last = lb_folio_idx (g, offset + count - 1);
  uint64_t run = first; /* blocks [run, idx) are the base's */
  struct lb_extents reply;
  int r = 0;

  lb_extents_init (&reply, offset, count, req_one, fn, opaque);
  for (uint64_t idx = first; idx <= last && r == 0 && !reply.done; idx++) {
    bool hole;

    if (!in_overlay (cs, idx, &hole))
      continue;
    r = add_base_blocks (cs, &reply, run, idx);
    if (r == 0 && !reply.done)
      r = lb_extents_add (&reply, lb_folio_to_bytes (g, idx),
                          lb_folio_to_bytes (g, idx + 1), hole);
    run = idx + 1;
  }
  if (r == 0 && !reply.done)
    r = add_base_blocks (cs, &reply, run, last + 1);
  if (r == -1)
    return -1;
  return lb_extents_finish (&reply);
}

/* ---- lifetime and reporting ---- */

static void
cow_usage (struct lb_store *s, struct lb_store_usage *u)
{
  struct cowstore *cs = to_cow (s);
  uint64_t buckets = 0;

  for (unsigned i = 0; i < NR_STRIPES; i++) {
    lb_rwlock_rdlock (&cs->stripes[i].lock);
    buckets += cs->stripes[i].nr_buckets;
    lb_rwlock_unlock (&cs->stripes[i].lock);
  }
  u->folios_allocated = atomic_load_explicit (&cs->buffers,
                                              memory_order_relaxed);
  u->folios_peak = atomic_load_explicit (&cs->buffers_peak,
                                         memory_order_relaxed);
  u->bytes_resident = u->folios_allocated * s->geom->physical_bytes;
  u->metadata_bytes = sizeof *cs + buckets * sizeof (struct cow_block *) +
    lb_cowstore_blocks (s) * sizeof (struct cow_block);
}

uint64_t
lb_cowstore_blocks (struct lb_store *s)
{
  return atomic_load_explicit (&to_cow (s)->blocks, memory_order_relaxed);
}

/* Free every block and table of stripes [0, nr). */
static void
free_stripes (struct cowstore *cs, unsigned nr)
{
  for (unsigned i = 0; i < nr; i++) {
    struct cow_stripe *st = &cs->stripes[i];

    for (size_t k = 0; k < st->nr_buckets; k++)
      while (st->buckets[k]) {
        struct cow_block *b = st->buckets[k];

        st->buckets[k] = b->next;
        free (b->data);
        free (b);
      }
    free (st->buckets);
    pthread_rwlock_destroy (&st->lock);
  }
}

static void
cow_destroy (struct lb_store *s)
{
  struct cowstore *cs = to_cow (s);
  void (*release) (void *) = cs->release;
  void *opaque = cs->opaque;

  free_stripes (cs, NR_STRIPES);
  free (cs);
  if (release)
    release (opaque);
}

static const struct lb_store_ops cowstore_ops = {
  .name = "cow",
  .pread = cow_pread,
  .pwrite = cow_pwrite,
  .trim = cow_trim,
  .zero = cow_zero,
  .flush = cow_flush,
  .extents = cow_extents,
  .usage = cow_usage,
  .destroy = cow_destroy,
};

struct lb_store *
lb_cowstore_new (struct lb_store *base, void (*release) (void *opaque),
                 void *opaque)
{
  struct cowstore *cs;
  unsigned i;

  if (posix_memalign ((void **) &cs, 64, sizeof *cs) != 0) {
    errno = ENOMEM;
    return NULL;
  }
  memset (cs, 0, sizeof *cs);
  cs->store.ops = &cowstore_ops;
  cs->store.geom = base->geom;
  cs->base = base;
  cs->release = release;
  cs->opaque = opaque;
  for (i = 0; i < NR_STRIPES; i++) {
    struct cow_stripe *st = &cs->stripes[i];

    st->buckets = calloc (MIN_BUCKETS, sizeof *st->buckets);
    if (st->buckets == NULL)
      break;
    st->nr_buckets = MIN_BUCKETS;
    pthread_rwlock_init (&st->lock, NULL);
  }
  if (i < NR_STRIPES) {
    free_stripes (cs, i);
    free (cs);
    errno = ENOMEM;
    return NULL;
  }
  return &cs->store;
}
