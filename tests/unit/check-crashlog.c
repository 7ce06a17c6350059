/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/disk/crashlog unit tests.
 *
 * A log written and read back: every record's type, FUA flag, sequence,
 * epoch, range and data (padding included), a flush closing its epoch.
 * The file is made fresh (an existing path or a link is refused); a full
 * log refuses the record in one line and keeps the file as it was; a
 * limit too small is refused.  Damaged files -- not a log, a bad header,
 * cut short in a record or in its data, out of sequence, a range past the
 * disk -- are refused naming the record and its byte.  Appends from four
 * threads come back as one gapless sequence.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "suites.h"
#include "crashlog.h"

static const struct lb_crashlog_geometry geo = {
  .disk_size = 1 << 20,
  .blksize = 16384,
  .logical_blksize = 4096,
};
static char dir[] = "/tmp/lbcrashlog.XXXXXX";
static char path[64];
static char err[256];

static void
setup (void)
{
  ck_assert_ptr_nonnull (mkdtemp (strcpy (dir, "/tmp/lbcrashlog.XXXXXX")));
  snprintf (path, sizeof path, "%s/log", dir);
}

static void
teardown (void)
{
  char p[80];

  snprintf (p, sizeof p, "%s/link", dir);
  unlink (p);
  unlink (path);
  rmdir (dir);
}

static struct lb_crashlog *
make_log (uint64_t limit)
{
  struct lb_crashlog *log = lb_crashlog_create (path, &geo, limit, err,
                                                sizeof err);
  ck_assert_msg (log != NULL, "%s", err);
  return log;
}

static void
append_ok (struct lb_crashlog *log, enum lb_crashlog_type type, bool fua,
           uint64_t offset, uint64_t length, const void *data)
{
  ck_assert_msg (lb_crashlog_append (log, type, fua, offset, length, data, err,
                                     sizeof err) == 0,
                 "%s", err);
}

static struct lb_crashlog_reader *
open_reader (void)
{
  struct lb_crashlog_geometry g;
  uint64_t limit;
  struct lb_crashlog_reader *r = lb_crashlog_reader_open (path, &g, &limit,
                                                          err, sizeof err);
  ck_assert_msg (r != NULL, "%s", err);
  ck_assert_uint_eq (g.disk_size, geo.disk_size);
  ck_assert_uint_eq (g.blksize, geo.blksize);
  ck_assert_uint_eq (g.logical_blksize, geo.logical_blksize);
  return r;
}

static void
expect_record (struct lb_crashlog_reader *r, enum lb_crashlog_type type,
               bool fua, uint64_t seq, uint64_t epoch, uint64_t offset,
               uint64_t length)
{
  struct lb_crashlog_record rec;

  ck_assert_msg (lb_crashlog_reader_next (r, &rec, err, sizeof err) == 1,
                 "record %ju: %s", (uintmax_t) seq, err);
  ck_assert_int_eq (rec.type, type);
  ck_assert_int_eq (rec.fua, fua);
  ck_assert_uint_eq (rec.seq, seq);
  ck_assert_uint_eq (rec.epoch, epoch);
  ck_assert_uint_eq (rec.offset, offset);
  ck_assert_uint_eq (rec.length, length);
}

static uint64_t
file_size (void)
{
  struct stat st;

  ck_assert_int_eq (stat (path, &st), 0);
  return st.st_size;
}

START_TEST (test_round_trip)
{
  struct lb_crashlog *log = make_log (1 << 20);
  struct lb_crashlog_reader *r;
  struct lb_crashlog_record rec;
  char a[16384], b[5] = "hello";

  memset (a, 'a', sizeof a);
  append_ok (log, LB_CRASHLOG_WRITE, false, 16384, sizeof a, a);
  append_ok (log, LB_CRASHLOG_WRITE, true, 4096, sizeof b, b);
  append_ok (log, LB_CRASHLOG_TRIM, false, 32768, 16384, NULL);
  ck_assert_uint_eq (lb_crashlog_epoch (log), 0);
  append_ok (log, LB_CRASHLOG_FLUSH, false, 0, 0, NULL);
  ck_assert_uint_eq (lb_crashlog_epoch (log), 1);
  append_ok (log, LB_CRASHLOG_ZERO, true, 0, 65536, NULL);
  append_ok (log, LB_CRASHLOG_FLUSH, false, 0, 0, NULL);
  /* Header, 6 records, 16384 + 8 (5 padded) bytes of data. */
  ck_assert_uint_eq (lb_crashlog_bytes (log),
                     LB_CRASHLOG_HEADER_SIZE + 6 * LB_CRASHLOG_RECORD_SIZE +
                       16384 + 8);
  ck_assert_int_eq (lb_crashlog_close (log, err, sizeof err), 0);
  ck_assert_uint_eq (file_size (),
                     LB_CRASHLOG_HEADER_SIZE + 6 * LB_CRASHLOG_RECORD_SIZE +
                       16384 + 8);

  r = open_reader ();
  expect_record (r, LB_CRASHLOG_WRITE, false, 0, 0, 16384, sizeof a);
  expect_record (r, LB_CRASHLOG_WRITE, true, 1, 0, 4096, sizeof b);
  expect_record (r, LB_CRASHLOG_TRIM, false, 2, 0, 32768, 16384);
  expect_record (r, LB_CRASHLOG_FLUSH, false, 3, 0, 0, 0);
  expect_record (r, LB_CRASHLOG_ZERO, true, 4, 1, 0, 65536);
  expect_record (r, LB_CRASHLOG_FLUSH, false, 5, 1, 0, 0);
  ck_assert_int_eq (lb_crashlog_reader_next (r, &rec, err, sizeof err), 0);
  lb_crashlog_reader_close (r);

  /* The data, read again. */
  r = open_reader ();
  ck_assert_int_eq (lb_crashlog_reader_next (r, &rec, err, sizeof err), 1);
  ck_assert_mem_eq (rec.data, a, sizeof a);
  ck_assert_int_eq (lb_crashlog_reader_next (r, &rec, err, sizeof err), 1);
  ck_assert_mem_eq (rec.data, b, sizeof b);
  lb_crashlog_reader_close (r);
}
END_TEST

START_TEST (test_never_overwrites)
{
  char link[80];
  struct lb_crashlog *log;

  lb_crashlog_close (make_log (4096), err, sizeof err);
  log = lb_crashlog_create (path, &geo, 4096, err, sizeof err);
  ck_assert_ptr_null (log);
  ck_assert_int_eq (errno, EEXIST);
  ck_assert_msg (strstr (err, "crash-log=") &&
                   strstr (err, "never overwritten"),
                 "%s", err);

  snprintf (link, sizeof link, "%s/link", dir);
  ck_assert_int_eq (symlink ("/tmp/lbcrashlog-target-absent", link), 0);
  log = lb_crashlog_create (link, &geo, 4096, err, sizeof err);
  ck_assert_ptr_null (log);
  ck_assert_int_eq (errno, EEXIST);
  ck_assert_int_eq (access ("/tmp/lbcrashlog-target-absent", F_OK), -1);
}
END_TEST

START_TEST (test_full_log_refuses_and_keeps_the_file)
{
  uint64_t limit = LB_CRASHLOG_HEADER_SIZE + 2 * LB_CRASHLOG_RECORD_SIZE + 8;
  struct lb_crashlog *log = make_log (limit);
  struct lb_crashlog_reader *r;
  struct lb_crashlog_record rec;
  char d[16] = "0123456789abcdef";

  append_ok (log, LB_CRASHLOG_WRITE, false, 0, 8, d);
  ck_assert_int_eq (lb_crashlog_append (log, LB_CRASHLOG_WRITE, false, 0, 16,
                                        d, err, sizeof err),
                    -1);
  ck_assert_int_eq (errno, ENOSPC);
  ck_assert_msg (strstr (err, "is full") && strstr (err, "crash-log-size") &&
                   strchr (err, '\n') == NULL,
                 "%s", err);
  /* A flush still fits. */
  append_ok (log, LB_CRASHLOG_FLUSH, false, 0, 0, NULL);
  ck_assert_int_eq (lb_crashlog_append (log, LB_CRASHLOG_FLUSH, false, 0, 0,
                                        NULL, err, sizeof err),
                    -1);
  ck_assert_int_eq (errno, ENOSPC);
  ck_assert_uint_eq (file_size (), limit);
  lb_crashlog_close (log, err, sizeof err);

  r = open_reader ();
  expect_record (r, LB_CRASHLOG_WRITE, false, 0, 0, 0, 8);
  expect_record (r, LB_CRASHLOG_FLUSH, false, 1, 0, 0, 0);
  ck_assert_int_eq (lb_crashlog_reader_next (r, &rec, err, sizeof err), 0);
  lb_crashlog_reader_close (r);
}
END_TEST

START_TEST (test_limit_too_small)
{
  ck_assert_ptr_null (lb_crashlog_create (path, &geo,
                                          LB_CRASHLOG_MIN_LIMIT - 1, err,
                                          sizeof err));
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_msg (strstr (err, "crash-log-size="), "%s", err);
  ck_assert_int_eq (access (path, F_OK), -1);
}
END_TEST

START_TEST (test_bad_appends)
{
  struct lb_crashlog *log = make_log (4096);

  ck_assert_int_eq (lb_crashlog_append (log, LB_CRASHLOG_FLUSH, false, 0, 512,
                                        NULL, err, sizeof err),
                    -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_int_eq (lb_crashlog_append (log, LB_CRASHLOG_WRITE, false, 0, 512,
                                        NULL, err, sizeof err),
                    -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_uint_eq (lb_crashlog_bytes (log), LB_CRASHLOG_HEADER_SIZE);
  lb_crashlog_close (log, err, sizeof err);
}
END_TEST

/* A log of a write of 8 bytes and a flush, then the byte at `at`
 * changed to `value` (or the file cut to `at` bytes when value < 0);
 * reading it fails at `bad_record` with a message containing want.
 */
static const struct damage {
  long at;
  int value;
  int bad_record; /* -1: the header */
  const char *want;
} damages[] = {
  { 0, 'X', -1, "not a largeblock crash log" },
  { 10, -1, -1, "shorter than its header" },
  { 40, 1, -1, "damaged crash log header" },
  { 64 + 20, -1, 0, "cut short" },
  { 64 + 40 + 4, -1, 0, "data is cut short" },
  { 64, 'x', 0, "no record magic" },
  { 64 + 4, 9, 0, "unknown record type" },
  { 64 + 5, 2, 0, "unknown flags" },
  { 64 + 48 + 8, 7, 1, "out of sequence" },
  { 64 + 48 + 16, 1, 1, "epoch out of order" },
  { 64 + 24 + 7, 1, 0, "range beyond the end of the disk" },
  { 64 + 48 + 24, 1, 1, "a flush with a range or FUA" },
};
#define NR_DAMAGES (sizeof damages / sizeof damages[0])

START_TEST (test_damaged_log_refused)
{
  const struct damage *d = &damages[_i];
  struct lb_crashlog *log = make_log (4096);
  struct lb_crashlog_geometry g;
  struct lb_crashlog_reader *r;
  struct lb_crashlog_record rec;
  uint64_t limit;
  int fd, got = 1, n = 0;

  append_ok (log, LB_CRASHLOG_WRITE, false, 0, 8, "01234567");
  append_ok (log, LB_CRASHLOG_FLUSH, false, 0, 0, NULL);
  lb_crashlog_close (log, err, sizeof err);
  fd = open (path, O_RDWR);
  ck_assert_int_ne (fd, -1);
  if (d->value < 0)
    ck_assert_int_eq (ftruncate (fd, d->at), 0);
  else {
    unsigned char c = d->value;
    ck_assert_int_eq (pwrite (fd, &c, 1, d->at), 1);
  }
  close (fd);

  r = lb_crashlog_reader_open (path, &g, &limit, err, sizeof err);
  if (d->bad_record == -1)
    ck_assert_ptr_null (r);
  else {
    ck_assert_msg (r != NULL, "%s", err);
    while (n <= d->bad_record &&
           (got = lb_crashlog_reader_next (r, &rec, err, sizeof err)) == 1)
      n++;
    ck_assert_int_eq (got, -1);
    ck_assert_int_eq (n, d->bad_record);
    lb_crashlog_reader_close (r);
  }
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_msg (strstr (err, d->want), "damage %u: %s", _i, err);
}
END_TEST

#define THREADS 4
#define PER_THREAD 500

static void *
append_many (void *opaque)
{
  struct lb_crashlog *log = opaque;
  char e[256], data[512];

  memset (data, 'd', sizeof data);
  for (int i = 0; i < PER_THREAD; i++) {
    enum lb_crashlog_type t = i % 50 == 49 ? LB_CRASHLOG_FLUSH
                                           : LB_CRASHLOG_WRITE;
    uint64_t len = t == LB_CRASHLOG_FLUSH ? 0 : sizeof data;
    if (lb_crashlog_append (log, t, false, 0, len,
                            t == LB_CRASHLOG_FLUSH ? NULL : data, e,
                            sizeof e) == -1)
      return (void *) 1;
  }
  return NULL;
}

START_TEST (test_threads_one_sequence)
{
  struct lb_crashlog *log = make_log (16 << 20);
  struct lb_crashlog_reader *r;
  struct lb_crashlog_record rec;
  pthread_t t[THREADS];
  uint64_t n = 0, flushes = 0;
  int got;

  for (int i = 0; i < THREADS; i++)
    ck_assert_int_eq (pthread_create (&t[i], NULL, append_many, log), 0);
  for (int i = 0; i < THREADS; i++) {
    void *ret;
    pthread_join (t[i], &ret);
    ck_assert_ptr_null (ret);
  }
  ck_assert_uint_eq (lb_crashlog_epoch (log), THREADS * PER_THREAD / 50);
  lb_crashlog_close (log, err, sizeof err);

  r = open_reader ();
  while ((got = lb_crashlog_reader_next (r, &rec, err, sizeof err)) == 1) {
    ck_assert_uint_eq (rec.seq, n);
    ck_assert_uint_eq (rec.epoch, flushes);
    flushes += rec.type == LB_CRASHLOG_FLUSH;
    n++;
  }
  ck_assert_msg (got == 0, "%s", err);
  ck_assert_uint_eq (n, THREADS * PER_THREAD);
  lb_crashlog_reader_close (r);
}
END_TEST

static Suite *
crashlog_suite (void)
{
  Suite *s = suite_create ("crashlog");
  TCase *tc = tcase_create ("core");

  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_round_trip);
  tcase_add_test (tc, test_never_overwrites);
  tcase_add_test (tc, test_full_log_refuses_and_keeps_the_file);
  tcase_add_test (tc, test_limit_too_small);
  tcase_add_test (tc, test_bad_appends);
  tcase_add_loop_test (tc, test_damaged_log_refused, 0, NR_DAMAGES);
  tcase_add_test (tc, test_threads_one_sequence);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (crashlog_suite);
