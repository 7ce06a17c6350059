/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run: one disk's set-up and teardown -- its server, the
 * attach back end, the filesystem and the mount.
 *
 * Owns the order of the steps.  Each step marks in the disk what it may
 * create before it starts (a pid the moment the child exists, "mount
 * started" before mount runs); teardown_disk asks the kernel what of
 * that exists and undoes it in reverse order -- except a device someone
 * else still uses (mounted elsewhere by COMMAND, say): that stays
 * attached, its server is never killed under it, and --cleanup finishes
 * later.  Set-up steps stop at a caught signal; teardown does not, and
 * runs to the end.  It also names the disks to COMMAND: the environment
 * variables (LARGEBLOCK_DEV ...) that say what each disk is now.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kstate.h"
#include "mkfscmd.h"
#include "proc.h"
#include "run.h"

int
start_noted_daemon (struct run *run, const char *what, char *const argv[],
                    const char *pidfile, bool drop_caps, pid_t *pid)
{
  if (daemon_spawn (run->opt.verbose, argv, drop_caps, pid) == -1)
    return -1;
  journal_note_proc (run, *pid);
  if (daemon_wait_ready (what, pidfile, pid) == -1)
    return -1;
  journal_note_proc (run, *pid); /* if a wrapper exec'd it meanwhile */
  return 0;
}

int
disk_start_server (struct run *run, struct disk *d, char *const *params,
                   int nr_params)
{
  char *argv[8 + 64];

  snprintf (d->sock, sizeof d->sock, "%s/disk%d.sock", run->workdir, d->idx);
  snprintf (d->server_pidfile, sizeof d->server_pidfile, "%s/disk%d.pid",
            run->workdir, d->idx);
  /* A second server on this disk (explore.c's) must not take the first
   * one's pid file for its own. */
  unlink (d->server_pidfile);
  if (serve_nbdkit_argv (argv, 8 + 64, run->opt.nbdkit, d->sock,
                         d->server_pidfile, run->opt.plugin, params,
                         nr_params) == -1) {
    fprintf (stderr, PROG ": too many PARAM=VALUE arguments\n");
    return -1;
  }
  verbose (run, "starting %s on %s", run->opt.nbdkit, d->sock);
  return start_noted_daemon (run, "nbdkit", argv, d->server_pidfile, true,
                             &d->server_pid);
}

static int
make_filesystem (struct run *run, struct disk *d)
{
  struct lb_mkfs_cmd cmd;
  char err[256];
  int r;

  if (lb_mkfs_cmd_build (&cmd, run->opt.mkfs, run->geom.logical_bytes,
                         run->geom.physical_bytes, run->opt.fs_blksize,
                         run->opt.mkfs_options, d->dev, err,
                         sizeof err) == -1) {
    fprintf (stderr, PROG ": %s\n", err);
    return -1;
  }
  r = run_step (run, cmd.argv);
  lb_mkfs_cmd_free (&cmd);
  return r;
}

static void
choose_mount_point (struct run *run, struct disk *d)
{
  const char *dir = run->opt.mount_dir;

  if (dir[0] && run->opt.disks == 1)
    snprintf (d->mnt, sizeof d->mnt, "%s", dir);
  else if (dir[0])
    snprintf (d->mnt, sizeof d->mnt, "%s/%d", dir, d->idx);
  else
    snprintf (d->mnt, sizeof d->mnt, "%s/mnt%d", run->workdir, d->idx);
}

/* Create dir unless it exists, noting it for teardown and --cleanup
 * in *ours.  0, or -1 after saying why.
 */
static int
make_mount_dir (struct run *run, const char *dir, bool *ours)
{
  if (mkdir (dir, 0755) == 0) {
    *ours = true;
    journal_note_mkdir (run, dir);
    return 0;
  }
  if (errno == EEXIST)
    return 0;
  fprintf (stderr, PROG ": mkdir %s: %m\n", dir);
  return -1;
}

static int
mount_filesystem (struct run *run, struct disk *d)
{
  char *argv[] = { "mount", d->dev, d->mnt, NULL };

  choose_mount_point (run, d);
  /* With several disks DIR holds their mount points: created if
   * missing, as DIR itself is with one disk. */
  if (run->opt.mount_dir[0] && run->opt.disks > 1 &&
      make_mount_dir (run, run->opt.mount_dir, &run->mount_dir_is_ours) == -1)
    return -1;
  if (make_mount_dir (run, d->mnt, &d->mnt_is_ours) == -1)
    return -1;
  /* The mount table names the directory by its canonical path. */
  if (realpath (d->mnt, d->mnt_real) == NULL) {
    fprintf (stderr, PROG ": %s: %m\n", d->mnt);
    return -1;
  }
  journal_note (run, "mount %s %s", d->mnt_real, d->dev);
  d->mount_started = true;
  return run_step (run, argv);
}

int
set_up_disk (struct run *run, struct disk *d)
{
  if (disk_start_server (run, d, run->opt.params, run->opt.nr_params) == -1 ||
      proc_caught_signal ())
    return -1;
  if (run->attach->attach (run, d) == -1 || proc_caught_signal ())
    return -1;
  if (run->opt.mkfs &&
      (make_filesystem (run, d) == -1 || proc_caught_signal ()))
    return -1;
  if (run->opt.mount_dir &&
      (mount_filesystem (run, d) == -1 || proc_caught_signal ()))
    return -1;
  return 0;
}

bool
disk_is_mounted (const struct disk *d)
{
  return d->mount_started && d->dev[0] &&
    kstate_is_mounted_from (d->mnt_real, d->dev);
}

/* Unmount, retrying while busy; reports if it stays mounted.  (mnt_real
 * is the mount table's name for it: no symbolic link to follow.)
 */
static int
unmount_filesystem (struct run *run, struct disk *d)
{
  verbose (run, "unmounting %s", d->mnt);
  kstate_unmount_retrying (d->mnt_real, NULL, NULL);
  if (!disk_is_mounted (d))
    return 0;
  fprintf (stderr,
           PROG ": cannot unmount %s: %m; it is still mounted, so %s stays "
                "attached and its nbdkit running: run '" PROG " --cleanup' "
                "once nothing uses it\n",
           d->mnt, d->dev);
  return -1;
}

int
disk_unmount (struct run *run, struct disk *d)
{
  if (disk_is_mounted (d) && unmount_filesystem (run, d) == -1)
    return -1;
  d->mount_started = false;
  return 0;
}

int
disk_detach_keep_server (struct run *run, struct disk *d)
{
  if (disk_unmount (run, d) == -1)
    return -1;
  return run->attach->detach (run, d);
}

int
disk_reattach (struct run *run, struct disk *d)
{
  if (run->attach->attach (run, d) == -1 || proc_caught_signal ())
    return -1;
  return 0;
}

int
disk_mount (struct run *run, struct disk *d)
{
  if (mount_filesystem (run, d) == -1 || proc_caught_signal ())
    return -1;
  return 0;
}

/* What to tell the user to do about what (kstate_device_user's). */
static void
how_to_free (const char *what, char *how, size_t len)
{
  if (strncmp (what, "mounted on ", 11) == 0)
    snprintf (how, len, "umount %s", what + 11);
  else if (strncmp (what, "held by ", 8) == 0)
    snprintf (how, len, "remove %s", what + 8);
  else
    snprintf (how, len, "end what has it open");
}

/* The device in use by someone else -- the user's COMMAND mounted it
 * elsewhere, say?  Then detaching it cannot finish, and killing its
 * server under a mounted filesystem must not happen: both stay, said in
 * one line with what to do, and --cleanup (the journal stays) finishes
 * later.
 */
static bool
device_held_elsewhere (const struct disk *d)
{
  char what[PATH_MAX + 64], how[PATH_MAX + 64], server[64] = "";

  if (!d->dev[0] || !kstate_device_user (d->dev, what, sizeof what))
    return false;
  if (d->server_pid > 0)
    snprintf (server, sizeof server, " (pid %d)", (int) d->server_pid);
  how_to_free (what, how, sizeof how);
  fprintf (stderr,
           PROG ": %s is still %s (not by " PROG "); left attached, and its "
                "nbdkit%s not killed: %s, then run '" PROG " --cleanup'\n",
           d->dev, what, server, how);
  return true;
}

/* Stops the server only once nothing of the attachment is left in use:
 * never under a mounted filesystem.
 */
int
teardown_disk (struct run *run, struct disk *d)
{
  int r = 0;

  if (disk_is_mounted (d) && unmount_filesystem (run, d) == -1)
    r = -1;
  else
    d->mount_started = false;
  if (d->mnt_is_ours && !d->mount_started && rmdir (d->mnt) == 0)
    d->mnt_is_ours = false;
  if (r == -1 || device_held_elsewhere (d))
    return -1;
  if (run->attach->detach (run, d) == -1)
    r = -1;
  if (d->server_pid > 0)
    verbose (run, "stopping nbdkit (pid %d)", (int) d->server_pid);
  proc_stop ("nbdkit", &d->server_pid);
  if (d->server_pidfile[0])
    unlink (d->server_pidfile);
  if (d->fuse_pidfile[0])
    unlink (d->fuse_pidfile);
  if (d->sock[0])
    unlink (d->sock);
  return r;
}

/* LARGEBLOCK_DEV, _SOCKET, _URI and (if mounted) _MNT of one disk, with
 * the disk's number after the name from the second disk on.
 */
static void
export_disk_env (const struct disk *d)
{
  char name[64], value[PATH_MAX + 32];
  char suffix[16] = "";

  if (d->idx > 0)
    snprintf (suffix, sizeof suffix, "%d", d->idx);
#define EXPORT(base, fmt, ...) \
  do { \
    snprintf (name, sizeof name, "%s%s", base, suffix); \
    snprintf (value, sizeof value, fmt, __VA_ARGS__); \
    setenv (name, value, 1); \
  } while (0)
  EXPORT ("LARGEBLOCK_DEV", "%s", d->dev);
  EXPORT ("LARGEBLOCK_SOCKET", "%s", d->sock);
  EXPORT ("LARGEBLOCK_URI", "nbd+unix:///?socket=%s", d->sock);
  if (disk_is_mounted (d))
    EXPORT ("LARGEBLOCK_MNT", "%s", d->mnt);
#undef EXPORT
}

void
disks_export_env (const struct run *run)
{
  char value[32];

  for (unsigned i = 0; i < run->nr_disks; i++)
    export_disk_env (&run->disks[i]);
  snprintf (value, sizeof value, "%u", run->geom.logical_bytes);
  setenv ("LARGEBLOCK_LOGICAL_BLKSIZE", value, 1);
  snprintf (value, sizeof value, "%u", run->geom.physical_bytes);
  setenv ("LARGEBLOCK_PHYSICAL_BLKSIZE", value, 1);
}
