/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/disk/cutfifo unit tests.
 *
 * The line protocol, table-driven: "cut" and "cut N" (N 1 ... 2^64-1)
 * are cuts, blank lines nothing, everything else (cut 0, signs, extra
 * words, overflow) is refused.  Through a real FIFO: lines reach the
 * callbacks in the order written, with their N, also when a line arrives
 * in pieces, and bad lines reach the complaint callback.  Ownership: a
 * missing path is made 0600 and removed at close (only if it is still
 * that FIFO; one found is left), and planted paths are refused in one
 * line -- a link, modes 0666 and 0620, a regular file, another owner.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "suites.h"
#include "cutfifo.h"

static const struct parse_case {
  const char *line;
  int result;
  uint64_t nth;
} parse_cases[] = {
  { "cut", 1, 0 },
  { "  cut\t\r", 1, 0 },
  { "cut 1", 1, 1 },
  { "cut 2", 1, 2 },
  { "\tcut \t 42 \r", 1, 42 },
  { "cut 007", 1, 7 },
  { "cut 18446744073709551615", 1, UINT64_MAX },
  { "", 0, 0 },
  { " \t\r", 0, 0 },
  { "cut 0", -1, 0 },
  { "cut -1", -1, 0 },
  { "cut +1", -1, 0 },
  { "cut 1x", -1, 0 },
  { "cut x", -1, 0 },
  { "cut 1 2", -1, 0 },
  { "cut 18446744073709551616", -1, 0 },
  { "cut1", -1, 0 },
  { "cuts", -1, 0 },
  { "CUT", -1, 0 },
  { "uncut", -1, 0 },
  { "cut\n1", -1, 0 },
};
#define NR_PARSE_CASES (sizeof parse_cases / sizeof parse_cases[0])

START_TEST (test_parse_line)
{
  const struct parse_case *c = &parse_cases[_i];
  uint64_t nth = 12345;
  int r;

  errno = 0;
  r = lb_cutfifo_parse_line (c->line, &nth);
  ck_assert_msg (r == c->result, "'%s': %d, expected %d", c->line, r,
                 c->result);
  if (r == 1)
    ck_assert_uint_eq (nth, c->nth);
  else
    ck_assert_uint_eq (nth, 12345); /* untouched */
  if (r == -1)
    ck_assert_int_eq (errno, EINVAL);
}
END_TEST

/* What the watcher called, in order: "cut N" or "bad LINE". */
struct events {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  char seen[16][64];
  int n;
};

static void
record (struct events *ev, const char *text)
{
  pthread_mutex_lock (&ev->lock);
  if (ev->n < 16)
    snprintf (ev->seen[ev->n++], sizeof ev->seen[0], "%s", text);
  pthread_cond_broadcast (&ev->cond);
  pthread_mutex_unlock (&ev->lock);
}

static void
on_cut (uint64_t nth, void *opaque)
{
  char text[64];

  snprintf (text, sizeof text, "cut %llu", (unsigned long long) nth);
  record (opaque, text);
}

static void
on_complain (const char *line, void *opaque)
{
  char text[64];

  snprintf (text, sizeof text, "bad %s", line);
  record (opaque, text);
}

/* Wait (at most 30 s: a bound for a failing test, not a timing) until
 * n events are in.
 */
static void
wait_for_events (struct events *ev, int n)
{
  struct timespec until;
  int r = 0;

  clock_gettime (CLOCK_REALTIME, &until);
  until.tv_sec += 30;
  pthread_mutex_lock (&ev->lock);
  while (ev->n < n && r == 0)
    r = pthread_cond_timedwait (&ev->cond, &ev->lock, &until);
  pthread_mutex_unlock (&ev->lock);
  ck_assert_msg (ev->n >= n, "only %d of %d events", ev->n, n);
}

static void
write_all (const char *path, const char *s)
{
  int fd = open (path, O_WRONLY | O_CLOEXEC);

  ck_assert_int_ge (fd, 0);
  ck_assert_int_eq (write (fd, s, strlen (s)), (ssize_t) strlen (s));
  close (fd);
}

START_TEST (test_lines_reach_the_callbacks_in_order)
{
  static const char *const expected[] = {
    "cut 0", "cut 3", "bad bogus", "cut 7", "bad cut 0", "cut 2",
  };
  struct events ev = { .lock = PTHREAD_MUTEX_INITIALIZER,
                       .cond = PTHREAD_COND_INITIALIZER };
  char dir[] = "/tmp/check-cutfifo.XXXXXX", path[64], err[256];
  struct lb_cutfifo *w;

  ck_assert_ptr_nonnull (mkdtemp (dir));
  snprintf (path, sizeof path, "%s/cut", dir);
  w = lb_cutfifo_open (path, on_cut, on_complain, &ev, err, sizeof err);
  ck_assert_msg (w != NULL, "%s", err);
  ck_assert_int_eq (lb_cutfifo_start (w, err, sizeof err), 0);
  write_all (path, "cut\ncut 3\nbogus\n\n  cut   7 \r\ncut 0\n");
  write_all (path, "cu"); /* one line in two writes */
  write_all (path, "t 2\n");
  wait_for_events (&ev, 6);
  lb_cutfifo_close (w);
  ck_assert_int_eq (ev.n, 6);
  for (int i = 0; i < 6; i++)
    ck_assert_str_eq (ev.seen[i], expected[i]);
  unlink (path);
  rmdir (dir);
}
END_TEST

/* ---- who may own the FIFO ---- */

static char fdir[] = "/tmp/check-cutfifo.XXXXXX";
static char fpath[64];

static void
fifo_setup (void)
{
  strcpy (fdir, "/tmp/check-cutfifo.XXXXXX");
  ck_assert_ptr_nonnull (mkdtemp (fdir));
  snprintf (fpath, sizeof fpath, "%s/cut", fdir);
}

static void
fifo_teardown (void)
{
  char other[80];

  unlink (fpath);
  snprintf (other, sizeof other, "%s/target", fdir);
  unlink (other);
  rmdir (fdir);
}

static void
ignore_cut (uint64_t nth, void *opaque)
{
}

static void
ignore_line (const char *line, void *opaque)
{
}

static struct lb_cutfifo *
open_fifo_at (const char *p, char *err, size_t errlen)
{
  return lb_cutfifo_open (p, ignore_cut, ignore_line, NULL, err, errlen);
}

START_TEST (test_missing_path_made_0600_and_removed)
{
  struct lb_cutfifo *w;
  struct stat st;
  char err[256];

  w = open_fifo_at (fpath, err, sizeof err);
  ck_assert_msg (w != NULL, "%s", err);
  ck_assert_int_eq (lstat (fpath, &st), 0);
  ck_assert (S_ISFIFO (st.st_mode));
  ck_assert_uint_eq (st.st_mode & 07777, 0600);
  ck_assert_uint_eq (st.st_uid, geteuid ());
  lb_cutfifo_close (w);
  ck_assert_int_eq (lstat (fpath, &st), -1);
}
END_TEST

/* A FIFO found is left; one made but since replaced is not removed. */
START_TEST (test_only_its_own_fifo_removed)
{
  struct lb_cutfifo *w;
  char err[256];

  ck_assert_int_eq (mkfifo (fpath, 0600), 0);
  w = open_fifo_at (fpath, err, sizeof err);
  ck_assert_msg (w != NULL, "%s", err);
  lb_cutfifo_close (w);
  ck_assert_int_eq (access (fpath, F_OK), 0);

  ck_assert_int_eq (unlink (fpath), 0);
  w = open_fifo_at (fpath, err, sizeof err);
  ck_assert_msg (w != NULL, "%s", err);
  ck_assert_int_eq (unlink (fpath), 0);
  ck_assert_int_eq (mkfifo (fpath, 0600), 0); /* someone else's now */
  lb_cutfifo_close (w);
  ck_assert_int_eq (access (fpath, F_OK), 0);
}
END_TEST

enum planted {
  LINK_TO_GOOD_FIFO,
  MODE_0666,
  MODE_0620,
  REGULAR_FILE,
  OTHER_OWNER
};

static const struct bad_fifo_case {
  enum planted planted;
  int errnum;
  const char *msg; /* after "power-cut-fifo PATH " */
} bad_fifo_cases[] = {
  { LINK_TO_GOOD_FIFO, EPERM,
    "is a symbolic link: links are not followed, give the FIFO itself" },
  { MODE_0666, EPERM,
    "has mode 0666: an existing FIFO must not be "
    "writable by group or others" },
  { MODE_0620, EPERM,
    "has mode 0620: an existing FIFO must not be "
    "writable by group or others" },
  { REGULAR_FILE, EINVAL, "exists and is not a FIFO" },
  { OTHER_OWNER, EPERM,
    "is owned by uid 65534, not by the server's uid 0: "
    "an existing FIFO must be the server's own" },
};
#define NR_BAD_FIFO_CASES (sizeof bad_fifo_cases / sizeof bad_fifo_cases[0])

/* Put what the case names at fpath; false if this user cannot. */
static bool
plant (enum planted planted)
{
  char target[80];
  int fd;

  switch (planted) {
  case LINK_TO_GOOD_FIFO:
    snprintf (target, sizeof target, "%s/target", fdir);
    ck_assert_int_eq (mkfifo (target, 0600), 0);
    ck_assert_int_eq (symlink (target, fpath), 0);
    return true;
  case MODE_0666:
  case MODE_0620:
    ck_assert_int_eq (mkfifo (fpath, 0600), 0);
    ck_assert_int_eq (chmod (fpath, planted == MODE_0666 ? 0666 : 0620), 0);
    return true;
  case REGULAR_FILE:
    fd = open (fpath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    ck_assert_int_ge (fd, 0);
    close (fd);
    return true;
  case OTHER_OWNER:
    if (geteuid () != 0)
      return false; /* only root can give a file away */
    ck_assert_int_eq (mkfifo (fpath, 0600), 0);
    ck_assert_int_eq (chown (fpath, 65534, 65534), 0);
    return true;
  }
  return false;
}

/* Refused in one line naming the parameter, the path and the rule, and
 * what was planted is left as it was.
 */
START_TEST (test_planted_path_refused)
{
  const struct bad_fifo_case *c = &bad_fifo_cases[_i];
  char err[256], want[256];
  struct stat before, after;

  if (!plant (c->planted))
    return;
  ck_assert_int_eq (lstat (fpath, &before), 0);
  errno = 0;
  ck_assert_ptr_null (open_fifo_at (fpath, err, sizeof err));
  ck_assert_int_eq (errno, c->errnum);
  snprintf (want, sizeof want, "power-cut-fifo %s %s", fpath, c->msg);
  ck_assert_msg (strncmp (err, want, strlen (want)) == 0, "got: %s", err);
  ck_assert_ptr_null (strchr (err, '\n'));
  ck_assert_int_eq (lstat (fpath, &after), 0);
  ck_assert_uint_eq (after.st_ino, before.st_ino);
  ck_assert_uint_eq (after.st_mode, before.st_mode);
}
END_TEST

static Suite *
cutfifo_suite (void)
{
  Suite *s = suite_create ("cutfifo");
  TCase *tc = tcase_create ("protocol");

  tcase_add_loop_test (tc, test_parse_line, 0, NR_PARSE_CASES);
  tcase_add_test (tc, test_lines_reach_the_callbacks_in_order);
  suite_add_tcase (s, tc);

  tc = tcase_create ("ownership");
  tcase_add_checked_fixture (tc, fifo_setup, fifo_teardown);
  tcase_add_test (tc, test_missing_path_made_0600_and_removed);
  tcase_add_test (tc, test_only_its_own_fifo_removed);
  tcase_add_loop_test (tc, test_planted_path_refused, 0, NR_BAD_FIFO_CASES);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (cutfifo_suite);
