/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the sparse folio RAM store.
 *
 * A disk of up to 2^63-1 bytes held as a sparse array of folios, one per
 * physical block, allocated on first write and released by trim and zero.
 * See ramstore.c for the index structure and the locking rules.
 */
#ifndef LARGEBLOCK_RAMSTORE_H
#define LARGEBLOCK_RAMSTORE_H

#include <stdint.h>

#include "largeblock/geometry.h"
#include "store.h"

/* Create a RAM store for geometry g (which must outlive the store).
 * memory_limit_bytes caps folio memory (0: unlimited); a write needing a
 * folio beyond it fails with ENOSPC.  O(1) in the disk size.  Returns the
 * store, or NULL with errno = ENOMEM.
 */
struct lb_store *lb_ramstore_new (const struct lb_geometry *g,
                                  uint64_t memory_limit_bytes);

#endif /* LARGEBLOCK_RAMSTORE_H */
