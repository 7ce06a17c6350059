/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the exports of a replay disk (replay=LOG).
 *
 * Owns what an NBD client sees of a crash log's replay (replay.h): each
 * export name names one crash state (replay.h's point syntax,
 * "epoch=K,mode=M,seed=S"), and each connection gets a state of its own,
 * read-write, freed when it closes -- so two connections to one name see
 * the same image at the start and never each other's writes.  The empty
 * name is refused, with the syntax and the log's epochs, rather than
 * given a default: a client that forgot to name a state must not check
 * one it did not mean.  States of one epoch only may be open at a time
 * (replay.h); a connection asking for another waits a moment for them to
 * close (LB_REPLAY_EXPORT_BUSY_MS), since a client that has hung up may
 * still hold its state.  Also here: the words of an export's description
 * and of the export list (one export per epoch).
 *
 * No state of its own: lb_replay_export_open may be called from any
 * number of threads at once (lb_replay_state is thread-safe); one
 * lb_replay_export belongs to one connection.
 */
#ifndef LARGEBLOCK_REPLAYEXPORT_H
#define LARGEBLOCK_REPLAYEXPORT_H

#include <stddef.h>

#include "replay.h"
#include "store.h"
#include "wcache.h"

/* One connection's crash state. */
struct lb_replay_export {
  struct lb_store *store; /* the state: its reads and writes */
  struct lb_replay_point point;
  struct lb_replay_epoch_info epoch;
  struct lb_cut_report cut; /* what the state's power cut did */
};

/* How long a connection asking for one epoch waits for the states of
 * another epoch to close before it is refused with EBUSY.
 */
#define LB_REPLAY_EXPORT_BUSY_MS 2000

/* The state export name names, into *x.  Returns 0, or -1 with errno and
 * a one-line message: EINVAL for an empty or malformed name, or an epoch
 * the log does not have (the message gives the syntax or the log's
 * epochs); EBUSY when states at another epoch stayed open for
 * LB_REPLAY_EXPORT_BUSY_MS; ENOMEM; EIO.  Thread-safe; may sleep (waits
 * for those states, builds the state).
 */
int lb_replay_export_open (struct lb_replay *rp, const char *name,
                           struct lb_replay_export *x, char *err,
                           size_t errlen);

/* Destroy x's state (x->store NULL is fine). */
void lb_replay_export_close (struct lb_replay_export *x);

/* One line for the export's description: the state's canonical name, the
 * epoch it cuts, and the cut's report, e.g.
 *   "epoch=3,mode=torn,seed=7: a power cut at the end of epoch 3 (12
 *    records from seq 40, 3 blocks written, ended by a flush): power cut
 *    1 (mode torn, seed 7): 1 blocks kept, 0 lost, 2 torn"
 */
void lb_replay_export_describe (const struct lb_replay_export *x, char *buf,
                                size_t len);

/* Call fn (name, description, opaque) for every epoch, in order, with the
 * name "epoch=K" (mode torn, seed 0 by default).  Stops at the first fn
 * that returns -1 and returns -1 (with fn's errno); else 0.
 */
typedef int (*lb_replay_export_fn) (const char *name, const char *description,
                                    void *opaque);
int lb_replay_export_list (const struct lb_replay *rp, lb_replay_export_fn fn,
                           void *opaque);

#endif /* LARGEBLOCK_REPLAYEXPORT_H */
