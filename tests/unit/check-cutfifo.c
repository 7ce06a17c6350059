/* largeblock: lib/cutfifo unit tests.
 *
 * The line protocol, table-driven: "cut" and "cut N" (N 1 ... 2^64-1)
 * are cuts, blank lines nothing, everything else (cut 0, signs, extra
 * words, overflow) is refused.  Through a real FIFO: lines reach the
 * callbacks in the order written, with their N, also when a line arrives
 * in pieces, and bad lines reach the complaint callback.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

Suite *
cutfifo_suite (void)
{
  Suite *s = suite_create ("cutfifo");
  TCase *tc = tcase_create ("protocol");

  tcase_add_loop_test (tc, test_parse_line, 0, NR_PARSE_CASES);
  tcase_add_test (tc, test_lines_reach_the_callbacks_in_order);
  suite_add_tcase (s, tc);
  return s;
}
