/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-verify: the integrity test -- write phase and verify phase.
 *
 * A run is a sequence of rounds computed from the seed alone: round 1
 * writes the region sequentially, every third round trims and zeroes
 * random ranges, the others overwrite random ranges with the round's
 * generation.  Inside a round no two requests overlap, so the final
 * content of every block is known without looking at the export: that is
 * what makes --verify-only possible after a restart.  The verify phase
 * reads the region back and classifies every stamped block.
 *
 * Threads: one worker per connection per round, each with its own target
 * (target.h).  On NBD a worker keeps up to --depth requests in flight
 * (libnbd's async API); on a device or a file each worker is a thread
 * with its own descriptor doing one synchronous O_DIRECT request at a
 * time (depth 1: --depth is ignored there).  Workers only
 * read the plan and the expected-generation map; they record into the
 * report only through its report_* functions, which do their own
 * locking.  The main thread joins them between rounds.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "largeblock/aligned-io.h"
#include "verify.h"

#define GEN_TRIMMED UINT32_MAX /* zeros or any older content of the block */

enum op { OP_WRITE, OP_TRIM, OP_ZERO, OP_READ };

struct request {
  uint64_t rel_offset_bytes; /* from the start of the region */
  uint32_t count_bytes;
  uint32_t generation;
  enum op op;
};

struct plan {
  struct request *reqs;
  size_t nr, cap;
};

struct run {
  const struct verify_opts *opts;
  const struct verify_export *ex;
  struct verify_report *rep;
  struct target **targets;
  uint32_t *expected_gen; /* per stamped block of the region */
  uint64_t nr_blocks;
  struct plan plan; /* the round being executed */
  atomic_uint_fast64_t bytes_done;
  atomic_uint workers_done;
};

struct worker {
  struct run *run;
  unsigned conn_idx;
  pthread_t thread;
};

struct slot {
  int64_t cookie; /* 0: free */
  size_t req_idx;
  uint8_t *buf;
};

/* ---- the plan: pure functions of the seed ---- */

static uint64_t
rng_next (uint64_t *state)
{
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t
rng_below (uint64_t *state, uint64_t bound)
{
  return bound ? rng_next (state) % bound : 0;
}

/* A request length in blocks, log-uniform from 1 to max_blocks, so small
 * and large requests are equally common.
 */
static uint64_t
random_blocks (uint64_t *state, uint64_t max_blocks)
{
  unsigned max_shift = 0;
  uint64_t top;

  while (max_shift < 63 && (2ull << max_shift) <= max_blocks)
    max_shift++;
  top = 1ull << rng_below (state, max_shift + 1);
  if (top > max_blocks)
    top = max_blocks;
  return top / 2 + 1 + rng_below (state, top - top / 2);
}

static int
plan_add (struct plan *p, uint64_t rel, uint64_t count, enum op op,
          uint32_t generation)
{
  if (p->nr == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 1024;
    struct request *r = realloc (p->reqs, cap * sizeof *r);
    if (!r)
      return -1;
    p->reqs = r;
    p->cap = cap;
  }
  p->reqs[p->nr++] = (struct request) {
    .rel_offset_bytes = rel,
    .count_bytes = (uint32_t) count,
    .generation = generation,
    .op = op,
  };
  return 0;
}

static void
plan_shuffle (struct plan *p, uint64_t *state)
{
  for (size_t i = p->nr; i > 1; i--) {
    size_t j = (size_t) rng_below (state, i);
    struct request t = p->reqs[i - 1];
    p->reqs[i - 1] = p->reqs[j];
    p->reqs[j] = t;
  }
}

static void
expect_range (struct run *run, const struct request *r)
{
  uint64_t first = r->rel_offset_bytes / run->ex->block_bytes;
  uint64_t n = r->count_bytes / run->ex->block_bytes;
  uint32_t gen = r->op == OP_WRITE ? r->generation
    : r->op == OP_TRIM             ? GEN_TRIMMED
                                   : 0;

  for (uint64_t b = first; b < first + n; b++)
    run->expected_gen[b] = gen;
}

/* Build round number round (1-based) and update the expected map. */
static int
plan_round (struct run *run, unsigned round)
{
  uint64_t state = run->opts->seed ^ ((uint64_t) round << 40);
  uint64_t block = run->ex->block_bytes, region = run->ex->region_bytes;
  uint64_t max_blocks = run->ex->io_max_bytes / block;
  bool sequential = round == 1, trim_zero = round % 3 == 0;

  run->plan.nr = 0;
  for (uint64_t rel = 0; rel < region;) {
    uint64_t count;
    enum op op = OP_WRITE;
    if (!sequential)
      rel += block * rng_below (&state, max_blocks + 1);
    if (rel >= region)
      break;
    count = block * random_blocks (&state, max_blocks);
    if (count > region - rel)
      count = region - rel;
    if (trim_zero)
      op = rng_below (&state, 2) ? OP_TRIM : OP_ZERO;
    if (plan_add (&run->plan, rel, count, op, round) == -1)
      return -1;
    expect_range (run, &run->plan.reqs[run->plan.nr - 1]);
    rel += count;
  }
  if (!sequential)
    plan_shuffle (&run->plan, &state);
  return 0;
}

/* The verify phase: read the region in the largest requests. */
static int
plan_reads (struct run *run)
{
  uint64_t region = run->ex->region_bytes, step = run->ex->io_max_bytes;

  run->plan.nr = 0;
  for (uint64_t rel = 0; rel < region; rel += step)
    if (plan_add (&run->plan, rel, region - rel < step ? region - rel : step,
                  OP_READ, 0) == -1)
      return -1;
  return 0;
}

/* ---- execution ---- */

static uint64_t
offset_of (const struct run *run, const struct request *r)
{
  return run->ex->region_offset_bytes + r->rel_offset_bytes;
}

/* What request r becomes on this target, filling buf for a write:
 * zeros are one valid result of a trim, and zeros can be written.
 */
static enum op
effective_op (const struct run *run, const struct request *r, uint8_t *buf)
{
  const struct verify_export *ex = run->ex;
  struct lb_pattern_key key = {
    .seed = run->opts->seed,
    .offset_bytes = offset_of (run, r),
    .generation = r->op == OP_WRITE ? r->generation : 0,
    .block_bytes = ex->block_bytes,
  };

  if (r->op == OP_READ)
    return OP_READ;
  if (r->op == OP_TRIM && ex->can_trim)
    return OP_TRIM;
  if (r->op != OP_WRITE && ex->can_zero)
    return OP_ZERO;
  lb_pattern_fill_range (&key, buf, r->count_bytes);
  return OP_WRITE;
}

/* Start r on an NBD handle; the cookie, or -1. */
static int64_t
issue (struct run *run, struct nbd_handle *h, const struct request *r,
       uint8_t *buf)
{
  uint64_t off = offset_of (run, r);

  switch (effective_op (run, r, buf)) {
  case OP_READ:
    return nbd_aio_pread (h, buf, r->count_bytes, off, NBD_NULL_COMPLETION, 0);
  case OP_TRIM:
    return nbd_aio_trim (h, r->count_bytes, off, NBD_NULL_COMPLETION, 0);
  case OP_ZERO:
    return nbd_aio_zero (h, r->count_bytes, off, NBD_NULL_COMPLETION, 0);
  case OP_WRITE: break;
  }
  return nbd_aio_pwrite (h, buf, r->count_bytes, off, NBD_NULL_COMPLETION, 0);
}

/* Do r synchronously on any target; 0, or -1 with errno set. */
static int
issue_sync (struct run *run, struct target *t, const struct request *r,
            uint8_t *buf)
{
  uint64_t off = offset_of (run, r);

  switch (effective_op (run, r, buf)) {
  case OP_READ: return t->ops->pread (t, buf, r->count_bytes, off);
  case OP_TRIM: return t->ops->trim (t, r->count_bytes, off);
  case OP_ZERO: return t->ops->zero (t, r->count_bytes, off);
  case OP_WRITE: break;
  }
  return t->ops->pwrite (t, buf, r->count_bytes, off);
}

/* The errno of a failed libnbd call on this thread. */
static int
nbd_errno (void)
{
  int err_no = nbd_get_errno ();
  return err_no ? err_no : EIO;
}

static const char *
op_name (enum op op)
{
  static const char *const names[] = { "write", "trim", "zero", "read" };
  return names[op];
}

/* Classify every block of a completed read. */
static void
check_read (struct run *run, const struct request *r, const uint8_t *buf,
            uint8_t *scratch)
{
  uint64_t counts[LB_PATTERN_NR_CLASSES] = { 0 };
  uint32_t block = run->ex->block_bytes;

  for (uint64_t done = 0; done < r->count_bytes; done += block) {
    uint64_t idx = (r->rel_offset_bytes + done) / block;
    uint32_t gen = run->expected_gen[idx];
    struct lb_pattern_key key = {
      .seed = run->opts->seed,
      .block_bytes = block,
      .offset_bytes = run->ex->region_offset_bytes + idx * block,
      .generation = gen == GEN_TRIMMED ? 0 : gen,
    };
    struct lb_pattern_result res;
    char msg[192];
    enum lb_pattern_class cls = lb_pattern_check (&key, buf + done, scratch,
                                                  &res);
    if (gen == GEN_TRIMMED && cls == LB_PATTERN_STALE)
      cls = LB_PATTERN_GOOD; /* a trim may leave old data */
    counts[cls]++;
    if (cls != LB_PATTERN_GOOD)
      report_data_error (run->rep, "%s",
                         lb_pattern_describe (&key, &res, msg, sizeof msg));
  }
  report_blocks (run->rep, counts);
}

static void
complete (struct run *run, const struct request *r, const uint8_t *buf,
          uint8_t *scratch, int err_no)
{
  if (err_no)
    report_io_error (run->rep,
                     "%s of %" PRIu32 " bytes at %" PRIu64 " failed: %s",
                     op_name (r->op), r->count_bytes, offset_of (run, r),
                     strerror (err_no));
  else if (r->op == OP_READ)
    check_read (run, r, buf, scratch);
  else if (r->op == OP_WRITE)
    report_write_done (run->rep, r->count_bytes);
  else if (r->op == OP_TRIM)
    report_trim_done (run->rep);
  else
    report_zero_done (run->rep);
  atomic_fetch_add (&run->bytes_done, r->count_bytes);
}

/* Retire finished commands; returns how many, or -1 if the connection
 * is gone.
 */
static int
reap (struct worker *w, struct nbd_handle *h, struct slot *slots,
      unsigned *in_flight, uint8_t *scratch)
{
  int reaped = 0;

  for (unsigned s = 0; s < w->run->opts->depth; s++) {
    int r;
    if (slots[s].cookie == 0)
      continue;
    r = nbd_aio_command_completed (h, slots[s].cookie);
    if (r == 0)
      continue;
    complete (w->run, &w->run->plan.reqs[slots[s].req_idx], slots[s].buf,
              scratch, r == 1 ? 0 : nbd_errno ());
    slots[s].cookie = 0;
    (*in_flight)--;
    reaped++;
  }
  return nbd_aio_is_dead (h) ? -1 : reaped;
}

static int
run_slots (struct worker *w, struct nbd_handle *h, struct slot *slots,
           uint8_t *scratch)
{
  struct run *run = w->run;
  size_t next = w->conn_idx;
  unsigned in_flight = 0;

  for (;;) {
    int reaped;
    for (unsigned s = 0; s < run->opts->depth && next < run->plan.nr; s++) {
      if (slots[s].cookie != 0)
        continue;
      slots[s].cookie = issue (run, h, &run->plan.reqs[next], slots[s].buf);
      if (slots[s].cookie == -1) {
        slots[s].cookie = 0;
        complete (run, &run->plan.reqs[next], NULL, scratch, nbd_errno ());
      }
      else
        in_flight++;
      slots[s].req_idx = next;
      next += run->opts->connections;
    }
    reaped = reap (w, h, slots, &in_flight, scratch);
    if (reaped == -1)
      return -1;
    if (in_flight == 0 && next >= run->plan.nr)
      return 0;
    if (reaped == 0 && nbd_poll (h, -1) == -1)
      return -1;
  }
}

/* A device or a file: this worker's requests, one at a time. */
static void
run_sync (struct worker *w, struct target *t, uint8_t *buf, uint8_t *scratch)
{
  struct run *run = w->run;

  for (size_t next = w->conn_idx; next < run->plan.nr;
       next += run->opts->connections) {
    const struct request *r = &run->plan.reqs[next];
    int err_no = 0;

    if (issue_sync (run, t, r, buf) == -1)
      err_no = errno ? errno : EIO;
    complete (run, r, buf, scratch, err_no);
  }
}

static void *
worker_main (void *arg)
{
  struct worker *w = arg;
  struct run *run = w->run;
  struct target *t = run->targets[w->conn_idx];
  struct nbd_handle *h = target_nbd_handle (t);
  unsigned depth = h ? run->opts->depth : 1;
  struct slot *slots = calloc (depth, sizeof *slots);
  uint8_t *scratch = malloc (run->ex->block_bytes);
  bool ok = slots && scratch;

  for (unsigned s = 0; ok && s < depth; s++)
    ok = (slots[s].buf = lb_aligned_alloc (VERIFY_BUFFER_ALIGN_BYTES,
                                           run->ex->io_max_bytes)) != NULL;
  if (ok && !h)
    run_sync (w, t, slots[0].buf, scratch);
  if (!ok || (h && run_slots (w, h, slots, scratch) == -1) ||
      (run->ex->can_flush && t->ops->flush (t) == -1))
    report_data_error (run->rep, "connection %u failed: %s", w->conn_idx,
                       ok ? t->ops->last_error (t) : "out of memory");
  for (unsigned s = 0; slots && s < depth; s++)
    free (slots[s].buf);
  free (slots);
  free (scratch);
  atomic_fetch_add (&run->workers_done, 1);
  return NULL;
}

static double
now_s (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
show_progress (struct run *run, const char *phase, double started)
{
  uint64_t done = atomic_load (&run->bytes_done), total = 0;

  if (!run->opts->progress || now_s () - started < 2)
    return;
  for (size_t i = 0; i < run->plan.nr; i++)
    total += run->plan.reqs[i].count_bytes;
  fprintf (stderr, "\r%s: %3.0f%%", phase,
           total ? 100.0 * (double) done / (double) total : 100.0);
}

/* Execute run->plan on every connection; wait for all workers. */
static int
execute_plan (struct run *run, const char *phase, double started)
{
  unsigned n = run->opts->connections, started_workers = 0;
  struct worker *workers = calloc (n, sizeof *workers);

  if (!workers)
    return -1;
  atomic_store (&run->bytes_done, 0);
  atomic_store (&run->workers_done, 0);
  for (unsigned c = 0; c < n; c++) {
    workers[c] = (struct worker) { .run = run, .conn_idx = c };
    if (pthread_create (&workers[c].thread, NULL, worker_main, &workers[c]) !=
        0)
      break;
    started_workers++;
  }
  while (atomic_load (&run->workers_done) < started_workers) {
    show_progress (run, phase, started);
    usleep (100000);
  }
  for (unsigned c = 0; c < started_workers; c++)
    pthread_join (workers[c].thread, NULL);
  if (run->opts->progress && now_s () - started >= 2)
    fprintf (stderr, "\r%-40s\r", "");
  free (workers);
  return started_workers == n ? 0 : -1;
}

static int
open_connections (struct run *run)
{
  run->targets = calloc (run->opts->connections, sizeof *run->targets);
  if (!run->targets)
    return -1;
  for (unsigned c = 0; c < run->opts->connections; c++)
    if (!(run->targets[c] = target_open (run->opts->uri, run->opts->path_fd,
                                         true, !run->opts->verify_only)))
      return -1;
  return 0;
}

static bool
keep_writing (const struct run *run, unsigned round, double started)
{
  return round <= run->opts->rounds ||
    (!run->opts->verify_only && now_s () - started < run->opts->duration_s);
}

static int
write_and_verify (struct run *run)
{
  double started = now_s ();
  unsigned round;
  char phase[64];

  for (round = 1; keep_writing (run, round, started); round++) {
    if (plan_round (run, round) == -1)
      return -1;
    snprintf (phase, sizeof phase, "round %u", round);
    if (!run->opts->verify_only && execute_plan (run, phase, started) == -1)
      return -1;
  }
  report_rounds_done (run->rep, round - 1);
  if (plan_reads (run) == -1)
    return -1;
  return execute_plan (run, "verify", started);
}

int
verify_integrity (const struct verify_opts *opts,
                  const struct verify_export *ex, struct verify_report *rep)
{
  struct run run = {
    .opts = opts,
    .ex = ex,
    .rep = rep,
    .nr_blocks = ex->region_bytes / ex->block_bytes,
  };
  int ret = -1;

  report_integrity_started (rep);
  run.expected_gen = calloc (run.nr_blocks, sizeof *run.expected_gen);
  if (!run.expected_gen)
    fprintf (stderr,
             "largeblock-verify: out of memory for %" PRIu64 " blocks\n",
             run.nr_blocks);
  else if (open_connections (&run) == 0 && write_and_verify (&run) == 0)
    ret = 0;
  else
    fprintf (stderr, "largeblock-verify: integrity run failed\n");
  for (unsigned c = 0; run.targets && c < opts->connections; c++)
    if (run.targets[c])
      run.targets[c]->ops->close (run.targets[c]);
  free (run.targets);
  free (run.plan.reqs);
  free (run.expected_gen);
  return ret;
}
