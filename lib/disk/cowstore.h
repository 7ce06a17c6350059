/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: a copy-on-write store over a read-only base store.
 *
 * A crash state (replay.h) is the shared base image plus what its power
 * cut and its user (the filesystem's log recovery) changed.  The overlay
 * holds those changes as whole physical blocks: a block is copied up from
 * the base on its first write or zero (a whole block written or zeroed
 * is not read from the base at all); reads come from the overlay where it
 * has the block, else from the base.  The base is never written, and must
 * not change while the overlay lives; the overlay does not own it.  Cost:
 * the blocks changed, whatever the disk's size.  See cowstore.c for the
 * index and the locking.
 */
#ifndef LARGEBLOCK_COWSTORE_H
#define LARGEBLOCK_COWSTORE_H

#include <stdint.h>

#include "store.h"

/* An overlay over base (same geometry; read, never written nor
 * destroyed).  ops->destroy frees it and then calls release (opaque), if
 * release is not NULL: the owner of the base learns the base is free of
 * this overlay.  release must not take a lock the destroying thread may
 * hold.  Returns the store, or NULL with errno = ENOMEM.
 */
struct lb_store *lb_cowstore_new (struct lb_store *base,
                                  void (*release) (void *opaque),
                                  void *opaque);

/* The blocks the overlay holds (copied up, written or zeroed). */
uint64_t lb_cowstore_blocks (struct lb_store *s);

#endif /* LARGEBLOCK_COWSTORE_H */
