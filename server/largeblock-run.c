/* largeblock-run: attach largeblock disks to the kernel, optionally make
 * a filesystem and mount it, run a command, and always tear down.
 *
 * Owns every resource it creates (temporary directory, nbdkit servers,
 * nbdfuse mounts, loop devices, filesystem mounts) in the per-disk
 * struct disk, and undoes them in reverse order in teardown(), which runs
 * on success, on any failure and after SIGINT/SIGTERM/SIGHUP.  Only PIDs
 * this program started are ever signalled.
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

/* Start argv in the background.  stdout_fd >= 0 replaces its stdout.
 * drop_caps: clear every capability (and the bounding set) before exec
 * and lock them, so even root cannot regain any.
 */
static pid_t
spawn (char *const argv[], int stdout_fd, bool drop_caps)
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

/* Run argv to completion; 0 if it exited 0, else print why and -1. */
static int
run (char *const argv[])
{
  int status;
  pid_t pid;

  if (opt.verbose) {
    fprintf (stderr, PROG ": running");
    for (int i = 0; argv[i]; i++)
      fprintf (stderr, " %s", argv[i]);
    fputc ('\n', stderr);
  }
  pid = spawn (argv, -1, false);
  if (pid == -1)
    return -1;
  status = wait_forwarding (pid);
  if (status != -1 && WIFEXITED (status) && WEXITSTATUS (status) == 0)
    return 0;
  if (status != -1 && WIFSIGNALED (status))
    fprintf (stderr, PROG ": %s killed by signal %d\n", argv[0],
             WTERMSIG (status));
  else if (status != -1)
    fprintf (stderr, PROG ": %s failed with exit status %d\n", argv[0],
             WEXITSTATUS (status));
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
  pid = spawn (argv, fds[1], false);
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
  if (status == -1 || !WIFEXITED (status) || WEXITSTATUS (status) != 0) {
    fprintf (stderr, PROG ": %s failed\n", argv[0]);
    return -1;
  }
  return 0;
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

  *pid = spawn (argv, -1, drop_caps);
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
    char *argv[] = { "losetup", "-d", d->dev, NULL };
    verbose ("detaching %s", d->dev);
    if (run (argv) == 0)
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
           "(needed to attach loop devices and mount); nothing attached\n");
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
  FILE *fp;

  snprintf (path, sizeof path, "/sys/block/%s/queue/logical_block_size",
            strrchr (dev, '/') + 1);
  fp = fopen (path, "r");
  if (fp == NULL || fscanf (fp, "%lu", &got) != 1) {
    fprintf (stderr, PROG ": cannot read %s\n", path);
    if (fp)
      fclose (fp);
    return -1;
  }
  fclose (fp);
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

static bool
nbd_available (void)
{
  return access ("/sys/module/nbd", F_OK) == 0;
}

static int
resolve_attach_method (void)
{
  if (strcmp (opt.attach, "auto") == 0)
    opt.attach = nbd_available () ? "nbd" : "loop";
  if (strcmp (opt.attach, "loop") == 0)
    return 0;
  if (strcmp (opt.attach, "nbd") == 0) {
    /* nbd-client takes -b <= 4096 only and ignores NBD block sizes, so it
     * cannot give the kernel a larger logical block size.  Refuse rather
     * than attach a device with the wrong geometry.
     */
    if (!nbd_available ()) {
      fprintf (stderr, PROG ": --attach=nbd: the kernel nbd module is not "
               "loaded (/sys/module/nbd missing)\n");
      return -1;
    }
    if (geom.logical_bytes > 4096) {
      fprintf (stderr, PROG ": --attach=nbd: logical-blksize %u is above "
               "nbd-client's 4096-byte limit; use --attach=loop\n",
               geom.logical_bytes);
      return -1;
    }
    fprintf (stderr, PROG ": --attach=nbd is not implemented yet; "
             "use --attach=loop\n");
    return -1;
  }
  fprintf (stderr, PROG ": --attach=%s: must be auto, nbd or loop\n",
           opt.attach);
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
  if (attach_loop (d, idx) == -1 || caught_signal)
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
