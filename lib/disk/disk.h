/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: from parameters to a served disk.
 *
 * Owns the order in which a disk comes into being: the parameters are
 * checked together, a backing file is looked at (never created or
 * changed) before the geometry is final, and only a fully valid
 * configuration creates a file or allocates a store.  The nbdkit plugin
 * and any other program serving a disk call this one function, so RAM and
 * file disks obey the same rules with the same messages.  A replay disk
 * (replay=LOG) reads its log first: its geometry is the log's, and it has
 * no one store -- each connection gets the crash state its export name
 * names (replayexport.h).
 *
 * lb_disk_open and lb_disk_close are called from one thread during
 * configuration and at exit; lb_disk_connect and lb_disk_disconnect from
 * any number of connections' threads at once (they only read *d).
 */
#ifndef LARGEBLOCK_DISK_H
#define LARGEBLOCK_DISK_H

#include <stdbool.h>
#include <stddef.h>

#include "crashlog.h"
#include "filestore.h"
#include "largeblock/geometry.h"
#include "params.h"
#include "replay.h"
#include "replayexport.h"
#include "store.h"

struct lb_disk {
  struct lb_geometry geom;
  /* The served store: the RAM or file store, or with write-cache=volatile
   * the write cache over it (wcache.h).  NULL for a replay disk.
   */
  struct lb_store *store;
  bool cached;
  /* crash-log=: the cache's log (crashlog.h), closed after the store. */
  struct lb_crashlog *log;
  struct lb_file_info file; /* file disks only */
  /* replay=: the log's crash states, closed after every connection. */
  struct lb_replay *replay;
};

/* One connection's view of the disk. */
struct lb_disk_conn {
  struct lb_store *store; /* where its requests go */
  /* Replay disks only: the crash state it serves (state.store is store). */
  struct lb_replay_export state;
};

/* Fill *d from p (whose size may be taken from the file).  Returns 0, or
 * -1 with errno set and one line naming the parameter, the value and the
 * rule in err; nothing is left created or allocated on failure.
 */
int lb_disk_open (struct lb_disk *d, struct lb_params *p, char *err,
                  size_t errlen);

void lb_disk_close (struct lb_disk *d);

/* A connection to the disk under export_name.  Its store is d->store, or
 * with a volatile cache a store bound to the current power generation
 * (its requests fail with EIO after a cut), or on a replay disk the crash
 * state export_name names (the name is ignored elsewhere).  Returns NULL
 * with errno and a one-line message: ENOMEM, or replayexport.h's errors.
 */
struct lb_disk_conn *lb_disk_connect (struct lb_disk *d,
                                      const char *export_name, char *err,
                                      size_t errlen);

/* Release what lb_disk_connect returned (NULL is fine). */
void lb_disk_disconnect (struct lb_disk *d, struct lb_disk_conn *conn);

#endif /* LARGEBLOCK_DISK_H */
