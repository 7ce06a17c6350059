/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: building an NBD extents reply from a store's runs.
 *
 * Both stores answer an extents request by walking their own map (the RAM
 * store's folio tree, the file store's SEEK_DATA/SEEK_HOLE) and adding
 * runs of data or hole in ascending order.  This module owns what the
 * reply must look like, whatever the walk: runs clipped to the request,
 * neighbours of one kind merged into one run, and only the first run when
 * the client asked for one (NBD_CMD_FLAG_REQ_ONE).  It holds the one run
 * not yet reported, and reports each run through the caller's lb_extent_fn.
 *
 * A builder is one request's state: it lives on the caller's stack, is
 * used by one thread only, takes no lock and allocates nothing.
 */
#ifndef LARGEBLOCK_EXTENTS_H
#define LARGEBLOCK_EXTENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

struct lb_extents {
  uint64_t req_start_bytes, req_end_bytes; /* clip to [start, end) */
  bool req_one;
  lb_extent_fn fn;
  void *opaque;
  bool pending; /* a run is held, not yet reported */
  bool pending_hole;
  uint64_t pending_start_bytes, pending_end_bytes;
  bool done; /* req_one answered: ignore the rest */
};

/* Start a reply to the request [offset_bytes, offset_bytes + count_bytes)
 * (the caller checked it lies within the disk).  Runs go to fn(..., opaque).
 */
void lb_extents_init (struct lb_extents *b, uint64_t offset_bytes,
                      uint64_t count_bytes, bool req_one, lb_extent_fn fn,
                      void *opaque);

/* Add the run [start_bytes, end_bytes), a hole or data.  Runs must come in
 * ascending order without overlapping; the part outside the request is
 * dropped, and a run touching the held one of the same kind extends it.
 * Returns 0 to go on; 1 when the reply is complete (req_one, and its run
 * is reported): stop walking, later adds are ignored and return 1; -1 when
 * fn failed (errno from fn): stop and return the error.
 */
int lb_extents_add (struct lb_extents *b, uint64_t start_bytes,
                    uint64_t end_bytes, bool hole);

/* End the walk: report the run still held, if any.  Returns 0, or -1 when
 * fn failed (errno from fn).
 */
int lb_extents_finish (struct lb_extents *b);

#endif /* LARGEBLOCK_EXTENTS_H */
