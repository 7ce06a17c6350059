/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: a volatile write cache over a store, and power cuts.
 *
 * lb_wcache_new wraps a durable store (RAM or file) in a store of the same
 * interface whose writes, trims and zeros stay in a cache until a flush,
 * or until their own FUA.  Reads see the cache over the durable store.  A
 * power cut (lb_wcache_cut; lb_wcache_cut_once, which makes cut number N
 * at most once; or automatically, as cut 1, after cut_after write, trim
 * or zero requests) decides, from a seed, what of the unflushed data
 * reaches the durable store, then empties the cache:
 *
 *   LB_CUT_LOSE    none of it;
 *   LB_CUT_ATOMIC  per physical block: its durable content or its newest,
 *                  never a mix (the physical block is the atomic unit);
 *   LB_CUT_TORN    per logical block inside those physical blocks.
 *
 * The same seed, cut number and unflushed data always give the same
 * post-cut image: every physical block draws from its own stream derived
 * from (seed, cut number, block index), so the order blocks are resolved
 * in does not matter.
 *
 * Connections: lb_wcache_connect gives a store bound to the current
 * generation; after a cut every request through it fails with EIO (the
 * disk lost power under it), while a store connected after the cut works
 * on the post-cut image.  The store lb_wcache_new returns follows every
 * generation (for single-user programs and tests).
 *
 * Memory: the cache holds one entry per physical block with unflushed
 * data (the block's newest content, or nothing for a block that is all
 * zeros, plus a bit per logical block).  cache_bytes bounds it, counting
 * what each entry really costs (its content buffer, the entry as malloc
 * hands it out and its share of the hash table): a request that would
 * overflow it first flushes the whole cache (an implicit flush, counted
 * in the statistics).  Content buffers are also charged to the durable
 * store's memory limit (ops->charge: RAM stores); a block that finds the
 * limit reached flushes the cache (again an implicit flush) and, if there
 * is still no room, is written through to the durable store, which may
 * then fail with ENOSPC -- but only after flushing the cache again, up to
 * a few times, while the cache holds blocks whose charges take the room.
 * Writing back never needs more memory than the limit: an entry's charge
 * passes to the durable store's folio.  Content buffers come from mmap'd
 * slabs (slab.h), so a flushed buffer's memory goes back to the OS at
 * once: the process's memory follows the charge (durable folios + cached
 * buffers <= the limit), where malloc would keep every freed buffer
 * resident beside the folios that replaced it.
 *
 * Thread-safe; see wcache.c and wcache-cut.c for the locking rules and
 * locking.h for the plugin's lock order.
 */
#ifndef LARGEBLOCK_WCACHE_H
#define LARGEBLOCK_WCACHE_H

#include <stdint.h>
#include <stdio.h>

#include "crashlog.h"
#include "store.h"

enum lb_cut_mode {
  LB_CUT_LOSE,
  LB_CUT_ATOMIC,
  LB_CUT_TORN,
};

/* "lose", "atomic", "torn". */
const char *lb_cut_mode_name (enum lb_cut_mode mode);

/* The mode named name ("lose", "atomic", "torn"): 0, or -1 with errno =
 * EINVAL for any other name (*mode untouched).
 */
int lb_cut_mode_from_name (const char *name, enum lb_cut_mode *mode);

struct lb_cut_report;

struct lb_wcache_config {
  enum lb_cut_mode mode;
  uint64_t seed;
  uint64_t cache_bytes; /* at least lb_wcache_min_bytes (geometry) */
  uint64_t cut_after;   /* 0: never; else cut after the Nth write/trim/zero */
  /* Optional: called after every cut (whoever made it), from the thread
   * that cut, before any connection can see the cut (EIO, or the
   * post-cut image): requests wait for it, so it must be quick and must
   * not read or write through the cache's stores (their usage, and
   * lb_wcache_get_stats, which already counts this cut, are fine).  It
   * runs under cut_lock and every stripe lock: a lock it takes must never
   * be held by a thread that then enters the cache (see wcache.c's lock
   * order).
   */
  void (*on_cut) (const struct lb_cut_report *r, void *opaque);
  void *opaque;
  /* Optional (crash-log=): every change, flush and cut is appended to
   * it as crashlog.h describes; the caller closes it after the cache is
   * destroyed.  NULL: nothing is logged, at no cost.  A request the log
   * has no room for fails with ENOSPC, one it cannot write with EIO,
   * both before the cache applies anything of that block, with the
   * thread's fault (error.h) LB_FAULT_CRASH_LOG.
   */
  struct lb_crashlog *log;
};

/* What one cut did, or (summed) every cut so far.  Blocks are physical
 * blocks that held unflushed data: kept (the newest content survived
 * whole), lost (the durable content stayed), torn (some logical blocks
 * new, some old; only in torn mode).
 */
struct lb_cut_report {
  uint64_t cut; /* 1 for the first cut; for sums, the number of cuts */
  uint64_t seed;
  uint64_t blocks_kept, blocks_lost, blocks_torn;
  uint64_t logical_kept, logical_lost; /* logical blocks with new data */
};

struct lb_wcache_stats {
  struct lb_cut_report last;  /* zeros before the first cut */
  struct lb_cut_report total; /* .cut = number of cuts */
  uint64_t implicit_flushes;  /* the cache was full */
  uint64_t written_through;   /* blocks with no memory for a cache entry */
  uint64_t dirty_blocks;      /* now */
  uint64_t cache_bytes, cache_bytes_peak;
};

/* The least cache_bytes that holds one physical block of geometry g. */
uint64_t lb_wcache_min_bytes (const struct lb_geometry *g);

/* Wrap durable (which the cache owns from now on, and destroys with it).
 * Returns the store, or NULL with errno = ENOMEM (durable is then left to
 * the caller).
 */
struct lb_store *lb_wcache_new (struct lb_store *durable,
                                const struct lb_wcache_config *c);

/* A store for one connection, bound to the current generation: its
 * requests fail with EIO once a cut has happened.  Destroying it touches
 * nothing else.  Returns NULL with errno = ENOMEM.
 */
struct lb_store *lb_wcache_connect (struct lb_store *cache);

/* Cut the power now.  Waits for requests holding the cache to finish their
 * current block; afterwards every connected store is stale.  Fills *r.
 * Returns 0, or -1 with errno = EIO if the durable store failed (the cut
 * still happened; blocks that could not be written are lost).
 */
int lb_wcache_cut (struct lb_store *cache, struct lb_cut_report *r);

/* Cut number nth, at most once: cut the power as lb_wcache_cut does
 * unless nth cuts have already happened (nth = 0: cut in any case).  The
 * test and the cut are one step against every other cut, so requests
 * for the same nth from any number of sources cut once.  Returns 1 when
 * it cut (*r filled), 0 when cut nth had already happened (*r zeroed,
 * nothing done), or -1 with errno = EIO as lb_wcache_cut.
 */
int lb_wcache_cut_once (struct lb_store *cache, uint64_t nth,
                        struct lb_cut_report *r);

/* ---- replay: a crash log's records through the cache (replay.h) ---- */

/* cache_bytes for a cache that must never flush on its own. */
#define LB_WCACHE_UNBOUNDED UINT64_MAX

/* Cut the power as a crash log's cut record says: with mode and seed, as
 * cut number (which must be above the cuts so far: the generation then
 * becomes number).  Otherwise as lb_wcache_cut: fills *r; returns 0, or
 * -1 with errno = EINVAL (number not above the generation; nothing done)
 * or EIO (the durable store failed; the cut still happened).
 */
int lb_wcache_cut_as (struct lb_store *cache, enum lb_cut_mode mode,
                      uint64_t seed, uint64_t number, struct lb_cut_report *r);

/* Apply rec, a record of a crash log of this disk, exactly as the live
 * cache applied it, through the same code: a write, trim or zero piece
 * into the cache, or -- FUA or THROUGH -- written through to the durable
 * store; a write-back writes the block's entry back and drops it; a
 * flush (the client's or IMPLICIT) flushes; a cut cuts with the record's
 * mode, seed and number (*r filled; r may be NULL for other records).
 * The cache must never flush on its own, or it would not be the live
 * cache's twin: made with cache_bytes LB_WCACHE_UNBOUNDED, cut_after 0,
 * no log, over a durable store with no memory limit.  Returns 0, or -1
 * with errno: EINVAL for a record the cache cannot have logged (a piece
 * across a block boundary or of length 0, a write-back of a block the
 * cache does not hold or not of the whole block, a cut number not above
 * the generation), ENOMEM, or the durable store's error.  One caller at
 * a time (a replay is sequential); may sleep.
 */
int lb_wcache_replay_record (struct lb_store *cache,
                             const struct lb_crashlog_record *rec,
                             struct lb_cut_report *r);

/* Destroy cache but not its durable store, which is returned to the
 * caller (a replayed crash state outlives the cache that built it).
 * Unflushed data is dropped, as ops->destroy drops it: call it after a
 * flush or a cut.  No connection may be left.
 */
struct lb_store *lb_wcache_release (struct lb_store *cache);

/* Debug builds (no NDEBUG, locking.h): abort unless the calling thread
 * holds every lock a cut holds -- for on_cut, which runs under them.  A
 * no-op under NDEBUG.
 */
void lb_wcache_assert_cut_held (struct lb_store *cache);

/* For requests that touch no data (NBD_CMD_CACHE): 0 while conn's power
 * generation is current, else -1 with errno = EIO, as its data requests
 * would fail after a cut.
 */
int lb_wcache_check_power (struct lb_store *conn);

/* The number of cuts so far (connections compare it with theirs). */
uint64_t lb_wcache_generation (struct lb_store *cache);

void lb_wcache_get_stats (struct lb_store *cache, struct lb_wcache_stats *st);

/* One line for the log: "power cut 1 (mode torn, seed 42): 3 blocks kept,
 * 1 lost, 2 torn".
 */
void lb_cut_report_format (const struct lb_cut_report *r, enum lb_cut_mode m,
                           char *buf, size_t len);

/* The statistics as a JSON object (no trailing newline), for statsfile.
 * Returns 0, or -1 with errno from stdio.
 */
int lb_wcache_write_json (FILE *fp, struct lb_store *cache,
                          const char *indent);

#endif /* LARGEBLOCK_WCACHE_H */
