/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run: --crash-test -- a power cut on a mounted filesystem,
 * then log recovery and a check on the same server's post-cut disk.
 *
 * After the ordinary set-up (server, attach, mkfs, mount) it runs the
 * workload, asks for power cut 1 through the server's power-cut FIFO
 * (which cuts unless the workload or power-cut-after= already did),
 * waits until the statsfile (read with lib/statsread) counts the cut,
 * unmounts the dead filesystem and detaches its device (keeping the
 * server), attaches the export again over a new connection (which sees
 * the post-cut image), mounts it (log recovery), runs --check's shell
 * command, unmounts, runs the filesystem's read-only checker, and
 * prints one summary line (and a warning when the cut found no
 * unflushed data, so tested nothing).  Each stage that
 * fails gives its own exit status (crash_test's comment).
 *
 * Owns the FIFO and statsfile it adds to the parameters (in the run's
 * private directory) and removes them at teardown, and the crash log
 * explore.c adds the same way (crash_own_params, crash_add_param); its
 * read-only filesystem check serves explore.c too.  Every resource
 * the re-attach makes is recorded by disk-steps.c and the attach back end as
 * at set-up, so a signal at any stage leaves nothing behind.
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
#include <unistd.h>

#include "kstate.h"
#include "proc.h"
#include "run.h"
#include "statsread.h"

/* How long the server may take to carry out a cut (one write per
 * cached block), and the line that asks for the crash test's cut: the
 * first, made once however many parties ask for it.
 */
#define CUT_TIMEOUT_MS 30000
#define CUT_LINE "cut 1\n"

/* Exit statuses of a crash test, besides 0, 1 (usage, set-up or
 * teardown failed) and 128+N (signal N).
 */
enum {
  CRASH_WORKLOAD = 10, /* the workload failed before the power was cut */
  CRASH_NO_CUT = 11,   /* the cut was not seen in the statsfile */
  CRASH_REATTACH = 12, /* the dead mount or device did not go, or the
                        * post-cut disk did not attach */
  CRASH_MOUNT = 13,    /* the post-cut filesystem did not mount */
  CRASH_CHECK = 14,    /* --check failed */
  CRASH_FSCK = 15,     /* the read-only filesystem check failed */
};

int
crash_check_options (struct run *run)
{
  const struct options *o = &run->opt;

  if (!o->crash_test) {
    if (o->check && !o->crash_explore) {
      fprintf (stderr,
               PROG ": --check needs --crash-test or --crash-explore\n");
      return -1;
    }
    return 0;
  }
  if (o->crash_explore) {
    fprintf (stderr,
             PROG ": --crash-test and --crash-explore exclude each "
                  "other: one cut a run, or every cut of one run\n");
    return -1;
  }
  if (!run->wc.is_volatile)
    fprintf (stderr,
             PROG ": --crash-test needs write-cache=volatile "
                  "(without it a power cut loses nothing)\n");
  else if (!o->mount_dir)
    fprintf (stderr,
             PROG ": --crash-test needs --mkfs and --mount "
                  "(it checks a filesystem's recovery)\n");
  else if (o->disks != 1)
    fprintf (stderr, PROG ": --crash-test: --disks=%u: must be 1\n", o->disks);
  else if (!o->command)
    fprintf (stderr,
             PROG ": --crash-test needs a WORKLOAD command "
                  "after --\n");
  else
    return 0;
  return -1;
}

int
crash_add_param (struct run *run, const char *key, const char *name,
                 char *path, size_t len)
{
  char *p;

  snprintf (path, len, "%s/%s", run->workdir, name);
  if (asprintf (&p, "%s=%s", key, path) == -1) {
    fprintf (stderr, PROG ": %m\n");
    return -1;
  }
  run->params_added[run->nr_params_added++] = p;
  run->opt.params[run->opt.nr_params++] = p;
  return 0;
}

int
crash_own_params (struct run *run)
{
  int n = run->opt.nr_params;
  char **params = calloc (n + 3, sizeof *params);

  if (params == NULL) {
    fprintf (stderr, PROG ": %m\n");
    return -1;
  }
  memcpy (params, run->opt.params, n * sizeof *params);
  run->opt.params = params;
  run->params_owned = params;
  return 0;
}

int
crash_add_params (struct run *run)
{
  if (crash_own_params (run) == -1)
    return -1;
  /* Recorded before the server that makes them starts. */
  if (!run->wc.fifo[0]) {
    run->cut_fifo_ours = true;
    if (crash_add_param (run, "power-cut-fifo", "disk0.cut", run->wc.fifo,
                         sizeof run->wc.fifo) == -1)
      return -1;
  }
  if (!run->wc.statsfile[0]) {
    run->statsfile_ours = true;
    if (crash_add_param (run, "statsfile", "disk0.stats", run->wc.statsfile,
                         sizeof run->wc.statsfile) == -1)
      return -1;
  }
  return 0;
}

void
crash_remove_files (struct run *run)
{
  char tmp[PATH_MAX + 8];

  if (run->cut_fifo_ours)
    unlink (run->wc.fifo);
  if (run->statsfile_ours) {
    unlink (run->wc.statsfile);
    snprintf (tmp, sizeof tmp, "%s.tmp", run->wc.statsfile);
    unlink (tmp);
  }
  if (run->crash_log[0])
    unlink (run->crash_log);
  for (int i = 0; i < run->nr_params_added; i++)
    free (run->params_added[i]);
  run->nr_params_added = 0;
  free (run->params_owned);
  run->params_owned = NULL;
}

/* The statsfile's write-cache counters, and why they could not be read
 * (for the message when the cut never shows).
 */
struct cut_watch {
  const struct run *run;
  struct lb_statsread_wcache st;
  char why[256];
};

static int
read_cut_stats (struct cut_watch *w)
{
  return lb_statsread_wcache_file (w->run->wc.statsfile, &w->st, w->why,
                                   sizeof w->why);
}

/* The statsfile counts a cut (the server rewrites it after each). */
static bool
power_was_cut (void *arg)
{
  struct cut_watch *w = arg;

  if (read_cut_stats (w) == -1)
    return false;
  if (w->st.cuts == 0)
    snprintf (w->why, sizeof w->why, "it counts no cut");
  return w->st.cuts >= 1;
}

/* Ask for cut 1 ("cut 1", lib/disk/cutfifo.h): the server cuts unless the
 * power has been cut already.
 */
static int
write_cut (const struct run *run)
{
  int fd;

  verbose (run, "asking for power cut 1 through %s", run->wc.fifo);
  fd = open (run->wc.fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd == -1 ||
      write (fd, CUT_LINE, strlen (CUT_LINE)) != (ssize_t) strlen (CUT_LINE)) {
    fprintf (stderr, PROG ": power-cut FIFO %s: %m\n", run->wc.fifo);
    if (fd >= 0)
      close (fd);
    return -1;
  }
  close (fd);
  return 0;
}

/* Make sure the power is cut, and wait until it is.  The workload (via
 * $LARGEBLOCK_CUT) and power-cut-after= may have cut it, or their
 * request may still be on its way; all of them, and this one, ask for
 * cut 1, which the server makes once whatever the order, so asking
 * again is always safe.  The server rewrites the statsfile after the
 * cut has resolved every cached block and failed every open
 * connection: once it counts the cut, the dead filesystem can go.
 * 0; -1 after a caught signal; CRASH_NO_CUT.
 */
static int
cut_power (struct run *run)
{
  struct cut_watch w = { .run = run };
  int r;

  if (write_cut (run) == -1)
    return CRASH_NO_CUT;
  r = proc_poll_until (power_was_cut, &w, CUT_TIMEOUT_MS, 10, true);
  if (r == -1)
    return -1;
  if (r == 0) {
    fprintf (stderr,
             PROG ": asked for power cut 1, but %s did not count "
                  "it within %d s: %s\n",
             run->wc.statsfile, CUT_TIMEOUT_MS / 1000, w.why);
    return CRASH_NO_CUT;
  }
  return 0;
}

/* How long the checker waits for a device still held after our unmount. */
#define FSCK_WAIT_MS 10000

/* The read-only checker of the filesystem --mkfs made, on dev.  Its
 * output (xfs_repair writes its progress to stderr) is shown only if
 * it fails, or with --verbose.  Shared with explore.c.
 */
int
crash_fsck_readonly (struct run *run, struct disk *d)
{
  /* -P and a small buffer hash: xfs_repair sizes its cache and starts
   * prefetch threads for the host's memory, which on a scratch disk's
   * small filesystem costs more than the whole check (about 200 ms of
   * the 300 ms a 1G 16k XFS takes; it matters to --crash-explore's
   * hundreds of states).  Neither changes what it checks. */
  const char *cmd = "xfs_repair -n -P -o bhash=128";
  char script[64], out[4096], how[64];
  char *argv[] = { "sh", "-c", script, "sh", d->dev, NULL };
  int status;

  /* Our unmount returns at once when another mount namespace (a test
   * beside us, a daemon made at the wrong moment) holds a copy of the
   * mount: the filesystem lives on there and writes its clean unmount
   * later, and a checker run before that finds a dirty log.  Under a
   * parallel make check this failed about one run in three.
   */
  if (kstate_wait_device_released (d->dev, FSCK_WAIT_MS) == -1) {
    fprintf (stderr,
             PROG ": %s is still held by a filesystem after %s was "
                  "unmounted (mounted in another mount namespace?); not "
                  "checking it\n",
             d->dev, d->mnt);
    return -1;
  }
  if (strcmp (run->opt.mkfs, "ext4") == 0)
    cmd = "e2fsck -f -n";
  else if (strcmp (run->opt.mkfs, "btrfs") == 0)
    cmd = "btrfs check --readonly";
  snprintf (script, sizeof script, "exec %s \"$1\" 2>&1", cmd);
  if (run->opt.verbose)
    return run_step (run, argv);
  status = run_step_capture (run, argv, out, sizeof out);
  if (proc_exited_zero (status))
    return 0;
  if (status != -1)
    fprintf (stderr, "%s" PROG ": %s %s: %s\n", out, cmd, d->dev,
             proc_status_text (status, how, sizeof how));
  return -1;
}

static const char *
stage_text (int status, int stage, int reached)
{
  if (reached < stage)
    return "skipped";
  return status == stage ? "failed" : "ok";
}

/* Run the check shell command with the disk's environment. */
static int
run_check (struct run *run)
{
  char *argv[] = { "sh", "-c", (char *) run->opt.check, "sh", NULL };

  return run_user_command (run, argv);
}

/* After the cut: detach, re-attach, mount, check, fsck.  Returns 0 or
 * the CRASH_* of the stage that failed, *reached the last stage begun.
 */
static int
after_cut (struct run *run, struct disk *d, int *reached)
{
  *reached = CRASH_REATTACH;
  if (disk_detach_keep_server (run, d) == -1 || disk_reattach (run, d) == -1)
    return CRASH_REATTACH;
  *reached = CRASH_MOUNT;
  if (disk_mount (run, d) == -1)
    return CRASH_MOUNT;
  disks_export_env (run);
  *reached = CRASH_CHECK;
  if (run->opt.check && run_check (run) != 0)
    return CRASH_CHECK;
  if (proc_caught_signal ())
    return 0;
  *reached = CRASH_FSCK;
  if (disk_unmount (run, d) == -1 || crash_fsck_readonly (run, d) == -1)
    return CRASH_FSCK;
  return 0;
}

/* A cut that found nothing unflushed in the write cache tested nothing:
 * the workload's writes were all flushed, or never left the page cache
 * (buffered writes that no fsync, sync_file_range or writeback pushed
 * out).  Say so in one line; the run itself is not failed.
 */
static void
warn_if_cache_was_empty (const struct cut_watch *w)
{
  if (w->st.blocks_kept + w->st.blocks_lost + w->st.blocks_torn != 0)
    return;
  fprintf (stderr,
           PROG
           ": warning: the power cut found the write cache empty "
           "(kept, lost and torn all 0), so it tested nothing: every "
           "write was flushed, or never left the page cache (see WORKLOAD "
           "in largeblock-run(1))\n");
}

/* Everything after set-up.  The exit status: 0 when the filesystem
 * mounted after the cut and both checks passed; else the CRASH_* of
 * the first stage that failed, 1 for an internal failure, 128+N for a
 * caught signal.  The summary line is printed once the cut happened.
 */
int
crash_test (struct run *run)
{
  struct disk *d = &run->disks[0];
  struct cut_watch w = { .run = run };
  int workload, status, reached = 0;
  bool known;

  setenv ("LARGEBLOCK_CUT", run->wc.fifo, 1);
  setenv ("LARGEBLOCK_STATS", run->wc.statsfile, 1);
  workload = run_user_command (run, run->opt.command);
  if (proc_caught_signal ())
    return 128 + proc_caught_signal ();
  if (workload != 0 && !power_was_cut (&w)) {
    fprintf (stderr,
             PROG ": the workload failed (status %d) before the power cut\n",
             workload);
    return CRASH_WORKLOAD;
  }
  status = cut_power (run);
  if (status != 0)
    return status == -1 ? 128 + proc_caught_signal () : status;
  status = after_cut (run, d, &reached);
  if (proc_caught_signal ())
    return 128 + proc_caught_signal ();

  known = read_cut_stats (&w) == 0;
  if (!known)
    fprintf (stderr, PROG ": %s\n", w.why);
  else
    warn_if_cache_was_empty (&w);
  printf ("crash-test: mode=%s seed=%" PRIu64 " cuts=%" PRIu64 " kept=%" PRIu64
          " lost=%" PRIu64 " torn=%" PRIu64
          " workload=%d reattach=%s mount=%s check=%s fsck=%s\n",
          known ? lb_cut_mode_name (w.st.mode) : "unknown", w.st.seed,
          w.st.cuts, w.st.blocks_kept, w.st.blocks_lost, w.st.blocks_torn,
          workload, stage_text (status, CRASH_REATTACH, reached),
          stage_text (status, CRASH_MOUNT, reached),
          run->opt.check ? stage_text (status, CRASH_CHECK, reached) : "none",
          stage_text (status, CRASH_FSCK, reached));
  fflush (stdout);
  return status;
}
