/* largeblock: power cuts on demand through a FIFO -- see cutfifo.h.
 *
 * The watcher thread polls the FIFO and a private pipe; lb_cutfifo_close
 * writes a byte into the pipe to stop it and joins it.  All fields are
 * written before the thread starts and read-only while it runs, except
 * the line buffer, which only the thread touches.
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
  char line[LB_CUTFIFO_LINE_MAX + 1];
  size_t len;
};

static int
open_fifo (const char *path, char *err, size_t errlen)
{
  struct stat st;
  int fd;

  if (mkfifo (path, 0600) == -1 && errno != EEXIST)
    return lb_fail (errno, err, errlen,
                    "power-cut-fifo %s cannot be created: %s", path,
                    strerror (errno));
  /* O_RDWR: opening never waits for a writer, and the FIFO never reaches
   * end-of-file; O_NONBLOCK: a read after poll never waits.
   */
  fd = open (path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd == -1)
    return lb_fail (errno, err, errlen,
                    "power-cut-fifo %s cannot be opened: %s", path,
                    strerror (errno));
  if (fstat (fd, &st) == -1 || !S_ISFIFO (st.st_mode)) {
    close (fd);
    return lb_fail (EINVAL, err, errlen,
                    "power-cut-fifo %s exists and is not a FIFO", path);
  }
  return fd;
}

struct lb_cutfifo *
lb_cutfifo_open (const char *path, lb_cutfifo_cut_fn cut,
                 lb_cutfifo_complain_fn complain, void *opaque, char *err,
                 size_t errlen)
{
  struct lb_cutfifo *w = calloc (1, sizeof *w);

  if (w == NULL) {
    lb_fail (ENOMEM, err, errlen, "power-cut-fifo: out of memory");
    return NULL;
  }
  w->stop[0] = w->stop[1] = -1;
  w->cut = cut;
  w->complain = complain;
  w->opaque = opaque;
  w->fd = open_fifo (path, err, errlen);
  if (w->fd == -1) {
    int e = errno;

    free (w);
    errno = e;
    return NULL;
  }
  return w;
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
  close (w->fd);
  free (w);
}
