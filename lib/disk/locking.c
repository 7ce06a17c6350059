/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: which locks this thread holds -- see locking.h.
 *
 * Per thread, a small array of (lock, mode) in the order taken.  Only
 * the owning thread reads or writes it, so it needs no lock; a forked
 * child inherits its forking thread's copy, as it inherits the locks.
 * Compiled only without NDEBUG.
 */
#include <config.h>

#ifndef NDEBUG

#include <stdio.h>
#include <stdlib.h>

#include "locking.h"

struct held_lock {
  const void *lock;
  bool write;
};

static _Thread_local struct held_lock held[LB_LOCKDEP_MAX_HELD];
static _Thread_local unsigned nr_held;

void
lb_lockdep_acquired (const void *lock, bool write)
{
  if (nr_held == LB_LOCKDEP_MAX_HELD) {
    fprintf (stderr, "lockdep: more than %d locks held by one thread\n",
             LB_LOCKDEP_MAX_HELD);
    abort ();
  }
  held[nr_held++] = (struct held_lock) { .lock = lock, .write = write };
}

/* Locks usually go in the reverse order they came: search from the top. */
void
lb_lockdep_released (const void *lock)
{
  for (unsigned i = nr_held; i-- > 0;)
    if (held[i].lock == lock) {
      for (; i + 1 < nr_held; i++)
        held[i] = held[i + 1];
      nr_held--;
      return;
    }
  fprintf (stderr, "lockdep: lock %p released by a thread not holding it\n",
           lock);
  abort ();
}

bool
lb_lockdep_held (const void *lock, bool write)
{
  for (unsigned i = nr_held; i-- > 0;)
    if (held[i].lock == lock)
      return held[i].write || !write;
  return false;
}

void
lb_lockdep_fail (const char *lock, bool write, const char *file, int line,
                 const char *func)
{
  fprintf (stderr, "lockdep: %s (%s:%d): %s not held%s by this thread\n", func,
           file, line, lock, write ? " for writing" : "");
  abort ();
}

#endif /* NDEBUG */
