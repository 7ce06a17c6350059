/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/disk/crashlog unit tests.
 *
 * A log written and read back: every record's type, FUA flag, sequence,
 * epoch, range and data (padding included), a flush closing its epoch.
 * The file is made fresh (an existing path or a link is refused); a full
 * log refuses the record in one line and keeps the file as it was; a
 * limit too small is refused.  Damaged files -- not a log, a bad header,
 * cut short in a record or in its data, out of sequence, a range past the
 * disk -- are refused naming the record and its byte.  A reader's
 * position (tell) read again (seek) gives the same records; a position
 * before the records is refused, one inside a record fails the read
 * after it.  Appends from four threads come back as one gapless
 * sequence.
 *
 * The write cache with a log (wcache.h's cfg.log): writes (one record per
 * physical block, with data), FUA, trims, zeros, the client's flushes,
 * the cache's implicit ones, writes through for lack of memory and a cut
 * appear in order with the right epochs and flags; a request the log has
 * no room for fails with ENOSPC and changes nothing; a log that cannot be
 * written fails the request with EIO and changes nothing (cached or
 * written through); and with writers racing on the same blocks, a
 * flusher and a cut in lose mode among them, each block's last write
 * before the last flush before the cut record is what the cut kept
 * (this fails when a block's record is appended outside its stripe lock,
 * or a flush writes back outside its record's locks).
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "suites.h"
#include "crashlog.h"
#include "error.h"
#include "largeblock/geometry.h"
#include "ramstore.h"
#include "wcache.h"

/* The log's status (lb_crashlog_status), as a value to assert on. */
static struct lb_crashlog_status
status_of (struct lb_crashlog *log)
{
  struct lb_crashlog_status st;

  lb_crashlog_status (log, &st);
  return st;
}

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

/* The same log as test_round_trip's, without its data checks. */
static void
write_round_trip_log (void)
{
  struct lb_crashlog *log = make_log (1 << 20);
  char a[16384], b[5] = "hello";

  memset (a, 'a', sizeof a);
  append_ok (log, LB_CRASHLOG_WRITE, false, 16384, sizeof a, a);
  append_ok (log, LB_CRASHLOG_WRITE, true, 4096, sizeof b, b);
  append_ok (log, LB_CRASHLOG_TRIM, false, 32768, 16384, NULL);
  append_ok (log, LB_CRASHLOG_FLUSH, false, 0, 0, NULL);
  append_ok (log, LB_CRASHLOG_ZERO, true, 0, 65536, NULL);
  append_ok (log, LB_CRASHLOG_FLUSH, false, 0, 0, NULL);
  ck_assert_int_eq (lb_crashlog_close (log, err, sizeof err), 0);
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
  ck_assert_uint_eq (status_of (log).epoch, 0);
  append_ok (log, LB_CRASHLOG_FLUSH, false, 0, 0, NULL);
  ck_assert_uint_eq (status_of (log).epoch, 1);
  append_ok (log, LB_CRASHLOG_ZERO, true, 0, 65536, NULL);
  append_ok (log, LB_CRASHLOG_FLUSH, false, 0, 0, NULL);
  /* Header, 6 records, 16384 + 8 (5 padded) bytes of data. */
  ck_assert_uint_eq (status_of (log).bytes,
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

/* tell and seek: a position read again gives the same records, with
 * their data, sequence numbers and epochs; a position before the first
 * record is refused, one inside a record fails the read that follows.
 */
START_TEST (test_reader_tell_and_seek)
{
  struct lb_crashlog_reader *r;
  struct lb_crashlog_record rec;
  struct lb_crashlog_position at_1, at_4, end, inside;
  char want[512];

  write_round_trip_log ();
  r = open_reader ();
  expect_record (r, LB_CRASHLOG_WRITE, false, 0, 0, 16384, 16384);
  lb_crashlog_reader_tell (r, &at_1);
  ck_assert_uint_eq (at_1.byte,
                     LB_CRASHLOG_HEADER_SIZE + LB_CRASHLOG_RECORD_SIZE +
                       16384);
  ck_assert_uint_eq (at_1.seq, 1);
  ck_assert_uint_eq (at_1.epoch, 0);
  expect_record (r, LB_CRASHLOG_WRITE, true, 1, 0, 4096, 5);
  expect_record (r, LB_CRASHLOG_TRIM, false, 2, 0, 32768, 16384);
  expect_record (r, LB_CRASHLOG_FLUSH, false, 3, 0, 0, 0);
  lb_crashlog_reader_tell (r, &at_4);
  ck_assert_uint_eq (at_4.seq, 4);
  ck_assert_uint_eq (at_4.epoch, 1);
  expect_record (r, LB_CRASHLOG_ZERO, true, 4, 1, 0, 65536);
  expect_record (r, LB_CRASHLOG_FLUSH, false, 5, 1, 0, 0);
  lb_crashlog_reader_tell (r, &end);

  /* Back, on, and back again. */
  ck_assert_int_eq (lb_crashlog_reader_seek (r, &at_1, err, sizeof err), 0);
  ck_assert_int_eq (lb_crashlog_reader_next (r, &rec, err, sizeof err), 1);
  ck_assert_mem_eq (rec.data, "hello", 5);
  ck_assert_uint_eq (rec.seq, 1);
  ck_assert_int_eq (lb_crashlog_reader_seek (r, &at_4, err, sizeof err), 0);
  expect_record (r, LB_CRASHLOG_ZERO, true, 4, 1, 0, 65536);
  ck_assert_int_eq (lb_crashlog_reader_seek (r, &end, err, sizeof err), 0);
  ck_assert_int_eq (lb_crashlog_reader_next (r, &rec, err, sizeof err), 0);
  ck_assert_int_eq (lb_crashlog_reader_seek (r, &at_1, err, sizeof err), 0);
  expect_record (r, LB_CRASHLOG_WRITE, true, 1, 0, 4096, 5);

  /* Before the records: refused, the reader where it was. */
  inside = (struct lb_crashlog_position) { 8, 0, 0 };
  ck_assert_int_eq (lb_crashlog_reader_seek (r, &inside, err, sizeof err), -1);
  ck_assert_int_eq (errno, EINVAL);
  snprintf (want, sizeof want,
            "%s: byte 8 is not a record's position (records start at byte "
            "64)",
            path);
  ck_assert_str_eq (err, want);
  expect_record (r, LB_CRASHLOG_TRIM, false, 2, 0, 32768, 16384);

  /* Inside a write's data: the read there is refused. */
  inside = (struct lb_crashlog_position) { at_1.byte - 8, 1, 0 };
  ck_assert_int_eq (lb_crashlog_reader_seek (r, &inside, err, sizeof err), 0);
  ck_assert_int_eq (lb_crashlog_reader_next (r, &rec, err, sizeof err), -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_msg (strstr (err, "no record magic") != NULL, "%s", err);
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
  uint64_t limit = LB_CRASHLOG_HEADER_SIZE + LB_CRASHLOG_SPARE_BYTES +
    2 * LB_CRASHLOG_RECORD_SIZE + 8;
  struct lb_crashlog_record cut = {
    .type = LB_CRASHLOG_CUT, .flags = 2, .offset = 42, .length = 1
  };
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
  ck_assert_uint_eq (file_size (), limit - LB_CRASHLOG_SPARE_BYTES);
  /* The spare is for what cannot wait: a cut. */
  ck_assert_msg (lb_crashlog_add (log, &cut, LB_CRASHLOG_ROOM_SPARE, err,
                                  sizeof err) == 0,
                 "%s", err);
  lb_crashlog_close (log, err, sizeof err);

  r = open_reader ();
  expect_record (r, LB_CRASHLOG_WRITE, false, 0, 0, 0, 8);
  expect_record (r, LB_CRASHLOG_FLUSH, false, 1, 0, 0, 0);
  expect_record (r, LB_CRASHLOG_CUT, false, 2, 1, 42, 1);
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
  ck_assert_uint_eq (status_of (log).bytes, LB_CRASHLOG_HEADER_SIZE);
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
  { 64 + 5, 8, 0, "unknown flags" },
  { 64 + 5, 3, 0, "unknown flags" },
  { 64 + 48 + 5, 1, 1, "unknown flags" },
  { 64 + 48 + 8, 7, 1, "out of sequence" },
  { 64 + 48 + 16, 1, 1, "epoch out of order" },
  { 64 + 24 + 7, 1, 0, "range beyond the end of the disk" },
  { 64 + 48 + 24, 1, 1, "a flush with a range" },
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
  ck_assert_uint_eq (status_of (log).epoch, THREADS * PER_THREAD / 50);
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

/* ---- the write cache with a log ---- */

#define KiB 1024u
#define BLK (16 * KiB)

static struct lb_geometry cgeo;
static enum lb_cut_mode cmode = LB_CUT_TORN;

/* A cache over a RAM store of 1 MiB, 16k/4k, logging to path. */
static struct lb_store *
logged_cache (uint64_t limit, uint64_t cache_bytes, uint64_t memory_limit,
              struct lb_crashlog **log)
{
  const struct lb_crashlog_geometry g = { 1u << 20, BLK, 4 * KiB };
  struct lb_wcache_config c = { .mode = cmode,
                                .seed = 7,
                                .cache_bytes = cache_bytes };
  struct lb_store *cache;

  test_geometry (&cgeo, g.disk_size, BLK, 4 * KiB, 1u << 20);
  *log = lb_crashlog_create (path, &g, limit, err, sizeof err);
  ck_assert_msg (*log != NULL, "%s", err);
  c.log = *log;
  cache = lb_wcache_new (lb_ramstore_new (&cgeo, memory_limit), &c);
  ck_assert_ptr_nonnull (cache);
  return cache;
}

static void
close_cache (struct lb_store *cache, struct lb_crashlog *log)
{
  cache->ops->destroy (cache);
  ck_assert_int_eq (lb_crashlog_close (log, err, sizeof err), 0);
}

/* The next record: of type, flags and epoch, at offset for length. */
static void
expect_cache_record (struct lb_crashlog_reader *r, enum lb_crashlog_type type,
                     unsigned flags, uint64_t epoch, uint64_t offset,
                     uint64_t length, struct lb_crashlog_record *rec)
{
  ck_assert_msg (lb_crashlog_reader_next (r, rec, err, sizeof err) == 1, "%s",
                 err);
  ck_assert_int_eq (rec->type, type);
  ck_assert_uint_eq (rec->flags, flags);
  ck_assert_uint_eq (rec->epoch, epoch);
  ck_assert_uint_eq (rec->offset, offset);
  ck_assert_uint_eq (rec->length, length);
}

static void
expect_end (struct lb_crashlog_reader *r)
{
  struct lb_crashlog_record rec;

  ck_assert_int_eq (lb_crashlog_reader_next (r, &rec, err, sizeof err), 0);
  lb_crashlog_reader_close (r);
}

START_TEST (test_cache_logs_every_change_in_order)
{
  struct lb_crashlog *log;
  struct lb_store *cache = logged_cache (1u << 20, 64u << 20, 0, &log);
  struct lb_crashlog_reader *r;
  struct lb_crashlog_record rec;
  struct lb_cut_report rep;
  unsigned char a[2 * BLK], b[4 * KiB];

  memset (a, 'a', sizeof a);
  memset (a + BLK, 'A', BLK);
  memset (b, 'b', sizeof b);
  ck_assert_int_eq (cache->ops->pwrite (cache, a, 2 * BLK, 0, false), 0);
  ck_assert_int_eq (cache->ops->pwrite (cache, b, 4 * KiB, 4 * BLK, true), 0);
  ck_assert_int_eq (cache->ops->trim (cache, BLK, BLK), 0);
  ck_assert_int_eq (cache->ops->zero (cache, 4 * KiB, 8 * KiB, 0), 0);
  ck_assert_int_eq (cache->ops->flush (cache), 0);
  ck_assert_int_eq (cache->ops->pwrite (cache, b, 4 * KiB, 0, false), 0);
  ck_assert_int_eq (lb_wcache_cut (cache, &rep), 0);
  ck_assert_int_eq (cache->ops->pwrite (cache, b, 4 * KiB, BLK, false), 0);
  close_cache (cache, log);

  r = open_reader ();
  expect_cache_record (r, LB_CRASHLOG_WRITE, 0, 0, 0, BLK, &rec);
  ck_assert_mem_eq (rec.data, a, BLK);
  expect_cache_record (r, LB_CRASHLOG_WRITE, 0, 0, BLK, BLK, &rec);
  ck_assert_mem_eq (rec.data, a + BLK, BLK);
  expect_cache_record (r, LB_CRASHLOG_WRITE, LB_CRASHLOG_FUA, 0, 4 * BLK,
                       4 * KiB, &rec);
  ck_assert_mem_eq (rec.data, b, sizeof b);
  expect_cache_record (r, LB_CRASHLOG_TRIM, 0, 0, BLK, BLK, &rec);
  expect_cache_record (r, LB_CRASHLOG_ZERO, 0, 0, 8 * KiB, 4 * KiB, &rec);
  expect_cache_record (r, LB_CRASHLOG_FLUSH, 0, 0, 0, 0, &rec);
  expect_cache_record (r, LB_CRASHLOG_WRITE, 0, 1, 0, 4 * KiB, &rec);
  /* The cut: torn (2), seed 7, number 1; it closes epoch 1. */
  expect_cache_record (r, LB_CRASHLOG_CUT, LB_CUT_TORN, 1, 7, 1, &rec);
  expect_cache_record (r, LB_CRASHLOG_WRITE, 0, 2, BLK, 4 * KiB, &rec);
  expect_end (r);
}
END_TEST

/* A cache of three blocks: every fourth write flushes it first.  A RAM
 * store with room for two folios: a write finds no memory, flushes
 * (implicitly), and a rewrite of a durable block is written through.
 */
START_TEST (test_cache_logs_implicit_flushes_and_writes_through)
{
  struct lb_crashlog *log;
  struct lb_store *cache;
  struct lb_crashlog_reader *r;
  struct lb_crashlog_record rec;
  struct lb_wcache_stats st;
  unsigned char buf[BLK];

  test_geometry (&cgeo, 1u << 20, BLK, 4 * KiB, 1u << 20);
  cache = logged_cache (1u << 20, 3 * lb_wcache_min_bytes (&cgeo), 0, &log);
  memset (buf, 'x', sizeof buf);
  for (unsigned i = 0; i < 7; i++)
    ck_assert_int_eq (cache->ops->pwrite (cache, buf, BLK, i * BLK, false), 0);
  lb_wcache_get_stats (cache, &st);
  ck_assert_uint_eq (st.implicit_flushes, 2);
  close_cache (cache, log);
  r = open_reader ();
  for (unsigned i = 0; i < 7; i++) {
    expect_cache_record (r, LB_CRASHLOG_WRITE, 0, i / 3, i * BLK, BLK, &rec);
    if (i % 3 == 2)
      expect_cache_record (r, LB_CRASHLOG_FLUSH, LB_CRASHLOG_IMPLICIT, i / 3,
                           0, 0, &rec);
  }
  expect_end (r);

  teardown ();
  setup ();
  cache = logged_cache (1u << 20, 64u << 20, 2 * BLK, &log);
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, BLK, 0, false), 0);
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, BLK, BLK, false), 0);
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, BLK, 2 * BLK, false), -1);
  ck_assert_int_eq (errno, ENOSPC);
  ck_assert_int_eq (cache->ops->flush (cache), 0);
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, BLK, 0, false), 0);
  close_cache (cache, log);
  r = open_reader ();
  expect_cache_record (r, LB_CRASHLOG_WRITE, 0, 0, 0, BLK, &rec);
  expect_cache_record (r, LB_CRASHLOG_WRITE, 0, 0, BLK, BLK, &rec);
  /* The third write's: it failed, so it is not logged. */
  expect_cache_record (r, LB_CRASHLOG_FLUSH, LB_CRASHLOG_IMPLICIT, 0, 0, 0,
                       &rec);
  expect_cache_record (r, LB_CRASHLOG_FLUSH, 0, 1, 0, 0, &rec);
  /* The rewrite finds no memory, flushes for room, finds none again. */
  expect_cache_record (r, LB_CRASHLOG_FLUSH, LB_CRASHLOG_IMPLICIT, 2, 0, 0,
                       &rec);
  expect_cache_record (r, LB_CRASHLOG_WRITE, LB_CRASHLOG_THROUGH, 3, 0, BLK,
                       &rec);
  expect_end (r);
}
END_TEST

static void
expect_content (struct lb_store *cache, uint64_t offset, uint32_t count,
                int byte)
{
  unsigned char back[BLK], want[BLK];

  ck_assert_uint_le (count, BLK);
  memset (want, byte, count);
  ck_assert_int_eq (cache->ops->pread (cache, back, count, offset), 0);
  ck_assert_mem_eq (back, want, count);
}

/* Room for a 4k write, not for a second one (nor for 2 blocks). */
START_TEST (test_cache_full_log_enospc_changes_nothing)
{
  uint64_t limit = LB_CRASHLOG_HEADER_SIZE + LB_CRASHLOG_SPARE_BYTES +
    2 * LB_CRASHLOG_RECORD_SIZE + 4 * KiB + 7;
  struct lb_crashlog *log;
  struct lb_store *cache = logged_cache (limit, 64u << 20, 0, &log);
  struct lb_crashlog_reader *r;
  struct lb_crashlog_record rec;
  unsigned char buf[2 * BLK];

  memset (buf, 'w', sizeof buf);
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, 4 * KiB, 0, false), 0);
  lb_take_fault ();
  errno = 0;
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, 4 * KiB, BLK, false), -1);
  ck_assert_int_eq (errno, ENOSPC);
  ck_assert_int_eq (lb_take_fault (), LB_FAULT_CRASH_LOG);
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, 2 * BLK, 0, true), -1);
  ck_assert_int_eq (errno, ENOSPC);
  ck_assert_int_eq (cache->ops->trim (cache, BLK, 0), -1);
  ck_assert_int_eq (errno, ENOSPC);
  expect_content (cache, 0, 4 * KiB, 'w');
  expect_content (cache, 4 * KiB, BLK - 4 * KiB, 0);
  expect_content (cache, BLK, BLK, 0);
  /* A flush still fits: the data it makes durable is in the log. */
  ck_assert_int_eq (cache->ops->flush (cache), 0);
  close_cache (cache, log);
  r = open_reader ();
  expect_cache_record (r, LB_CRASHLOG_WRITE, 0, 0, 0, 4 * KiB, &rec);
  expect_cache_record (r, LB_CRASHLOG_FLUSH, 0, 0, 0, 0, &rec);
  expect_end (r);
}
END_TEST

/* The file may grow by only `room` bytes more: the next append fails
 * with EFBIG, as a full or failing disk under the log would.
 */
static void
limit_file_size (struct rlimit *old, uint64_t room)
{
  struct rlimit lim;

  ck_assert_int_eq (getrlimit (RLIMIT_FSIZE, old), 0);
  lim = *old;
  lim.rlim_cur = file_size () + room;
  signal (SIGXFSZ, SIG_IGN);
  ck_assert_int_eq (setrlimit (RLIMIT_FSIZE, &lim), 0);
}

static void
restore_file_size (const struct rlimit *old)
{
  ck_assert_int_eq (setrlimit (RLIMIT_FSIZE, old), 0);
  signal (SIGXFSZ, SIG_DFL);
}

/* _i = 0: the write would be cached; 1: written through (FUA), so the
 * durable store took it and must get its old bytes back.
 */
START_TEST (test_cache_log_write_fails_eio_changes_nothing)
{
  bool fua = _i == 1;
  struct lb_crashlog *log;
  struct lb_store *cache = logged_cache (1u << 20, 64u << 20, 0, &log);
  struct lb_crashlog_reader *r;
  struct lb_crashlog_record rec;
  struct rlimit old;
  unsigned char buf[4 * KiB];
  int ret, e;

  memset (buf, 'o', sizeof buf);
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, sizeof buf, 0, true), 0);
  memset (buf, 'n', sizeof buf);
  limit_file_size (&old, 100);
  ret = cache->ops->pwrite (cache, buf, sizeof buf, 0, fua);
  e = errno;
  restore_file_size (&old);
  ck_assert_int_eq (ret, -1);
  ck_assert_int_eq (e, EIO);
  ck_assert_int_eq (lb_take_fault (), LB_FAULT_CRASH_LOG);
  ck_assert_int_eq (status_of (log).broken, EFBIG);
  expect_content (cache, 0, sizeof buf, 'o');
  /* The log ends there: the disk takes no more changes. */
  ck_assert_int_eq (cache->ops->pwrite (cache, buf, sizeof buf, BLK, false),
                    -1);
  ck_assert_int_eq (errno, EIO);
  ck_assert_int_eq (cache->ops->flush (cache), -1);
  expect_content (cache, BLK, sizeof buf, 0);
  close_cache (cache, log);
  r = open_reader ();
  expect_cache_record (r, LB_CRASHLOG_WRITE, LB_CRASHLOG_FUA, 0, 0, 4 * KiB,
                       &rec);
  expect_end (r);
}
END_TEST

#define WRITERS 3
#define BLOCKS 4

/* Every write's data: a stamp no other write has, in its first 8 bytes. */
static _Atomic uint64_t stamps;

static uint64_t
stamp_of (const void *data)
{
  uint64_t v;

  memcpy (&v, data, sizeof v);
  return v;
}

/* Two-block writes over blocks 0-3 until the power fails (EIO). */
static void *
race_writes (void *opaque)
{
  struct lb_store *conn = lb_wcache_connect (opaque);
  unsigned char buf[2 * BLK] = { 0 };

  for (unsigned i = 0; i < 100000; i++) {
    uint64_t v = atomic_fetch_add (&stamps, 1) + 1;

    memcpy (buf, &v, sizeof v);
    memcpy (buf + BLK, &v, sizeof v);
    if (conn->ops->pwrite (conn, buf, sizeof buf, (i % 3) * BLK, false) == -1)
      break;
  }
  conn->ops->destroy (conn);
  return NULL;
}

static void *
race_flushes (void *opaque)
{
  struct lb_store *conn = lb_wcache_connect (opaque);

  while (conn->ops->flush (conn) == 0)
    ;
  conn->ops->destroy (conn);
  return NULL;
}

/* Writers racing on the same blocks, a flusher, and a cut (lose) in the
 * middle.  Replaying the log -- each block's last write before the last
 * flush before the cut -- must give the post-cut image: a write logged
 * out of the order the cache applied it, or a flush that made durable
 * more (or less) than the records before it, shows here.
 */
START_TEST (test_cache_log_orders_racing_blocks_and_flushes)
{
  struct lb_crashlog *log;
  struct lb_store *cache;
  struct lb_crashlog_reader *r;
  struct lb_crashlog_record rec;
  struct lb_cut_report rep;
  pthread_t t[WRITERS + 1];
  uint64_t durable[BLOCKS], logged[BLOCKS] = { 0 }, flushed[BLOCKS] = { 0 };
  unsigned flushes = 0;
  int got;

  cmode = LB_CUT_LOSE;
  cache = logged_cache (256u << 20, 64u << 20, 0, &log);
  cmode = LB_CUT_TORN;
  atomic_store (&stamps, 0);
  for (int i = 0; i < WRITERS; i++)
    ck_assert_int_eq (pthread_create (&t[i], NULL, race_writes, cache), 0);
  ck_assert_int_eq (pthread_create (&t[WRITERS], NULL, race_flushes, cache),
                    0);
  while (atomic_load (&stamps) < 2000)
    sched_yield ();
  ck_assert_int_eq (lb_wcache_cut (cache, &rep), 0);
  for (int i = 0; i <= WRITERS; i++)
    pthread_join (t[i], NULL);
  for (int b = 0; b < BLOCKS; b++) {
    unsigned char back[BLK];
    ck_assert_int_eq (cache->ops->pread (cache, back, BLK, b * BLK), 0);
    durable[b] = stamp_of (back);
  }
  close_cache (cache, log);

  r = open_reader ();
  while ((got = lb_crashlog_reader_next (r, &rec, err, sizeof err)) == 1 &&
         rec.type != LB_CRASHLOG_CUT) {
    if (rec.type == LB_CRASHLOG_WRITE) {
      ck_assert_uint_eq (rec.length, BLK);
      logged[rec.offset / BLK] = stamp_of (rec.data);
    }
    if (rec.type == LB_CRASHLOG_FLUSH) {
      memcpy (flushed, logged, sizeof flushed);
      flushes++;
    }
  }
  ck_assert_msg (got == 1, "no cut in the log: %s", err);
  lb_crashlog_reader_close (r);
  ck_assert_uint_gt (flushes, 0);
  for (int b = 0; b < BLOCKS; b++)
    ck_assert_msg (durable[b] == flushed[b],
                   "block %d: the cut kept write %ju, the log says %ju "
                   "(%u flushes)",
                   b, (uintmax_t) durable[b], (uintmax_t) flushed[b], flushes);
}
END_TEST

static Suite *
crashlog_suite (void)
{
  Suite *s = suite_create ("crashlog");
  TCase *tc = tcase_create ("core");

  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_round_trip);
  tcase_add_test (tc, test_reader_tell_and_seek);
  tcase_add_test (tc, test_never_overwrites);
  tcase_add_test (tc, test_full_log_refuses_and_keeps_the_file);
  tcase_add_test (tc, test_limit_too_small);
  tcase_add_test (tc, test_bad_appends);
  tcase_add_loop_test (tc, test_damaged_log_refused, 0, NR_DAMAGES);
  tcase_add_test (tc, test_threads_one_sequence);
  suite_add_tcase (s, tc);

  tc = tcase_create ("cache");
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_cache_logs_every_change_in_order);
  tcase_add_test (tc, test_cache_logs_implicit_flushes_and_writes_through);
  tcase_add_test (tc, test_cache_full_log_enospc_changes_nothing);
  tcase_add_loop_test (tc, test_cache_log_write_fails_eio_changes_nothing, 0,
                       2);
  tcase_add_test (tc, test_cache_log_orders_racing_blocks_and_flushes);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (crashlog_suite);
