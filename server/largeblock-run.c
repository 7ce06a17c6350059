/* largeblock-run: attach largeblock disks to the kernel, optionally make
 * a filesystem and mount it, run a command, and always tear down.
 *
 * Owns every resource it creates (temporary directory, nbdkit servers,
 * nbdfuse mounts, loop devices, nbd connections, filesystem mounts) in
 * the per-disk struct disk, and undoes them in reverse order in
 * teardown(), which runs on success, on any failure and after
 * SIGINT/SIGTERM/SIGHUP.  Only PIDs this program started are ever
 * signalled, and only nbd devices whose connection it made are
 * disconnected.
 *
 * Single-threaded.  Signal handlers only record the signal; the main
 * flow checks it between steps and forwards it to the child it waits for.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cap-ng.h>

#include "mkfscmd.h"
#include "params.h"

#define PROG "largeblock-run"
#define MAX_DISKS 16
#define START_TIMEOUT_MS 30000
#define BUSY_RETRIES 25          /* x 200 ms: a busy unmount gets 5 s */
#define NBD_CONNECT_TRIES 8      /* free nbd devices tried when others race us */

struct disk {
  char sock[PATH_MAX];
  char server_pidfile[PATH_MAX];
  char fuse_dir[PATH_MAX];
  char fuse_pidfile[PATH_MAX];
  char fuse_file[PATH_MAX];
  char dev[64];                 /* the attached block device, "" if none */
  char mnt[PATH_MAX];
  pid_t server_pid;
  pid_t fuse_pid;
  bool fuse_mounted;
  bool mounted;
  bool mnt_is_ours;             /* we created the directory */
};

static struct {
  const char *plugin;
  const char *nbdkit;
  const char *attach;
  const char *mkfs;
  const char *mkfs_options;
  const char *mount_dir;        /* "" for a private temporary directory */
  unsigned long fs_blksize;
  unsigned disks;
  bool verbose;
  char **params;
  int nr_params;
  char **command;
} opt = { .attach = "auto", .disks = 1 };

/* What --attach resolved to; the same for every disk. */
static enum { ATTACH_LOOP, ATTACH_NBD } attach_method;

static struct lb_geometry geom;
static struct disk disks[MAX_DISKS];
static char workdir[PATH_MAX / 2];  /* leaves room for file names */
static volatile sig_atomic_t caught_signal;

static void
on_signal (int sig)
{
  caught_signal = sig;
}

static void
verbose (const char *fmt, ...)
  __attribute__((format (printf, 1, 2)));
static void
verbose (const char *fmt, ...)
{
  va_list ap;

  if (!opt.verbose)
    return;
  va_start (ap, fmt);
  fprintf (stderr, PROG ": ");
  vfprintf (stderr, fmt, ap);
  fputc ('\n', stderr);
  va_end (ap);
}

static void
sleep_ms (unsigned ms)
{
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  nanosleep (&ts, NULL);
}

static void
usage (FILE *fp)
{
  fprintf (fp,
"usage: " PROG " [--attach=auto|nbd|loop] [--disks=N] [--mkfs=xfs|ext4|btrfs]\n"
"       [--fs-blksize=BYTES] [--mkfs-options=OPTS] [--mount[=DIR]]\n"
"       [--plugin=PATH] [--verbose] [PARAM=VALUE ...] [-- COMMAND [ARG ...]]\n");
}

/* ---- running helpers ---- */

/* Close inherited descriptors in a child, except stdin/out/err. */
static void
close_extra_fds (void)
{
  long max = sysconf (_SC_OPEN_MAX);
  for (int fd = 3; fd < max && fd < 4096; fd++)
    close (fd);
}

static void
reset_signals_in_child (void)
{
  sigset_t none;

  signal (SIGINT, SIG_DFL);
  signal (SIGTERM, SIG_DFL);
  signal (SIGHUP, SIG_DFL);
  signal (SIGPIPE, SIG_DFL);
  sigemptyset (&none);
  sigprocmask (SIG_SETMASK, &none, NULL);
}

/* Start argv in the background.  stdout_fd and stderr_fd, if >= 0,
 * replace its stdout and stderr.  drop_caps: clear every capability (and
 * the bounding set) before exec and lock them, so even root cannot
 * regain any.
 */
static pid_t
spawn (char *const argv[], int stdout_fd, int stderr_fd, bool drop_caps)
{
  pid_t pid = fork ();

  if (pid == -1) {
    fprintf (stderr, PROG ": fork: %m\n");
    return -1;
  }
  if (pid > 0)
    return pid;

  reset_signals_in_child ();
  if (stdout_fd >= 0 && dup2 (stdout_fd, STDOUT_FILENO) == -1)
    _exit (127);
  if (stderr_fd >= 0 && dup2 (stderr_fd, STDERR_FILENO) == -1)
    _exit (127);
  if (!opt.verbose && stdout_fd < 0) {
    int null = open ("/dev/null", O_WRONLY);
    if (null >= 0)
      dup2 (null, STDOUT_FILENO);
  }
  close_extra_fds ();
  if (drop_caps) {
    /* Lock first: setting the securebits needs CAP_SETPCAP. */
    capng_clear (CAPNG_SELECT_ALL);
    if (capng_lock () != 0 || capng_apply (CAPNG_SELECT_ALL) != 0) {
      fprintf (stderr, PROG ": cannot drop capabilities for %s\n", argv[0]);
      _exit (127);
    }
  }
  execvp (argv[0], argv);
  fprintf (stderr, PROG ": cannot run %s: %m\n", argv[0]);
  _exit (127);
}

/* Wait for pid; a signal we catch meanwhile is forwarded to it, and if
 * it is still alive FORWARD_GRACE_MS later (a shell waiting for its own
 * child ignores SIGINT) it is killed.  Returns the raw wait status, or -1.
 */
#define FORWARD_GRACE_MS 5000
static int
wait_forwarding (pid_t pid)
{
  int status;
  int forwarded = 0, waited_ms = 0;
  pid_t r;

  for (;;) {
    r = waitpid (pid, &status, forwarded ? WNOHANG : 0);
    if (r == pid)
      return status;
    if (r == -1 && errno != EINTR)
      return -1;
    if (caught_signal && !forwarded) {
      forwarded = caught_signal;
      kill (pid, forwarded);
    }
    else if (forwarded && r == 0) {
      sleep_ms (10);
      waited_ms += 10;
      if (waited_ms == FORWARD_GRACE_MS)
        kill (pid, SIGKILL);
    }
  }
}

static bool
exited_zero (int status)
{
  return status != -1 && WIFEXITED (status) && WEXITSTATUS (status) == 0;
}

/* How a child that did not exit 0 ended, for messages. */
static const char *
status_text (int status, char *buf, size_t len)
{
  if (status == -1)
    snprintf (buf, len, "could not be waited for");
  else if (WIFSIGNALED (status))
    snprintf (buf, len, "killed by signal %d", WTERMSIG (status));
  else
    snprintf (buf, len, "failed with exit status %d", WEXITSTATUS (status));
  return buf;
}

static void
show_command (char *const argv[])
{
  if (!opt.verbose)
    return;
  fprintf (stderr, PROG ": running");
  for (int i = 0; argv[i]; i++)
    fprintf (stderr, " %s", argv[i]);
  fputc ('\n', stderr);
}

/* Run argv to completion; 0 if it exited 0, else print why and -1. */
static int
run (char *const argv[])
{
  char how[64];
  int status;
  pid_t pid;

  show_command (argv);
  pid = spawn (argv, -1, -1, false);
  if (pid == -1)
    return -1;
  status = wait_forwarding (pid);
  if (exited_zero (status))
    return 0;
  if (status != -1)
    fprintf (stderr, PROG ": %s %s\n", argv[0],
             status_text (status, how, sizeof how));
  return -1;
}

/* Run argv and capture the first line of its stdout into out. */
static int
run_capture (char *const argv[], char *out, size_t outlen)
{
  int fds[2];
  pid_t pid;
  ssize_t n;
  int status;

  if (pipe (fds) == -1)
    return -1;
  pid = spawn (argv, fds[1], -1, false);
  close (fds[1]);
  if (pid == -1) {
    close (fds[0]);
    return -1;
  }
  n = read (fds[0], out, outlen - 1);
  close (fds[0]);
  status = wait_forwarding (pid);
  out[n > 0 ? n : 0] = '\0';
  out[strcspn (out, "\n")] = '\0';
  if (!exited_zero (status)) {
    fprintf (stderr, PROG ": %s failed\n", argv[0]);
    return -1;
  }
  return 0;
}

/* Run argv to completion with its stderr hidden unless --verbose;
 * returns the wait status, or -1.
 */
static int
run_quietly (char *const argv[])
{
  int null = opt.verbose ? -1 : open ("/dev/null", O_WRONLY);
  pid_t pid;

  show_command (argv);
  pid = spawn (argv, -1, null, false);

  if (null >= 0)
    close (null);
  return pid == -1 ? -1 : wait_forwarding (pid);
}

/* Run argv to completion with its stderr kept in err (the last
 * errlen - 1 bytes of it), so the caller decides whether it is worth
 * showing.  *pid is the child, 0 if none started.  Returns the wait
 * status, or -1.
 */
static int
run_keeping_stderr (char *const argv[], pid_t *pid, char *err, size_t errlen)
{
  size_t len = 0;
  ssize_t n;
  int fds[2];

  err[0] = '\0';
  *pid = 0;
  show_command (argv);
  if (pipe (fds) == -1)
    return -1;
  *pid = spawn (argv, -1, fds[1], false);
  close (fds[1]);
  if (*pid == -1) {
    *pid = 0;
    close (fds[0]);
    return -1;
  }
  for (;;) {
    if (len == errlen - 1) {          /* full: keep the newer half */
      memmove (err, err + len / 2, len - len / 2);
      len -= len / 2;
    }
    n = read (fds[0], err + len, errlen - 1 - len);
    if (n > 0)
      len += n;
    else if (n == 0 || errno != EINTR || caught_signal)
      break;
  }
  err[len] = '\0';
  close (fds[0]);
  return wait_forwarding (*pid);
}

/* Is name an executable file in one of $PATH's directories? */
static bool
command_in_path (const char *name)
{
  const char *dir = getenv ("PATH");
  char path[PATH_MAX];

  if (dir == NULL || *dir == '\0')
    dir = "/usr/bin:/bin";
  for (;;) {
    size_t len = strcspn (dir, ":");
    snprintf (path, sizeof path, "%.*s/%s", (int) (len ? len : 1),
              len ? dir : ".", name);
    if (access (path, X_OK) == 0)
      return true;
    if (dir[len] == '\0')
      return false;
    dir += len + 1;
  }
}

/* Wait until pidfile is non-empty (the process is ready) or pid died. */
static int
wait_for_pidfile (const char *what, const char *pidfile, pid_t pid)
{
  struct stat st;

  for (int ms = 0; ms < START_TIMEOUT_MS; ms += 10) {
    if (stat (pidfile, &st) == 0 && st.st_size > 0)
      return 0;
    if (waitpid (pid, NULL, WNOHANG) == pid) {
      fprintf (stderr, PROG ": %s exited before it was ready\n", what);
      return -2;                /* already reaped */
    }
    if (caught_signal)
      return -1;
    sleep_ms (10);
  }
  fprintf (stderr, PROG ": %s not ready after %d s\n", what,
           START_TIMEOUT_MS / 1000);
  return -1;
}

/* Start a daemon and wait until it wrote its pid file.  *pid is the
 * running child, or 0 if it never started or already exited.
 */
static int
start_until_ready (const char *what, char *const argv[], const char *pidfile,
                   bool drop_caps, pid_t *pid)
{
  int r;

  *pid = spawn (argv, -1, -1, drop_caps);
  if (*pid == -1) {
    *pid = 0;
    return -1;
  }
  r = wait_for_pidfile (what, pidfile, *pid);
  if (r == -2)
    *pid = 0;                   /* already reaped */
  return r < 0 ? -1 : 0;
}

/* Stop a child we started: SIGTERM, then SIGKILL after 5 s. */
static void
stop_child (const char *what, pid_t *pid)
{
  if (*pid <= 0)
    return;
  verbose ("stopping %s (pid %d)", what, (int) *pid);
  kill (*pid, SIGTERM);
  for (int ms = 0; ms < 5000; ms += 10) {
    if (waitpid (*pid, NULL, WNOHANG) == *pid) {
      *pid = 0;
      return;
    }
    sleep_ms (10);
  }
  fprintf (stderr, PROG ": %s (pid %d) ignored SIGTERM, killing it\n",
           what, (int) *pid);
  kill (*pid, SIGKILL);
  waitpid (*pid, NULL, 0);
  *pid = 0;
}

/* ---- sysfs ---- */

/* Path of ATTR under /sys/block/NAME, NAME being dev's last component. */
static void
block_attr_path (char *path, size_t len, const char *dev, const char *attr)
{
  const char *slash = strrchr (dev, '/');

  snprintf (path, len, "/sys/block/%s/%s", slash ? slash + 1 : dev, attr);
}

/* Read the number in dev's sysfs ATTR.  Returns 0, or -1 with errno set
 * (ENOENT: no such attribute).
 */
static int
read_block_attr (const char *dev, const char *attr, unsigned long *val)
{
  char path[PATH_MAX];
  FILE *fp;
  int r = 0, saved_errno;

  block_attr_path (path, sizeof path, dev, attr);
  fp = fopen (path, "r");
  if (fp == NULL)
    return -1;
  if (fscanf (fp, "%lu", val) != 1) {
    r = -1;
    errno = EINVAL;
  }
  saved_errno = errno;
  fclose (fp);
  errno = saved_errno;
  return r;
}

static int
write_block_attr (const char *dev, const char *attr, unsigned long val)
{
  char path[PATH_MAX];
  FILE *fp;

  block_attr_path (path, sizeof path, dev, attr);
  fp = fopen (path, "w");
  if (fp == NULL)
    return -1;
  /* sysfs reports a rejected value when the buffer is flushed. */
  if (fprintf (fp, "%lu\n", val) < 0) {
    int saved_errno = errno;
    fclose (fp);
    errno = saved_errno;
    return -1;
  }
  return fclose (fp) == 0 ? 0 : -1;
}

/* /sys/block/nbdN/pid exists while nbdN is connected and holds the pid
 * of the process that connected it.  Returns that pid, -1 if it is
 * connected but the pid cannot be read, 0 if it is not connected.
 */
static long
nbd_owner (const char *dev)
{
  unsigned long pid;

  if (read_block_attr (dev, "pid", &pid) == 0)
    return (long) pid;
  return errno == ENOENT ? 0 : -1;
}

/* ---- teardown ---- */

/* Unmount dir, retrying while busy; reports if it stays mounted. */
static int
unmount_retrying (const char *dir)
{
  for (int i = 0; i < BUSY_RETRIES; i++) {
    if (umount (dir) == 0 || errno == EINVAL || errno == ENOENT)
      return 0;
    if (errno != EBUSY)
      break;
    sleep_ms (200);
  }
  fprintf (stderr, PROG ": cannot unmount %s: %m; it is still mounted\n", dir);
  return -1;
}

static int
unmount_fuse (struct disk *d)
{
  char *argv[] = { "fusermount3", "-u", d->fuse_dir, NULL };

  for (int i = 0; i < BUSY_RETRIES; i++) {
    if (run (argv) == 0)
      return 0;
    sleep_ms (200);
  }
  fprintf (stderr, PROG ": FUSE mount %s is still mounted\n", d->fuse_dir);
  return -1;
}

/* nbd-client -d asks the kernel to disconnect; the connection (and with
 * it /sys/block/nbdN/pid) goes once the last opener, a udev probe for
 * instance, has closed the device.
 */
static int
disconnect_nbd (struct disk *d)
{
  char *argv[] = { "nbd-client", "-d", d->dev, NULL };

  verbose ("disconnecting %s", d->dev);
  if (run (argv) == -1)
    return -1;
  for (int ms = 0; ms < 5000; ms += 10) {
    if (nbd_owner (d->dev) == 0)
      return 0;
    sleep_ms (10);
  }
  fprintf (stderr, PROG ": %s is still connected 5 s after nbd-client -d\n",
           d->dev);
  return -1;
}

static int
detach_device (struct disk *d)
{
  char *argv[] = { "losetup", "-d", d->dev, NULL };

  if (attach_method == ATTACH_NBD)
    return disconnect_nbd (d);
  verbose ("detaching %s", d->dev);
  return run (argv);
}

static int
teardown_disk (struct disk *d)
{
  int r = 0;

  if (d->mounted) {
    verbose ("unmounting %s", d->mnt);
    if (unmount_retrying (d->mnt) == 0)
      d->mounted = false;
    else
      r = -1;
  }
  if (d->mnt_is_ours && !d->mounted && rmdir (d->mnt) == 0)
    d->mnt_is_ours = false;
  if (d->dev[0]) {
    if (detach_device (d) == 0)
      d->dev[0] = '\0';
    else
      r = -1;
  }
  if (d->fuse_mounted) {
    verbose ("unmounting FUSE %s", d->fuse_dir);
    if (unmount_fuse (d) == 0)
      d->fuse_mounted = false;
    else
      r = -1;
  }
  if (d->fuse_pid > 0) {
    /* After fusermount3 -u nbdfuse exits by itself. */
    for (int ms = 0; ms < 5000 && d->fuse_pid > 0; ms += 10) {
      if (waitpid (d->fuse_pid, NULL, WNOHANG) == d->fuse_pid)
        d->fuse_pid = 0;
      else
        sleep_ms (10);
    }
    if (!d->fuse_mounted)
      stop_child ("nbdfuse", &d->fuse_pid);
  }
  if (d->fuse_dir[0] && !d->fuse_mounted)
    rmdir (d->fuse_dir);
  stop_child ("nbdkit", &d->server_pid);
  unlink (d->server_pidfile);
  unlink (d->fuse_pidfile);
  unlink (d->sock);
  return r;
}

static int
teardown (void)
{
  int r = 0;

  for (int i = (int) opt.disks - 1; i >= 0; i--)
    if (teardown_disk (&disks[i]) == -1)
      r = -1;
  if (workdir[0] && rmdir (workdir) == -1 && r == 0) {
    fprintf (stderr, PROG ": cannot remove %s: %m\n", workdir);
    r = -1;
  }
  return r;
}

/* ---- setup ---- */

static int
validate_params (void)
{
  struct lb_params p;
  char err[256];
  int r = -1;

  lb_params_init (&p);
  for (int i = 0; i < opt.nr_params; i++) {
    char *eq = strchr (opt.params[i], '=');
    char *key;

    if (eq == NULL) {
      fprintf (stderr, PROG ": %s: expected PARAM=VALUE\n", opt.params[i]);
      goto out;
    }
    key = strndup (opt.params[i], eq - opt.params[i]);
    if (key == NULL || lb_params_set (&p, key, eq + 1, err, sizeof err)) {
      free (key);
      fprintf (stderr, "largeblock: %s\n", err);
      goto out;
    }
    free (key);
  }
  if (lb_params_finish (&p, &geom, err, sizeof err) == -1) {
    fprintf (stderr, "largeblock: %s\n", err);
    goto out;
  }
  r = 0;
 out:
  lb_params_free (&p);
  return r;
}

/* CAP_SYS_ADMIN: loop setup, FUSE and filesystem mounts. */
static int
check_capabilities (void)
{
  capng_get_caps_process ();
  if (capng_have_capability (CAPNG_EFFECTIVE, CAP_SYS_ADMIN))
    return 0;
  fprintf (stderr, PROG ": missing capability CAP_SYS_ADMIN "
           "(needed to attach block devices and mount); nothing attached\n");
  return -1;
}

static int
start_server (struct disk *d, int idx)
{
  char *argv[8 + 64];
  int n = 0;

  snprintf (d->sock, sizeof d->sock, "%s/disk%d.sock", workdir, idx);
  snprintf (d->server_pidfile, sizeof d->server_pidfile, "%s/disk%d.pid",
            workdir, idx);
  argv[n++] = (char *) opt.nbdkit;
  argv[n++] = "-f";
  argv[n++] = "-U";
  argv[n++] = d->sock;
  argv[n++] = "-P";
  argv[n++] = d->server_pidfile;
  argv[n++] = (char *) opt.plugin;
  for (int i = 0; i < opt.nr_params && n < 8 + 63; i++)
    argv[n++] = opt.params[i];
  argv[n] = NULL;
  verbose ("starting %s on %s", opt.nbdkit, d->sock);
  return start_until_ready ("nbdkit", argv, d->server_pidfile, true,
                            &d->server_pid);
}

static int
attach_fuse (struct disk *d, int idx)
{
  char *argv[] = { "nbdfuse", "-P", d->fuse_pidfile, d->fuse_file,
                   "--unix", d->sock, NULL };
  int r;

  snprintf (d->fuse_dir, sizeof d->fuse_dir, "%s/fuse%d", workdir, idx);
  snprintf (d->fuse_pidfile, sizeof d->fuse_pidfile, "%s/fuse%d.pid",
            workdir, idx);
  snprintf (d->fuse_file, sizeof d->fuse_file, "%s/fuse%d/disk", workdir,
            idx);
  if (mkdir (d->fuse_dir, 0700) == -1) {
    fprintf (stderr, PROG ": mkdir %s: %m\n", d->fuse_dir);
    return -1;
  }
  verbose ("exposing the export as %s", d->fuse_file);
  r = start_until_ready ("nbdfuse", argv, d->fuse_pidfile, false,
                         &d->fuse_pid);
  /* While nbdfuse lives it may have mounted; fusermount3 will tell. */
  d->fuse_mounted = d->fuse_pid > 0;
  return r;
}

static int
check_logical_blksize (const char *dev)
{
  char path[PATH_MAX];
  unsigned long got = 0;

  if (read_block_attr (dev, "queue/logical_block_size", &got) == -1) {
    block_attr_path (path, sizeof path, dev, "queue/logical_block_size");
    fprintf (stderr, PROG ": cannot read %s: %m\n", path);
    return -1;
  }
  if (got != geom.logical_bytes) {
    fprintf (stderr, PROG ": %s: kernel logical block size is %lu, "
             "logical-blksize is %u\n", dev, got, geom.logical_bytes);
    return -1;
  }
  return 0;
}

static int
attach_loop (struct disk *d, int idx)
{
  char sector[32];
  char *argv[] = { "losetup", "--find", "--show", "--sector-size", sector,
                   "--direct-io=on", d->fuse_file, NULL };

  if (attach_fuse (d, idx) == -1)
    return -1;
  snprintf (sector, sizeof sector, "%u", geom.logical_bytes);
  verbose ("attaching %s with %s-byte sectors", d->fuse_file, sector);
  if (run_capture (argv, d->dev, sizeof d->dev) == -1) {
    d->dev[0] = '\0';
    return -1;
  }
  if (strncmp (d->dev, "/dev/loop", 9) != 0) {
    fprintf (stderr, PROG ": losetup printed no device\n");
    d->dev[0] = '\0';
    return -1;
  }
  return check_logical_blksize (d->dev);
}

/* The kernel nbd driver sends reads and writes up to max_sectors_kb
 * (32 MiB at most) and the server refuses larger ones with EINVAL, which
 * the filesystem would see as an I/O error; so cap it at max-request.
 */
static int
limit_request_size (const char *dev)
{
  unsigned long now_kib, max_kib = geom.max_request_bytes / 1024;

  if (read_block_attr (dev, "queue/max_sectors_kb", &now_kib) == -1) {
    fprintf (stderr, PROG ": %s: cannot read queue/max_sectors_kb: %m\n",
             dev);
    return -1;
  }
  if (now_kib <= max_kib)
    return 0;
  verbose ("limiting %s requests to %lu KiB (max-request)", dev, max_kib);
  if (write_block_attr (dev, "queue/max_sectors_kb", max_kib) == -1) {
    fprintf (stderr, PROG ": %s: cannot limit requests to max-request %u "
             "with queue/max_sectors_kb: %m\n", dev,
             geom.max_request_bytes);
    return -1;
  }
  return 0;
}

/* One nbd-client run, kept for the message if it is the one that fails. */
struct nbd_try {
  char dev[32];
  int status;                   /* nbd-client's wait status */
  char err[2048];               /* its stderr */
};

/* Connect /dev/nbdN to d's server.  In its default netlink mode
 * nbd-client configures the device and exits; the kernel keeps the
 * socket.  It does not ask the server for block sizes: -b alone sets the
 * device's logical (and physical) block size.  Returns 0 when connected;
 * 1 if another process connected the device first; 2 if nbd-client
 * failed and the device is not connected; -1 if it failed after
 * connecting, or on a signal.  d->dev is set whenever the connection is
 * ours, so that teardown undoes it even after a failure.
 */
static int
connect_nbd (struct disk *d, int n, struct nbd_try *t)
{
  char blksize[16];
  char *argv[] = { "nbd-client", "-unix", d->sock, t->dev, "-b", blksize,
                   NULL };
  pid_t pid;
  long owner;

  snprintf (t->dev, sizeof t->dev, "/dev/nbd%d", n);
  snprintf (blksize, sizeof blksize, "%u", geom.logical_bytes);
  verbose ("connecting %s with -b %s", t->dev, blksize);
  t->status = run_keeping_stderr (argv, &pid, t->err, sizeof t->err);
  if (opt.verbose)
    fputs (t->err, stderr);
  owner = nbd_owner (t->dev);
  if (exited_zero (t->status) || (pid > 0 && owner == pid))
    snprintf (d->dev, sizeof d->dev, "%s", t->dev);
  if (exited_zero (t->status))
    return 0;
  if (d->dev[0] || caught_signal)
    return -1;
  return owner != 0 ? 1 : 2;
}

static void
report_nbd_failure (const struct disk *d, const struct nbd_try *t)
{
  char how[64];

  if (!opt.verbose)
    fputs (t->err, stderr);
  fprintf (stderr, PROG ": --attach=nbd: nbd-client %s connecting %s with "
           "-b %u%s\n", status_text (t->status, how, sizeof how), t->dev,
           geom.logical_bytes,
           strcmp (d->dev, t->dev) == 0 ? "; disconnecting it"
           : geom.logical_bytes > (unsigned long) sysconf (_SC_PAGESIZE)
           ? " (a logical block size above the page size needs Linux 6.15 "
             "or later)" : "");
}

/* A free nbd device has no /sys/block/nbdN/pid.  Another process may
 * take it between our look and nbd-client: either by connecting it, or
 * by merely having it open, which makes the kernel refuse a connection
 * but leaves no trace in sysfs.  So after a failure try the next free
 * device, a bounded number of times; a second failure of nbd-client
 * where nobody connected the device is not a race, and is reported.
 */
static int
attach_nbd (struct disk *d)
{
  struct nbd_try t, failed;
  char path[64];
  int tries = 0, r = 0;
  bool have_failed = false;

  for (int n = 0; tries < NBD_CONNECT_TRIES; n++) {
    snprintf (path, sizeof path, "/sys/block/nbd%d", n);
    if (access (path, F_OK) == -1)
      break;
    snprintf (path, sizeof path, "/dev/nbd%d", n);
    if (nbd_owner (path) != 0 || access (path, F_OK) == -1)
      continue;
    tries++;
    r = connect_nbd (d, n, &t);
    if (r == 0)
      return check_logical_blksize (d->dev) == -1 ? -1
        : limit_request_size (d->dev);
    if (r == -1 && !caught_signal)
      report_nbd_failure (d, &t);
    if (r == -1)
      return -1;
    if (r == 1) {
      verbose ("%s was connected by another process meanwhile", t.dev);
      continue;
    }
    if (have_failed)
      break;
    failed = t;
    have_failed = true;
    verbose ("%s may be open in another process; trying the next device",
             t.dev);
  }
  if (have_failed)
    report_nbd_failure (d, r == 2 ? &t : &failed);
  else if (tries == 0)
    fprintf (stderr, PROG ": --attach=nbd: no free nbd device; every "
             "/dev/nbdN is connected\n");
  else
    fprintf (stderr, PROG ": --attach=nbd: other processes took %d free "
             "nbd devices before nbd-client could connect them\n", tries);
  return -1;
}

static int
attach_device (struct disk *d, int idx)
{
  if (attach_method == ATTACH_NBD)
    return attach_nbd (d);
  return attach_loop (d, idx);
}

/* NULL if the kernel nbd driver can serve this geometry, else why not.
 * Loads the nbd module first where modprobe can.
 */
static const char *
nbd_unavailable_reason (void)
{
  static char why[128];
  char *argv[] = { "modprobe", "nbd", NULL };
  bool have_modprobe = command_in_path ("modprobe");
  long page_bytes = sysconf (_SC_PAGESIZE);

  if (access ("/sys/module/nbd", F_OK) == -1 && have_modprobe) {
    verbose ("loading the nbd module");
    run_quietly (argv);
  }
  if (access ("/sys/module/nbd", F_OK) == -1)
    return have_modprobe
      ? "the kernel nbd module is not loaded and modprobe nbd did not "
        "load it"
      : "the kernel nbd module is not loaded (no /sys/module/nbd) and "
        "there is no modprobe to load it";
  if (access ("/dev/nbd0", F_OK) == -1)
    return "the nbd module is loaded but /dev/nbd0 does not exist";
  if (!command_in_path ("nbd-client"))
    return "nbd-client is not installed";
  if (geom.max_request_bytes < page_bytes) {
    /* The kernel will not cap its requests below a page. */
    snprintf (why, sizeof why, "max-request %u is below the page size "
              "(%ld), the least the kernel can be told to send",
              geom.max_request_bytes, page_bytes);
    return why;
  }
  return NULL;
}

static int
resolve_attach_method (void)
{
  const char *why_not;

  if (strcmp (opt.attach, "loop") == 0) {
    attach_method = ATTACH_LOOP;
    return 0;
  }
  if (strcmp (opt.attach, "nbd") != 0 && strcmp (opt.attach, "auto") != 0) {
    fprintf (stderr, PROG ": --attach=%s: must be auto, nbd or loop\n",
             opt.attach);
    return -1;
  }
  why_not = nbd_unavailable_reason ();
  if (why_not == NULL) {
    verbose ("--attach=%s: using the kernel nbd driver", opt.attach);
    attach_method = ATTACH_NBD;
    return 0;
  }
  if (strcmp (opt.attach, "auto") == 0) {
    verbose ("--attach=auto: using loop: %s", why_not);
    attach_method = ATTACH_LOOP;
    return 0;
  }
  fprintf (stderr, PROG ": --attach=nbd: %s; use --attach=loop\n", why_not);
  return -1;
}

static int
make_filesystem (struct disk *d)
{
  struct lb_mkfs_cmd cmd;
  char err[256];
  int r;

  if (lb_mkfs_cmd_build (&cmd, opt.mkfs, geom.logical_bytes,
                         geom.physical_bytes, opt.fs_blksize,
                         opt.mkfs_options, d->dev,
                         err, sizeof err) == -1) {
    fprintf (stderr, PROG ": %s\n", err);
    return -1;
  }
  r = run (cmd.argv);
  lb_mkfs_cmd_free (&cmd);
  return r;
}

static int
mount_filesystem (struct disk *d, int idx)
{
  char *argv[] = { "mount", d->dev, d->mnt, NULL };

  if (opt.mount_dir[0] && opt.disks == 1)
    snprintf (d->mnt, sizeof d->mnt, "%s", opt.mount_dir);
  else if (opt.mount_dir[0])
    snprintf (d->mnt, sizeof d->mnt, "%s/%d", opt.mount_dir, idx);
  else
    snprintf (d->mnt, sizeof d->mnt, "%s/mnt%d", workdir, idx);
  if (mkdir (d->mnt, 0755) == 0)
    d->mnt_is_ours = true;
  else if (errno != EEXIST) {
    fprintf (stderr, PROG ": mkdir %s: %m\n", d->mnt);
    return -1;
  }
  if (run (argv) == -1)
    return -1;
  d->mounted = true;
  return 0;
}

static int
set_up_disk (int idx)
{
  struct disk *d = &disks[idx];

  if (start_server (d, idx) == -1 || caught_signal)
    return -1;
  if (attach_device (d, idx) == -1 || caught_signal)
    return -1;
  if (opt.mkfs && (make_filesystem (d) == -1 || caught_signal))
    return -1;
  if (opt.mount_dir && (mount_filesystem (d, idx) == -1 || caught_signal))
    return -1;
  return 0;
}

/* ---- command ---- */

static void
export_disk_env (int idx)
{
  struct disk *d = &disks[idx];
  char name[64], value[PATH_MAX + 32];
  char suffix[16] = "";

  if (idx > 0)
    snprintf (suffix, sizeof suffix, "%d", idx);
#define EXPORT(base, fmt, ...) \
  do { \
    snprintf (name, sizeof name, "%s%s", base, suffix); \
    snprintf (value, sizeof value, fmt, __VA_ARGS__); \
    setenv (name, value, 1); \
  } while (0)
  EXPORT ("LARGEBLOCK_DEV", "%s", d->dev);
  EXPORT ("LARGEBLOCK_SOCKET", "%s", d->sock);
  EXPORT ("LARGEBLOCK_URI", "nbd+unix:///?socket=%s", d->sock);
  if (d->mounted)
    EXPORT ("LARGEBLOCK_MNT", "%s", d->mnt);
#undef EXPORT
}

static void
export_env (void)
{
  char value[32];

  for (unsigned i = 0; i < opt.disks; i++)
    export_disk_env ((int) i);
  snprintf (value, sizeof value, "%u", geom.logical_bytes);
  setenv ("LARGEBLOCK_LOGICAL_BLKSIZE", value, 1);
  snprintf (value, sizeof value, "%u", geom.physical_bytes);
  setenv ("LARGEBLOCK_PHYSICAL_BLKSIZE", value, 1);
}

/* Returns the exit status largeblock-run should have. */
static int
run_command (void)
{
  int status;
  pid_t pid;

  verbose ("running %s", opt.command[0]);
  pid = fork ();
  if (pid == -1) {
    fprintf (stderr, PROG ": fork: %m\n");
    return 1;
  }
  if (pid == 0) {
    reset_signals_in_child ();
    execvp (opt.command[0], opt.command);
    fprintf (stderr, PROG ": cannot run %s: %m\n", opt.command[0]);
    _exit (127);
  }
  status = wait_forwarding (pid);
  if (caught_signal)
    return 128 + caught_signal;
  if (status == -1)
    return 1;
  if (WIFSIGNALED (status))
    return 128 + WTERMSIG (status);
  return WEXITSTATUS (status);
}

static void
print_summary (void)
{
  for (unsigned i = 0; i < opt.disks; i++)
    printf ("%s%s%s\n", disks[i].dev, disks[i].mounted ? " " : "",
            disks[i].mounted ? disks[i].mnt : "");
  fflush (stdout);
}

static int
wait_for_signal (void)
{
  sigset_t none;

  sigemptyset (&none);
  while (!caught_signal)
    sigsuspend (&none);
  return 128 + caught_signal;
}

/* ---- options ---- */

static int
parse_options (int argc, char **argv)
{
  enum { O_ATTACH = 256, O_DISKS, O_MKFS, O_MKFS_OPTIONS, O_MOUNT,
         O_FS_BLKSIZE, O_PLUGIN };
  static const struct option longopts[] = {
    { "attach", required_argument, NULL, O_ATTACH },
    { "disks", required_argument, NULL, O_DISKS },
    { "fs-blksize", required_argument, NULL, O_FS_BLKSIZE },
    { "help", no_argument, NULL, 'h' },
    { "mkfs", required_argument, NULL, O_MKFS },
    { "mkfs-options", required_argument, NULL, O_MKFS_OPTIONS },
    { "mount", optional_argument, NULL, O_MOUNT },
    { "plugin", required_argument, NULL, O_PLUGIN },
    { "verbose", no_argument, NULL, 'v' },
    { NULL, 0, NULL, 0 }
  };
  int c, dashdash;
  char *end;

  while ((c = getopt_long (argc, argv, "+hv", longopts, NULL)) != -1) {
    switch (c) {
    case O_ATTACH: opt.attach = optarg; break;
    case O_MKFS: opt.mkfs = optarg; break;
    case O_MKFS_OPTIONS: opt.mkfs_options = optarg; break;
    case O_MOUNT: opt.mount_dir = optarg ? optarg : ""; break;
    case O_PLUGIN: opt.plugin = optarg; break;
    case 'v': opt.verbose = true; break;
    case 'h': usage (stdout); exit (EXIT_SUCCESS);
    case O_DISKS:
      opt.disks = strtoul (optarg, &end, 10);
      if (*end || opt.disks < 1 || opt.disks > MAX_DISKS) {
        fprintf (stderr, PROG ": --disks=%s: must be 1 to %d\n", optarg,
                 MAX_DISKS);
        return -1;
      }
      break;
    case O_FS_BLKSIZE:
      opt.fs_blksize = strtoul (optarg, &end, 0);
      if (*end || opt.fs_blksize < 512
          || (opt.fs_blksize & (opt.fs_blksize - 1))) {
        fprintf (stderr, PROG ": --fs-blksize=%s: must be a power of 2 "
                 "of at least 512\n", optarg);
        return -1;
      }
      break;
    default: usage (stderr); return -1;
    }
  }
  /* PARAM=VALUE up to "--" (getopt leaves "--" consumed only if it
   * came before any non-option, so look for it ourselves). */
  dashdash = optind > 1 && strcmp (argv[optind - 1], "--") == 0;
  opt.params = &argv[optind];
  opt.nr_params = 0;
  if (!dashdash)
    while (optind + opt.nr_params < argc
           && strcmp (argv[optind + opt.nr_params], "--") != 0)
      opt.nr_params++;
  if (optind + opt.nr_params < argc) {
    int cmd = optind + opt.nr_params + (dashdash ? 0 : 1);
    if (cmd < argc)
      opt.command = &argv[cmd];
  }
  if (opt.mkfs && !lb_mkfs_known (opt.mkfs)) {
    fprintf (stderr, PROG ": --mkfs=%s: unknown filesystem; must be xfs, "
             "ext4 or btrfs\n", opt.mkfs);
    return -1;
  }
  if (opt.mount_dir && !opt.mkfs) {
    /* Mounting an unformatted disk cannot work; say so now. */
    fprintf (stderr, PROG ": --mount needs --mkfs\n");
    return -1;
  }
  if (!opt.plugin)
    opt.plugin = getenv ("LARGEBLOCK_PLUGIN");
  if (!opt.plugin || !*opt.plugin)
    opt.plugin = "largeblock";
  opt.nbdkit = getenv ("NBDKIT");
  if (!opt.nbdkit || !*opt.nbdkit)
    opt.nbdkit = "nbdkit";
  return 0;
}

static void
install_signal_handlers (void)
{
  struct sigaction sa;

  memset (&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;    /* no SA_RESTART: waits must see EINTR */
  sigaction (SIGINT, &sa, NULL);
  sigaction (SIGTERM, &sa, NULL);
  sigaction (SIGHUP, &sa, NULL);
  signal (SIGPIPE, SIG_IGN);
}

int
main (int argc, char **argv)
{
  int status = 1;
  const char *tmp;

  if (parse_options (argc, argv) == -1 || validate_params () == -1)
    return 1;
  if (resolve_attach_method () == -1 || check_capabilities () == -1)
    return 1;
  install_signal_handlers ();

  tmp = getenv ("TMPDIR");
  if (!tmp || !*tmp || strlen (tmp) > sizeof workdir / 2)
    tmp = "/tmp";
  snprintf (workdir, sizeof workdir, "%.*s/largeblock-run.XXXXXX",
            (int) (sizeof workdir / 2), tmp);
  if (strlen (workdir) > sizeof workdir - 2 || mkdtemp (workdir) == NULL) {
    fprintf (stderr, PROG ": mkdtemp %s: %m\n", workdir);
    return 1;
  }
  for (unsigned i = 0; i < opt.disks; i++)
    if (set_up_disk ((int) i) == -1)
      goto out;
  export_env ();
  if (opt.command)
    status = run_command ();
  else {
    print_summary ();
    status = wait_for_signal ();
  }
 out:
  if (caught_signal && status == 1)
    fprintf (stderr, PROG ": caught signal %d, tearing down\n",
             caught_signal);
  if (caught_signal)
    status = 128 + caught_signal;
  if (teardown () == -1 && status == 0)
    status = 1;
  return status;
}
