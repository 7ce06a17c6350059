/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: request statistics.
 *
 * Owns the per-request-type counters (requests, bytes, misaligned, errors)
 * and their JSON rendering.  Counters are updated with relaxed atomics from
 * any thread; a snapshot taken while I/O runs is consistent per counter,
 * not across counters, which is all a report needs.  No lock (locking.h
 * lists the plugin's locks).
 */
#ifndef LARGEBLOCK_STATS_H
#define LARGEBLOCK_STATS_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "largeblock/align.h"
#include "largeblock/geometry.h"
#include "enum-counts.h"
#include "store.h"

struct lb_stats {
  _Atomic uint64_t requests[LB_REQ_NR_TYPES];
  _Atomic uint64_t bytes[LB_REQ_NR_TYPES];
  _Atomic uint64_t misaligned[LB_REQ_NR_TYPES];
  _Atomic uint64_t errors[LB_REQ_NR_TYPES];
};

void lb_stats_init (struct lb_stats *s);
void lb_stats_count (struct lb_stats *s, enum lb_req_type type,
                     uint64_t bytes);
void lb_stats_count_misaligned (struct lb_stats *s, enum lb_req_type type);
void lb_stats_count_error (struct lb_stats *s, enum lb_req_type type);

/* Write the statistics object that nbdkit-largeblock-plugin(1)'s
 * STATISTICS describes (docs/nbdkit-largeblock-plugin.pod: the store's
 * kind, geometry, folio usage, counters by type, and for a write cache --
 * wcache.h, or NULL -- its "write_cache" object) followed by a newline.
 * Returns 0, or -1 with errno from stdio.
 */
int lb_stats_write_json (FILE *fp, const char *store_name,
                         const struct lb_geometry *g,
                         const char *misaligned_policy,
                         const struct lb_store_usage *usage,
                         const struct lb_stats *s,
                         struct lb_store *write_cache);

#endif /* LARGEBLOCK_STATS_H */
