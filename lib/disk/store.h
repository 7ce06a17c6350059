/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the store interface.
 *
 * A store holds a disk's bytes.  The RAM store (ramstore.h) and the file
 * store answer the same operations through one table of function pointers,
 * so callers never branch on the backend.  Callers pass requests already
 * checked against the geometry (within the disk, count > 0); stores do no
 * policy, only data.
 *
 * ops->name is "ram", "file" or "cow" (a crash state's overlay,
 * cowstore.h): what the statistics and the export description call the
 * backend.
 *
 * Every operation may be called from any number of threads at once; each
 * implementation documents how it makes that safe.  Operations return 0,
 * or -1 with errno set to what the NBD client should see (ENOMEM, ENOSPC,
 * EIO, ENOTSUP for a fast zero that would be slow).
 */
#ifndef LARGEBLOCK_STORE_H
#define LARGEBLOCK_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "largeblock/geometry.h"

/* Flags for the zero operation. */
#define LB_ZERO_MAY_TRIM (1u << 0) /* may deallocate (no NO_HOLE) */
#define LB_ZERO_FAST (1u << 1)     /* fail with ENOTSUP unless fast */

/* Called once per run of extents, in ascending order, runs never
 * overlapping and never leaving [offset, offset + count).  Returns 0 to go
 * on, -1 (errno set) to stop the walk with that error.
 */
typedef int (*lb_extent_fn) (uint64_t offset, uint64_t length, bool hole,
                             void *opaque);

struct lb_store_usage {
  uint64_t folios_allocated;
  uint64_t folios_peak;
  uint64_t bytes_resident; /* folios_allocated * folio bytes */
  uint64_t metadata_bytes; /* index nodes and allocator bookkeeping */
};

struct lb_store;

struct lb_store_ops {
  const char *name;
  int (*pread) (struct lb_store *s, void *buf, uint32_t count,
                uint64_t offset);
  int (*pwrite) (struct lb_store *s, const void *buf, uint32_t count,
                 uint64_t offset, bool fua);
  int (*trim) (struct lb_store *s, uint32_t count, uint64_t offset);
  int (*zero) (struct lb_store *s, uint32_t count, uint64_t offset,
               unsigned flags);
  int (*flush) (struct lb_store *s);
  /* Stops after the first run when req_one is true. */
  int (*extents) (struct lb_store *s, uint32_t count, uint64_t offset,
                  bool req_one, lb_extent_fn fn, void *opaque);
  void (*usage) (struct lb_store *s, struct lb_store_usage *u);
  void (*destroy) (struct lb_store *s);
  /* Optional (NULL: the store has no memory limit).  Charge nr folios of
   * memory that a layer above (the write cache) holds on the store's
   * behalf against the store's memory limit: returns false, charging
   * nothing, if that would exceed it.  uncharge gives them back.
   */
  bool (*charge) (struct lb_store *s, uint64_t nr_folios);
  void (*uncharge) (struct lb_store *s, uint64_t nr_folios);
};

struct lb_store {
  const struct lb_store_ops *ops;
  const struct lb_geometry *geom;
  /* The backing storage could only be opened for reading: serve it only
   * to read-only connections (nbdkit -r).
   */
  bool read_only;
};

#endif /* LARGEBLOCK_STORE_H */
