/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-verify: --power-cut -- what a power cut left of unflushed
 * writes, block by block.
 *
 * On the connection open since the start: write generation 1 over the
 * region (one request per physical block), flush, write generation 2
 * without a flush, then make the power fail -- by writing "cut" into the
 * server's FIFO (fifo:PATH, largeblock's power-cut-fifo=), by running a
 * command (run:COMMAND), or by letting the server do it (wait: largeblock's
 * power-cut-after=, or anything else the user arranges).  The cut is seen
 * when a request on that connection fails; then a new connection reads
 * the region back and lib/cutclass names every physical block old, new,
 * torn or foreign.  With --expect-mode the counts must be what that
 * power-cut mode allows.
 *
 * Single-threaded: one connection at a time, synchronous requests, so
 * power-cut-after=N falls on a known request.  The report depends only on
 * the post-cut image (and how the cut was made), so a replayed seed gives
 * the same report.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "largeblock/aligned-io.h"
#include "cutclass.h"
#include "json.h"
#include "verify.h"

#define OLD_GEN 1u
#define NEW_GEN 2u
#define POLL_INTERVAL_US 10000
#define MAX_HUMAN_RUNS 64
#define MAX_MAPS_PER_LINE 8

extern char **environ;

/* One run of consecutive physical blocks of one class. */
struct cut_run_span {
  uint64_t first_idx, count;
  enum lb_cutclass cls;
};

struct cut {
  const struct verify_opts *o;
  const struct verify_export *ex;
  struct lb_cutclass_layout layout;
  uint64_t nr_phys;
  uint32_t map_len; /* logical blocks per physical + 1 */
  uint8_t *buf;     /* one physical block, aligned */
  uint8_t *scratch; /* one logical block */

  uint64_t old_writes, new_writes; /* requests that succeeded */
  bool cut_during_new;             /* a generation 2 write failed */
  char old_conn_saw[192];          /* how the cut showed on that connection */

  struct lb_cutclass_summary sum;
  char *maps; /* nr_phys * map_len: every block's logical map */
  struct cut_run_span *runs;
  size_t nr_runs;
  char errors[VERIFY_MAX_ERRORS][320];
  unsigned nr_errors;
  uint64_t nr_errors_total;
  char violation[256]; /* --expect-mode: empty when it holds */
};

static double
now_s (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One line "largeblock-verify: --power-cut HOW: ..." on stderr; returns
 * VERIFY_EXIT_FAILURE.
 */
static int fail (const struct cut *c, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));

static int
fail (const struct cut *c, const char *fmt, ...)
{
  va_list ap;

  fprintf (stderr, "largeblock-verify: --power-cut %s: ", c->o->power_cut);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
  return VERIFY_EXIT_FAILURE;
}

static uint64_t
phys_offset (const struct cut *c, uint64_t idx)
{
  return c->ex->region_offset_bytes + idx * c->ex->physical_bytes;
}

/* Write generation gen over the region, one physical block per request.
 * Returns 0, or -1 with *failed_idx set (errno set).
 */
static int
write_generation (struct cut *c, struct target *t, uint32_t gen,
                  uint64_t *writes, uint64_t *failed_idx)
{
  for (uint64_t i = 0; i < c->nr_phys; i++) {
    struct lb_pattern_key key = {
      .seed = c->o->seed,
      .offset_bytes = phys_offset (c, i),
      .generation = gen,
      .block_bytes = c->ex->block_bytes,
    };
    lb_pattern_fill_range (&key, c->buf, c->ex->physical_bytes);
    if (t->ops->pwrite (t, c->buf, c->ex->physical_bytes, key.offset_bytes) ==
        -1) {
      *failed_idx = i;
      return -1;
    }
    (*writes)++;
  }
  return 0;
}

/* fifo:PATH -- the line "cut" into a FIFO someone reads. */
static int
cut_by_fifo (const struct cut *c, const char *path)
{
  struct stat st;
  int fd;
  ssize_t n;

  if (stat (path, &st) == -1)
    return fail (c, "cannot use %s: %s", path, strerror (errno));
  if (!S_ISFIFO (st.st_mode))
    return fail (c,
                 "%s is not a FIFO (the server's power-cut-fifo= creates "
                 "one)",
                 path);
  fd = open (path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd == -1 && errno == ENXIO)
    return fail (c,
                 "nobody reads %s: is a server running with "
                 "power-cut-fifo= on it?",
                 path);
  if (fd == -1)
    return fail (c, "cannot open %s: %s", path, strerror (errno));
  n = write (fd, "cut\n", 4);
  close (fd);
  if (n != 4)
    return fail (c, "cannot write to %s: %s", path,
                 n == -1 ? strerror (errno) : "short write");
  return 0;
}

/* run:COMMAND -- /bin/sh -c COMMAND, its output on our stderr. */
static int
cut_by_command (const struct cut *c, const char *cmd)
{
  char *argv[] = { (char *) "sh", (char *) "-c", (char *) cmd, NULL };
  posix_spawn_file_actions_t fa;
  char why[64];
  pid_t pid;
  int status, err;

  if (posix_spawn_file_actions_init (&fa) != 0)
    return fail (c, "cannot run %s: %s", cmd, strerror (ENOMEM));
  posix_spawn_file_actions_adddup2 (&fa, STDERR_FILENO, STDOUT_FILENO);
  err = posix_spawn (&pid, "/bin/sh", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy (&fa);
  if (err)
    return fail (c, "cannot run %s: %s", cmd, strerror (err));
  while (waitpid (pid, &status, 0) == -1)
    if (errno != EINTR)
      return fail (c, "cannot wait for %s: %s", cmd, strerror (errno));
  if (WIFEXITED (status) && WEXITSTATUS (status) == 0)
    return 0;
  if (WIFEXITED (status))
    snprintf (why, sizeof why, "exit status %d", WEXITSTATUS (status));
  else
    snprintf (why, sizeof why, "killed by signal %d", WTERMSIG (status));
  return fail (c, "%s failed: %s", cmd, why);
}

/* Make the power fail as opts->power_cut says; 0 or an exit code. */
static int
trigger_cut (const struct cut *c)
{
  const char *how = c->o->power_cut;

  if (strncmp (how, "fifo:", 5) == 0)
    return cut_by_fifo (c, how + 5);
  if (strncmp (how, "run:", 4) == 0)
    return cut_by_command (c, how + 4);
  return 0; /* wait: the server cuts by itself */
}

/* Read the first logical block of the region on the old connection until
 * it fails; 0, or an exit code after --cut-timeout seconds.
 */
static int
wait_for_cut (struct cut *c, struct target *t)
{
  double deadline = now_s () + c->o->cut_timeout_s;

  for (;;) {
    if (t->ops->pread (t, c->scratch, c->ex->block_bytes,
                       c->ex->region_offset_bytes) == -1) {
      snprintf (c->old_conn_saw, sizeof c->old_conn_saw, "read failed: %s",
                strerror (errno));
      return 0;
    }
    if (t->ops->is_dead (t)) {
      snprintf (c->old_conn_saw, sizeof c->old_conn_saw, "disconnected");
      return 0;
    }
    if (now_s () >= deadline)
      break;
    usleep (POLL_INTERVAL_US);
  }
  return fail (c,
               "the power did not fail: the connection opened before the "
               "cut still works after %g seconds (--cut-timeout)",
               c->o->cut_timeout_s);
}

/* A new connection, retried until --cut-timeout (a server may restart). */
static struct target *
reconnect (struct cut *c)
{
  double deadline = now_s () + c->o->cut_timeout_s;
  char err[512];
  struct target *t;

  while (!(t = target_nbd_try_open (c->o->uri, true, err, sizeof err)) &&
         now_s () < deadline)
    usleep (POLL_INTERVAL_US * 10);
  if (!t)
    fail (c, "after the cut: %s", err);
  return t;
}

static void
add_error (struct cut *c, const char *line)
{
  if (c->nr_errors < VERIFY_MAX_ERRORS)
    snprintf (c->errors[c->nr_errors++], sizeof c->errors[0], "%s", line);
  c->nr_errors_total++;
}

static void
add_to_runs (struct cut *c, uint64_t idx, enum lb_cutclass cls)
{
  struct cut_run_span *last = c->nr_runs ? &c->runs[c->nr_runs - 1] : NULL;

  if (last && last->cls == cls && last->first_idx + last->count == idx)
    last->count++;
  else
    c->runs[c->nr_runs++] = (struct cut_run_span) { idx, 1, cls };
}

/* Read every physical block back and classify it; 0 or an exit code. */
static int
classify_region (struct cut *c, struct target *t)
{
  struct lb_cutclass_result r;
  char line[512];

  for (uint64_t i = 0; i < c->nr_phys; i++) {
    uint64_t off = phys_offset (c, i);
    if (t->ops->pread (t, c->buf, c->ex->physical_bytes, off) == -1) {
      return fail (c, "after the cut: read at %" PRIu64 " failed: %s", off,
                   strerror (errno));
    }
    lb_cutclass_check (&c->layout, off, c->buf, c->scratch, &r);
    c->sum.blocks[r.cls]++;
    memcpy (c->maps + i * c->map_len, r.map, c->map_len);
    add_to_runs (c, i, r.cls);
    if (r.cls == LB_CUTCLASS_FOREIGN)
      add_error (c,
                 lb_cutclass_describe (&c->layout, off, &r, line,
                                       sizeof line));
  }
  if (c->o->expect_mode_given)
    lb_cutclass_summary_check (&c->sum, c->o->expect_mode, c->violation,
                               sizeof c->violation);
  return 0;
}

/* ---- output ---- */

static bool
has_maps (enum lb_cutclass cls)
{
  return cls == LB_CUTCLASS_TORN || cls == LB_CUTCLASS_FOREIGN;
}

static const char *
map_of (const struct cut *c, uint64_t idx)
{
  return c->maps + idx * c->map_len;
}

static int
exit_code (const struct cut *c)
{
  return c->sum.blocks[LB_CUTCLASS_FOREIGN] || c->violation[0]
    ? VERIFY_EXIT_DATA_ERROR
    : VERIFY_EXIT_OK;
}

static void
print_cut_line (const struct cut *c)
{
  if (c->cut_during_new)
    printf ("  cut              during generation %u, at its write %" PRIu64
            " of %" PRIu64 "; the old connection: %s\n",
            NEW_GEN, c->new_writes + 1, c->nr_phys, c->old_conn_saw);
  else
    printf ("  cut              after the writes, by %s; the old "
            "connection: %s\n",
            c->o->power_cut, c->old_conn_saw);
}

static void
print_human_run (const struct cut *c, const struct cut_run_span *s)
{
  char range[64];

  if (s->count == 1)
    snprintf (range, sizeof range, "%" PRIu64, s->first_idx);
  else
    snprintf (range, sizeof range, "%" PRIu64 "-%" PRIu64, s->first_idx,
              s->first_idx + s->count - 1);
  printf ("    %-14s %s", range, lb_cutclass_name (s->cls));
  if (has_maps (s->cls))
    printf ("%*s", (int) (7 - strlen (lb_cutclass_name (s->cls))), "");
  for (uint64_t k = 0; has_maps (s->cls) && k < s->count; k++) {
    if (k == MAX_MAPS_PER_LINE) {
      printf (" ...");
      break;
    }
    printf (" %s", map_of (c, s->first_idx + k));
  }
  printf ("\n");
}

static void
print_human (const struct cut *c, int code)
{
  const struct verify_export *ex = c->ex;

  printf ("export             %s\n", c->o->uri);
  printf ("block sizes        minimum %" PRIu32 ", preferred %" PRIu32
          ", maximum %" PRIu32 " (0: not advertised)\n",
          ex->min_bytes, ex->preferred_bytes, ex->max_bytes);
  printf ("power cut          %s, seed %" PRIu64 ", region %" PRIu64
          "+%" PRIu64 ", %" PRIu32 "-byte logical blocks in %" PRIu32
          "-byte physical blocks\n",
          c->o->power_cut, c->o->seed, ex->region_offset_bytes,
          ex->region_bytes, ex->block_bytes, ex->physical_bytes);
  printf ("  generation %u     %" PRIu64 " writes, flushed\n", OLD_GEN,
          c->old_writes);
  printf ("  generation %u     %" PRIu64 " writes, not flushed\n", NEW_GEN,
          c->new_writes);
  print_cut_line (c);
  printf ("  blocks          ");
  for (int k = 0; k < LB_CUTCLASS__COUNT; k++)
    printf (" %s %" PRIu64, lb_cutclass_name (k), c->sum.blocks[k]);
  printf ("\n  runs             physical block (from the region's start), "
          "class, logical blocks (o old, n new, x neither)\n");
  for (size_t k = 0; k < c->nr_runs && k < MAX_HUMAN_RUNS; k++)
    print_human_run (c, &c->runs[k]);
  if (c->nr_runs > MAX_HUMAN_RUNS)
    printf ("    ... %zu more runs (--json lists them all)\n",
            c->nr_runs - MAX_HUMAN_RUNS);
  for (unsigned k = 0; k < c->nr_errors; k++)
    printf ("  error            %s\n", c->errors[k]);
  if (c->nr_errors_total > c->nr_errors)
    printf ("  error            ... %" PRIu64 " more\n",
            c->nr_errors_total - c->nr_errors);
  if (c->o->expect_mode_given)
    printf ("  expected mode    %s: %s\n",
            lb_cut_mode_name (c->o->expect_mode),
            c->violation[0] ? c->violation : "holds");
  printf ("result             %s\n", code ? "data error" : "ok");
}

static void
print_json_runs (const struct cut *c)
{
  for (size_t k = 0; k < c->nr_runs; k++) {
    const struct cut_run_span *s = &c->runs[k];
    printf ("%s\n    {\"first\": %" PRIu64 ", \"count\": %" PRIu64
            ", \"offset\": %" PRIu64 ", \"class\": \"%s\"",
            k ? "," : "", s->first_idx, s->count,
            phys_offset (c, s->first_idx), lb_cutclass_name (s->cls));
    if (has_maps (s->cls)) {
      printf (", \"maps\": [");
      for (uint64_t i = 0; i < s->count; i++)
        printf ("%s\"%s\"", i ? ", " : "", map_of (c, s->first_idx + i));
      printf ("]");
    }
    printf ("}");
  }
}

static void
print_json (const struct cut *c, int code)
{
  const struct verify_export *ex = c->ex;

  printf ("{\"uri\": ");
  json_string (c->o->uri);
  printf (", \"size\": %" PRIu64 ",\n \"block_size\": {\"minimum\": %" PRIu32
          ", \"preferred\": %" PRIu32 ", \"maximum\": %" PRIu32 "},\n"
          " \"power_cut\": {\"how\": ",
          ex->size_bytes, ex->min_bytes, ex->preferred_bytes, ex->max_bytes);
  json_string (c->o->power_cut);
  printf (", \"seed\": %" PRIu64 ", \"offset\": %" PRIu64
          ", \"size\": %" PRIu64 ", \"logical_block\": %" PRIu32
          ", \"physical_block\": %" PRIu32
          ",\n  \"old_generation\": %u, \"old_writes\": %" PRIu64
          ", \"new_generation\": %u, \"new_writes\": %" PRIu64
          ", \"cut_during_new_writes\": %s, \"old_connection\": ",
          c->o->seed, ex->region_offset_bytes, ex->region_bytes,
          ex->block_bytes, ex->physical_bytes, OLD_GEN, c->old_writes, NEW_GEN,
          c->new_writes, c->cut_during_new ? "true" : "false");
  json_string (c->old_conn_saw);
  printf (",\n  \"blocks\": {");
  for (int k = 0; k < LB_CUTCLASS__COUNT; k++)
    printf ("%s\"%s\": %" PRIu64, k ? ", " : "", lb_cutclass_name (k),
            c->sum.blocks[k]);
  printf ("},\n  \"runs\": [");
  print_json_runs (c);
  printf ("],\n  \"errors_total\": %" PRIu64 ", \"errors\": [",
          c->nr_errors_total);
  json_string_lines (c->errors[0], sizeof c->errors[0], c->nr_errors);
  printf ("],\n  \"expect_mode\": ");
  if (c->o->expect_mode_given)
    printf ("\"%s\", \"violation\": ", lb_cut_mode_name (c->o->expect_mode));
  else
    printf ("null, \"violation\": ");
  if (c->violation[0])
    json_string (c->violation);
  else
    printf ("null");
  printf ("},\n \"result\": \"%s\", \"exit_code\": %d}\n",
          code ? "data error" : "ok", code);
}

/* ---- the sequence ---- */

/* Generations 1 (flushed) and 2 (not) on the old connection, then the
 * cut.  Returns 0 or an exit code.
 */
static int
write_and_cut (struct cut *c, struct target *t)
{
  uint64_t failed_idx = 0;
  int code;

  if (write_generation (c, t, OLD_GEN, &c->old_writes, &failed_idx) == -1 ||
      t->ops->flush (t) == -1) {
    return fail (c,
                 "writing generation %u (%" PRIu64 " writes and a flush) "
                 "failed: %s; did the power fail too early? "
                 "(power-cut-after= must be more than those writes)",
                 OLD_GEN, c->nr_phys, strerror (errno));
  }
  if (write_generation (c, t, NEW_GEN, &c->new_writes, &failed_idx) == -1) {
    c->cut_during_new = true; /* the power failed under this write */
    snprintf (c->old_conn_saw, sizeof c->old_conn_saw,
              "write at %" PRIu64 " failed: %s", phys_offset (c, failed_idx),
              strerror (errno));
    return 0;
  }
  code = trigger_cut (c);
  return code ? code : wait_for_cut (c, t);
}

static int
run_cut (struct cut *c, struct target *t)
{
  int code = write_and_cut (c, t);

  t->ops->close (t);
  if (code)
    return code;
  t = reconnect (c);
  if (!t)
    return VERIFY_EXIT_FAILURE;
  code = classify_region (c, t);
  t->ops->close (t);
  if (code)
    return code;
  code = exit_code (c);
  if (c->o->json)
    print_json (c, code);
  else
    print_human (c, code);
  return code;
}

int
verify_power_cut (const struct verify_opts *opts,
                  const struct verify_export *ex, struct target *t)
{
  struct cut c = {
    .o = opts,
    .ex = ex,
    .layout = {
      .seed = opts->seed,
      .old_gen = OLD_GEN,
      .new_gen = NEW_GEN,
      .logical_bytes = ex->block_bytes,
      .physical_bytes = ex->physical_bytes,
    },
    .nr_phys = ex->region_bytes / ex->physical_bytes,
    .map_len = ex->physical_bytes / ex->block_bytes + 1,
  };
  int code = VERIFY_EXIT_FAILURE;

  c.buf = lb_aligned_alloc (VERIFY_BUFFER_ALIGN_BYTES, ex->physical_bytes);
  c.scratch = malloc (ex->block_bytes);
  c.maps = malloc (c.nr_phys * c.map_len);
  c.runs = malloc (c.nr_phys * sizeof *c.runs);
  if (!c.buf || !c.scratch || !c.maps || !c.runs) {
    fprintf (stderr,
             "largeblock-verify: out of memory for %" PRIu64
             " physical blocks\n",
             c.nr_phys);
    t->ops->close (t);
  }
  else
    code = run_cut (&c, t);
  free (c.buf);
  free (c.scratch);
  free (c.maps);
  free (c.runs);
  return code;
}
