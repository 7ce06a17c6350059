/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: power cuts on demand through a FIFO -- see cutfifo.h.
 *
 * The watcher thread polls the FIFO and a private pipe; lb_cutfifo_close
 * writes a byte into the pipe to stop it and joins it.  All fields are
 * written before the thread starts and read-only while it runs, except
 * the line buffer, which only the thread touches.  No lock of its own:
 * the cut it asks for takes the write cache's (locking.h).
 *
 * Who may cut the power: the FIFO is the server's own.  A missing path
 * is made with mode 0600; an existing one must be a FIFO (not a link to
 * one) owned by the server's effective uid and writable by no one else,
 * checked on the descriptor actually opened.  A FIFO this module made is
 * removed at close if the path still names that same FIFO; one it found
 * is left alone.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cutfifo.h"
#include "error.h"

struct lb_cutfifo {
  int fd;
  int stop[2]; /* the thread reads [0]; close writes [1] */
  bool started;
  pthread_t thread;
  lb_cutfifo_cut_fn cut;
  lb_cutfifo_complain_fn complain;
  void *opaque;
  char *created_path; /* set if this server made the FIFO: removed at close */
  dev_t dev;          /* the FIFO held open, to remove only that one */
  ino_t ino;
  char line[LB_CUTFIFO_LINE_MAX + 1];
  size_t len;
};

/* An existing FIFO must be the server's own and writable by no one else:
 * whoever can write to it can cut the power, and whoever can read it can
 * steal the lines.  Returns 0, or -1 with errno = EPERM (EINVAL: not a
 * FIFO) and the broken rule in err.
 */
static int
refuse_link (const char *path, char *err, size_t errlen)
{
  return lb_fail (EPERM, err, errlen,
                  "power-cut-fifo %s is a symbolic link: links are not "
                  "followed, give the FIFO itself",
                  path);
}

static int
check_fifo_rule (const char *path, const struct stat *st, char *err,
                 size_t errlen)
{
  if (S_ISLNK (st->st_mode))
    return refuse_link (path, err, errlen);
  if (!S_ISFIFO (st->st_mode))
    return lb_fail (EINVAL, err, errlen,
                    "power-cut-fifo %s exists and is not a FIFO", path);
  if (st->st_uid != geteuid ())
    return lb_fail (EPERM, err, errlen,
                    "power-cut-fifo %s is owned by uid %u, not by the "
                    "server's uid %u: an existing FIFO must be the server's "
                    "own (or name a path that does not exist)",
                    path, (unsigned) st->st_uid, (unsigned) geteuid ());
  if (st->st_mode & (S_IWGRP | S_IWOTH))
    return lb_fail (EPERM, err, errlen,
                    "power-cut-fifo %s has mode %04o: an existing FIFO must "
                    "not be writable by group or others (chmod go-w it, or "
                    "name a path that does not exist)",
                    path, (unsigned) (st->st_mode & 07777));
  return 0;
}

/* 1: made a new FIFO at path; 0: something is there already; -1: error. */
static int
make_fifo (const char *path, char *err, size_t errlen)
{
  if (mkfifo (path, 0600) == 0)
    return 1;
  if (errno == EEXIST)
    return 0;
  return lb_fail (errno, err, errlen,
                  "power-cut-fifo %s cannot be created: %s", path,
                  strerror (errno));
}

/* Open the FIFO at path and check, on the descriptor opened, that it is
 * one the rule allows.  lstat first only keeps a device node or a link
 * from being opened at all; fstat decides, so a swap between the two is
 * caught.  O_NOFOLLOW: never open what a link points to.
 */
static int
open_checked (struct lb_cutfifo *w, const char *path, char *err, size_t errlen)
{
  struct stat st;
  int fd;

  if (lstat (path, &st) == -1)
    return lb_fail (errno, err, errlen, "power-cut-fifo %s: %s", path,
                    strerror (errno));
  if (check_fifo_rule (path, &st, err, errlen) == -1)
    return -1;
  /* O_RDWR: opening never waits for a writer, and the FIFO never reaches
   * end-of-file; O_NONBLOCK: a read after poll never waits.
   */
  fd = open (path, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd == -1 && errno == ELOOP)
    return refuse_link (path, err, errlen);
  if (fd == -1)
    return lb_fail (errno, err, errlen,
                    "power-cut-fifo %s cannot be opened: %s", path,
                    strerror (errno));
  if (fstat (fd, &st) == -1 ||
      check_fifo_rule (path, &st, err, errlen) == -1) {
    int e = errno;

    close (fd);
    errno = e;
    return -1;
  }
  w->dev = st.st_dev;
  w->ino = st.st_ino;
  return fd;
}

/* Remove the FIFO this server made, if the path still names it. */
static void
remove_created_fifo (struct lb_cutfifo *w)
{
  struct stat st;

  if (w->created_path == NULL)
    return;
  if (lstat (w->created_path, &st) == 0 && S_ISFIFO (st.st_mode) &&
      st.st_dev == w->dev && st.st_ino == w->ino)
    unlink (w->created_path);
  free (w->created_path);
  w->created_path = NULL;
}

struct lb_cutfifo *
lb_cutfifo_open (const char *path, lb_cutfifo_cut_fn cut,
                 lb_cutfifo_complain_fn complain, void *opaque, char *err,
                 size_t errlen)
{
  struct lb_cutfifo *w = calloc (1, sizeof *w);
  int created, e;

  if (w == NULL) {
    lb_fail (ENOMEM, err, errlen, "power-cut-fifo: out of memory");
    return NULL;
  }
  w->fd = w->stop[0] = w->stop[1] = -1;
  w->cut = cut;
  w->complain = complain;
  w->opaque = opaque;
  created = make_fifo (path, err, errlen);
  if (created == -1)
    goto fail;
  w->fd = open_checked (w, path, err, errlen);
  if (w->fd == -1)
    goto fail;
  if (created) {
    w->created_path = strdup (path);
    if (w->created_path == NULL) {
      lb_fail (ENOMEM, err, errlen, "power-cut-fifo: out of memory");
      goto fail;
    }
  }
  return w;

fail:
  e = errno;
  if (w->fd >= 0)
    close (w->fd);
  if (created == 1)
    unlink (path);
  free (w);
  errno = e;
  return NULL;
}

static bool
is_blank (char c)
{
  return c == ' ' || c == '\t' || c == '\r';
}

static const char *
skip_blanks (const char *s)
{
  while (is_blank (*s))
    s++;
  return s;
}

/* A decimal number 1 ... UINT64_MAX, digits only, at *s; advances *s. */
static int
parse_nth (const char **s, uint64_t *nth)
{
  const char *p = *s;
  uint64_t v = 0;

  if (*p < '0' || *p > '9')
    return -1;
  for (; *p >= '0' && *p <= '9'; p++) {
    unsigned d = (unsigned) (*p - '0');

    if (v > (UINT64_MAX - d) / 10)
      return -1;
    v = v * 10 + d;
  }
  if (v == 0)
    return -1;
  *s = p;
  *nth = v;
  return 0;
}

int
lb_cutfifo_parse_line (const char *line, uint64_t *nth)
{
  const char *s = skip_blanks (line);
  uint64_t n = 0;

  if (*s == '\0')
    return 0;
  if (strncmp (s, "cut", 3) != 0)
    goto bad;
  s += 3;
  if (is_blank (*s)) {
    s = skip_blanks (s);
    if (*s && parse_nth (&s, &n) == -1)
      goto bad;
    s = skip_blanks (s);
  }
  if (*s != '\0')
    goto bad;
  *nth = n;
  return 1;
bad:
  errno = EINVAL;
  return -1;
}

static void
handle_line (struct lb_cutfifo *w)
{
  char *s = w->line;
  size_t n = w->len;
  uint64_t nth;

  while (n && is_blank (s[n - 1]))
    n--;
  while (n && is_blank (*s)) {
    s++;
    n--;
  }
  s[n] = '\0';
  switch (lb_cutfifo_parse_line (s, &nth)) {
  case 1: w->cut (nth, w->opaque); break;
  case -1: w->complain (s, w->opaque); break;
  }
  w->len = 0;
}

static void
take_bytes (struct lb_cutfifo *w, const char *buf, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    if (buf[i] == '\n') {
      handle_line (w);
      continue;
    }
    if (w->len == LB_CUTFIFO_LINE_MAX)
      handle_line (w);
    w->line[w->len++] = buf[i];
  }
}

static void *
watch (void *arg)
{
  struct lb_cutfifo *w = arg;
  char buf[512];

  for (;;) {
    struct pollfd fds[2] = { { .fd = w->fd, .events = POLLIN },
                             { .fd = w->stop[0], .events = POLLIN } };
    ssize_t n;

    if (poll (fds, 2, -1) == -1) {
      if (errno == EINTR)
        continue;
      return NULL;
    }
    if (fds[1].revents)
      return NULL;
    n = read (w->fd, buf, sizeof buf);
    if (n > 0)
      take_bytes (w, buf, (size_t) n);
  }
}

int
lb_cutfifo_start (struct lb_cutfifo *w, char *err, size_t errlen)
{
  int r;

  if (pipe2 (w->stop, O_CLOEXEC) == -1)
    return lb_fail (errno, err, errlen, "power-cut-fifo: pipe: %s",
                    strerror (errno));
  r = pthread_create (&w->thread, NULL, watch, w);
  if (r != 0) {
    close (w->stop[0]);
    close (w->stop[1]);
    w->stop[0] = w->stop[1] = -1;
    return lb_fail (r, err, errlen,
                    "power-cut-fifo: cannot start its "
                    "watcher thread: %s",
                    strerror (r));
  }
  w->started = true;
  return 0;
}

void
lb_cutfifo_close (struct lb_cutfifo *w)
{
  if (w == NULL)
    return;
  if (w->started) {
    while (write (w->stop[1], "", 1) == -1 && errno == EINTR)
      ;
    pthread_join (w->thread, NULL);
  }
  if (w->stop[0] >= 0) {
    close (w->stop[0]);
    close (w->stop[1]);
  }
  remove_created_fifo (w);
  close (w->fd);
  free (w);
}
