/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: request statistics -- see stats.h for the locking rules. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "stats.h"
#include "wcache.h"

void
lb_stats_init (struct lb_stats *s)
{
  for (int t = 0; t < LB_REQ_NR_TYPES; t++) {
    atomic_init (&s->requests[t], 0);
    atomic_init (&s->bytes[t], 0);
    atomic_init (&s->misaligned[t], 0);
    atomic_init (&s->errors[t], 0);
  }
}

void
lb_stats_count (struct lb_stats *s, enum lb_req_type type, uint64_t bytes)
{
  atomic_fetch_add_explicit (&s->requests[type], 1, memory_order_relaxed);
  atomic_fetch_add_explicit (&s->bytes[type], bytes, memory_order_relaxed);
}

void
lb_stats_count_misaligned (struct lb_stats *s, enum lb_req_type type)
{
  atomic_fetch_add_explicit (&s->misaligned[type], 1, memory_order_relaxed);
}

void
lb_stats_count_error (struct lb_stats *s, enum lb_req_type type)
{
  atomic_fetch_add_explicit (&s->errors[type], 1, memory_order_relaxed);
}

static uint64_t
load (const _Atomic uint64_t *counter)
{
  return atomic_load_explicit (counter, memory_order_relaxed);
}

/* One object { "read": N, ... } from a per-type counter array. */
static void
write_by_type (FILE *fp, const char *name, const _Atomic uint64_t *counters)
{
  fprintf (fp, "  \"%s\": {", name);
  for (int t = 0; t < LB_REQ_NR_TYPES; t++)
    fprintf (fp, "%s\"%s\": %" PRIu64, t ? ", " : " ",
             lb_req_type_name ((enum lb_req_type) t), load (&counters[t]));
  fprintf (fp, " }");
}

int
lb_stats_write_json (FILE *fp, const char *store_name,
                     const struct lb_geometry *g,
                     const char *misaligned_policy,
                     const struct lb_store_usage *usage,
                     const struct lb_stats *s, struct lb_store *write_cache)
{
  fprintf (fp, "{\n");
  fprintf (fp, "  \"store\": \"%s\",\n", store_name);
  fprintf (fp,
           "  \"geometry\": { \"size\": %" PRIu64 ", \"blksize\": %" PRIu32
           ", \"logical_blksize\": %" PRIu32 ", \"max_request\": %" PRIu32
           ", \"misaligned\": \"%s\" },\n",
           g->size_bytes, g->physical_bytes, g->logical_bytes,
           g->max_request_bytes, misaligned_policy);
  fprintf (fp, "  \"folios_allocated\": %" PRIu64 ",\n",
           usage->folios_allocated);
  fprintf (fp, "  \"folios_peak\": %" PRIu64 ",\n", usage->folios_peak);
  fprintf (fp, "  \"bytes_resident\": %" PRIu64 ",\n", usage->bytes_resident);
  fprintf (fp, "  \"metadata_bytes\": %" PRIu64 ",\n", usage->metadata_bytes);
  write_by_type (fp, "requests", s->requests);
  fprintf (fp, ",\n");
  write_by_type (fp, "bytes", s->bytes);
  fprintf (fp, ",\n");
  write_by_type (fp, "misaligned", s->misaligned);
  fprintf (fp, ",\n");
  write_by_type (fp, "errors", s->errors);
  if (write_cache) {
    fprintf (fp, ",\n  \"write_cache\": ");
    lb_wcache_write_json (fp, write_cache, "  ");
  }
  fprintf (fp, "\n}\n");

  if (ferror (fp)) {
    if (errno == 0)
      errno = EIO;
    return -1;
  }
  return 0;
}
