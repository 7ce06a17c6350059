/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: from parameters to a served disk.
 *
 * Owns the order in which a disk comes into being: the parameters are
 * checked together, a backing file is looked at (never created or
 * changed) before the geometry is final, and only a fully valid
 * configuration creates a file or allocates a store.  The nbdkit plugin
 * and any other program serving a disk call this one function, so RAM and
 * file disks obey the same rules with the same messages.
 *
 * Called from one thread during configuration; no locking.
 */
#ifndef LARGEBLOCK_DISK_H
#define LARGEBLOCK_DISK_H

#include <stdbool.h>
#include <stddef.h>

#include "crashlog.h"
#include "filestore.h"
#include "largeblock/geometry.h"
#include "params.h"
#include "store.h"

struct lb_disk {
  struct lb_geometry geom;
  /* The served store: the RAM or file store, or with write-cache=volatile
   * the write cache over it (wcache.h).
   */
  struct lb_store *store;
  bool cached;
  /* crash-log=: the cache's log (crashlog.h), closed after the store. */
  struct lb_crashlog *log;
  struct lb_file_info file; /* file disks only */
};

/* Fill *d from p (whose size may be taken from the file).  Returns 0, or
 * -1 with errno set and one line naming the parameter, the value and the
 * rule in err; nothing is left created or allocated on failure.
 */
int lb_disk_open (struct lb_disk *d, struct lb_params *p, char *err,
                  size_t errlen);

void lb_disk_close (struct lb_disk *d);

/* The store one connection uses: d->store, or with a volatile cache a
 * store bound to the current power generation (its requests fail with EIO
 * after a cut).  Returns NULL with errno = ENOMEM.
 */
struct lb_store *lb_disk_connect (struct lb_disk *d);

/* Release what lb_disk_connect returned. */
void lb_disk_disconnect (struct lb_disk *d, struct lb_store *conn);

#endif /* LARGEBLOCK_DISK_H */
