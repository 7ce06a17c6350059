/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run: the loop back end -- the export as a file through
 * nbdfuse, attached with losetup --sector-size --direct-io=on.
 *
 * Owns each disk's FUSE directory, nbdfuse and loop device.  attach
 * marks each of them in the disk before the step that creates it;
 * detach then looks in the kernel (loop backing files, the mount table)
 * for what really exists, so an attach interrupted at any point is
 * undone completely.  Direct I/O because through the page cache FUSE
 * read-ahead sends reads the server refuses as misaligned.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kstate.h"
#include "proc.h"
#include "run.h"

/* nbdfuse's last arguments: the server's socket, or with an export
 * name (explore.c's crash states) an NBD URI naming both.
 */
static void
nbdfuse_server_args (const struct disk *d, char *uri, size_t len, char **argv)
{
  if (!d->export_name[0]) {
    argv[0] = "--unix";
    argv[1] = (char *) d->sock;
    return;
  }
  snprintf (uri, len, "nbd+unix:///%s?socket=%s", d->export_name, d->sock);
  argv[0] = uri;
  argv[1] = NULL;
}

static int
start_nbdfuse (struct run *run, struct disk *d)
{
  char uri[PATH_MAX + 128];
  char *argv[] = { "nbdfuse", "-P", d->fuse_pidfile, d->fuse_file, NULL,
                   NULL,      NULL };

  snprintf (d->fuse_dir, sizeof d->fuse_dir, "%s/fuse%d", run->workdir,
            d->idx);
  snprintf (d->fuse_pidfile, sizeof d->fuse_pidfile, "%s/fuse%d.pid",
            run->workdir, d->idx);
  snprintf (d->fuse_file, sizeof d->fuse_file, "%s/fuse%d/disk", run->workdir,
            d->idx);
  if (mkdir (d->fuse_dir, 0700) == -1) {
    fprintf (stderr, PROG ": mkdir %s: %m\n", d->fuse_dir);
    return -1;
  }
  nbdfuse_server_args (d, uri, sizeof uri, &argv[4]);
  verbose (run, "exposing the export %s as %s", d->export_name, d->fuse_file);
  /* A re-attach (crash.c) must not take the last nbdfuse's pid file
   * for the new one's. */
  unlink (d->fuse_pidfile);
  d->fuse_started = true;
  return start_noted_daemon (run, "nbdfuse", argv, d->fuse_pidfile, false,
                             &d->fuse_pid);
}

static int
attach_loop (struct run *run, struct disk *d)
{
  char sector[32], out[256];
  char *argv[] = { "losetup", "--find",         "--show",     "--sector-size",
                   sector,    "--direct-io=on", d->fuse_file, NULL };
  int status;

  if (start_nbdfuse (run, d) == -1 || proc_caught_signal ())
    return -1;
  snprintf (sector, sizeof sector, "%u", run->geom.logical_bytes);
  verbose (run, "attaching %s with %s-byte sectors", d->fuse_file, sector);
  d->loop_started = true;
  status = run_step_capture (run, argv, out, sizeof out);
  if (!proc_exited_zero (status)) {
    if (!proc_caught_signal ())
      fprintf (stderr, PROG ": %s failed\n", argv[0]);
    return -1;
  }
  out[strcspn (out, "\n")] = '\0';
  if (strncmp (out, "/dev/loop", 9) != 0) {
    fprintf (stderr, PROG ": losetup printed no device\n");
    return -1;
  }
  if (strlen (out) >= sizeof d->dev) {
    fprintf (stderr, PROG ": losetup printed an overlong device name\n");
    return -1;
  }
  memcpy (d->dev, out, strlen (out) + 1);
  return check_logical_blksize (run, d->dev);
}

static int
detach_one_loop (const char *dev, void *arg)
{
  struct run *run = arg;
  char *argv[] = { "losetup", "-d", (char *) dev, NULL };

  verbose (run, "detaching %s", dev);
  return run_teardown_step (run, argv) == -1 ? 1 : 0;
}

/* fusermount3 -u exits 1 with no errno to read: a failure while dir is
 * still mounted counts as busy, and is tried again.
 */
static int
fusermount_once (const char *dir, void *arg)
{
  char *argv[] = { "fusermount3", "-u", (char *) dir, NULL };

  if (run_teardown_step (arg, argv) == 0 || !kstate_is_mount_point (dir))
    return 0;
  errno = EBUSY;
  return -1;
}

static int
unmount_fuse (struct run *run, struct disk *d)
{
  if (!kstate_is_mount_point (d->fuse_dir))
    return 0;
  verbose (run, "unmounting FUSE %s", d->fuse_dir);
  if (kstate_unmount_retrying (d->fuse_dir, fusermount_once, run) == 0)
    return 0;
  fprintf (stderr, PROG ": FUSE mount %s is still mounted\n", d->fuse_dir);
  return -1;
}

static bool
nbdfuse_exited (void *arg)
{
  struct disk *d = arg;

  return proc_reaped (&d->fuse_pid);
}

static int
detach_loop (struct run *run, struct disk *d)
{
  bool was_mounted;
  int r = 0;

  /* Every loop device on our file, whatever losetup managed to say. */
  if (d->loop_started &&
      kstate_for_each_loop (d->fuse_file, false, detach_one_loop, run))
    r = -1;
  else
    d->dev[0] = '\0';
  if (!d->fuse_started || r == -1)
    return r;
  was_mounted = kstate_is_mount_point (d->fuse_dir);
  if (unmount_fuse (run, d) == -1)
    return -1;
  /* After fusermount3 -u nbdfuse exits by itself; one that never
   * mounted (stopped while starting) is told to. */
  if (was_mounted)
    proc_poll_until (nbdfuse_exited, d, proc_grace_ms (), 10, false);
  if (d->fuse_pid > 0)
    verbose (run, "stopping nbdfuse (pid %d)", (int) d->fuse_pid);
  proc_stop ("nbdfuse", &d->fuse_pid);
  /* It may have mounted while it was being stopped. */
  if (unmount_fuse (run, d) == -1)
    return -1;
  rmdir (d->fuse_dir);
  return 0;
}

static const char *
loop_unavailable_reason (struct run *run)
{
  return NULL;
}

const struct attach_ops attach_loop_ops = {
  .name = "loop",
  .unavailable_reason = loop_unavailable_reason,
  .attach = attach_loop,
  .detach = detach_loop,
};
