/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run: --crash-explore -- run a workload once on a disk whose
 * write cache logs every change, then check the filesystem in every
 * chosen crash state of that log without running the workload again.
 *
 * Phase 1 is the ordinary set-up with crash-log= in the private
 * directory (explore_add_params): server, attach, mkfs, mount; then the
 * log's size is noted (the workload's first epoch is the one open at
 * that byte: explore-log.h), the workload runs once, the filesystem is
 * unmounted and the disk torn down, server included, which ends the
 * log.  Phase 2 serves that log with one "nbdkit largeblock replay=LOG"
 * on the same disk and, for each chosen epoch and seed, attaches the
 * export "epoch=K,mode=M,seed=S" (a crash state: the image a power cut
 * just before the record that closes epoch K would leave, the plugin's
 * replay), mounts it (log recovery), runs --check, unmounts, runs the
 * read-only checker, detaches, and prints one line.  A summary line
 * follows: states, failures, states a minute.
 *
 * A failing state is kept: the log is copied out of the private
 * directory (to --keep-log=PATH, copied there right after phase 1, or
 * else to a new $TMPDIR/largeblock-explore-XXXXXX.log at the first
 * failure) and a command that rebuilds the state's image from it is
 * printed.
 *
 * Every resource of a state is made by disk-steps.c and the attach back
 * end, which record it before the step that creates it, as at set-up:
 * a signal at any step ends the loop and teardown removes everything.
 *
 * Single-threaded; signals are handled by proc.h's rules.
 */
#include <config.h>

#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "explore-log.h"
#include "proc.h"
#include "run.h"

/* Exit statuses besides 0, 1 (usage, set-up or teardown failed) and
 * 128+N (signal N); 10 as --crash-test's (crash.c).
 */
enum {
  EXPLORE_WORKLOAD = 10,     /* the workload failed */
  EXPLORE_STATE_FAILED = 16, /* a crash state failed a check */
};

/* An option of --crash-explore's given, or NULL. */
static const char *
explore_only_option (const struct options *o)
{
  if (o->epochs)
    return "--epochs";
  if (o->sample)
    return "--sample";
  if (o->seeds)
    return "--seeds";
  return o->keep_log ? "--keep-log" : NULL;
}

int
explore_check_options (struct run *run)
{
  const struct options *o = &run->opt;
  const char *alone = explore_only_option (o);
  struct explore_epochs e;
  char err[256];
  struct stat st;

  if (!o->crash_explore) {
    if (alone == NULL)
      return 0;
    fprintf (stderr, PROG ": %s needs --crash-explore\n", alone);
    return -1;
  }
  if (o->epochs && o->sample)
    fprintf (stderr,
             PROG ": --epochs and --sample exclude each other: name the "
                  "epochs, or how many to spread over the workload\n");
  else if (o->epochs &&
           explore_epochs_parse (o->epochs, &e, err, sizeof err) == -1)
    fprintf (stderr, PROG ": %s\n", err);
  else if (o->fstests)
    fprintf (stderr,
             PROG ": --crash-explore and --fstests exclude each other\n");
  else if (!run->wc.is_volatile)
    fprintf (stderr,
             PROG ": --crash-explore needs write-cache=volatile "
                  "(its crash states are power cuts of that cache)\n");
  else if (!o->mount_dir)
    fprintf (stderr,
             PROG ": --crash-explore needs --mkfs and --mount "
                  "(it checks a filesystem's recovery)\n");
  else if (o->disks != 1)
    fprintf (stderr, PROG ": --crash-explore: --disks=%u: must be 1\n",
             o->disks);
  else if (!o->command)
    fprintf (stderr,
             PROG ": --crash-explore needs a WORKLOAD command after --\n");
  else if (run->wc.crash_log)
    fprintf (stderr,
             PROG ": --crash-explore: crash-log= is largeblock-run's own "
                  "(in its private directory); keep a copy with "
                  "--keep-log=PATH\n");
  else if (run->wc.cut_after)
    fprintf (stderr,
             PROG ": --crash-explore: power-cut-after=%" PRIu64
                  ": the workload runs without a cut; the crash states "
                  "are the cuts\n",
             run->wc.cut_after);
  else if (o->keep_log && lstat (o->keep_log, &st) == 0)
    fprintf (stderr,
             PROG ": --keep-log=%s: already exists; a log is never "
                  "overwritten\n",
             o->keep_log);
  else
    return 0;
  return -1;
}

int
explore_add_params (struct run *run)
{
  if (crash_own_params (run) == -1)
    return -1;
  /* Named before the server that makes it starts. */
  return crash_add_param (run, "crash-log", "crash.log", run->crash_log,
                          sizeof run->crash_log);
}

/* ---- keeping the log ---- */

static int
copy_to_fd (const char *src, int out)
{
  int in = open (src, O_RDONLY | O_CLOEXEC);
  ssize_t n = 1;

  if (in == -1)
    return -1;
  while (n > 0)
    n = copy_file_range (in, NULL, out, NULL, 1 << 30, 0);
  close (in);
  return n;
}

/* Copy the log to the new file dst (O_EXCL, never through a symlink):
 * a hard link when it can, a copy otherwise.  0, or -1 after saying
 * why.
 */
static int
keep_log_as (struct run *run, const char *dst)
{
  int fd;

  if (link (run->crash_log, dst) == 0)
    return 0;
  fd = open (dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd == -1 || copy_to_fd (run->crash_log, fd) == -1 || close (fd) == -1) {
    fprintf (stderr, PROG ": cannot keep the crash log as %s: %m\n", dst);
    if (fd >= 0) {
      close (fd);
      unlink (dst);
    }
    return -1;
  }
  return 0;
}

/* Keep the log in a new $TMPDIR/largeblock-explore-XXXXXX.log. */
static int
keep_log_in_tmpdir (struct run *run, char *kept, size_t len)
{
  const char *tmp = getenv ("TMPDIR");
  int fd;

  if (!tmp || !*tmp)
    tmp = "/tmp";
  snprintf (kept, len, "%s/largeblock-explore-XXXXXX.log", tmp);
  fd = mkostemps (kept, 4, O_CLOEXEC);
  if (fd == -1 || copy_to_fd (run->crash_log, fd) == -1 || close (fd) == -1) {
    fprintf (stderr, PROG ": cannot keep the crash log as %s: %m\n", kept);
    if (fd >= 0) {
      close (fd);
      unlink (kept);
    }
    kept[0] = '\0';
    return -1;
  }
  return 0;
}

/* ---- one crash state ---- */

enum stage_result { STAGE_OK, STAGE_FAILED, STAGE_SKIPPED, STAGE_NONE };

static const char *
stage_name (enum stage_result r)
{
  static const char *const names[] = { "ok", "failed", "skipped", "none" };

  return names[r];
}

struct state {
  uint64_t epoch, seed;
  enum stage_result mount, check, fsck;
  double seconds;
};

static bool
state_failed (const struct state *s)
{
  return s->mount == STAGE_FAILED || s->check == STAGE_FAILED ||
    s->fsck == STAGE_FAILED;
}

static double
now_seconds (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The export name of a crash state, as the plugin's replay= reads it. */
static void
format_point (char *buf, size_t len, const struct run *run, uint64_t epoch,
              uint64_t seed)
{
  snprintf (buf, len, "epoch=%" PRIu64 ",mode=%s,seed=%" PRIu64, epoch,
            lb_cut_mode_name (run->wc.mode), seed);
}

static int
run_check (struct run *run)
{
  char *argv[] = { "sh", "-c", (char *) run->opt.check, "sh", NULL };

  return run_user_command (run, argv);
}

/* Mount (log recovery), check, unmount: s->mount and s->check.  -1 if
 * the mount stays (teardown then says why) or a signal came.
 */
static int
mount_and_check (struct run *run, struct disk *d, struct state *s)
{
  s->check = run->opt.check ? STAGE_SKIPPED : STAGE_NONE;
  s->mount = disk_mount (run, d) == 0 ? STAGE_OK : STAGE_FAILED;
  if (proc_caught_signal ())
    return -1;
  if (s->mount == STAGE_OK && run->opt.check) {
    disks_export_env (run);
    s->check = run_check (run) == 0 ? STAGE_OK : STAGE_FAILED;
    if (proc_caught_signal ())
      return -1;
  }
  return disk_unmount (run, d);
}

/* Attach the state, mount, check, unmount, fsck, detach: fills s.  -1
 * if a step that is not the filesystem's own failed (attach, unmount,
 * detach: said why) or a signal came; the run then ends.
 */
static int
explore_state (struct run *run, struct disk *d, struct state *s)
{
  double start = now_seconds ();

  format_point (d->export_name, sizeof d->export_name, run, s->epoch, s->seed);
  verbose (run, "crash state %s", d->export_name);
  if (disk_reattach (run, d) == -1 || mount_and_check (run, d, s) == -1)
    return -1;
  s->fsck = crash_fsck_readonly (run, d) == 0 ? STAGE_OK : STAGE_FAILED;
  if (proc_caught_signal () || disk_detach_keep_server (run, d) == -1)
    return -1;
  s->seconds = now_seconds () - start;
  return 0;
}

/* ---- the run ---- */

struct explore {
  struct run *run;
  struct explore_log log;
  uint64_t *epochs; /* chosen, ascending */
  size_t nr_epochs;
  uint64_t first_seed;
  unsigned seeds;
  uint64_t mark_bytes; /* the log's size when the workload began */
  char kept[PATH_MAX]; /* where the log is kept, "" while it is not */
  unsigned states, failed;
};

/* PATH in single quotes for a shell. */
static void
print_quoted (const char *path)
{
  putchar ('\'');
  for (const char *p = path; *p; p++)
    if (*p == '\'')
      fputs ("'\\''", stdout);
    else
      putchar (*p);
  putchar ('\'');
}

/* The command that rebuilds a failing state's image from the kept log
 * (state.img, a sparse file): attach it with losetup --sector-size, or
 * run xfs_repair -n on it.
 */
static void
print_replay (const struct explore *x, const char *name)
{
  printf ("crash-explore: replay %s: %s -U - ", name, x->run->opt.nbdkit);
  print_quoted (x->run->opt.plugin);
  printf (" replay=");
  print_quoted (x->kept);
  printf (" --run 'nbdcopy \"nbd+unix:///%s?socket=$unixsocket\" "
          "state.img'\n",
          name);
}

static void
print_state (const struct explore *x, const struct state *s)
{
  char name[64];

  format_point (name, sizeof name, x->run, s->epoch, s->seed);
  printf ("crash-explore: epoch=%" PRIu64 " mode=%s seed=%" PRIu64
          " end=%s records=%" PRIu64 " mount=%s check=%s fsck=%s "
          "seconds=%.2f%s\n",
          s->epoch, lb_cut_mode_name (x->run->wc.mode), s->seed,
          explore_end_name (x->log.ends[s->epoch]), x->log.records[s->epoch],
          stage_name (s->mount), stage_name (s->check), stage_name (s->fsck),
          s->seconds, state_failed (s) ? " FAILED" : "");
  if (state_failed (s) && x->kept[0])
    print_replay (x, name);
  fflush (stdout);
}

/* The first seed: power-cut-seed= if it was given, else 0. */
static uint64_t
first_seed (const struct run *run)
{
  for (int i = 0; i < run->opt.nr_params; i++)
    if (strncmp (run->opt.params[i], "power-cut-seed=", 15) == 0)
      return run->wc.seed;
  return 0;
}

/* After the workload: unmount and stop the recording server, which
 * ends the log.  0, or -1 (said why, or a signal).
 */
static int
stop_recording (struct run *run, struct disk *d)
{
  if (disk_unmount (run, d) == -1 || teardown_disk (run, d) == -1)
    return -1;
  return proc_caught_signal () ? -1 : 0;
}

/* Read the log and choose the epochs.  0, or 1 after saying why. */
static int
plan (struct explore *x, uint64_t mark_bytes)
{
  const struct options *o = &x->run->opt;
  struct explore_epochs e;
  char err[512];

  if (explore_log_read (x->run->crash_log, mark_bytes, &x->log, err,
                        sizeof err) == -1) {
    fprintf (stderr, PROG ": %s\n", err);
    return 1;
  }
  if (o->epochs)
    explore_epochs_parse (o->epochs, &e, err, sizeof err); /* checked */
  x->epochs = explore_choose (&x->log, o->epochs ? &e : NULL, o->epochs,
                              o->sample, &x->nr_epochs, err, sizeof err);
  if (x->epochs == NULL) {
    fprintf (stderr, PROG ": %s\n", err);
    return 1;
  }
  x->seeds = o->seeds ? o->seeds : 1;
  x->first_seed = first_seed (x->run);
  printf ("crash-explore: log epochs=0-%" PRIu64 " workload-from=%" PRIu64
          " exploring=%zu epochs x %u seeds (%" PRIu64 "-%" PRIu64
          ") mode=%s\n",
          x->log.nr_epochs - 1, x->log.workload_epoch, x->nr_epochs, x->seeds,
          x->first_seed, x->first_seed + x->seeds - 1,
          lb_cut_mode_name (x->run->wc.mode));
  fflush (stdout);
  return 0;
}

static int
start_replay_server (struct explore *x, struct disk *d)
{
  char param[PATH_MAX + 16];
  char *params[] = { param, NULL };

  snprintf (param, sizeof param, "replay=%s", x->run->crash_log);
  return disk_start_server (x->run, d, params, 1);
}

/* Every chosen state.  0 when done, -1 if the run must end (a step
 * failed, said why; or a signal).
 */
static int
explore_states (struct explore *x, struct disk *d)
{
  for (size_t i = 0; i < x->nr_epochs; i++)
    for (unsigned k = 0; k < x->seeds; k++) {
      struct state s = { .epoch = x->epochs[i], .seed = x->first_seed + k };

      if (explore_state (x->run, d, &s) == -1)
        return -1;
      x->states++;
      if (state_failed (&s)) {
        x->failed++;
        if (!x->kept[0])
          keep_log_in_tmpdir (x->run, x->kept, sizeof x->kept);
      }
      print_state (x, &s);
    }
  return 0;
}

static void
print_summary (const struct explore *x, double seconds)
{
  printf ("crash-explore: states=%u failed=%u seconds=%.1f "
          "states/min=%.1f\n",
          x->states, x->failed, seconds,
          seconds > 0 ? x->states * 60.0 / seconds : 0.0);
  if (x->failed)
    printf ("crash-explore: the log is kept as %s\n",
            x->kept[0] ? x->kept : "(nothing: it could not be copied)");
  fflush (stdout);
}

static int
explore_phase_2 (struct explore *x, struct disk *d)
{
  double start;
  int r;

  if (plan (x, x->mark_bytes) != 0)
    return 1;
  start = now_seconds ();
  if (start_replay_server (x, d) == -1 || proc_caught_signal ())
    return proc_caught_signal () ? 128 + proc_caught_signal () : 1;
  r = explore_states (x, d);
  if (proc_caught_signal ())
    return 128 + proc_caught_signal ();
  print_summary (x, now_seconds () - start);
  if (r == -1)
    return 1;
  return x->failed ? EXPLORE_STATE_FAILED : 0;
}

int
crash_explore (struct run *run)
{
  struct explore x = { .run = run };
  struct disk *d = &run->disks[0];
  struct stat st;
  int workload, status;

  if (stat (run->crash_log, &st) == -1) {
    fprintf (stderr, PROG ": %s: %m\n", run->crash_log);
    return 1;
  }
  x.mark_bytes = st.st_size;
  workload = run_user_command (run, run->opt.command);
  if (proc_caught_signal ())
    return 128 + proc_caught_signal ();
  if (workload != 0) {
    fprintf (stderr,
             PROG ": the workload failed (status %d); no crash state "
                  "explored\n",
             workload);
    return EXPLORE_WORKLOAD;
  }
  if (stop_recording (run, d) == -1)
    return proc_caught_signal () ? 128 + proc_caught_signal () : 1;
  if (run->opt.keep_log) {
    if (keep_log_as (run, run->opt.keep_log) == -1)
      return 1;
    snprintf (x.kept, sizeof x.kept, "%s", run->opt.keep_log);
  }
  status = explore_phase_2 (&x, d);
  explore_log_free (&x.log);
  free (x.epochs);
  return status;
}
