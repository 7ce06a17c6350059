/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the plugin's locks -- the one lock-order table, and "held"
 * made checkable.
 *
 * The unit.  One concept goes by the name folio in code: the physical
 * block (the user's blksize=, lb_geometry.physical_bytes in bytes,
 * lb_folio_idx for its index).  It is the unit every store allocates
 * (ramstore, slab), the write cache caches, and a power cut keeps or
 * loses whole in atomic mode; every lock below orders requests per
 * folio (the RAM store per aligned group of folios, the file store per
 * folio or direct I/O unit if that is larger: its "claim unit").
 *
 * Lock order, for the whole plugin.  A thread may take a lock only while
 * every lock it holds is above it in this table; the locks of one row
 * are never held together, except as the row says.
 *
 *   0. replay lock (mutex)                       lib/disk/replay.c
 *        held for a whole crash-state build (replay=LOG); the build's
 *        write caches and stores take theirs under it
 *   1. wcache cut_lock (mutex)                   lib/disk/wcache-cut.c
 *        serializes cuts; the generation changes only under it
 *   2. wcache stripe locks (rwlock)              lib/disk/wcache.c
 *        a request holds one; only a cut, and with a crash log a flush,
 *        hold them all, taken in index order.  The cache reaches its
 *        durable store under one, so the durable store's locks (rows 3
 *        and 4) come after them
 *  2b. cowstore stripe locks (rwlock)            lib/disk/cowstore.c
 *        one at a time, never two; a crash state's overlay, reached
 *        under a row-2 lock while it is built, and its base (row 3)
 *        read under one
 *   3. ramstore stripe locks (rwlock)            lib/disk/ramstore.c
 *        one at a time, never two;
 *      filestore claims and their range lock's mutex
 *                                                lib/disk/filestore.c
 *        one claim per request; the mutex only inside claim/release
 *   4. reclaim lock (mutex)                      lib/disk/reclaim.c
 *        a leaf: the give-back runs without it (and takes a row-3 lock)
 *   5. statsfile_lock (mutex)            plugins/largeblock/largeblock.c
 *        taken by the cache's on_cut (log_cut_locked), under rows 1-2
 *   6. wcache report_lock (mutex)                lib/disk/wcache-cut.c
 *        a leaf: the cut reports, read under statsfile_lock
 *   7. crash log lock (mutex)                    lib/disk/crashlog.c
 *        a leaf: one append or reservation; a block's record under its
 *        row-2 stripe lock, a flush's and a cut's under all of them
 *
 * Slabs (slab.h) have no lock: each belongs to one stripe and is used
 * under that stripe's write lock.  Counters everywhere are atomics.
 *
 * Checking.  Functions that need a lock held are named *_locked and say
 * so first thing: lb_assert_held (&lock) (any mode) or
 * lb_assert_held_write (&lock) (a mutex, or a rwlock's write side), the
 * user-space form of the kernel's lockdep_assert_held.  For that, every
 * lock of lib/disk/ and of the plugin is taken and dropped through the
 * wrappers below, which keep, per thread, the set of locks it holds.  A
 * failed assertion prints the lock, the function and its place, and
 * aborts.
 *
 * Which builds check: every build without NDEBUG, exactly like assert().
 * configure never defines NDEBUG, so the normal build, the tests, CI and
 * the sanitizer builds (scripts/check-sanitizers.sh) all check; a build
 * with -DNDEBUG compiles the assertions and the bookkeeping out, and the
 * wrappers are the bare pthread calls.  The cost when on: a walk of a
 * short thread-local array per lock and unlock.
 */
#ifndef LARGEBLOCK_LOCKING_H
#define LARGEBLOCK_LOCKING_H

#include <pthread.h>
#include <stdbool.h>

#ifndef NDEBUG

/* The most locks one thread holds at once: a cut holds cut_lock, every
 * wcache stripe, then at most one lock of each later row.
 */
#define LB_LOCKDEP_MAX_HELD 64

/* Record that this thread took lock (write: exclusively) / let it go.
 * Aborts on more than LB_LOCKDEP_MAX_HELD, or on letting go of a lock it
 * does not hold.
 */
void lb_lockdep_acquired (const void *lock, bool write);
void lb_lockdep_released (const void *lock);

/* Whether this thread holds lock (write: exclusively). */
bool lb_lockdep_held (const void *lock, bool write);

/* Print "lockdep: FUNC (FILE:LINE): LOCK not held [for writing] by this
 * thread" to stderr and abort.
 */
_Noreturn void lb_lockdep_fail (const char *lock, bool write, const char *file,
                                int line, const char *func);

#define lb_assert_held(lock) \
  ((void) (lb_lockdep_held ((lock), false) || \
           (lb_lockdep_fail (#lock, false, __FILE__, __LINE__, __func__), \
            0)))
#define lb_assert_held_write(lock) \
  ((void) (lb_lockdep_held ((lock), true) || \
           (lb_lockdep_fail (#lock, true, __FILE__, __LINE__, __func__), 0)))

#else /* NDEBUG */

static inline void
lb_lockdep_acquired (const void *lock, bool write)
{
  (void) lock;
  (void) write;
}

static inline void
lb_lockdep_released (const void *lock)
{
  (void) lock;
}

/* Compiled out: the expression is not evaluated. */
#define lb_assert_held(lock) ((void) sizeof (lock))
#define lb_assert_held_write(lock) ((void) sizeof (lock))

#endif /* NDEBUG */

static inline void
lb_mutex_lock (pthread_mutex_t *m)
{
  pthread_mutex_lock (m);
  lb_lockdep_acquired (m, true);
}

static inline void
lb_mutex_unlock (pthread_mutex_t *m)
{
  lb_lockdep_released (m);
  pthread_mutex_unlock (m);
}

/* pthread_cond_wait on m, which the caller holds (and holds again on
 * return, so the record of it stays).
 */
static inline void
lb_cond_wait (pthread_cond_t *c, pthread_mutex_t *m)
{
  lb_assert_held (m);
  pthread_cond_wait (c, m);
}

static inline void
lb_rwlock_rdlock (pthread_rwlock_t *l)
{
  pthread_rwlock_rdlock (l);
  lb_lockdep_acquired (l, false);
}

static inline void
lb_rwlock_wrlock (pthread_rwlock_t *l)
{
  pthread_rwlock_wrlock (l);
  lb_lockdep_acquired (l, true);
}

static inline void
lb_rwlock_unlock (pthread_rwlock_t *l)
{
  lb_lockdep_released (l);
  pthread_rwlock_unlock (l);
}

#endif /* LARGEBLOCK_LOCKING_H */
