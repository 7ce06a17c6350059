/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: building an NBD extents reply -- see extents.h. */
#include <config.h>

#include "extents.h"

void
lb_extents_init (struct lb_extents *b, uint64_t offset_bytes,
                 uint64_t count_bytes, bool req_one, lb_extent_fn fn,
                 void *opaque)
{
  *b = (struct lb_extents) {
    .req_start_bytes = offset_bytes,
    .req_end_bytes = offset_bytes + count_bytes,
    .req_one = req_one,
    .fn = fn,
    .opaque = opaque,
  };
}

/* Report the held run.  1: the reply is complete (req_one). */
static int
report_pending (struct lb_extents *b)
{
  if (!b->pending)
    return 0;
  b->pending = false;
  if (b->fn (b->pending_start_bytes,
             b->pending_end_bytes - b->pending_start_bytes, b->pending_hole,
             b->opaque) == -1)
    return -1;
  if (b->req_one)
    b->done = true;
  return b->done ? 1 : 0;
}

int
lb_extents_add (struct lb_extents *b, uint64_t start_bytes, uint64_t end_bytes,
                bool hole)
{
  int r;

  if (b->done)
    return 1;
  if (start_bytes < b->req_start_bytes)
    start_bytes = b->req_start_bytes;
  if (end_bytes > b->req_end_bytes)
    end_bytes = b->req_end_bytes;
  if (start_bytes >= end_bytes)
    return 0;
  if (b->pending && b->pending_hole == hole &&
      b->pending_end_bytes == start_bytes) {
    b->pending_end_bytes = end_bytes;
    return 0;
  }
  r = report_pending (b);
  if (r != 0)
    return r;
  b->pending = true;
  b->pending_hole = hole;
  b->pending_start_bytes = start_bytes;
  b->pending_end_bytes = end_bytes;
  return 0;
}

int
lb_extents_finish (struct lb_extents *b)
{
  return report_pending (b) == -1 ? -1 : 0;
}
