/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the write cache's power cut and its reports -- see wcache.h
 * for what a cut does, wcache.c for the cache it empties.
 *
 * Owns the power: the generations (a connection outlives a cut only as
 * a stale store, whose requests fail with EIO), the cut (lb_wcache_cut,
 * lb_wcache_cut_once, power-cut-after, and a replay's lb_wcache_cut_as,
 * whose mode, seed and number are a crash log's), the resolution of every
 * unflushed folio by the mode, the cut reports and the statistics
 * (lb_wcache_get_stats, lb_wcache_write_json).
 *
 * Locking (the order is locking.h's):
 * - A cut takes cut_lock, then every stripe's write lock in index order
 *   (cut_locked and everything it calls run with all of them held, so no
 *   request is inside the cache), resolves every entry into the durable
 *   store, empties the cache, publishes the report under report_lock,
 *   calls on_cut, and only then bumps the generation: whatever on_cut
 *   publishes (the plugin's log line and statsfile) is there before any
 *   connection can see the cut.  The generation changes only under
 *   cut_lock, so lb_wcache_cut_once's "unless cut N happened" test and
 *   its cut are one step against every other cut.
 * - on_cut runs with every cut lock held: a lock it takes comes after
 *   them (the plugin's statsfile_lock, under which only report_lock is
 *   taken, by lb_wcache_get_stats).
 * - report_lock protects the reports (last, total) only and is a leaf.
 * - With a crash log, the cut's record is appended under all the cut's
 *   locks, before it resolves anything: no request or flush can append
 *   in between, so the records before it are exactly what it resolved.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "prng.h"
#include "wcache-impl.h"

/* ---- generations ---- */

/* EIO, marked as the power cut's (lb_take_fault), so callers need not
 * log every request of a dead connection.
 */
int
wc_stale_error (void)
{
  lb_set_fault (LB_FAULT_POWER_CUT);
  errno = EIO;
  return -1;
}

/* The generation, once any cut in progress is over: a cut has published
 * its report before it bumps the generation, so a connection made after
 * the report appeared must not take the old one and go stale at once.
 * Any one stripe's lock waits the cut out.
 */
uint64_t
wc_settled_generation (struct wcache *wc)
{
  uint64_t gen;

  stripe_lock_read (&wc->stripes[0]);
  gen = atomic_load_explicit (&wc->gen, memory_order_acquire);
  stripe_unlock (&wc->stripes[0]);
  return gen;
}

/* The Nth write, trim or zero that power-cut-after names: the cut happens
 * once it has reached the cache, and its reply is EIO.  It is cut 1, made
 * only if the power has not failed before (a cut on demand, even one
 * racing with this request): the Nth request would otherwise cut the
 * recovery that follows that cut.
 */
int
wc_maybe_cut_after (struct view *v, uint64_t nth, int r)
{
  struct wcache *wc = v->wc;
  struct lb_cut_report rep;

  if (wc->cfg.cut_after == 0 || nth != wc->cfg.cut_after ||
      lb_wcache_cut_once (&wc->main.store, 1, &rep) == 0)
    return r;
  return wc_stale_error ();
}

int
lb_wcache_check_power (struct lb_store *conn)
{
  return is_stale (to_view (conn)) ? wc_stale_error () : 0;
}

uint64_t
lb_wcache_generation (struct lb_store *cache)
{
  return wc_settled_generation (to_view (cache)->wc);
}

/* ---- the cut ---- */

const char *
lb_cut_mode_name (enum lb_cut_mode mode)
{
  switch (mode) {
  case LB_CUT_LOSE: return "lose";
  case LB_CUT_ATOMIC: return "atomic";
  case LB_CUT_TORN: return "torn";
  }
  abort ();
}

int
lb_cut_mode_from_name (const char *name, enum lb_cut_mode *mode)
{
  static const enum lb_cut_mode modes[] = { LB_CUT_LOSE, LB_CUT_ATOMIC,
                                            LB_CUT_TORN };

  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
    if (strcmp (name, lb_cut_mode_name (modes[i])) == 0) {
      *mode = modes[i];
      return 0;
    }
  errno = EINVAL;
  return -1;
}

static uint32_t
logical_in_folio (const struct wcache *wc, uint64_t idx)
{
  return (uint32_t) lb_bytes_to_logical (wc->g, folio_len (wc, idx));
}

static bool
entry_bit_is_set_locked (const struct wcache *wc, const struct entry *e,
                         uint32_t i)
{
  assert_entry_held (wc, e);
  return e->dirty[i / 64] >> (i % 64) & 1;
}

/* Resolve one entry by mode: write what survives to the durable store.
 * rng is this block's own stream.
 */
static int
resolve_locked (struct wcache *wc, enum lb_cut_mode mode, struct entry *e,
                struct lb_prng *rng, unsigned char *tmp,
                struct lb_cut_report *r)
{
  struct lb_store *d = wc->durable;
  uint32_t n = logical_in_folio (wc, e->folio_idx),
           lbytes = wc->g->logical_bytes;
  uint64_t at = lb_folio_to_bytes (wc->g, e->folio_idx);
  uint32_t dirty = 0, kept = 0;
  bool whole = mode == LB_CUT_ATOMIC && lb_prng_coin (rng);

  assert_entry_held_write (wc, e);
  wc_entry_pass_charge_locked (wc, e);
  for (uint32_t i = 0; i < n; i++) {
    bool keep;

    if (!entry_bit_is_set_locked (wc, e, i))
      continue;
    dirty++;
    keep = mode == LB_CUT_TORN ? lb_prng_coin (rng) : whole;
    if (!keep)
      continue;
    if (kept++ == 0 &&
        d->ops->pread (d, tmp, folio_len (wc, e->folio_idx), at) == -1)
      return -1;
    if (e->data)
      memcpy (tmp + (size_t) i * lbytes, e->data + (size_t) i * lbytes,
              lbytes);
    else
      memset (tmp + (size_t) i * lbytes, 0, lbytes);
  }
  r->logical_kept += kept;
  r->logical_lost += dirty - kept;
  if (kept == 0) {
    r->blocks_lost++;
    return 0;
  }
  if (kept == dirty)
    r->blocks_kept++;
  else
    r->blocks_torn++;
  if (kept == dirty && e->data == NULL)
    return wc_write_back_locked (wc, e);
  return d->ops->pwrite (d, tmp, folio_len (wc, e->folio_idx), at, false);
}

static void
add_report (struct lb_cut_report *sum, const struct lb_cut_report *r)
{
  sum->cut++;
  sum->seed = r->seed;
  sum->blocks_kept += r->blocks_kept;
  sum->blocks_lost += r->blocks_lost;
  sum->blocks_torn += r->blocks_torn;
  sum->logical_kept += r->logical_kept;
  sum->logical_lost += r->logical_lost;
}

/* How a cut resolves: the live cut's are the configuration's mode and
 * seed and the next number; a replayed cut's are its record's.
 */
struct cut_how {
  enum lb_cut_mode mode;
  uint64_t seed;
  uint64_t number; /* 1 for the first cut */
};

struct cut_state {
  enum lb_cut_mode mode;
  unsigned char *tmp; /* a block's worth; NULL: no memory, blocks lost */
  uint64_t stream;    /* this cut's; each block derives its own */
  struct lb_cut_report *r;
  bool failed;
};

/* A cut's drain: resolve every entry, whatever happens to the others. */
static int
resolve_visit_locked (struct wcache *wc, struct entry *e, void *opaque)
{
  struct cut_state *cs = opaque;
  struct lb_prng rng;

  assert_entry_held_write (wc, e);
  lb_prng_init (&rng, lb_prng_derive (cs->stream, e->folio_idx));
  if (cs->tmp == NULL ||
      resolve_locked (wc, cs->mode, e, &rng, cs->tmp, cs->r) == -1)
    cs->failed = true;
  return 0;
}

int
lb_wcache_cut (struct lb_store *cache, struct lb_cut_report *r)
{
  return lb_wcache_cut_once (cache, 0, r) == -1 ? -1 : 0;
}

/* The cut's locks: cut_lock, then every stripe's write lock in index
 * order (locking.h).  A macro, so that a failure names its caller.
 */
#define assert_cut_held(wc) \
  do { \
    lb_assert_held (&(wc)->cut_lock); \
    for (unsigned i_ = 0; i_ < NR_STRIPES; i_++) \
      lb_assert_held_write (&(wc)->stripes[i_].lock); \
  } while (0)

static void
lock_all_stripes_locked (struct wcache *wc)
{
  lb_assert_held (&wc->cut_lock);
  for (unsigned i = 0; i < NR_STRIPES; i++)
    stripe_lock_write (&wc->stripes[i]);
}

static void
unlock_all_stripes (struct wcache *wc)
{
  for (unsigned i = NR_STRIPES; i-- > 0;)
    stripe_unlock (&wc->stripes[i]);
}

static void
publish_report (struct wcache *wc, const struct lb_cut_report *r)
{
  lb_mutex_lock (&wc->report_lock);
  wc->last = *r;
  add_report (&wc->total, r);
  lb_mutex_unlock (&wc->report_lock);
}

_Static_assert (LB_CUT_LOSE == 0 && LB_CUT_ATOMIC == 1 && LB_CUT_TORN == 2,
                "a cut record's flags are the mode's number (crashlog.h)");

/* The cut's record (crashlog.h): its mode, seed and number, from which
 * a replay resolves the same blocks the same way.  The power fails
 * whether or not the log has room: if it has none (or cannot be
 * written), the log ends here and the disk takes no more changes.
 */
static void
log_cut_locked (struct wcache *wc, enum lb_cut_mode mode,
                const struct lb_cut_report *r)
{
  struct lb_crashlog_record rec = {
    .type = LB_CRASHLOG_CUT,
    .flags = (uint8_t) mode,
    .offset = r->seed,
    .length = r->cut,
  };

  assert_cut_held (wc);
  if (lb_crashlog_add (wc->cfg.log, &rec, LB_CRASHLOG_ROOM_SPARE, NULL, 0) ==
      -1)
    lb_crashlog_break (wc->cfg.log, errno);
}

/* The cut itself, every cut lock held: resolve and empty the cache as
 * how says, make the durable store durable, report, and only then set
 * the generation to the cut's number.  tmp is a block's worth of memory,
 * or NULL (blocks lost).  Returns 1, or -1 if the durable store failed.
 */
static int
cut_locked (struct wcache *wc, const struct cut_how *how, unsigned char *tmp,
            struct lb_cut_report *r)
{
  struct cut_state cs = { .mode = how->mode, .tmp = tmp, .r = r };
  uint64_t freed = 0;
  int ret = 1;

  assert_cut_held (wc);
  r->cut = how->number;
  r->seed = how->seed;
  cs.stream = lb_prng_derive (how->seed, r->cut);
  if (wc->cfg.log)
    log_cut_locked (wc, how->mode, r);
  for (unsigned i = 0; i < NR_STRIPES; i++)
    wc_drain_stripe_locked (wc, &wc->stripes[i], resolve_visit_locked, &cs,
                            &freed);
  if (cs.failed)
    ret = -1;
  wc_unreserve (wc, freed);
  if (wc->durable->ops->flush (wc->durable) == -1)
    ret = -1;
  publish_report (wc, r);
  if (wc->cfg.on_cut)
    wc->cfg.on_cut (r, wc->cfg.opaque);
  /* Requests that checked the old generation without a stripe lock are
   * waiting for one, and check again under it.
   */
  atomic_store_explicit (&wc->gen, r->cut, memory_order_release);
  return ret;
}

/* Take every stripe and cut as how says (cut_lock held). */
static int
cut_all_locked (struct wcache *wc, const struct cut_how *how,
                struct lb_cut_report *r)
{
  unsigned char *tmp = malloc (wc->g->physical_bytes);
  int ret;

  lb_assert_held (&wc->cut_lock);
  lock_all_stripes_locked (wc);
  ret = cut_locked (wc, how, tmp, r);
  unlock_all_stripes (wc);
  free (tmp);
  return ret;
}

int
lb_wcache_cut_once (struct lb_store *cache, uint64_t nth,
                    struct lb_cut_report *r)
{
  struct wcache *wc = to_view (cache)->wc;
  struct cut_how how = { .mode = wc->cfg.mode, .seed = wc->cfg.seed };
  int ret;

  memset (r, 0, sizeof *r);
  lb_mutex_lock (&wc->cut_lock);
  /* The generation changes only under cut_lock: the check and the cut
   * are one step for every other cut.
   */
  how.number = atomic_load_explicit (&wc->gen, memory_order_relaxed) + 1;
  if (nth && how.number > nth) {
    lb_mutex_unlock (&wc->cut_lock);
    return 0;
  }
  ret = cut_all_locked (wc, &how, r);
  lb_mutex_unlock (&wc->cut_lock);
  if (ret == -1)
    errno = EIO;
  return ret;
}

int
lb_wcache_cut_as (struct lb_store *cache, enum lb_cut_mode mode, uint64_t seed,
                  uint64_t number, struct lb_cut_report *r)
{
  struct wcache *wc = to_view (cache)->wc;
  struct cut_how how = { .mode = mode, .seed = seed, .number = number };
  uint64_t gen;
  int ret;

  memset (r, 0, sizeof *r);
  lb_mutex_lock (&wc->cut_lock);
  gen = atomic_load_explicit (&wc->gen, memory_order_relaxed);
  if (number <= gen) {
    lb_mutex_unlock (&wc->cut_lock);
    errno = EINVAL;
    return -1;
  }
  ret = cut_all_locked (wc, &how, r);
  lb_mutex_unlock (&wc->cut_lock);
  if (ret == -1)
    errno = EIO;
  return ret == -1 ? -1 : 0;
}

void
lb_wcache_assert_cut_held (struct lb_store *cache)
{
  struct wcache *wc = to_view (cache)->wc;

  assert_cut_held (wc);
}

void
lb_wcache_get_stats (struct lb_store *cache, struct lb_wcache_stats *st)
{
  struct wcache *wc = to_view (cache)->wc;

  memset (st, 0, sizeof *st);
  lb_mutex_lock (&wc->report_lock);
  st->last = wc->last;
  st->total = wc->total;
  lb_mutex_unlock (&wc->report_lock);
  st->implicit_flushes = atomic_load_explicit (&wc->implicit_flushes,
                                               memory_order_relaxed);
  st->written_through = atomic_load_explicit (&wc->written_through,
                                              memory_order_relaxed);
  st->dirty_blocks = atomic_load_explicit (&wc->dirty_blocks,
                                           memory_order_relaxed);
  st->cache_bytes = atomic_load_explicit (&wc->bytes_used,
                                          memory_order_relaxed);
  st->cache_bytes_peak = atomic_load_explicit (&wc->bytes_peak,
                                               memory_order_relaxed);
}

void
lb_cut_report_format (const struct lb_cut_report *r, enum lb_cut_mode m,
                      char *buf, size_t len)
{
  snprintf (buf, len,
            "power cut %" PRIu64 " (mode %s, seed %" PRIu64 "): %" PRIu64
            " blocks kept, %" PRIu64 " lost, %" PRIu64 " torn",
            r->cut, lb_cut_mode_name (m), r->seed, r->blocks_kept,
            r->blocks_lost, r->blocks_torn);
}

int
lb_wcache_write_json (FILE *fp, struct lb_store *cache, const char *indent)
{
  struct wcache *wc = to_view (cache)->wc;
  struct lb_wcache_stats st;

  lb_wcache_get_stats (cache, &st);
  fprintf (fp,
           "{\n%s  \"mode\": \"%s\", \"seed\": %" PRIu64 ", \"size\": %" PRIu64
           ",\n",
           indent, lb_cut_mode_name (wc->cfg.mode), wc->cfg.seed,
           wc->cfg.cache_bytes);
  fprintf (fp,
           "%s  \"bytes_peak\": %" PRIu64 ", \"implicit_flushes\": %" PRIu64
           ", \"written_through\": %" PRIu64 ",\n",
           indent, st.cache_bytes_peak, st.implicit_flushes,
           st.written_through);
  fprintf (fp,
           "%s  \"cuts\": %" PRIu64 ", \"blocks_kept\": %" PRIu64
           ", \"blocks_lost\": %" PRIu64 ", \"blocks_torn\": %" PRIu64
           ",\n%s  \"logical_kept\": %" PRIu64 ", \"logical_lost\": %" PRIu64
           "\n%s}",
           indent, st.total.cut, st.total.blocks_kept, st.total.blocks_lost,
           st.total.blocks_torn, indent, st.total.logical_kept,
           st.total.logical_lost, indent);
  if (ferror (fp)) {
    if (errno == 0)
      errno = EIO;
    return -1;
  }
  return 0;
}
