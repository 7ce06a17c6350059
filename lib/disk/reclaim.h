/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: giving released memory back to the OS after the reply.
 *
 * Most of a large trim's time is the kernel freeing pages (madvise): 2 GiB
 * of folios take about 0.17 s to unmap on this kind of machine, while
 * taking them out of the RAM store's index takes milliseconds.  So a trim
 * detaches its folios, queues them here in runs, and replies; one worker
 * thread hands each run to its owner's give-back function (the RAM store:
 * madvise, then back to the stripe's allocator).
 *
 * A queued run's folios have left the disk (the owner stops counting them
 * as allocated, in folios_allocated and the peak, before the reply), but
 * their memory is still the process's: until the run is given back the
 * owner counts them as releasing, against memory-limit, so the limit
 * never admits more memory than is resident.  lb_reclaim_wait returns
 * when every run queued so far is back: a flush, a write at the memory
 * limit and the statistics wait so, which keeps what they see exact.
 *
 * The worker starts with the first queued run, not at creation: nbdkit
 * creates the store before it daemonises, and threads do not survive the
 * fork.  If it cannot start, or the queue cannot grow, lb_reclaim_queue
 * fails and the caller gives the runs back itself, at once.
 *
 * Locking: one mutex guards the queue, its counts and the worker's state;
 * the give-back function runs without it (a leaf of locking.h's lock
 * order).  A request queues all its runs with one call, so the mutex is
 * taken once per trim, never per read or write.
 */
#ifndef LARGEBLOCK_RECLAIM_H
#define LARGEBLOCK_RECLAIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* nr folios that are neighbours in memory, from owner's allocator. */
struct lb_reclaim_run {
  void *first;
  uint32_t nr;
  uint32_t owner;
};

typedef void (*lb_reclaim_fn) (void *opaque, const struct lb_reclaim_run *run);

struct lb_reclaim;

/* A queue whose runs go to give_back(opaque, run), on the worker thread.
 * NULL with errno = ENOMEM.
 */
struct lb_reclaim *lb_reclaim_new (lb_reclaim_fn give_back, void *opaque);

/* Queue nr runs (copied).  0, or -1 with errno (ENOMEM; EAGAIN when the
 * worker cannot start) having queued none of them.
 */
int lb_reclaim_queue (struct lb_reclaim *r, const struct lb_reclaim_run *runs,
                      size_t nr);

/* Wait until no run is queued or being given back. */
void lb_reclaim_wait (struct lb_reclaim *r);

/* Whether any run is queued or being given back (a hint: it may change
 * as soon as it is read).
 */
bool lb_reclaim_busy (struct lb_reclaim *r);

/* Runs given back since creation (for tests and statistics). */
uint64_t lb_reclaim_done (struct lb_reclaim *r);

/* Give every queued run back, stop the worker, free r.  NULL is a no-op. */
void lb_reclaim_free (struct lb_reclaim *r);

#endif /* LARGEBLOCK_RECLAIM_H */
