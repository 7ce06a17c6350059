/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run: what the kernel says exists (see kstate.h). */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "kstate.h"
#include "proc.h"

#define BUSY_RETRIES 25 /* x BUSY_RETRY_MS: a busy unmount gets 5 s */
#define BUSY_RETRY_MS 200
#define EXCL_RETRIES 10 /* x EXCL_RETRY_MS: a held device is held 1 s on */
#define EXCL_RETRY_MS 100

void
kstate_block_attr_path (char *path, size_t len, const char *dev,
                        const char *attr)
{
  const char *slash = strrchr (dev, '/');

  snprintf (path, len, "/sys/block/%s/%s", slash ? slash + 1 : dev, attr);
}

int
kstate_read_block_attr (const char *dev, const char *attr, unsigned long *val)
{
  char path[PATH_MAX];
  FILE *fp;
  int r = 0, saved_errno;

  kstate_block_attr_path (path, sizeof path, dev, attr);
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

int
kstate_write_block_attr (const char *dev, const char *attr, unsigned long val)
{
  char path[PATH_MAX];
  FILE *fp;

  kstate_block_attr_path (path, sizeof path, dev, attr);
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

long
kstate_nbd_owner (const char *dev)
{
  unsigned long pid;

  if (kstate_read_block_attr (dev, "pid", &pid) == 0)
    return (long) pid;
  return errno == ENOENT ? 0 : -1;
}

/* The backing file of /sys/block/NAME, without the newline; "" if none. */
static void
loop_backing_file (const char *name, char *file, size_t len)
{
  char path[PATH_MAX];
  FILE *fp;

  file[0] = '\0';
  snprintf (path, sizeof path, "/sys/block/%s/loop/backing_file", name);
  fp = fopen (path, "r");
  if (fp == NULL)
    return;
  if (fgets (file, (int) len, fp) == NULL)
    file[0] = '\0';
  file[strcspn (file, "\n")] = '\0';
  fclose (fp);
}

static bool
backing_matches (const char *file, const char *backing, bool under_dir)
{
  size_t len = strlen (backing);

  if (!under_dir)
    return strcmp (file, backing) == 0;
  return strncmp (file, backing, len) == 0 && file[len] == '/';
}

int
kstate_for_each_loop (const char *backing, bool under_dir,
                      int (*fn) (const char *dev, void *arg), void *arg)
{
  char file[PATH_MAX], dev[300];
  struct dirent *e;
  DIR *dir = opendir ("/sys/block");
  int r = 0;

  if (dir == NULL)
    return 0;
  while (r == 0 && (e = readdir (dir)) != NULL) {
    if (strncmp (e->d_name, "loop", 4) != 0)
      continue;
    loop_backing_file (e->d_name, file, sizeof file);
    if (file[0] && backing_matches (file, backing, under_dir)) {
      snprintf (dev, sizeof dev, "/dev/%s", e->d_name);
      r = fn (dev, arg);
    }
  }
  closedir (dir);
  return r;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void
unescape_octal (char *s)
{
  char *out = s;

  for (; *s; s++) {
    if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
        s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
      *out++ = (char) ((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
      s += 3;
    }
    else
      *out++ = *s;
  }
  *out = '\0';
}

/* Split one mountinfo line into m; false if it does not parse. */
static bool
parse_mountinfo_line (char *line, struct kstate_mount *m)
{
  unsigned major, minor;
  char *save = NULL, *field, *dir = NULL, *source;

  field = strtok_r (line, " ", &save);                /* mount id */
  field = field ? strtok_r (NULL, " ", &save) : NULL; /* parent id */
  field = field ? strtok_r (NULL, " ", &save) : NULL; /* major:minor */
  if (field == NULL || sscanf (field, "%u:%u", &major, &minor) != 2)
    return false;
  field = strtok_r (NULL, " ", &save); /* root */
  dir = field ? strtok_r (NULL, " ", &save) : NULL;
  if (dir == NULL)
    return false;
  while ((field = strtok_r (NULL, " ", &save)) != NULL &&
         strcmp (field, "-") != 0)
    ; /* options, tags */
  field = field ? strtok_r (NULL, " ", &save) : NULL;
  source = field ? strtok_r (NULL, " ", &save) : NULL;
  unescape_octal (dir);
  if (source)
    unescape_octal (source);
  m->dir = dir;
  m->fstype = field ? field : "";
  m->source = source ? source : "";
  m->dev = makedev (major, minor);
  return true;
}

int
kstate_for_each_mount (int (*fn) (const struct kstate_mount *m, void *arg),
                       void *arg)
{
  FILE *fp = fopen ("/proc/self/mountinfo", "r");
  char *line = NULL;
  size_t cap = 0;
  struct kstate_mount m;
  int r = 0;

  if (fp == NULL)
    return -1;
  while (r == 0 && getline (&line, &cap, fp) != -1) {
    line[strcspn (line, "\n")] = '\0';
    if (parse_mountinfo_line (line, &m))
      r = fn (&m, arg);
  }
  free (line);
  fclose (fp);
  return r;
}

struct mount_query {
  const char *dir;
  bool want_dev;
  dev_t dev;
};

static int
matches_query (const struct kstate_mount *m, void *arg)
{
  const struct mount_query *q = arg;

  return strcmp (m->dir, q->dir) == 0 && (!q->want_dev || m->dev == q->dev);
}

bool
kstate_is_mount_point (const char *dir)
{
  struct mount_query q = { .dir = dir };

  return kstate_for_each_mount (matches_query, &q) == 1;
}

bool
kstate_is_mounted_from (const char *dir, const char *dev)
{
  struct mount_query q = { .dir = dir, .want_dev = true };
  struct stat st;

  if (stat (dev, &st) == -1 || !S_ISBLK (st.st_mode))
    return false;
  q.dev = st.st_rdev;
  return kstate_for_each_mount (matches_query, &q) == 1;
}

/* A mount of dev: by its device number, or (btrfs shows an anonymous
 * one) by its source. */
struct user_query {
  const char *dev;
  dev_t rdev;
  char *what;
  size_t len;
};

static int
mounted_from_dev (const struct kstate_mount *m, void *arg)
{
  struct user_query *q = arg;

  if (m->dev != q->rdev && strcmp (m->source, q->dev) != 0)
    return 0;
  snprintf (q->what, q->len, "mounted on %s", m->dir);
  return 1;
}

/* The first entry of /sys/block/NAME/holders (device mapper, md). */
static bool
first_holder (const char *dev, char *what, size_t len)
{
  char path[PATH_MAX];
  struct dirent *e;
  DIR *dir;
  bool found = false;

  kstate_block_attr_path (path, sizeof path, dev, "holders");
  dir = opendir (path);
  if (dir == NULL)
    return false;
  while (!found && (e = readdir (dir)) != NULL)
    if (e->d_name[0] != '.') {
      snprintf (what, len, "held by /dev/%s", e->d_name);
      found = true;
    }
  closedir (dir);
  return found;
}

static int
umount_nofollow (const char *dir, void *arg)
{
  return umount2 (dir, UMOUNT_NOFOLLOW);
}

int
kstate_unmount_retrying (const char *dir, kstate_unmount_fn *try_once,
                         void *arg)
{
  if (try_once == NULL)
    try_once = umount_nofollow;
  for (int i = 0; try_once (dir, arg) == -1; i++) {
    if (errno != EBUSY || i == BUSY_RETRIES)
      return -1;
    proc_sleep_ms (BUSY_RETRY_MS, false);
  }
  return 0;
}

bool
kstate_device_user (const char *dev, char *what, size_t len)
{
  struct user_query q = { .dev = dev, .what = what, .len = len };
  struct stat st;

  if (stat (dev, &st) == -1 || !S_ISBLK (st.st_mode))
    return false;
  q.rdev = st.st_rdev;
  if (kstate_for_each_mount (mounted_from_dev, &q) == 1 ||
      first_holder (dev, what, len))
    return true;
  /* What else the kernel keeps from an exclusive open (a mount in
   * another mount namespace, a tool like mkfs).  A claim only for a
   * moment -- a filesystem just unmounted giving its device back, a
   * probe -- is not a user: only one that outlasts EXCL_RETRIES tries
   * counts.  On a loaded machine --cleanup saw such a moment and blamed
   * "another process". */
  if (kstate_wait_device_released (dev, EXCL_RETRIES * EXCL_RETRY_MS) == 0)
    return false;
  snprintf (what, len, "open exclusively by another process or namespace");
  return true;
}

int
kstate_wait_device_released (const char *dev, unsigned timeout_ms)
{
  for (unsigned waited = 0;; waited += EXCL_RETRY_MS) {
    int fd = open (dev, O_RDONLY | O_EXCL | O_NONBLOCK | O_CLOEXEC);

    if (fd >= 0) {
      close (fd);
      return 0;
    }
    if (errno != EBUSY)
      return 0;
    if (waited >= timeout_ms)
      break;
    proc_sleep_ms (EXCL_RETRY_MS, false);
  }
  errno = EBUSY;
  return -1;
}

unsigned long long
kstate_process_start_time (long pid)
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

int
kstate_process_exe (long pid, char *exe, size_t len)
{
  char path[64];
  ssize_t n;

  snprintf (path, sizeof path, "/proc/%ld/exe", pid);
  n = readlink (path, exe, len - 1);
  if (n == -1)
    return -1;
  if ((size_t) n == len - 1) {
    errno = ENAMETOOLONG;
    return -1;
  }
  exe[n] = '\0';
  return 0;
}
