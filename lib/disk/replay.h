/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: crash states rebuilt from a crash log (crashlog.h), without
 * running the workload again (issue 27; /work/notes/replay-api.md).
 *
 * Epochs are numbered 0..E.  Epoch K is closed by the K-th flush or cut
 * record (0-based), or, for the last epoch E, by the end of the log.  The
 * crash state (K, mode, seed) is the durable image a live power cut would
 * leave if it happened just before the record that closes epoch K (the
 * last epoch: after the last record), with that mode and seed, as cut
 * number (cut records before epoch K) + 1.  It is built with the write
 * cache's own code (wcache.h's lb_wcache_replay_record and
 * lb_wcache_cut_as): the same pieces, write-throughs, write-backs,
 * flushes and cuts, and the same resolution of the final cut -- so the
 * same log, epoch, mode and seed give an image byte-identical to the live
 * cut.
 *
 * Cost: a shared base image (the durable image at the start of one epoch,
 * a RAM store advanced record by record as later epochs are asked for,
 * rebuilt from the log's start only for an earlier one) and, per state, a
 * copy-on-write overlay (cowstore.h) that takes the final cut's resolution
 * of the epoch's unflushed blocks and every later write.  A state costs
 * the blocks its epoch touches and the blocks written to it, not the disk.
 *
 * Locking: lb_replay_state is thread-safe; the replay's mutex is held for
 * the whole of one build (builds take turns; reads and writes of states
 * already built take no replay lock).  The base may move only while no
 * state is open: a state holds a reference, dropped by its ops->destroy,
 * and asking for another epoch while any is held fails with EBUSY.
 */
#ifndef LARGEBLOCK_REPLAY_H
#define LARGEBLOCK_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "crashlog.h"
#include "largeblock/geometry.h"
#include "store.h"
#include "wcache.h"

struct lb_replay;

/* Read and index the whole log at log_path (checks every record: the
 * reader's checks, a piece within one physical block, a write-back of
 * exactly one block, cuts numbered 1, 2, ..., a disk geometry the plugin
 * accepts).  Returns the
 * replay, or NULL with errno (EINVAL: not a usable log; ENOMEM; the
 * errno of a failed open or read) and a one-line message.
 */
struct lb_replay *lb_replay_open (const char *log_path, char *err,
                                  size_t errlen);

/* Let rp go (NULL is fine): freed now, or, while states are open, when
 * the last of them is destroyed (they keep working until then).
 */
void lb_replay_close (struct lb_replay *rp);

/* The log's disk, as its header says. */
void lb_replay_geometry (const struct lb_replay *rp,
                         struct lb_crashlog_geometry *g);

/* The same disk as a checked lb_geometry (what every state's geom points
 * at; lives as long as rp).
 */
const struct lb_geometry *lb_replay_disk_geometry (const struct lb_replay *rp);

/* The number of epochs, E + 1: at least 1. */
uint64_t lb_replay_epochs (const struct lb_replay *rp);

/* What closes an epoch. */
enum lb_replay_end {
  LB_REPLAY_END_FLUSH,          /* the client's flush */
  LB_REPLAY_END_IMPLICIT_FLUSH, /* the cache's own flush (it was full) */
  LB_REPLAY_END_CUT,            /* a live power cut */
  LB_REPLAY_END_LOG,            /* the end of the log (the last epoch) */
};

/* "flush", "implicit flush", "cut", "end of log". */
const char *lb_replay_end_name (enum lb_replay_end end);

struct lb_replay_epoch_info {
  enum lb_replay_end end;
  uint64_t first_seq, end_seq; /* records [first_seq, end_seq) are the
                                  epoch's (the closing record is end_seq) */
  uint64_t blocks_written;     /* distinct physical blocks its records touch */
  uint64_t cuts_before;        /* cut records before the epoch */
};

/* Fill *info for epoch.  Returns 0, or -1 with errno = EINVAL when epoch
 * is not below lb_replay_epochs.
 */
int lb_replay_epoch_info (const struct lb_replay *rp, uint64_t epoch,
                          struct lb_replay_epoch_info *info);

struct lb_replay_point {
  uint64_t epoch;
  enum lb_cut_mode mode;
  uint64_t seed;
};

/* The crash state at p: a read-write store (ops->destroy frees it) over
 * the shared base, whose geom is lb_replay_disk_geometry's.  *r (may be
 * NULL) is the final cut's report (its cut: cuts_before + 1).
 * Thread-safe; may sleep (reads the log, takes the replay's mutex).
 * Returns NULL with errno and a message: EINVAL (epoch out of range: the
 * message names the epoch and the log's epoch count), EBUSY (states at
 * another epoch are still open: the base cannot move under them; the
 * message says which epoch), ENOMEM, EIO (the log could not be read
 * again).
 */
struct lb_store *lb_replay_state (struct lb_replay *rp,
                                  const struct lb_replay_point *p,
                                  struct lb_cut_report *r, char *err,
                                  size_t errlen);

/* Export names: "epoch=K,mode=torn,seed=S" (keys in any order; mode
 * lose|atomic|torn; defaults: mode torn, seed 0; epoch required).
 * Parse: 0, or -1 with errno = EINVAL and a one-line message naming the
 * export name and the rule (unknown key, a key given twice, a number
 * that is not a decimal uint64, no epoch, an unknown mode, an empty
 * item).  *p is untouched on error.
 */
int lb_replay_point_parse (const char *name, struct lb_replay_point *p,
                           char *err, size_t errlen);

/* The canonical name of p, in the order above, into buf (truncated to
 * len like snprintf).
 */
void lb_replay_point_format (const struct lb_replay_point *p, char *buf,
                             size_t len);

#endif /* LARGEBLOCK_REPLAY_H */
