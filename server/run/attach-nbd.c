/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run: the nbd back end -- the kernel nbd driver, connected
 * with nbd-client and disconnected with nbd-client -d.
 *
 * Owns the nbd connections it makes: a device is ours only if its
 * /sys/block/nbdN/pid names the nbd-client we ran.  Before each
 * nbd-client the disk records which device it may connect and, once it
 * is running, its pid; detach disconnects that device if the kernel says
 * our nbd-client connected it, however far attach got.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kernel-version.h"
#include "kstate.h"
#include "proc.h"
#include "run.h"

#define NBD_CONNECT_TRIES 8 /* free nbd devices tried when others race us */
#define DISCONNECT_WAIT_MS 5000

/* The kernel nbd driver sends reads and writes up to max_sectors_kb
 * (32 MiB at most) and the server refuses larger ones with EINVAL, which
 * the filesystem would see as an I/O error; so cap it at max-request.
 */
static int
limit_request_size (struct run *run, const char *dev)
{
  unsigned long now_kib, max_kib = run->geom.max_request_bytes / 1024;

  if (kstate_read_block_attr (dev, "queue/max_sectors_kb", &now_kib) == -1) {
    fprintf (stderr, PROG ": %s: cannot read queue/max_sectors_kb: %m\n", dev);
    return -1;
  }
  if (now_kib <= max_kib)
    return 0;
  verbose (run, "limiting %s requests to %lu KiB (max-request)", dev, max_kib);
  if (kstate_write_block_attr (dev, "queue/max_sectors_kb", max_kib) == -1) {
    fprintf (stderr,
             PROG ": %s: cannot limit requests to max-request %u "
                  "with queue/max_sectors_kb: %m\n",
             dev, run->geom.max_request_bytes);
    return -1;
  }
  return 0;
}

/* One nbd-client run, kept for the message if it is the one that fails. */
struct nbd_try {
  char dev[32];
  int status;     /* nbd-client's wait status */
  char err[2048]; /* its stderr */
};

/* Run nbd-client for t->dev; its stderr lands in t->err. */
static void
run_nbd_client (struct run *run, struct disk *d, struct nbd_try *t)
{
  char blksize[16];
  char *argv[] = { "nbd-client", "-unix", d->sock, t->dev, "-b", blksize,
                   /* explore.c's crash states are named exports */
                   d->export_name[0] ? "-N" : NULL, d->export_name, NULL };
  struct proc_spec spec = {
    .argv = argv,
    .own_group = true,
    .err = PROC_PIPE,
    .out = run->opt.verbose ? PROC_INHERIT : PROC_DEVNULL,
  };
  pid_t pid;
  int fd;

  snprintf (blksize, sizeof blksize, "%u", run->geom.logical_bytes);
  verbose (run, "connecting %s with -b %s", t->dev, blksize);
  t->err[0] = '\0';
  t->status = -1;
  snprintf (d->nbd_trying, sizeof d->nbd_trying, "%s", t->dev);
  if (proc_spawn (&spec, &pid, NULL, &fd) == -1)
    return;
  d->nbd_client_pid = pid;
  journal_note (run, "nbd %s %d", t->dev, (int) pid);
  t->status = proc_wait (&pid, PROC_STOP, fd, t->err, sizeof t->err);
}

/* Is d->nbd_trying connected by our nbd-client? */
static bool
trying_is_ours (const struct disk *d)
{
  return d->nbd_trying[0] && d->nbd_client_pid > 0 &&
    kstate_nbd_owner (d->nbd_trying) == d->nbd_client_pid;
}

/* Connect /dev/nbdN to d's server.  In its default netlink mode
 * nbd-client configures the device and exits; the kernel keeps the
 * socket.  It does not ask the server for block sizes: -b alone sets the
 * device's logical (and physical) block size.  Returns 0 when connected;
 * 1 if another process connected the device first; 2 if nbd-client
 * failed and the device is not connected; -1 if it failed after
 * connecting, or on a signal.  d->dev is set whenever the connection is
 * ours.
 */
static int
connect_nbd (struct run *run, struct disk *d, int n, struct nbd_try *t)
{
  long owner;

  snprintf (t->dev, sizeof t->dev, "/dev/nbd%d", n);
  run_nbd_client (run, d, t);
  if (run->opt.verbose)
    fputs (t->err, stderr);
  owner = kstate_nbd_owner (t->dev);
  if (proc_exited_zero (t->status) || trying_is_ours (d))
    snprintf (d->dev, sizeof d->dev, "%s", t->dev);
  if (proc_exited_zero (t->status))
    return 0;
  if (d->dev[0] || proc_caught_signal ())
    return -1;
  d->nbd_trying[0] = '\0';
  return owner != 0 ? 1 : 2;
}

/* A refusal's likely reason, said only where it holds: a logical block
 * above the page size on a kernel older than 6.15.  "" otherwise.
 */
static const char *
kernel_too_old_hint (const struct run *run, char *buf, size_t len)
{
  char release[128];

  if (run->geom.logical_bytes <= (unsigned long) sysconf (_SC_PAGESIZE) ||
      !kernel_running_older_than (6, 15, release, sizeof release))
    return "";
  snprintf (buf, len,
            " (a logical block size above the page size needs Linux 6.15 "
            "or later; this is %s)",
            release);
  return buf;
}

static void
report_nbd_failure (struct run *run, const struct disk *d,
                    const struct nbd_try *t)
{
  char how[64], hint[256];

  if (!run->opt.verbose)
    fputs (t->err, stderr);
  fprintf (stderr,
           PROG ": --attach=nbd: nbd-client %s connecting %s with "
                "-b %u%s\n",
           proc_status_text (t->status, how, sizeof how), t->dev,
           run->geom.logical_bytes,
           strcmp (d->dev, t->dev) == 0
             ? "; disconnecting it"
             : kernel_too_old_hint (run, hint, sizeof hint));
}

/* Does nbdN exist (*exists) and has nobody connected it? */
static bool
free_nbd_device (int n, bool *exists)
{
  char path[64];

  snprintf (path, sizeof path, "/sys/block/nbd%d", n);
  *exists = access (path, F_OK) == 0;
  snprintf (path, sizeof path, "/dev/nbd%d", n);
  return *exists && kstate_nbd_owner (path) == 0 && access (path, F_OK) == 0;
}

static int
connected (struct run *run, struct disk *d)
{
  if (check_logical_blksize (run, d->dev) == -1)
    return -1;
  return limit_request_size (run, d->dev);
}

/* A free nbd device has no /sys/block/nbdN/pid.  Another process may
 * take it between our look and nbd-client: either by connecting it, or
 * by merely having it open, which makes the kernel refuse a connection
 * but leaves no trace in sysfs.  So after a failure try the next free
 * device, a bounded number of times; a second failure of nbd-client
 * where nobody connected the device is not a race, and is reported.
 */
static int
attach_nbd (struct run *run, struct disk *d)
{
  struct nbd_try t, failed;
  int tries = 0, r = 0;
  bool have_failed = false, exists;

  for (int n = 0; tries < NBD_CONNECT_TRIES; n++) {
    if (!free_nbd_device (n, &exists)) {
      if (!exists)
        break;
      continue;
    }
    tries++;
    r = connect_nbd (run, d, n, &t);
    if (r == 0)
      return connected (run, d);
    if (r == -1 && !proc_caught_signal ())
      report_nbd_failure (run, d, &t);
    if (r == -1)
      return -1;
    if (r == 1) {
      verbose (run, "%s was connected by another process meanwhile", t.dev);
      continue;
    }
    if (have_failed)
      break;
    failed = t;
    have_failed = true;
    verbose (run,
             "%s may be open in another process; trying the next "
             "device",
             t.dev);
  }
  if (have_failed)
    report_nbd_failure (run, d, r == 2 ? &t : &failed);
  else if (tries == 0)
    fprintf (stderr,
             PROG ": --attach=nbd: no free nbd device; every "
                  "/dev/nbdN is connected\n");
  else
    fprintf (stderr,
             PROG ": --attach=nbd: other processes took %d free "
                  "nbd devices before nbd-client could connect them\n",
             tries);
  return -1;
}

static bool
disconnected (void *dev)
{
  return kstate_nbd_owner (dev) == 0;
}

/* nbd-client -d asks the kernel to disconnect; the connection (and with
 * it /sys/block/nbdN/pid) goes once the last opener, a udev probe for
 * instance, has closed the device.
 */
static int
detach_nbd (struct run *run, struct disk *d)
{
  char *argv[] = { "nbd-client", "-d", d->dev, NULL };

  if (d->dev[0] == '\0' && trying_is_ours (d))
    snprintf (d->dev, sizeof d->dev, "%s", d->nbd_trying);
  if (d->dev[0] == '\0')
    return 0;
  verbose (run, "disconnecting %s", d->dev);
  if (run_teardown_step (run, argv) == -1)
    return -1;
  if (proc_poll_until (disconnected, d->dev, DISCONNECT_WAIT_MS, 10, false) ==
      0) {
    fprintf (stderr,
             PROG ": %s is still connected 5 s after nbd-client "
                  "-d\n",
             d->dev);
    return -1;
  }
  d->dev[0] = '\0';
  d->nbd_trying[0] = '\0';
  return 0;
}

static void
load_nbd_module (struct run *run)
{
  char *argv[] = { "modprobe", "nbd", NULL };
  struct proc_spec spec = {
    .argv = argv,
    .own_group = true,
    .out = run->opt.verbose ? PROC_INHERIT : PROC_DEVNULL,
    .err = run->opt.verbose ? PROC_INHERIT : PROC_DEVNULL,
  };
  pid_t pid;

  verbose (run, "loading the nbd module");
  if (proc_spawn (&spec, &pid, NULL, NULL) == 0)
    proc_wait (&pid, PROC_STOP, -1, NULL, 0);
}

/* NULL if the kernel nbd driver can serve this geometry, else why not.
 * Loads the nbd module first where modprobe can.
 */
static const char *
nbd_unavailable_reason (struct run *run)
{
  static char why[128];
  bool have_modprobe = proc_in_path ("modprobe");
  long page_bytes = sysconf (_SC_PAGESIZE);

  if (access ("/sys/module/nbd", F_OK) == -1 && have_modprobe)
    load_nbd_module (run);
  if (access ("/sys/module/nbd", F_OK) == -1)
    return have_modprobe
      ? "the kernel nbd module is not loaded and modprobe nbd did not "
        "load it"
      : "the kernel nbd module is not loaded (no /sys/module/nbd) and "
        "there is no modprobe to load it";
  if (access ("/dev/nbd0", F_OK) == -1)
    return "the nbd module is loaded but /dev/nbd0 does not exist";
  if (!proc_in_path ("nbd-client"))
    return "nbd-client is not installed";
  if (run->geom.max_request_bytes < page_bytes) {
    /* The kernel will not cap its requests below a page. */
    snprintf (why, sizeof why,
              "max-request %u is below the page size "
              "(%ld), the least the kernel can be told to send",
              run->geom.max_request_bytes, page_bytes);
    return why;
  }
  return NULL;
}

const struct attach_ops attach_nbd_ops = {
  .name = "nbd",
  .unavailable_reason = nbd_unavailable_reason,
  .attach = attach_nbd,
  .detach = detach_nbd,
};
