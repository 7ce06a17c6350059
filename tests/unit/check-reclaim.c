/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/disk/reclaim unit tests.
 *
 * Proves that every queued run reaches the give-back function exactly
 * once, unchanged, on another thread; that lb_reclaim_wait returns only
 * when all of them are back (also while several threads queue at once);
 * that freeing the queue gives back what is still queued; and that a queue
 * which never got a run never starts a thread.
 */
#include <config.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reclaim.h"
#include "suites.h"

enum { NR_SLOTS = 4096 };

/* What the give-back function saw: how often each run (by owner) came. */
struct seen {
  _Atomic unsigned count[NR_SLOTS];
  _Atomic uint64_t folios;
  pthread_t queuer;
  _Atomic bool other_thread; /* every call came on another thread */
  unsigned delay_us;         /* to keep runs busy while the test looks */
};

static void
note (void *opaque, const struct lb_reclaim_run *run)
{
  struct seen *s = opaque;

  if (s->delay_us)
    usleep (s->delay_us);
  ck_assert_uint_lt (run->owner, NR_SLOTS);
  /* Each run's first is its owner's slot: check it came unchanged. */
  ck_assert_ptr_eq (run->first, &s->count[run->owner]);
  atomic_fetch_add (&s->count[run->owner], 1);
  atomic_fetch_add (&s->folios, run->nr);
  if (pthread_equal (pthread_self (), s->queuer))
    atomic_store (&s->other_thread, false);
}

static struct lb_reclaim_run
run_of (struct seen *s, unsigned owner, uint32_t nr)
{
  return (struct lb_reclaim_run) { .first = &s->count[owner],
                                   .nr = nr,
                                   .owner = owner };
}

static struct seen *
new_seen (void)
{
  struct seen *s = calloc (1, sizeof *s);

  ck_assert_ptr_nonnull (s);
  s->queuer = pthread_self ();
  atomic_store (&s->other_thread, true);
  return s;
}

START_TEST (test_every_run_once_and_wait_waits)
{
  struct seen *s = new_seen ();
  struct lb_reclaim *r = lb_reclaim_new (note, s);
  struct lb_reclaim_run runs[100];
  uint64_t want = 0;

  ck_assert_ptr_nonnull (r);
  s->delay_us = 200; /* the wait must outlast 100 slow give-backs */
  for (unsigned i = 0; i < 100; i++) {
    runs[i] = run_of (s, i, i + 1);
    want += i + 1;
  }
  ck_assert_int_eq (lb_reclaim_queue (r, runs, 50), 0);
  ck_assert_int_eq (lb_reclaim_queue (r, runs + 50, 50), 0);
  lb_reclaim_wait (r);
  ck_assert (!lb_reclaim_busy (r));
  ck_assert_uint_eq (atomic_load (&s->folios), want);
  ck_assert_uint_eq (lb_reclaim_done (r), 100);
  for (unsigned i = 0; i < 100; i++)
    ck_assert_uint_eq (atomic_load (&s->count[i]), 1);
  ck_assert (atomic_load (&s->other_thread));
  lb_reclaim_free (r);
  free (s);
}
END_TEST

START_TEST (test_free_gives_back_what_is_queued)
{
  struct seen *s = new_seen ();
  struct lb_reclaim *r = lb_reclaim_new (note, s);
  struct lb_reclaim_run runs[64];

  s->delay_us = 500;
  for (unsigned i = 0; i < 64; i++)
    runs[i] = run_of (s, i, 1);
  ck_assert_int_eq (lb_reclaim_queue (r, runs, 64), 0);
  lb_reclaim_free (r); /* no wait first */
  for (unsigned i = 0; i < 64; i++)
    ck_assert_uint_eq (atomic_load (&s->count[i]), 1);
  free (s);
}
END_TEST

START_TEST (test_unused_queue_and_empty_queueing)
{
  struct seen *s = new_seen ();
  struct lb_reclaim *r = lb_reclaim_new (note, s);

  ck_assert_int_eq (lb_reclaim_queue (r, NULL, 0), 0);
  ck_assert (!lb_reclaim_busy (r));
  lb_reclaim_wait (r); /* returns at once: nothing queued */
  ck_assert_uint_eq (lb_reclaim_done (r), 0);
  lb_reclaim_free (r);
  lb_reclaim_free (NULL);
  free (s);
}
END_TEST

/* Several threads queue at once while others wait: each run once. */
struct queuer_arg {
  struct lb_reclaim *r;
  struct seen *s;
  unsigned base;
};

enum { QUEUERS = 4, PER_QUEUER = 1000 };

static void *
queuer (void *opaque)
{
  struct queuer_arg *a = opaque;

  for (unsigned i = 0; i < PER_QUEUER; i += 10) {
    struct lb_reclaim_run runs[10];

    for (unsigned k = 0; k < 10; k++)
      runs[k] = run_of (a->s, a->base + i + k, 1);
    ck_assert_int_eq (lb_reclaim_queue (a->r, runs, 10), 0);
    if (i % 100 == 0)
      lb_reclaim_wait (a->r);
  }
  return NULL;
}

START_TEST (test_concurrent_queueing)
{
  struct seen *s = new_seen ();
  struct lb_reclaim *r = lb_reclaim_new (note, s);
  pthread_t t[QUEUERS];
  struct queuer_arg a[QUEUERS];

  ck_assert_int_le (QUEUERS * PER_QUEUER, NR_SLOTS);
  for (unsigned i = 0; i < QUEUERS; i++) {
    a[i] = (struct queuer_arg) { .r = r, .s = s, .base = i * PER_QUEUER };
    ck_assert_int_eq (pthread_create (&t[i], NULL, queuer, &a[i]), 0);
  }
  for (unsigned i = 0; i < QUEUERS; i++)
    pthread_join (t[i], NULL);
  lb_reclaim_wait (r);
  ck_assert_uint_eq (lb_reclaim_done (r), QUEUERS * PER_QUEUER);
  for (unsigned i = 0; i < QUEUERS * PER_QUEUER; i++)
    ck_assert_uint_eq (atomic_load (&s->count[i]), 1);
  lb_reclaim_free (r);
  free (s);
}
END_TEST

static Suite *
reclaim_suite (void)
{
  Suite *s = suite_create ("reclaim");
  TCase *tc = tcase_create ("reclaim");

  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_every_run_once_and_wait_waits);
  tcase_add_test (tc, test_free_gives_back_what_is_queued);
  tcase_add_test (tc, test_unused_queue_and_empty_queueing);
  tcase_add_test (tc, test_concurrent_queueing);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (reclaim_suite);
