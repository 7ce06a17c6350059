/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/disk/extents unit tests.
 *
 * A table of walks: the runs a store adds, the request and REQ_ONE, and
 * the runs the client must see (clipped, merged, only the first with
 * REQ_ONE).  Then the stop protocol: what add returns once the reply is
 * complete, and a failing callback's -1 and errno.
 */
#include <config.h>

#include <errno.h>
#include <stdint.h>

#include "suites.h"
#include "extents.h"

#define MAX_RUNS 8

struct run {
  uint64_t start, end;
  bool hole;
};

struct reply {
  struct run runs[MAX_RUNS];
  unsigned nr;
  unsigned fail_at; /* fail the n-th call (1-based); 0: never */
};

static int
record_run (uint64_t offset, uint64_t length, bool hole, void *opaque)
{
  struct reply *r = opaque;

  ck_assert_uint_lt (r->nr, MAX_RUNS);
  ck_assert_uint_gt (length, 0);
  if (r->fail_at && r->nr + 1 == r->fail_at) {
    errno = EIO;
    return -1;
  }
  r->runs[r->nr++] = (struct run) { offset, offset + length, hole };
  return 0;
}

#define H true
#define D false

static const struct {
  const char *what;
  uint64_t offset, count;
  bool req_one;
  unsigned nr_in;
  struct run in[MAX_RUNS];
  unsigned nr_out;
  struct run out[MAX_RUNS];
} walks[] = {
  { "one run inside the request",
    0,
    100,
    false,
    1,
    { { 0, 100, D } },
    1,
    { { 0, 100, D } } },
  { "runs clipped to the request",
    10,
    80,
    false,
    2,
    { { 0, 50, H }, { 50, 100, D } },
    2,
    { { 10, 50, H }, { 50, 90, D } } },
  { "runs wholly outside dropped",
    100,
    100,
    false,
    4,
    { { 0, 50, D }, { 50, 100, H }, { 100, 200, D }, { 200, 300, H } },
    1,
    { { 100, 200, D } } },
  { "neighbours of one kind merged",
    0,
    400,
    false,
    4,
    { { 0, 100, D }, { 100, 200, D }, { 200, 300, H }, { 300, 400, H } },
    2,
    { { 0, 200, D }, { 200, 400, H } } },
  { "alternating kinds kept apart",
    0,
    40,
    false,
    4,
    { { 0, 10, D }, { 10, 20, H }, { 20, 30, D }, { 30, 40, H } },
    4,
    { { 0, 10, D }, { 10, 20, H }, { 20, 30, D }, { 30, 40, H } } },
  { "one kind with a gap not merged",
    0,
    400,
    false,
    2,
    { { 0, 100, D }, { 200, 300, D } },
    2,
    { { 0, 100, D }, { 200, 300, D } } },
  { "empty runs ignored, merge across them",
    0,
    300,
    false,
    4,
    { { 0, 100, H }, { 100, 100, D }, { 100, 200, H }, { 200, 300, D } },
    2,
    { { 0, 200, H }, { 200, 300, D } } },
  { "req_one: the whole first run, merged",
    0,
    400,
    true,
    4,
    { { 0, 100, H }, { 100, 200, H }, { 200, 300, D }, { 300, 400, H } },
    1,
    { { 0, 200, H } } },
  { "req_one: the first run, clipped",
    50,
    300,
    true,
    3,
    { { 0, 200, D }, { 200, 300, H }, { 300, 400, D } },
    1,
    { { 50, 200, D } } },
  { "req_one: one run, reported at finish",
    0,
    300,
    true,
    3,
    { { 0, 100, D }, { 100, 200, D }, { 200, 300, D } },
    1,
    { { 0, 300, D } } },
  { "request at the top of 64 bits",
    UINT64_MAX - 200,
    100,
    false,
    2,
    { { UINT64_MAX - 300, UINT64_MAX - 150, H },
      { UINT64_MAX - 150, UINT64_MAX - 50, D } },
    2,
    { { UINT64_MAX - 200, UINT64_MAX - 150, H },
      { UINT64_MAX - 150, UINT64_MAX - 100, D } } },
  { "no runs at all", 0, 100, false, 0, { { 0 } }, 0, { { 0 } } },
};
#define NR_WALKS (sizeof walks / sizeof walks[0])

START_TEST (test_walk)
{
  struct reply r = { .nr = 0 };
  struct lb_extents b;
  int ret = 0;

  lb_extents_init (&b, walks[_i].offset, walks[_i].count, walks[_i].req_one,
                   record_run, &r);
  for (unsigned i = 0; i < walks[_i].nr_in && ret == 0; i++)
    ret = lb_extents_add (&b, walks[_i].in[i].start, walks[_i].in[i].end,
                          walks[_i].in[i].hole);
  ck_assert_msg (ret == 0 || ret == 1, "%s: add returned %d", walks[_i].what,
                 ret);
  ck_assert_int_eq (lb_extents_finish (&b), 0);

  ck_assert_msg (r.nr == walks[_i].nr_out, "%s: %u runs, expected %u",
                 walks[_i].what, r.nr, walks[_i].nr_out);
  for (unsigned i = 0; i < r.nr; i++) {
    ck_assert_msg (r.runs[i].start == walks[_i].out[i].start &&
                     r.runs[i].end == walks[_i].out[i].end &&
                     r.runs[i].hole == walks[_i].out[i].hole,
                   "%s: run %u is [%ju, %ju) %s", walks[_i].what, i,
                   (uintmax_t) r.runs[i].start, (uintmax_t) r.runs[i].end,
                   r.runs[i].hole ? "hole" : "data");
  }
}
END_TEST

/* req_one: add says 1 once the first run is out, and ignores the rest. */
START_TEST (test_req_one_stops)
{
  struct reply r = { .nr = 0 };
  struct lb_extents b;

  lb_extents_init (&b, 0, 300, true, record_run, &r);
  ck_assert_int_eq (lb_extents_add (&b, 0, 100, D), 0);
  ck_assert_int_eq (lb_extents_add (&b, 100, 200, H), 1);
  ck_assert_int_eq (lb_extents_add (&b, 200, 300, D), 1);
  ck_assert_int_eq (lb_extents_finish (&b), 0);
  ck_assert_uint_eq (r.nr, 1);
}
END_TEST

/* Without req_one, add never says 1. */
START_TEST (test_all_runs_go_on)
{
  struct reply r = { .nr = 0 };
  struct lb_extents b;

  lb_extents_init (&b, 0, 300, false, record_run, &r);
  ck_assert_int_eq (lb_extents_add (&b, 0, 100, D), 0);
  ck_assert_int_eq (lb_extents_add (&b, 100, 200, H), 0);
  ck_assert_int_eq (lb_extents_add (&b, 200, 300, D), 0);
  ck_assert_int_eq (lb_extents_finish (&b), 0);
  ck_assert_uint_eq (r.nr, 3);
}
END_TEST

/* A failing callback: -1 with its errno, from add or from finish. */
START_TEST (test_callback_error)
{
  struct reply r = { .nr = 0, .fail_at = 2 };
  struct lb_extents b;

  lb_extents_init (&b, 0, 300, false, record_run, &r);
  ck_assert_int_eq (lb_extents_add (&b, 0, 100, D), 0);
  ck_assert_int_eq (lb_extents_add (&b, 100, 200, H), 0);
  errno = 0;
  ck_assert_int_eq (lb_extents_add (&b, 200, 300, D), -1);
  ck_assert_int_eq (errno, EIO);

  r = (struct reply) { .nr = 0, .fail_at = 1 };
  lb_extents_init (&b, 0, 300, false, record_run, &r);
  ck_assert_int_eq (lb_extents_add (&b, 0, 300, D), 0);
  errno = 0;
  ck_assert_int_eq (lb_extents_finish (&b), -1);
  ck_assert_int_eq (errno, EIO);
}
END_TEST

static Suite *
extents_suite (void)
{
  Suite *s = suite_create ("extents");
  TCase *tc = tcase_create ("extents");

  tcase_add_loop_test (tc, test_walk, 0, NR_WALKS);
  tcase_add_test (tc, test_req_one_stops);
  tcase_add_test (tc, test_all_runs_go_on);
  tcase_add_test (tc, test_callback_error);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (extents_suite);
