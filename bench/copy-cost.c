/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: what the RAM store itself costs per byte, without nbdkit.
 *
 * For each folio size, fills a 256 MiB RAM store, then times random
 * 1 MiB-aligned reads and writes of 1 MiB through the store against a
 * plain memcpy of the same sizes from one flat buffer.  The difference is
 * the store's own cost (index walk, locks, one memcpy per folio) and the
 * effect of its memory layout (huge pages for folios of 2 MiB and more).
 * Prints one JSON object per folio size, for bench/largeblock-bench.py.
 *
 * Usage: copy-cost [ITERATIONS]
 */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ramstore.h"

#define DISK_BYTES (UINT64_C (256) << 20)
#define REQUEST_BYTES (1u << 20)

static double
seconds_now (void)
{
  struct timespec t;

  clock_gettime (CLOCK_MONOTONIC, &t);
  return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

static uint64_t
random_offset (unsigned *seed)
{
  return (uint64_t) (rand_r (seed) % (DISK_BYTES / REQUEST_BYTES)) *
    REQUEST_BYTES;
}

/* Microseconds per MiB of fn over iterations random requests. */
typedef void (*copy_fn) (void *ctx, char *buf, uint64_t offset, bool write);

static double
time_copies (copy_fn fn, void *ctx, char *buf, int iterations, bool write)
{
  unsigned seed = 1;
  double start = seconds_now ();

  for (int i = 0; i < iterations; i++)
    fn (ctx, buf, random_offset (&seed), write);
  return (seconds_now () - start) / iterations * 1e6;
}

static void
store_copy (void *ctx, char *buf, uint64_t offset, bool write)
{
  struct lb_store *s = ctx;

  if (write)
    s->ops->pwrite (s, buf, REQUEST_BYTES, offset, false);
  else
    s->ops->pread (s, buf, REQUEST_BYTES, offset);
}

static void
flat_copy (void *ctx, char *buf, uint64_t offset, bool write)
{
  char *flat = ctx;

  if (write)
    memcpy (flat + offset, buf, REQUEST_BYTES);
  else
    memcpy (buf, flat + offset, REQUEST_BYTES);
}

static int
measure (uint32_t folio_bytes, char *flat, char *buf, int iterations)
{
  struct lb_geometry_request req;
  struct lb_geometry g;
  struct lb_store *s;
  char err[256];

  lb_geometry_request_defaults (&req);
  req.size_bytes = DISK_BYTES;
  req.size_str = "256M";
  req.physical_bytes = folio_bytes;
  req.logical_bytes = folio_bytes < 65536 ? folio_bytes : 65536;
  req.max_request_bytes = folio_bytes > (32u << 20) ? folio_bytes
                                                    : (32u << 20);
  if (lb_geometry_init (&g, &req, err, sizeof err) == -1) {
    fprintf (stderr, "copy-cost: %s\n", err);
    return -1;
  }
  s = lb_ramstore_new (&g, 0);
  if (s == NULL) {
    perror ("copy-cost: lb_ramstore_new");
    return -1;
  }
  for (uint64_t off = 0; off < DISK_BYTES; off += REQUEST_BYTES)
    s->ops->pwrite (s, buf, REQUEST_BYTES, off, false);

  printf ("{\"folio\": %" PRIu32 ", \"store_read_us\": %.1f, "
          "\"store_write_us\": %.1f, \"flat_read_us\": %.1f, "
          "\"flat_write_us\": %.1f}\n",
          folio_bytes, time_copies (store_copy, s, buf, iterations, false),
          time_copies (store_copy, s, buf, iterations, true),
          time_copies (flat_copy, flat, buf, iterations, false),
          time_copies (flat_copy, flat, buf, iterations, true));
  s->ops->destroy (s);
  return 0;
}

int
main (int argc, char *argv[])
{
  static const uint32_t folios[] = { 4096, 16384, 65536, 2u << 20 };
  int iterations = argc > 1 ? atoi (argv[1]) : 5000;
  char *flat = aligned_alloc (4096, DISK_BYTES);
  char *buf = aligned_alloc (4096, REQUEST_BYTES);

  if (flat == NULL || buf == NULL || iterations <= 0) {
    fprintf (stderr, "usage: copy-cost [ITERATIONS > 0]\n");
    return 2;
  }
  memset (flat, 1, DISK_BYTES);
  memset (buf, 2, REQUEST_BYTES);
  for (size_t i = 0; i < sizeof folios / sizeof folios[0]; i++)
    if (measure (folios[i], flat, buf, iterations) == -1)
      return 1;
  free (flat);
  free (buf);
  return 0;
}
