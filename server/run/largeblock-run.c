/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run: attach largeblock disks to the kernel, optionally make
 * a filesystem and mount it, run a command, and always tear down.
 *
 * This file reads the options and sequences the run: check everything
 * that can be checked before anything exists, set up each disk
 * (disk-steps.c, through the chosen attach back end: attach-loop.c,
 * attach-nbd.c), run the command (crash.c's --crash-test and
 * explore.c's --crash-explore run theirs) or wait for a signal, tear
 * down in reverse order.  Children are started, waited for and stopped only
 * through proc.h, whose signal rules make every moment safe to be
 * signalled: SIGINT, SIGTERM and SIGHUP stop the current set-up step
 * and lead to a full teardown, which no further signal interrupts; one
 * that comes during teardown still sets the exit status.
 * Only PIDs this program started are ever signalled, and only nbd
 * devices whose connection it made are disconnected.  What SIGKILL
 * leaves, --cleanup removes (journal.c).
 *
 * Single-threaded; the whole state is one struct run (run.h).
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cap-ng.h>

#include "cmdline.h"
#include "fstests.h"
#include "mkfscmd.h"
#include "plugin-choice.h"
#include "proc.h"
#include "run.h"

static void
usage (FILE *fp)
{
  fprintf (
    fp,
    "usage: " PROG
    " [--attach=auto|nbd|loop] [--disks=N] [--mkfs=xfs|ext4|btrfs]\n"
    "       [--fs-blksize=BYTES] [--mkfs-options=OPTS] [--mount[=DIR]]\n"
    "       [--plugin=PATH] [--verbose] [PARAM=VALUE ...] [-- COMMAND [ARG ...]]\n"
    "       " PROG " --crash-test --mkfs=FS --mount[=DIR] [--check=CMD] ...\n"
    "              write-cache=volatile [PARAM=VALUE ...] -- WORKLOAD [ARG ...]\n"
    "       " PROG " --crash-explore --mkfs=FS --mount[=DIR] [--check=CMD]\n"
    "              [--epochs=LIST|--sample=N] [--seeds=N] [--keep-log=PATH]"
    " ...\n"
    "              write-cache=volatile [PARAM=VALUE ...] -- WORKLOAD [ARG ...]\n"
    "       " PROG " --fstests --mkfs=FS [PARAM=VALUE ...] -- ./check ...\n"
    "       " PROG " --cleanup [--verbose]\n"
    "       " PROG " --help | --version\n");
}

/* CAP_SYS_ADMIN: loop setup, FUSE and filesystem mounts. */
static int
check_capabilities (void)
{
  capng_get_caps_process ();
  if (capng_have_capability (CAPNG_EFFECTIVE, CAP_SYS_ADMIN))
    return 0;
  fprintf (stderr,
           PROG
           ": missing capability CAP_SYS_ADMIN "
           "(needed to attach block devices and mount); nothing attached\n");
  return -1;
}

static int
resolve_attach_method (struct run *run)
{
  const char *how = run->opt.attach;
  const char *why_not;

  if (strcmp (how, "loop") == 0) {
    run->attach = &attach_loop_ops;
    return 0;
  }
  if (strcmp (how, "nbd") != 0 && strcmp (how, "auto") != 0) {
    fprintf (stderr, PROG ": --attach=%s: must be auto, nbd or loop\n", how);
    return -1;
  }
  why_not = attach_nbd_ops.unavailable_reason (run);
  if (why_not == NULL) {
    verbose (run, "--attach=%s: using the kernel nbd driver", how);
    run->attach = &attach_nbd_ops;
    return 0;
  }
  if (strcmp (how, "auto") == 0) {
    verbose (run, "--attach=auto: using loop: %s", why_not);
    run->attach = &attach_loop_ops;
    return 0;
  }
  fprintf (stderr, PROG ": --attach=nbd: %s; use --attach=loop\n", why_not);
  return -1;
}

/* The plugin to serve (plugin-choice.c): the one installed with this
 * program unless --plugin or LARGEBLOCK_PLUGIN says otherwise.
 */
static void
choose_plugin (struct run *run)
{
  char from[64];

  run->opt.plugin = plugin_choose (run->opt.plugin, PROG, from, sizeof from);
  if (!run->opt.cleanup)
    verbose (run, "plugin %s (%s)", run->opt.plugin, from);
}

/* The private directory, by its canonical path: the mount table and
 * loop devices name files in it that way.  Its locked journal is made
 * before anything else, so that --cleanup never takes a starting run
 * for a dead one (journal.c).
 */
static int
make_workdir (struct run *run)
{
  const char *tmp = getenv ("TMPDIR");
  char templ[PATH_MAX], *real;

  if (!tmp || !*tmp || strlen (tmp) > sizeof run->workdir / 2)
    tmp = "/tmp";
  snprintf (templ, sizeof templ, "%s/largeblock-run.XXXXXX", tmp);
  if (mkdtemp (templ) == NULL) {
    fprintf (stderr, PROG ": mkdtemp %s: %m\n", templ);
    return -1;
  }
  real = realpath (templ, NULL);
  if (real == NULL || strlen (real) >= sizeof run->workdir) {
    fprintf (stderr, PROG ": %s: %m\n", templ);
    free (real);
    rmdir (templ);
    return -1;
  }
  snprintf (run->workdir, sizeof run->workdir, "%s", real);
  free (real);
  return journal_start (run);
}

static int
remove_workdir (struct run *run)
{
  char journal[PATH_MAX];

  if (!run->workdir[0])
    return 0;
  /* Its lock is held until we exit: a --cleanup that takes it then
   * finds it unlinked, and leaves the directory to us. */
  snprintf (journal, sizeof journal, "%s/journal", run->workdir);
  unlink (journal);
  if (rmdir (run->workdir) == 0)
    return 0;
  fprintf (stderr, PROG ": cannot remove %s: %m\n", run->workdir);
  return -1;
}

static int
parse_options (struct run *run, int argc, char **argv)
{
  enum {
    O_ATTACH = 256,
    O_CHECK,
    O_CLEANUP,
    O_CRASH_EXPLORE,
    O_CRASH_TEST,
    O_DISKS,
    O_EPOCHS,
    O_FSTESTS,
    O_KEEP_LOG,
    O_MKFS,
    O_MKFS_OPTIONS,
    O_MOUNT,
    O_FS_BLKSIZE,
    O_PLUGIN,
    O_SAMPLE,
    O_SEEDS,
    O_VERSION
  };
  static const struct option longopts[] = {
    { "attach", required_argument, NULL, O_ATTACH },
    { "check", required_argument, NULL, O_CHECK },
    { "cleanup", no_argument, NULL, O_CLEANUP },
    { "crash-explore", no_argument, NULL, O_CRASH_EXPLORE },
    { "crash-test", no_argument, NULL, O_CRASH_TEST },
    { "disks", required_argument, NULL, O_DISKS },
    { "epochs", required_argument, NULL, O_EPOCHS },
    { "fs-blksize", required_argument, NULL, O_FS_BLKSIZE },
    { "fstests", no_argument, NULL, O_FSTESTS },
    { "help", no_argument, NULL, 'h' },
    { "keep-log", required_argument, NULL, O_KEEP_LOG },
    { "mkfs", required_argument, NULL, O_MKFS },
    { "mkfs-options", required_argument, NULL, O_MKFS_OPTIONS },
    { "mount", optional_argument, NULL, O_MOUNT },
    { "plugin", required_argument, NULL, O_PLUGIN },
    { "sample", required_argument, NULL, O_SAMPLE },
    { "seeds", required_argument, NULL, O_SEEDS },
    { "verbose", no_argument, NULL, 'v' },
    { "version", no_argument, NULL, O_VERSION },
    { NULL, 0, NULL, 0 }
  };
  int c, cmd;
  char *end, err[128];

  if (proc_read_stop_timeout (err, sizeof err) == -1) {
    fprintf (stderr, PROG ": %s\n", err);
    return -1;
  }
  while ((c = getopt_long (argc, argv, "+hv", longopts, NULL)) != -1) {
    switch (c) {
    case O_ATTACH: run->opt.attach = optarg; break;
    case O_CHECK: run->opt.check = optarg; break;
    case O_CLEANUP: run->opt.cleanup = true; break;
    case O_CRASH_EXPLORE: run->opt.crash_explore = true; break;
    case O_CRASH_TEST: run->opt.crash_test = true; break;
    case O_EPOCHS: run->opt.epochs = optarg; break;
    case O_KEEP_LOG: run->opt.keep_log = optarg; break;
    case O_FSTESTS: run->opt.fstests = true; break;
    case O_MKFS: run->opt.mkfs = optarg; break;
    case O_MKFS_OPTIONS: run->opt.mkfs_options = optarg; break;
    case O_MOUNT: run->opt.mount_dir = optarg ? optarg : ""; break;
    case O_PLUGIN: run->opt.plugin = optarg; break;
    case 'v': run->opt.verbose = true; break;
    case 'h': usage (stdout); exit (EXIT_SUCCESS);
    case O_VERSION:
      printf (PROG " " PACKAGE_VERSION "\n");
      exit (EXIT_SUCCESS);
    case O_DISKS:
      run->opt.disks_set = true;
      if (cmdline_count (PROG, "disks", optarg, MAX_DISKS, &run->opt.disks) ==
          -1)
        return -1;
      break;
    case O_SAMPLE:
      if (cmdline_count (PROG, "sample", optarg, EXPLORE_MAX_COUNT,
                         &run->opt.sample) == -1)
        return -1;
      break;
    case O_SEEDS:
      if (cmdline_count (PROG, "seeds", optarg, EXPLORE_MAX_COUNT,
                         &run->opt.seeds) == -1)
        return -1;
      break;
    case O_FS_BLKSIZE:
      run->opt.fs_blksize = strtoul (optarg, &end, 0);
      if (*end || run->opt.fs_blksize < 512 ||
          (run->opt.fs_blksize & (run->opt.fs_blksize - 1))) {
        fprintf (stderr,
                 PROG ": --fs-blksize=%s: must be a power of 2 "
                      "of at least 512\n",
                 optarg);
        return -1;
      }
      break;
    default: usage (stderr); return -1;
    }
  }
  cmd = cmdline_split (argc, argv, optind, &run->opt.params,
                       &run->opt.nr_params);
  if (cmd < argc)
    run->opt.command = &argv[cmd];
  if (run->opt.mkfs && !lb_mkfs_known (run->opt.mkfs)) {
    fprintf (stderr,
             PROG ": --mkfs=%s: unknown filesystem; must be xfs, "
                  "ext4 or btrfs\n",
             run->opt.mkfs);
    return -1;
  }
  if (run->opt.mount_dir && !run->opt.mkfs) {
    /* Mounting an unformatted disk cannot work; say so now. */
    fprintf (stderr, PROG ": --mount needs --mkfs\n");
    return -1;
  }
  choose_plugin (run);
  run->opt.nbdkit = cmdline_nbdkit ();
  return 0;
}

/* A filesystem the geometry cannot have is refused before anything
 * starts, in one line rather than mkfs's usage text.
 */
static int
check_mkfs_geometry (const struct run *run)
{
  char err[256];

  if (!run->opt.mkfs ||
      lb_mkfs_check_geometry (run->opt.mkfs, run->geom.logical_bytes,
                              run->geom.physical_bytes, run->opt.fs_blksize,
                              err, sizeof err) == 0)
    return 0;
  fprintf (stderr, PROG ": %s\n", err);
  return -1;
}

/* ---- command ---- */

/* Without COMMAND: one line a disk on stdout, "DEV MNT" as scripts
 * read it (the mount point, which may hold spaces, is the rest of the
 * line); the same labelled for people on stderr, and what ends the run.
 */
static void
print_summary (const struct run *run)
{
  for (unsigned i = 0; i < run->nr_disks; i++) {
    const struct disk *d = &run->disks[i];
    bool mounted = disk_is_mounted (d);

    printf ("%s%s%s\n", d->dev, mounted ? " " : "", mounted ? d->mnt : "");
    fprintf (stderr, PROG ": disk %u: device %s%s%s\n", i, d->dev,
             mounted ? ", mounted on " : "", mounted ? d->mnt : "");
  }
  fflush (stdout);
  fprintf (stderr, PROG ": ready; press Ctrl-C to tear down\n");
}

/* The Ctrl-C the summary asks for is how the run ends normally: 0.
 * SIGTERM and SIGHUP keep 128 + N.
 */
static int
wait_for_ctrl_c (const struct run *run)
{
  print_summary (run);
  proc_wait_for_signal ();
  if (proc_caught_signal () != SIGINT)
    return 1;
  proc_forget_signal ();
  return 0;
}

static int
set_up (struct run *run)
{
  if (make_workdir (run) == -1)
    return -1;
  if (run->opt.crash_test && crash_add_params (run) == -1)
    return -1;
  if (run->opt.crash_explore && explore_add_params (run) == -1)
    return -1;
  for (unsigned i = 0; i < run->opt.disks; i++) {
    struct disk *d = &run->disks[i];

    d->idx = (int) i;
    run->nr_disks = i + 1;
    if (set_up_disk (run, d) == -1)
      return -1;
  }
  return 0;
}

static int
teardown (struct run *run)
{
  int r = 0;

  for (int i = (int) run->nr_disks - 1; i >= 0; i--)
    if (teardown_disk (run, &run->disks[i]) == -1)
      r = -1;
  if (run->mount_dir_is_ours && rmdir (run->opt.mount_dir) == 0)
    run->mount_dir_is_ours = false;
  crash_remove_files (run);
  fstests_remove_config (run);
  if (r == 0 && remove_workdir (run) == -1)
    r = -1;
  return r;
}

/* What the run exits with: 128 + the first signal caught, whenever it
 * came -- a signal during teardown does not interrupt it, but still
 * counts -- else the command's status, or 1 if teardown failed.
 */
static int
exit_status (int status, int signal_before_teardown, int teardown_result)
{
  int sig = proc_caught_signal ();

  if (sig && !signal_before_teardown)
    fprintf (stderr, PROG ": caught signal %d during teardown\n", sig);
  if (sig)
    return 128 + sig;
  if (teardown_result == -1 && status == 0)
    return 1;
  return status;
}

int
main (int argc, char **argv)
{
  static struct run run = { .opt = { .attach = "auto", .disks = 1 } };
  int status = 1, sig_before_teardown, teardown_result;

  /* Before anything can start a child: from here on, signals arrive
   * only where proc.h waits. */
  proc_init ();
  if (parse_options (&run, argc, argv) == -1)
    return 1;
  if (run.opt.cleanup)
    return check_capabilities () == -1 ? 1 : cleanup_dead_runs (&run);
  if (serve_check_params (run.opt.params, run.opt.nr_params, &run.geom,
                          &run.wc) == -1 ||
      check_mkfs_geometry (&run) == -1 || crash_check_options (&run) == -1 ||
      explore_check_options (&run) == -1 || fstests_check_options (&run) == -1)
    return 1;
  if (resolve_attach_method (&run) == -1 || check_capabilities () == -1)
    return 1;

  if (set_up (&run) == 0 && !proc_caught_signal () &&
      fstests_prepare (&run) == 0) {
    disks_export_env (&run);
    if (run.opt.crash_test)
      status = crash_test (&run);
    else if (run.opt.crash_explore)
      status = crash_explore (&run);
    else if (run.opt.command)
      status = run_user_command (&run, run.opt.command);
    else
      status = wait_for_ctrl_c (&run);
  }
  sig_before_teardown = proc_caught_signal ();
  if (sig_before_teardown && status == 1)
    fprintf (stderr, PROG ": caught signal %d, tearing down\n",
             sig_before_teardown);
  teardown_result = teardown (&run);
  return exit_status (status, sig_before_teardown, teardown_result);
}
