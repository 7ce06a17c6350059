/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: concurrency stress test of the RAM store.
 *
 * Eight threads hammer one store.  In the lower half of the disk each
 * thread owns every eighth folio and mixes writes, reads, trims and zeros
 * there against its own model, so the final contents are known exactly.
 * In the upper half all threads write, trim, zero and read the SAME folios
 * at once; there a logical block must always read either as zeros or as
 * one whole stamped block (a request is never torn within a folio, and a
 * trim racing a read never exposes freed memory).  Then every byte is
 * checked and the folio accounting must match the extents.
 *
 * Bounded in operations, not time.  Exit 0 on success, 1 on failure.  Run
 * it under TSan (./configure --enable-sanitizers=thread) to check races.
 */
#include <config.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "largeblock/geometry.h"
#include "ramstore.h"

#define NR_THREADS 8
#define DISK_BYTES (16u << 20)
#define PHYSICAL 16384u
#define LOGICAL 4096u
#define HALF (DISK_BYTES / 2)

static struct lb_geometry geom;
static struct lb_store *store;
static unsigned char *model; /* lower half only */
static unsigned ops_per_thread = 20000;
static _Atomic int failed;

#define FAIL(...) \
  do { \
    fprintf (stderr, "FAIL: " __VA_ARGS__); \
    fputc ('\n', stderr); \
    failed = 1; \
  } while (0)

static uint32_t
next_rand (uint32_t *state)
{
  *state = *state * 1103515245u + 12345u;
  return *state >> 8;
}

/* A stamped logical block: every 8-byte word says (block, generation). */
static void
stamp (unsigned char *buf, uint64_t block, uint32_t gen)
{
  uint64_t word = (block << 32) | gen | 1;

  for (unsigned i = 0; i < LOGICAL; i += 8)
    memcpy (buf + i, &word, 8);
}

static bool
is_zero_or_whole_stamp (const unsigned char *buf, uint64_t block)
{
  uint64_t first, w;

  memcpy (&first, buf, 8);
  if (first != 0 && (first >> 32) != block)
    return false;
  for (unsigned i = 8; i < LOGICAL; i += 8) {
    memcpy (&w, buf + i, 8);
    if (w != first)
      return false;
  }
  return true;
}

static void
owned_op (unsigned tid, uint32_t *rnd, unsigned char *buf)
{
  const unsigned folios = HALF / PHYSICAL;
  uint64_t folio = (next_rand (rnd) % (folios / NR_THREADS)) * NR_THREADS +
    tid;
  uint64_t first = next_rand (rnd) % (PHYSICAL / LOGICAL);
  uint64_t nblocks = 1 + next_rand (rnd) % (PHYSICAL / LOGICAL - first);
  uint64_t off = folio * PHYSICAL + first * LOGICAL;
  uint32_t len = (uint32_t) (nblocks * LOGICAL);

  switch (next_rand (rnd) % 6) {
  case 0:
  case 1:
  case 2:
    for (uint32_t i = 0; i < len; i++)
      buf[i] = (unsigned char) next_rand (rnd);
    if (store->ops->pwrite (store, buf, len, off, false) == -1)
      FAIL ("pwrite at %" PRIu64, off);
    memcpy (model + off, buf, len);
    break;
  case 3:
    if (store->ops->pread (store, buf, len, off) == -1)
      FAIL ("pread at %" PRIu64, off);
    if (memcmp (buf, model + off, len) != 0)
      FAIL ("owned data differs at %" PRIu64, off);
    break;
  case 4:
    if (store->ops->trim (store, len, off) == -1)
      FAIL ("trim at %" PRIu64, off);
    memset (model + off, 0, len);
    break;
  default:
    if (store->ops->zero (store, len, off,
                          next_rand (rnd) & 1 ? LB_ZERO_MAY_TRIM : 0) == -1)
      FAIL ("zero at %" PRIu64, off);
    memset (model + off, 0, len);
  }
}

static void
shared_op (uint32_t *rnd, unsigned char *buf)
{
  const unsigned shared_folios = 8; /* few folios: many collisions */
  uint64_t folio = HALF / PHYSICAL + next_rand (rnd) % shared_folios;
  uint64_t block = folio * (PHYSICAL / LOGICAL) +
    next_rand (rnd) % (PHYSICAL / LOGICAL);
  uint64_t off = block * LOGICAL;

  switch (next_rand (rnd) % 4) {
  case 0:
    stamp (buf, block, next_rand (rnd));
    if (store->ops->pwrite (store, buf, LOGICAL, off, false) == -1)
      FAIL ("shared pwrite");
    break;
  case 1:
    if (store->ops->trim (store, PHYSICAL, folio * PHYSICAL) == -1)
      FAIL ("shared trim");
    break;
  case 2:
    if (store->ops->zero (store, LOGICAL, off, 0) == -1)
      FAIL ("shared zero");
    break;
  default:
    if (store->ops->pread (store, buf, LOGICAL, off) == -1)
      FAIL ("shared pread");
    else if (!is_zero_or_whole_stamp (buf, block))
      FAIL ("block %" PRIu64 " is neither zeros nor one whole write", block);
  }
}

static void *
worker (void *arg)
{
  unsigned tid = (unsigned) (uintptr_t) arg;
  uint32_t rnd = 0x9e3779b9u * (tid + 1);
  unsigned char *buf = malloc (PHYSICAL);

  for (unsigned n = 0; n < ops_per_thread && !failed; n++) {
    if (next_rand (&rnd) % 2)
      owned_op (tid, &rnd, buf);
    else
      shared_op (&rnd, buf);
  }
  free (buf);
  return NULL;
}

static int
count_data (uint64_t offset, uint64_t length, bool hole, void *opaque)
{
  if (!hole)
    *(uint64_t *) opaque += length / PHYSICAL;
  return 0;
}

static void
final_checks (void)
{
  unsigned char *disk = malloc (DISK_BYTES);
  struct lb_store_usage u;
  uint64_t data_folios = 0;

  if (store->ops->pread (store, disk, DISK_BYTES, 0) == -1)
    FAIL ("final pread");
  if (memcmp (disk, model, HALF) != 0)
    FAIL ("owned half differs from the model");
  for (uint64_t b = HALF / LOGICAL; b < DISK_BYTES / LOGICAL; b++)
    if (!is_zero_or_whole_stamp (disk + b * LOGICAL, b))
      FAIL ("shared block %" PRIu64 " corrupt", b);
  store->ops->extents (store, DISK_BYTES, 0, false, count_data, &data_folios);
  store->ops->usage (store, &u);
  if (u.folios_allocated != data_folios)
    FAIL ("accounting says %" PRIu64 " folios, extents show %" PRIu64,
          u.folios_allocated, data_folios);
  printf ("stress-ramstore: %u threads x %u ops, %" PRIu64
          " folios allocated (peak %" PRIu64 ")\n",
          NR_THREADS, ops_per_thread, u.folios_allocated, u.folios_peak);
  free (disk);
}

int
main (void)
{
  struct lb_geometry_request req;
  pthread_t threads[NR_THREADS];
  char err[256];
  const char *ops = getenv ("LB_STRESS_OPS");

  if (ops)
    ops_per_thread = (unsigned) atoi (ops);
  lb_geometry_request_defaults (&req);
  req.size_bytes = DISK_BYTES;
  req.size_str = "16M";
  req.physical_bytes = PHYSICAL;
  req.logical_bytes = LOGICAL;
  if (lb_geometry_init (&geom, &req, err, sizeof err) == -1) {
    fprintf (stderr, "FAIL: %s\n", err);
    return 1;
  }
  store = lb_ramstore_new (&geom, 0);
  model = calloc (1, HALF);
  if (store == NULL || model == NULL) {
    perror ("stress-ramstore");
    return 1;
  }
  for (uintptr_t t = 0; t < NR_THREADS; t++)
    pthread_create (&threads[t], NULL, worker, (void *) t);
  for (unsigned t = 0; t < NR_THREADS; t++)
    pthread_join (threads[t], NULL);
  final_checks ();
  store->ops->destroy (store);
  free (model);
  if (failed)
    return 1;
  printf ("PASS\n");
  return 0;
}
