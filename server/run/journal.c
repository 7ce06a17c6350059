/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run: the journal of what a run may have made, and
 * --cleanup, which reads the journals of dead runs and removes what they
 * left.
 *
 * Owns the file "journal" in each run's private directory
 * ($TMPDIR/largeblock-run.XXXXXX, mode 0700).  A run writes one line
 * before each step that creates something outside that directory, one
 * after creating a mount point and one after starting each daemon (the
 * journal cannot name a pid or an inode before it exists):
 *
 *   owner PID STARTTIME      the largeblock-run process (first line)
 *   proc PID STARTTIME EXE   a daemon it started (nbdkit, nbdfuse)
 *   nbd DEV PID              nbd-client PID may connect DEV
 *   mkdir DEV INO DIR        a mount point it created (or --mount's DIR,
 *                            made to hold several), and its identity
 *   mount DIR DEV            DEV may be mounted on DIR
 *
 * A line equal to the one before it is not written again: --crash-explore
 * mounts each crash state on the same directory, often from the same
 * loop device, and the journal says what may exist, not how often.
 *
 * Liveness is a lock, not a pid: the run creates the journal as
 * "journal.new" (O_EXCL, 0600), takes an exclusive open file description
 * lock on it and only then renames it to "journal"; it keeps the lock
 * until it exits (the descriptor is close-on-exec and closed in every
 * child, so no child keeps it: a daemon left running must not make its
 * dead run look alive).  So a "journal" exists only while locked by
 * its run, or after the run ended; --cleanup takes the same lock without
 * waiting, and a lock it cannot take is a live run.  A lock it does take
 * on a journal no longer linked in the directory belongs to a run that
 * just finished normally.  A directory without a journal is a
 * run in its first microseconds (or one killed then, which had made
 * nothing yet): it is left alone, never removed.
 *
 * Trust: --cleanup considers a directory only if it, opened with
 * O_NOFOLLOW, is owned by the caller's uid with mode 0700, and its
 * journal is a regular file of the same owner with mode 0600: only the
 * caller can have written it.  Even so, it acts on an entry only if the
 * kernel still shows what the run recorded: a process by pid, start time
 * and executable (stopped through a pidfd, so never a reused pid); a
 * loop device by a backing file inside the directory; an nbd device by
 * the pid of the nbd-client that connected it; a mount by its device
 * being one of those; a mount point by its device and inode number.  The
 * directory is removed relative to its descriptor, without following a
 * symlink or crossing a mount.
 *
 * Single-threaded.
 */
#include <config.h>

#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kstate.h"
#include "proc.h"
#include "run.h"

#define JOURNAL "journal"
#define JOURNAL_NEW "journal.new"
/* --crash-explore notes an nbdfuse for each crash state it attaches
 * (about 80 bytes): 4 MiB holds some 50000 states.
 */
#define MAX_JOURNAL_BYTES (4 * 1024 * 1024)
#define MAX_LEFTOVER_MOUNTS 64
#define MAX_TREE_DEPTH 8 /* a run makes two levels */

/* This run's journal: open, and locked, for the whole life of the
 * process.  -1 until journal_start.
 */
static int journal_fd = -1;

/* Take the exclusive lock on the journal fd without waiting. */
static int
lock_journal (int fd)
{
  struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

  return fcntl (fd, F_OFD_SETLK, &fl);
}

void
journal_note (const struct run *run, const char *fmt, ...)
{
  /* The last line written: a step repeated for each crash state
   * (explore.c's mounts) adds nothing the journal does not say.
   */
  static char last[PATH_MAX * 2 + 64];
  char line[sizeof last];
  va_list ap;
  int n;

  if (journal_fd == -1)
    return;
  va_start (ap, fmt);
  n = vsnprintf (line, sizeof line - 1, fmt, ap);
  va_end (ap);
  /* A path with a newline would read back as two lines. */
  if (n < 0 || n >= (int) sizeof line - 1 || memchr (line, '\n', n))
    return; /* only --cleanup would miss it */
  line[n++] = '\n';
  line[n] = '\0';
  if (strcmp (line, last) == 0)
    return;
  /* One write to an O_APPEND file: a SIGKILL leaves whole lines. */
  if (write (journal_fd, line, n) != n) {
    verbose (run, "cannot write the journal: %m");
    return;
  }
  memcpy (last, line, n + 1);
}

void
journal_note_proc (const struct run *run, pid_t pid)
{
  static char last[PATH_MAX + 64]; /* the last proc line, not repeated */
  char exe[PATH_MAX], line[sizeof last];
  unsigned long long start;

  if (pid <= 0)
    return;
  start = kstate_process_start_time (pid);
  if (start == 0 || kstate_process_exe (pid, exe, sizeof exe) == -1)
    return; /* already gone */
  snprintf (line, sizeof line, "proc %d %llu %s", (int) pid, start, exe);
  if (strcmp (line, last) == 0)
    return;
  journal_note (run, "%s", line);
  memcpy (last, line, sizeof last);
}

void
journal_note_mkdir (const struct run *run, const char *dir)
{
  struct stat st;

  if (lstat (dir, &st) == 0 && S_ISDIR (st.st_mode))
    journal_note (run, "mkdir %ju %ju %s", (uintmax_t) st.st_dev,
                  (uintmax_t) st.st_ino, dir);
}

/* Create the journal locked, under a name --cleanup ignores, then give
 * it its name: see the top of this file for why.
 */
int
journal_start (const struct run *run)
{
  const char *step = "open";
  int dir_fd, fd = -1, saved_errno;
  pid_t self = getpid ();

  dir_fd = open (run->workdir,
                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd == -1)
    goto err;
  step = "chmod"; /* mkdtemp's 0700 is less the umask */
  if (fchmod (dir_fd, 0700) == -1)
    goto err;
  step = "create " JOURNAL_NEW " in";
  fd = openat (dir_fd, JOURNAL_NEW,
               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC,
               0600);
  if (fd == -1 || fchmod (fd, 0600) == -1)
    goto err;
  step = "lock the journal in";
  if (lock_journal (fd) == -1)
    goto err;
  step = "rename the journal in";
  if (renameat (dir_fd, JOURNAL_NEW, dir_fd, JOURNAL) == -1)
    goto err;
  close (dir_fd);
  journal_fd = fd;
  journal_note (run, "owner %d %llu", (int) self,
                kstate_process_start_time (self));
  return 0;

err:
  saved_errno = errno;
  if (fd >= 0) {
    unlinkat (dir_fd, JOURNAL_NEW, 0);
    close (fd);
  }
  if (dir_fd >= 0)
    close (dir_fd);
  errno = saved_errno;
  fprintf (stderr, PROG ": cannot %s %s: %m\n", step, run->workdir);
  return -1;
}

/* ---- --cleanup ---- */

/* One dead run's directory, its journal and what became of it. */
struct leftovers {
  const struct run *run;
  char dir[PATH_MAX]; /* by its canonical path, as the kernel names it */
  int dir_fd;
  char *journal; /* its text, NUL-terminated */
  int failures;
};

/* Call fn for each journal line starting with "word ", newest first:
 * what a run made last is undone first (a mount point before the
 * directory it made to hold it, nbdfuse before its nbdkit).
 */
static void
for_each_note (struct leftovers *l, const char *word,
               void (*fn) (struct leftovers *l, char *rest))
{
  size_t len = strlen (word), n = 0;
  char *line, *save = NULL;
  char *copy = strdup (l->journal);
  char **lines = calloc (strlen (l->journal) / 2 + 1, sizeof *lines);

  if (copy == NULL || lines == NULL)
    goto out;
  for (line = strtok_r (copy, "\n", &save); line;
       line = strtok_r (NULL, "\n", &save))
    if (strncmp (line, word, len) == 0 && line[len] == ' ')
      lines[n++] = line + len + 1;
  while (n > 0)
    fn (l, lines[--n]);
out:
  free (lines);
  free (copy);
}

static bool
is_under (const char *path, const char *dir)
{
  size_t len = strlen (dir);

  return strncmp (path, dir, len) == 0 && path[len] == '/';
}

static int
is_this_device (const char *dev, void *arg)
{
  return strcmp (dev, arg) == 0;
}

/* Does the kernel say the run's nbd-client connected dev? */
static bool
nbd_noted_as_ours (struct leftovers *l, const char *dev)
{
  char *line, *save = NULL, *copy = strdup (l->journal);
  char noted[64];
  long pid;
  bool ours = false;

  if (copy == NULL)
    return false;
  for (line = strtok_r (copy, "\n", &save); line && !ours;
       line = strtok_r (NULL, "\n", &save))
    ours = sscanf (line, "nbd %63s %ld", noted, &pid) == 2 &&
      strcmp (noted, dev) == 0 && pid > 0 && kstate_nbd_owner (dev) == pid;
  free (copy);
  return ours;
}

/* Is dev (a path) a device the dead run attached?  A loop device backed
 * by a file in its directory, or an nbd device its nbd-client connected.
 */
static bool
device_is_ours (struct leftovers *l, const char *dev)
{
  if (kstate_for_each_loop (l->dir, true, is_this_device, (void *) dev))
    return true;
  return nbd_noted_as_ours (l, dev);
}

/* For a FUSE mount: its file still attached as a loop device that
 * someone uses (mounted it elsewhere, say).
 */
struct loop_user {
  char dev[64];
  char what[PATH_MAX + 64];
};

static int
find_loop_user (const char *dev, void *arg)
{
  struct loop_user *u = arg;

  if (!kstate_device_user (dev, u->what, sizeof u->what))
    return 0;
  snprintf (u->dev, sizeof u->dev, "%s", dev);
  return 1;
}

/* Why dir is busy, as far as the kernel says: " (WHY)". */
static void
busy_reason (const char *dir, char *why, size_t len)
{
  struct loop_user u;

  if (kstate_for_each_loop (dir, true, find_loop_user, &u))
    snprintf (why, len, " (%s on its file is %s: undo that first)", u.dev,
              u.what);
  else
    snprintf (why, len, " (a process still uses it: see fuser -vm %s)", dir);
}

static bool
unmount_leftover (struct leftovers *l, const char *dir)
{
  char why[2 * PATH_MAX] = "";
  int saved_errno;

  verbose (l->run, "unmounting %s", dir);
  /* A FUSE mount under a loop device detached a moment ago can be busy
   * for a while: retried as the live teardown does. */
  if (kstate_unmount_retrying (dir, NULL, NULL) == 0)
    return true;
  saved_errno = errno;
  if (errno == EBUSY)
    busy_reason (dir, why, sizeof why);
  errno = saved_errno;
  fprintf (stderr, PROG ": --cleanup: cannot unmount %s: %m%s\n", dir, why);
  l->failures++;
  return false;
}

/* The filesystem mounts of the dead run: under its directory, or noted
 * in the journal and mounted from one of its devices.
 */
struct mount_list {
  struct leftovers *l;
  bool fuse; /* FUSE mounts instead of the others */
  int n;
  char *dirs[MAX_LEFTOVER_MOUNTS];
};

/* "mount DIR DEV": DIR may hold spaces, DEV does not. */
static bool
noted_mount (struct leftovers *l, const char *dir)
{
  char *line, *dev, *save = NULL, *copy = strdup (l->journal);
  bool ours = false;

  if (copy == NULL)
    return false;
  for (line = strtok_r (copy, "\n", &save); line && !ours;
       line = strtok_r (NULL, "\n", &save)) {
    if (strncmp (line, "mount ", 6) != 0 ||
        (dev = strrchr (line + 6, ' ')) == NULL)
      continue;
    *dev++ = '\0';
    ours = strcmp (line + 6, dir) == 0 && kstate_is_mounted_from (dir, dev) &&
      device_is_ours (l, dev);
  }
  free (copy);
  return ours;
}

static int
collect_mount (const struct kstate_mount *m, void *arg)
{
  struct mount_list *ml = arg;
  bool fuse = strncmp (m->fstype, "fuse", 4) == 0;

  if (fuse != ml->fuse || ml->n == MAX_LEFTOVER_MOUNTS)
    return 0;
  if (is_under (m->dir, ml->l->dir) || (!fuse && noted_mount (ml->l, m->dir)))
    ml->dirs[ml->n++] = strdup (m->dir);
  return 0;
}

/* Newest first, so that nested mounts go before their parents. */
static void
unmount_leftovers (struct leftovers *l, bool fuse)
{
  struct mount_list ml = { .l = l, .fuse = fuse };

  kstate_for_each_mount (collect_mount, &ml);
  for (int i = ml.n - 1; i >= 0; i--) {
    if (ml.dirs[i])
      unmount_leftover (l, ml.dirs[i]);
    free (ml.dirs[i]);
  }
}

static int
detach_leftover_loop (const char *dev, void *arg)
{
  struct leftovers *l = arg;
  char *argv[] = { "losetup", "-d", (char *) dev, NULL };

  verbose (l->run, "detaching %s", dev);
  if (run_teardown_step ((struct run *) l->run, argv) == -1)
    l->failures++;
  return 0;
}

static void
disconnect_leftover_nbd (struct leftovers *l, char *rest)
{
  char dev[64];
  char *argv[] = { "nbd-client", "-d", dev, NULL };
  long pid;

  if (sscanf (rest, "%63s %ld", dev, &pid) != 2 || pid <= 0 ||
      kstate_nbd_owner (dev) != pid)
    return;
  verbose (l->run, "disconnecting %s", dev);
  if (run_teardown_step ((struct run *) l->run, argv) == -1)
    l->failures++;
}

/* Has the process behind pidfd ended (within timeout_ms)? */
static bool
pidfd_exited (int pidfd, int timeout_ms)
{
  struct pollfd p = { .fd = pidfd, .events = POLLIN };

  return poll (&p, 1, timeout_ms) == 1;
}

/* Is pid still the process the journal recorded: same start time, same
 * executable?
 */
static bool
process_is_noted (long pid, unsigned long long start, const char *exe)
{
  char now[PATH_MAX];

  return kstate_process_start_time (pid) == start &&
    kstate_process_exe (pid, now, sizeof now) == 0 && strcmp (now, exe) == 0;
}

/* "proc PID STARTTIME EXE".  The pidfd is opened before the check, so
 * the signals go to the process checked, or to nobody if it has ended
 * since (its pid may be someone else's by then).
 */
static void
stop_noted_process (struct leftovers *l, char *rest)
{
  unsigned long long start;
  long pid;
  int n = 0, pidfd;

  if (sscanf (rest, "%ld %llu %n", &pid, &start, &n) != 2 || n == 0 ||
      pid <= 1 || pid == getpid ())
    return;
  pidfd = pidfd_open ((pid_t) pid, 0);
  if (pidfd == -1 || pidfd_exited (pidfd, 0)) {
    if (pidfd >= 0)
      close (pidfd);
    return; /* gone, or a zombie about to go */
  }
  if (!process_is_noted (pid, start, rest + n)) {
    verbose (l->run, "pid %ld is no longer the run's %s; left alone", pid,
             rest + n);
    close (pidfd);
    return;
  }
  verbose (l->run, "stopping %s (pid %ld)", rest + n, pid);
  pidfd_send_signal (pidfd, SIGTERM, NULL, 0);
  if (!pidfd_exited (pidfd, proc_grace_ms ())) {
    pidfd_send_signal (pidfd, SIGKILL, NULL, 0);
    if (!pidfd_exited (pidfd, proc_grace_ms ())) {
      fprintf (stderr, PROG ": --cleanup: pid %ld survives SIGKILL\n", pid);
      l->failures++;
    }
  }
  close (pidfd);
}

/* "mkdir DEV INO DIR": removed only if DIR is still that directory,
 * empty and not a mount point.
 */
static void
remove_noted_dir (struct leftovers *l, char *rest)
{
  uintmax_t dev, ino;
  char *dir, *base, *slash;
  struct stat st;
  int n = 0, parent;

  if (sscanf (rest, "%ju %ju %n", &dev, &ino, &n) != 2 || n == 0)
    return;
  dir = rest + n;
  slash = strrchr (dir, '/');
  if (slash == NULL || slash[1] == '\0' || kstate_is_mount_point (dir))
    return;
  base = slash + 1;
  *slash = '\0';
  parent = open (slash == dir ? "/" : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  *slash = '/';
  if (parent == -1)
    return;
  if (fstatat (parent, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISDIR (st.st_mode) && st.st_dev == dev && st.st_ino == ino &&
      unlinkat (parent, base, AT_REMOVEDIR) == 0)
    verbose (l->run, "removed %s", dir);
  close (parent);
}

static int
find_mount_under (const struct kstate_mount *m, void *dir)
{
  return is_under (m->dir, dir);
}

/* Remove what dir_fd (on device dev) holds, depth first, by names
 * relative to it: never following a symlink (unlinkat removes the link
 * itself, openat O_NOFOLLOW refuses one) and never entering another
 * filesystem.  Skips "journal" at the top.  -1 if anything stays.
 */
static int
remove_tree_at (int dir_fd, dev_t dev, int depth)
{
  struct dirent *e;
  struct stat st, opened;
  int fd, r = 0;
  DIR *d;

  fd = dup (dir_fd);
  if (fd == -1 || (d = fdopendir (fd)) == NULL) {
    if (fd >= 0)
      close (fd);
    return -1;
  }
  while ((e = readdir (d)) != NULL) {
    if (strcmp (e->d_name, ".") == 0 || strcmp (e->d_name, "..") == 0 ||
        (depth == 0 && strcmp (e->d_name, JOURNAL) == 0))
      continue;
    if (fstatat (dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1)
      continue; /* gone meanwhile */
    if (!S_ISDIR (st.st_mode)) {
      if (unlinkat (dir_fd, e->d_name, 0) == -1 && errno != ENOENT)
        r = -1;
      continue;
    }
    fd = -1;
    if (st.st_dev == dev && depth < MAX_TREE_DEPTH)
      fd = openat (dir_fd, e->d_name,
                   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd == -1 || fstat (fd, &opened) == -1 || opened.st_dev != dev ||
        opened.st_ino != st.st_ino || remove_tree_at (fd, dev, depth + 1) ||
        unlinkat (dir_fd, e->d_name, AT_REMOVEDIR) == -1)
      r = -1;
    if (fd >= 0)
      close (fd);
  }
  closedir (d);
  return r;
}

/* The private directory, unless something is still mounted in it; the
 * journal goes last, so that what cannot be removed stays recorded.
 */
static void
remove_run_dir (struct leftovers *l, int base_fd, const char *name)
{
  struct stat st;

  if (kstate_for_each_mount (find_mount_under, l->dir) != 0)
    return; /* already reported */
  if (fstat (l->dir_fd, &st) == -1 ||
      remove_tree_at (l->dir_fd, st.st_dev, 0) ||
      unlinkat (l->dir_fd, JOURNAL, 0) == -1 ||
      unlinkat (base_fd, name, AT_REMOVEDIR) == -1) {
    fprintf (stderr, PROG ": --cleanup: cannot remove all of %s: %m\n",
             l->dir);
    l->failures++;
  }
}

static void
clean_dead_run (struct leftovers *l, int base_fd, const char *name)
{
  int before = l->failures;

  unmount_leftovers (l, false);
  if (l->failures == before) {
    kstate_for_each_loop (l->dir, true, detach_leftover_loop, l);
    for_each_note (l, "nbd", disconnect_leftover_nbd);
  }
  if (l->failures == before)
    unmount_leftovers (l, true);
  if (l->failures == before)
    for_each_note (l, "proc", stop_noted_process);
  for_each_note (l, "mkdir", remove_noted_dir);
  if (l->failures == before)
    remove_run_dir (l, base_fd, name);
}

/* Open base/name as a run's directory if the caller owns it and it is
 * private (0700), not through a symlink; else -1, saying why with
 * --verbose.
 */
static int
open_run_dir (const struct run *run, int base_fd, const char *name,
              const char *path)
{
  struct stat st;
  int fd;

  fd = openat (base_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd == -1) {
    verbose (run, "%s: %m; left alone", path);
    return -1;
  }
  if (fstat (fd, &st) == -1 || st.st_uid != geteuid () ||
      (st.st_mode & 07777) != 0700) {
    verbose (run, "%s: not a directory of ours with mode 0700; left alone",
             path);
    close (fd);
    return -1;
  }
  return fd;
}

/* Open the journal for its lock (which needs it writable) if it is a
 * regular file of ours with mode 0600; else -1, saying why.
 */
static int
open_journal (const struct run *run, int dir_fd, const char *path)
{
  struct stat st;
  int fd;

  fd = openat (dir_fd, JOURNAL,
               O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd == -1 && errno == ENOENT)
    verbose (run, "%s: no journal yet: a run starting; left alone", path);
  else if (fd == -1)
    verbose (run, "%s: its journal: %m; left alone", path);
  if (fd == -1)
    return -1;
  if (fstat (fd, &st) == -1 || !S_ISREG (st.st_mode) ||
      st.st_uid != geteuid () || (st.st_mode & 07777) != 0600) {
    verbose (run,
             "%s: its journal is not a file of ours with mode 0600; "
             "left alone",
             path);
    close (fd);
    return -1;
  }
  return fd;
}

/* Is name in dir_fd still the file (or directory) open as fd? */
static bool
still_named (int dir_fd, const char *name, int fd)
{
  struct stat named, opened;

  return fstat (fd, &opened) == 0 &&
    fstatat (dir_fd, name, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
    named.st_dev == opened.st_dev && named.st_ino == opened.st_ino;
}

static char *
read_journal (int fd)
{
  char *text = malloc (MAX_JOURNAL_BYTES + 1);
  ssize_t n;

  if (text == NULL)
    return NULL;
  n = pread (fd, text, MAX_JOURNAL_BYTES, 0);
  if (n < 0) {
    free (text);
    return NULL;
  }
  text[n] = '\0';
  return text;
}

static void
clean_run_dir (const struct run *run, int base_fd, const char *base,
               const char *name, int *failures, unsigned *dead_runs)
{
  struct leftovers l = { .run = run, .dir_fd = -1 };
  int fd = -1;

  if (snprintf (l.dir, sizeof l.dir, "%s/%s", base, name) >=
      (int) sizeof l.dir - 16)
    return;
  l.dir_fd = open_run_dir (run, base_fd, name, l.dir);
  if (l.dir_fd == -1)
    return;
  fd = open_journal (run, l.dir_fd, l.dir);
  if (fd == -1)
    goto out;
  if (lock_journal (fd) == -1) {
    verbose (run, "%s: its largeblock-run is still running; left alone",
             l.dir);
    goto out;
  }
  if (!still_named (l.dir_fd, JOURNAL, fd)) {
    verbose (run, "%s: its largeblock-run just ended; left alone", l.dir);
    goto out;
  }
  /* The mount table and loop devices name it by path: that path must
   * still be this directory. */
  if (!still_named (base_fd, name, l.dir_fd)) {
    verbose (run, "%s: renamed meanwhile; left alone", l.dir);
    goto out;
  }
  l.journal = read_journal (fd);
  if (l.journal == NULL) {
    fprintf (stderr, PROG ": --cleanup: cannot read %s/" JOURNAL ": %m\n",
             l.dir);
    l.failures++;
    goto out;
  }
  fprintf (stderr, PROG ": cleaning up %s\n", l.dir);
  (*dead_runs)++;
  clean_dead_run (&l, base_fd, name);
out:
  free (l.journal);
  if (fd >= 0)
    close (fd); /* releases the lock */
  close (l.dir_fd);
  *failures += l.failures;
}

/* A run's directory is named by mkdtemp: "largeblock-run." and 6 more. */
static bool
is_run_dir_name (const char *name)
{
  return strncmp (name, "largeblock-run.", 15) == 0 && strlen (name) == 21;
}

int
cleanup_dead_runs (const struct run *run)
{
  const char *tmp = getenv ("TMPDIR");
  char base[PATH_MAX];
  struct dirent *e;
  int failures = 0, base_fd;
  unsigned dead_runs = 0;
  DIR *d;

  if (!tmp || !*tmp)
    tmp = "/tmp";
  if (realpath (tmp, base) == NULL ||
      (base_fd = open (base, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
    fprintf (stderr, PROG ": --cleanup: %s: %m\n", tmp);
    return 1;
  }
  d = fdopendir (dup (base_fd));
  if (d == NULL) {
    fprintf (stderr, PROG ": --cleanup: %s: %m\n", tmp);
    close (base_fd);
    return 1;
  }
  while ((e = readdir (d)) != NULL)
    if (is_run_dir_name (e->d_name))
      clean_run_dir (run, base_fd, base, e->d_name, &failures, &dead_runs);
  closedir (d);
  close (base_fd);
  if (dead_runs == 0)
    verbose (run, "--cleanup: no dead runs found in %s", base);
  return failures ? 1 : 0;
}
