/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run --fstests: the run as an fstests fixture.
 *
 * Owns the option's rules, MKFS_OPTIONS and the variables fstests reads
 * (see fstests.h).  fstests reads them from its config file, named by
 * HOST_OPTIONS, and from the environment where that file is silent;
 * both get the same values here.  Single thread; no locking.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fstests.h"
#include "mkfscmd.h"

#define CONFIG_NAME "fstests.config"
#define TEST_DISK 0
#define SCRATCH_DISK 1

int
fstests_check_options (struct run *run)
{
  if (!run->opt.fstests)
    return 0;
  if (!run->opt.mkfs) {
    fprintf (stderr,
             PROG ": --fstests needs --mkfs=xfs|ext4|btrfs: it is "
                  "fstests' FSTYP and TEST_DEV's filesystem\n");
    return -1;
  }
  if (run->opt.disks_set && run->opt.disks != 2) {
    fprintf (stderr,
             PROG ": --disks=%u: --fstests uses exactly 2 disks "
                  "(TEST_DEV and SCRATCH_DEV)\n",
             run->opt.disks);
    return -1;
  }
  if (run->opt.crash_test) {
    fprintf (stderr, PROG ": --fstests and --crash-test cannot be combined\n");
    return -1;
  }
  if (!run->opt.command) {
    fprintf (stderr,
             PROG ": --fstests needs a COMMAND after \"--\", "
                  "e.g. -- ./check -g quick\n");
    return -1;
  }
  run->opt.disks = 2;
  if (!run->opt.mount_dir)
    run->opt.mount_dir = "";
  return 0;
}

/* The geometry arguments of the run's own mkfs command, without the
 * program, the device, and the -f/-F/-q that fstests' mkfs helpers add
 * themselves (they read mkfs's output, which -q would silence). */
static int
mkfs_options (const struct run *run, char *out, size_t outlen)
{
  struct lb_mkfs_cmd cmd;
  char err[256];
  size_t len = 0;

  if (lb_mkfs_cmd_build (&cmd, run->opt.mkfs, run->geom.logical_bytes,
                         run->geom.physical_bytes, run->opt.fs_blksize,
                         run->opt.mkfs_options, "", err, sizeof err) == -1) {
    fprintf (stderr, PROG ": %s\n", err);
    return -1;
  }
  out[0] = '\0';
  for (int i = 1; cmd.argv[i] && cmd.argv[i + 1]; i++) {
    const char *a = cmd.argv[i];

    if (strcmp (a, "-f") == 0 || strcmp (a, "-F") == 0 ||
        strcmp (a, "-q") == 0)
      continue;
    len += snprintf (out + len, len < outlen ? outlen - len : 0, "%s%s",
                     len ? " " : "", a);
  }
  lb_mkfs_cmd_free (&cmd);
  if (len >= outlen) {
    fprintf (stderr,
             PROG ": --fstests: MKFS_OPTIONS is longer than %zu "
                  "bytes\n",
             outlen - 1);
    return -1;
  }
  return 0;
}

/* One variable: into the environment, and a line of the config file
 * with the value in single quotes (fstests sources it with bash). */
static int
set_var (FILE *fp, const char *name, const char *value)
{
  if (strchr (value, '\'')) {
    fprintf (stderr,
             PROG ": --fstests: %s=%s holds a single quote, "
                  "which the fstests config file cannot carry\n",
             name, value);
    return -1;
  }
  fprintf (fp, "export %s='%s'\n", name, value);
  return setenv (name, value, 1);
}

static void
config_path (const struct run *run, char *path, size_t len)
{
  snprintf (path, len, "%s/" CONFIG_NAME, run->workdir);
}

static int
write_config (const struct run *run, const char *path, const char *mkfs_opts)
{
  const struct disk *test = &run->disks[TEST_DISK];
  const struct disk *scratch = &run->disks[SCRATCH_DISK];
  FILE *fp = fopen (path, "wx");
  int r;

  if (fp == NULL) {
    fprintf (stderr, PROG ": --fstests: %s: %m\n", path);
    return -1;
  }
  fprintf (fp, "# Written by largeblock-run --fstests for this run only.\n");
  r = set_var (fp, "FSTYP", run->opt.mkfs) |
    set_var (fp, "TEST_DEV", test->dev) | set_var (fp, "TEST_DIR", test->mnt) |
    set_var (fp, "SCRATCH_DEV", scratch->dev) |
    set_var (fp, "SCRATCH_MNT", scratch->mnt) |
    set_var (fp, "MKFS_OPTIONS", mkfs_opts);
  if (ferror (fp) | fclose (fp)) {
    fprintf (stderr, PROG ": --fstests: writing %s: %m\n", path);
    return -1;
  }
  return r == 0 ? 0 : -1;
}

int
fstests_prepare (struct run *run)
{
  struct disk *scratch = &run->disks[SCRATCH_DISK];
  char path[PATH_MAX], opts[512];

  if (!run->opt.fstests)
    return 0;
  if (mkfs_options (run, opts, sizeof opts) == -1)
    return -1;
  /* fstests expects SCRATCH_DEV unmounted and makes its own filesystems
   * on it.  It may mount it on SCRATCH_MNT again and leave it so: keep
   * the disk counted as mounted by us, so teardown looks and unmounts. */
  if (disk_unmount (run, scratch) == -1)
    return -1;
  scratch->mount_started = true;
  config_path (run, path, sizeof path);
  if (write_config (run, path, opts) == -1)
    return -1;
  return setenv ("HOST_OPTIONS", path, 1);
}

void
fstests_remove_config (struct run *run)
{
  char path[PATH_MAX];

  if (!run->opt.fstests || !run->workdir[0])
    return;
  config_path (run, path, sizeof path);
  if (unlink (path) == -1 && errno != ENOENT)
    fprintf (stderr, PROG ": cannot remove %s: %m\n", path);
}
