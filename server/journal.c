/* largeblock-run: the journal of what a run may have made, and
 * --cleanup, which reads the journals of dead runs and removes what they
 * left.
 *
 * Owns the file "journal" in each run's private directory
 * ($TMPDIR/largeblock-run.XXXXXX).  A run writes one line before each
 * step that creates something outside that directory:
 *
 *   owner PID STARTTIME    the largeblock-run process (first line)
 *   nbd DEV PID            nbd-client PID may connect DEV
 *   mkdir DIR              a mount point it created
 *   mount DIR DEV          DEV may be mounted on DIR
 *
 * Everything else a run makes is found by its naming: mounts under the
 * directory, loop devices backed by files in it, and processes with a
 * path in it among their arguments (nbdkit, nbdfuse).  Only SIGKILL of
 * largeblock-run leaves anything behind; --cleanup skips runs whose
 * owner is alive, and touches nothing it cannot tie to a dead run.
 *
 * Single-threaded.
 */
#include <config.h>

#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "kstate.h"
#include "proc.h"
#include "run.h"

#define MAX_LEFTOVER_MOUNTS 64

/* The start time of pid (field 22 of /proc/PID/stat), 0 if none. */
static unsigned long long
start_time_of (long pid)
{
  char path[64], buf[1024], *p;
  unsigned long long t = 0;
  FILE *fp;
  size_t n;

  snprintf (path, sizeof path, "/proc/%ld/stat", pid);
  fp = fopen (path, "r");
  if (fp == NULL)
    return 0;
  n = fread (buf, 1, sizeof buf - 1, fp);
  fclose (fp);
  buf[n] = '\0';
  p = strrchr (buf, ')'); /* the command name may hold anything */
  if (p == NULL ||
      sscanf (p + 1,
              " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
              "%*u %*u %*d %*d %*d %*d %*d %*d %llu",
              &t) != 1)
    return 0;
  return t;
}

static void
journal_path (const char *workdir, char *path, size_t len)
{
  if (snprintf (path, len, "%s/journal", workdir) >= (int) len)
    path[0] = '\0';
}

void
journal_note (const struct run *run, const char *fmt, ...)
{
  char path[PATH_MAX];
  va_list ap;
  FILE *fp;

  journal_path (run->workdir, path, sizeof path);
  fp = fopen (path, "a");
  if (fp == NULL)
    return; /* only --cleanup would miss it */
  va_start (ap, fmt);
  vfprintf (fp, fmt, ap);
  va_end (ap);
  fputc ('\n', fp);
  fclose (fp);
}

int
journal_start (const struct run *run)
{
  pid_t self = getpid ();

  journal_note (run, "owner %d %llu", (int) self, start_time_of (self));
  return 0;
}

/* ---- --cleanup ---- */

/* What one dead run's journal says. */
struct leftovers {
  const struct run *run;
  char dir[PATH_MAX];
  FILE *journal;
  int failures;
};

/* Call fn for each journal line starting with "word ". */
static void
for_each_note (struct leftovers *l, const char *word,
               void (*fn) (struct leftovers *l, char *rest))
{
  char line[PATH_MAX * 2 + 64];
  size_t len = strlen (word);

  rewind (l->journal);
  while (fgets (line, sizeof line, l->journal)) {
    line[strcspn (line, "\n")] = '\0';
    if (strncmp (line, word, len) == 0 && line[len] == ' ')
      fn (l, line + len + 1);
  }
}

static bool
owner_alive (struct leftovers *l)
{
  char line[128];
  long pid;
  unsigned long long t;

  rewind (l->journal);
  if (fgets (line, sizeof line, l->journal) == NULL ||
      sscanf (line, "owner %ld %llu", &pid, &t) != 2)
    return false;
  return start_time_of (pid) == t;
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

static bool
nbd_noted_as_ours (struct leftovers *l, const char *dev)
{
  char line[PATH_MAX], noted[64];
  long pid;

  rewind (l->journal);
  while (fgets (line, sizeof line, l->journal))
    if (sscanf (line, "nbd %63s %ld", noted, &pid) == 2 &&
        strcmp (noted, dev) == 0 && kstate_nbd_owner (dev) == pid)
      return true;
  return false;
}

/* Is dev (a path) a device the dead run attached? */
static bool
device_is_ours (struct leftovers *l, const char *dev)
{
  if (kstate_for_each_loop (l->dir, true, is_this_device, (void *) dev))
    return true;
  return nbd_noted_as_ours (l, dev);
}

static bool
unmount_leftover (struct leftovers *l, const char *dir)
{
  verbose (l->run, "unmounting %s", dir);
  if (umount (dir) == 0)
    return true;
  fprintf (stderr, PROG ": --cleanup: cannot unmount %s: %m%s\n", dir,
           errno == EBUSY ? " (is the dead run's COMMAND still using it?)"
                          : "");
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

static bool
noted_mount (struct leftovers *l, const char *dir)
{
  char line[PATH_MAX * 2 + 16], noted_dir[PATH_MAX], dev[64];

  rewind (l->journal);
  while (fgets (line, sizeof line, l->journal))
    if (sscanf (line, "mount %4095s %63s", noted_dir, dev) == 2 &&
        strcmp (noted_dir, dir) == 0 && kstate_is_mounted_from (dir, dev) &&
        device_is_ours (l, dev))
      return true;
  return false;
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

  if (sscanf (rest, "%63s %ld", dev, &pid) != 2 ||
      kstate_nbd_owner (dev) != pid)
    return;
  verbose (l->run, "disconnecting %s", dev);
  if (run_teardown_step ((struct run *) l->run, argv) == -1)
    l->failures++;
}

/* Does process pid have an argument naming a file under dir? */
static bool
process_refers_to (long pid, const char *dir)
{
  char path[64], args[8192];
  size_t n;
  FILE *fp;

  snprintf (path, sizeof path, "/proc/%ld/cmdline", pid);
  fp = fopen (path, "r");
  if (fp == NULL)
    return false;
  n = fread (args, 1, sizeof args - 1, fp);
  fclose (fp);
  args[n] = '\0';
  for (size_t i = 0; i < n; i += strlen (args + i) + 1)
    if (is_under (args + i, dir))
      return true;
  return false;
}

static bool
process_gone (void *pid)
{
  return kill (*(pid_t *) pid, 0) == -1 && errno == ESRCH;
}

static void
stop_leftover_process (struct leftovers *l, pid_t pid)
{
  verbose (l->run, "stopping pid %d", (int) pid);
  kill (pid, SIGTERM);
  if (proc_poll_until (process_gone, &pid, PROC_GRACE_MS, 10, false))
    return;
  kill (pid, SIGKILL);
  if (!proc_poll_until (process_gone, &pid, PROC_GRACE_MS, 10, false)) {
    fprintf (stderr, PROG ": --cleanup: pid %d survives SIGKILL\n", (int) pid);
    l->failures++;
  }
}

static void
stop_leftover_processes (struct leftovers *l)
{
  DIR *proc = opendir ("/proc");
  struct dirent *e;
  char *end;
  long pid;

  if (proc == NULL)
    return;
  while ((e = readdir (proc)) != NULL) {
    pid = strtol (e->d_name, &end, 10);
    if (*end || pid <= 1 || pid == getpid ())
      continue;
    if (process_refers_to (pid, l->dir))
      stop_leftover_process (l, (pid_t) pid);
  }
  closedir (proc);
}

static void
remove_noted_dir (struct leftovers *l, char *dir)
{
  if (!kstate_is_mount_point (dir))
    rmdir (dir);
}

static int
remove_entry (const char *path, const struct stat *st, int flag,
              struct FTW *ftw)
{
  return remove (path) == 0 || errno == ENOENT ? 0 : -1;
}

static int
find_mount_under (const struct kstate_mount *m, void *dir)
{
  return is_under (m->dir, dir);
}

/* The private directory, unless something is still mounted in it. */
static void
remove_run_dir (struct leftovers *l)
{
  if (kstate_for_each_mount (find_mount_under, l->dir) != 0)
    return; /* already reported */
  if (nftw (l->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) ==
      -1) {
    fprintf (stderr, PROG ": --cleanup: cannot remove %s: %m\n", l->dir);
    l->failures++;
  }
}

static void
clean_dead_run (struct leftovers *l)
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
    stop_leftover_processes (l);
  for_each_note (l, "mkdir", remove_noted_dir);
  if (l->failures == before)
    remove_run_dir (l);
}

static void
clean_run_dir (const struct run *run, const char *dir, int *failures)
{
  struct leftovers l = { .run = run };
  char path[PATH_MAX];

  if (snprintf (l.dir, sizeof l.dir, "%s", dir) >= (int) sizeof l.dir)
    return;
  journal_path (dir, path, sizeof path);
  l.journal = fopen (path, "r");
  if (l.journal == NULL) {
    if (rmdir (dir) == -1)
      verbose (run, "%s: no journal; left alone", dir);
    return;
  }
  if (owner_alive (&l))
    verbose (run, "%s: its largeblock-run is still running; left alone", dir);
  else {
    fprintf (stderr, PROG ": cleaning up %s\n", dir);
    clean_dead_run (&l);
  }
  fclose (l.journal);
  *failures += l.failures;
}

int
cleanup_dead_runs (const struct run *run)
{
  const char *tmp = getenv ("TMPDIR");
  char base[PATH_MAX], dir[PATH_MAX];
  struct dirent *e;
  int failures = 0;
  DIR *d;

  if (!tmp || !*tmp)
    tmp = "/tmp";
  if (realpath (tmp, base) == NULL || (d = opendir (base)) == NULL) {
    fprintf (stderr, PROG ": --cleanup: %s: %m\n", tmp);
    return 1;
  }
  while ((e = readdir (d)) != NULL) {
    if (strncmp (e->d_name, "largeblock-run.", 15) != 0 ||
        strlen (e->d_name) != 21)
      continue;
    if (snprintf (dir, sizeof dir, "%s/%s", base, e->d_name) >=
        (int) sizeof dir - 16)
      continue;
    clean_run_dir (run, dir, &failures);
  }
  closedir (d);
  return failures ? 1 : 0;
}
