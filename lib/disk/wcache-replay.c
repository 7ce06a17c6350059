/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: one crash-log record through the write cache, exactly as
 * the live cache applied it (lb_wcache_replay_record, wcache.h) -- what
 * a replay (replay.h) builds crash states with.
 *
 * Owns only the dispatch and the checks a record must pass before the
 * cache acts on it; the semantics stay where the live cache has them:
 * pieces go through wcache.c's write_through_locked and
 * cache_piece_locked (wc_replay_piece), write-backs through
 * wc_write_back_locked, flushes through wc_flush_all, cuts through
 * wcache-cut.c's cut_locked (lb_wcache_cut_as).  What the live cache
 * decided for itself -- to write through, to write a block back, to
 * flush because it was full -- the log says, and the replay does it when
 * the record says so and never otherwise.
 *
 * Locking: none of its own; each step takes the cache's locks as the
 * live request, flush or cut does.  One caller at a time.
 */
#include <config.h>

#include <assert.h>
#include <errno.h>

#include "wcache-impl.h"

/* A write, trim or zero piece lies inside one block, as the live cache
 * logs them (one record per physical block it touches).
 */
static bool
is_one_piece (const struct wcache *wc, const struct lb_crashlog_record *rec)
{
  return rec->length > 0 && rec->offset < wc->g->size_bytes &&
    rec->length <= wc->g->size_bytes - rec->offset &&
    lb_folio_idx (wc->g, rec->offset) ==
    lb_folio_idx (wc->g, rec->offset + rec->length - 1);
}

/* A write-back covers its whole block. */
static bool
is_one_block (const struct wcache *wc, const struct lb_crashlog_record *rec)
{
  return rec->offset < wc->g->size_bytes &&
    lb_folio_offset (wc->g, rec->offset) == 0 &&
    rec->length == folio_len (wc, lb_folio_idx (wc->g, rec->offset));
}

int
lb_wcache_replay_record (struct lb_store *cache,
                         const struct lb_crashlog_record *rec,
                         struct lb_cut_report *r)
{
  struct wcache *wc = to_view (cache)->wc;
  struct lb_cut_report ignored;

  /* A cache that could flush or cut by itself is not the live one's twin. */
  assert (wc->cfg.cache_bytes == LB_WCACHE_UNBOUNDED &&
          wc->cfg.cut_after == 0 && wc->cfg.log == NULL);
  switch (rec->type) {
  case LB_CRASHLOG_WRITE:
  case LB_CRASHLOG_TRIM:
  case LB_CRASHLOG_ZERO:
    if (!is_one_piece (wc, rec))
      break;
    return wc_replay_piece (wc, rec);
  case LB_CRASHLOG_WRITEBACK:
    if (!is_one_block (wc, rec))
      break;
    return wc_replay_write_back (wc, lb_folio_idx (wc->g, rec->offset));
  case LB_CRASHLOG_FLUSH:
    if (rec->flags & LB_CRASHLOG_IMPLICIT)
      atomic_fetch_add_explicit (&wc->implicit_flushes, 1,
                                 memory_order_relaxed);
    return wc_flush_all (&wc->main, rec->flags & LB_CRASHLOG_IMPLICIT);
  case LB_CRASHLOG_CUT:
    if (rec->flags > LB_CUT_TORN)
      break;
    return lb_wcache_cut_as (cache, (enum lb_cut_mode) rec->flags, rec->offset,
                             rec->length, r ? r : &ignored);
  }
  errno = EINVAL;
  return -1;
}
