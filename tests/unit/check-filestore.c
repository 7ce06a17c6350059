/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/disk/filestore unit tests.
 *
 * Probing paths; creating a sparse file of the disk's size; reads and
 * writes against a model; trim and zero (each flag) against the model and
 * the file's allocation; extents that only call whole logical blocks
 * holes; read-only files; the whole-file lock (one writer or many
 * readers); and, with direct I/O, unaligned writes from
 * many threads into the same direct I/O units, none of which may be lost
 * to another's read-modify-write, and misaligned requests longer than a
 * bounce window; a request far larger than 64 claim units beside small
 * ones (no torn block); reads past the end of a file that shrank (EIO).
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "suites.h"
#include "error.h"
#include "filestore.h"

static char dir[] = "/var/tmp/lbfilestore.XXXXXX";
static char path[sizeof dir + 16];

static void
setup (void)
{
  strcpy (dir, "/var/tmp/lbfilestore.XXXXXX");
  ck_assert_ptr_nonnull (mkdtemp (dir));
  snprintf (path, sizeof path, "%s/disk.img", dir);
}

static void
teardown (void)
{
  unlink (path);
  rmdir (dir);
}

/* Open path as a file disk of the given geometry (creating it). */
static struct lb_store *
open_disk (struct lb_geometry *g, uint64_t size, uint32_t physical,
           uint32_t logical, bool direct)
{
  struct lb_file_info info;
  struct lb_store *s;
  char err[256];

  test_geometry (g, size, physical, logical, 1 << 20);
  ck_assert_int_eq (lb_file_probe (path, &info, err, sizeof err), 0);
  s = lb_filestore_open (g, path, &info, direct, false, err, sizeof err);
  ck_assert_msg (s != NULL, "%s", err);
  return s;
}

/* Open the existing path again, read-only or not, as a second server
 * would: NULL with errno and the message in err if refused.
 */
static struct lb_store *
open_again (const struct lb_geometry *g, bool read_only, char *err,
            size_t errlen)
{
  struct lb_file_info info;

  ck_assert_int_eq (lb_file_probe (path, &info, err, errlen), 0);
  return lb_filestore_open (g, path, &info, false, read_only, err, errlen);
}

static uint64_t
allocated_bytes (void)
{
  struct stat st;

  ck_assert_int_eq (stat (path, &st), 0);
  return (uint64_t) st.st_blocks * 512;
}

static void
fill (unsigned char *buf, size_t n, unsigned seed)
{
  for (size_t i = 0; i < n; i++)
    buf[i] = (unsigned char) ((i * 131 + seed * 7919) >> 3) | 1;
}

START_TEST (test_probe)
{
  struct lb_file_info info;
  char err[256];

  ck_assert_int_eq (lb_file_probe (path, &info, err, sizeof err), 0);
  ck_assert (!info.exists);
  ck_assert_int_eq (lb_file_probe (dir, &info, err, sizeof err), -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_msg (strstr (err, "is not a regular file or a block device"), "%s",
                 err);

  FILE *fp = fopen (path, "w");
  ck_assert_ptr_nonnull (fp);
  ck_assert_int_eq (ftruncate (fileno (fp), 12345), 0);
  fclose (fp);
  ck_assert_int_eq (lb_file_probe (path, &info, err, sizeof err), 0);
  ck_assert (info.exists && !info.is_blockdev);
  ck_assert_uint_eq (info.size_bytes, 12345);
}
END_TEST

START_TEST (test_create_sparse_and_roundtrip)
{
  struct lb_geometry g;
  struct lb_store *s = open_disk (&g, 64 << 20, 16384, 4096, false);
  static unsigned char data[100000], got[100000];
  struct stat st;

  ck_assert_int_eq (stat (path, &st), 0);
  ck_assert_uint_eq (st.st_size, 64 << 20);
  ck_assert_uint_lt (allocated_bytes (), 1 << 20);
  ck_assert (!s->read_only);
  ck_assert_str_eq (s->ops->name, "file");

  fill (data, sizeof data, 1);
  ck_assert_int_eq (s->ops->pwrite (s, data, sizeof data, 12288, true), 0);
  ck_assert_int_eq (s->ops->flush (s), 0);
  ck_assert_int_eq (s->ops->pread (s, got, sizeof got, 12288), 0);
  ck_assert_mem_eq (got, data, sizeof data);
  ck_assert_int_eq (s->ops->pread (s, got, 4096, 0), 0);
  for (int i = 0; i < 4096; i++)
    ck_assert_int_eq (got[i], 0);
  s->ops->destroy (s);
}
END_TEST

/* Records the extents of a walk. */
struct walk {
  int n;
  uint64_t off[16], len[16];
  bool hole[16];
};

static int
record (uint64_t off, uint64_t len, bool hole, void *opaque)
{
  struct walk *w = opaque;

  ck_assert_int_lt (w->n, 16);
  w->off[w->n] = off;
  w->len[w->n] = len;
  w->hole[w->n] = hole;
  w->n++;
  return 0;
}

START_TEST (test_trim_zero_and_extents)
{
  struct lb_geometry g;
  struct lb_store *s = open_disk (&g, 4 << 20, 65536, 16384, false);
  static unsigned char data[1 << 20], got[1 << 20];
  struct walk w = { 0 };
  uint64_t full;

  fill (data, sizeof data, 2);
  ck_assert_int_eq (s->ops->pwrite (s, data, sizeof data, 0, false), 0);
  full = allocated_bytes ();
  ck_assert_uint_ge (full, 1 << 20);

  /* Trim 256k in the middle: deallocated, reads zero, a hole. */
  ck_assert_int_eq (s->ops->trim (s, 262144, 262144), 0);
  ck_assert_uint_le (allocated_bytes (), full - 262144);
  ck_assert_int_eq (s->ops->pread (s, got, 262144, 262144), 0);
  for (int i = 0; i < 262144; i++)
    ck_assert_int_eq (got[i], 0);
  ck_assert_int_eq (s->ops->extents (s, 4 << 20, 0, false, record, &w), 0);
  ck_assert_int_eq (w.n, 4);
  ck_assert (!w.hole[0] && w.off[0] == 0 && w.len[0] == 262144);
  ck_assert (w.hole[1] && w.off[1] == 262144 && w.len[1] == 262144);
  ck_assert (!w.hole[2] && w.off[2] == 524288 && w.len[2] == 524288);
  ck_assert (w.hole[3] && w.off[3] == 1 << 20 && w.len[3] == 3 << 20);

  /* req_one: one run, starting at the offset. */
  w.n = 0;
  ck_assert_int_eq (s->ops->extents (s, 1 << 20, 300000, true, record, &w), 0);
  ck_assert_int_eq (w.n, 1);
  ck_assert_uint_eq (w.off[0], 300000);
  ck_assert (w.hole[0]);

  /* Zero with NO_HOLE keeps the data blocks allocated. */
  uint64_t before = allocated_bytes ();
  ck_assert_int_eq (s->ops->zero (s, 262144, 524288, 0), 0);
  ck_assert_uint_ge (allocated_bytes (), before - 4096);
  ck_assert_int_eq (s->ops->pread (s, got, 262144, 524288), 0);
  for (int i = 0; i < 262144; i++)
    ck_assert_int_eq (got[i], 0);
  /* Zero that may trim, fast: releases them. */
  before = allocated_bytes ();
  ck_assert_int_eq (s->ops->zero (s, 1 << 20, 0,
                                  LB_ZERO_MAY_TRIM | LB_ZERO_FAST),
                    0);
  ck_assert_uint_le (allocated_bytes (), before - 262144);
  ck_assert_int_eq (s->ops->pread (s, got, 1 << 20, 0), 0);
  for (int i = 0; i < 1 << 20; i++)
    ck_assert_int_eq (got[i], 0);
  s->ops->destroy (s);
}
END_TEST

/* A hole smaller than a logical block is data to the client. */
START_TEST (test_partial_hole_is_data)
{
  struct lb_geometry g;
  struct lb_store *s = open_disk (&g, 1 << 20, 16384, 16384, false);
  static unsigned char data[4096];
  struct walk w = { 0 };

  fill (data, sizeof data, 3);
  ck_assert_int_eq (s->ops->pwrite (s, data, 4096, 16384 + 8192, false), 0);
  ck_assert_int_eq (s->ops->extents (s, 65536, 0, false, record, &w), 0);
  ck_assert_int_eq (w.n, 3);
  ck_assert (w.hole[0] && w.off[0] == 0 && w.len[0] == 16384);
  ck_assert (!w.hole[1] && w.off[1] == 16384 && w.len[1] == 16384);
  ck_assert (w.hole[2] && w.off[2] == 32768 && w.len[2] == 32768);
  s->ops->destroy (s);
}
END_TEST

/* Without read_only, a file only readable is refused at once with the
 * way out in the message; with it, the store is read-only.
 */
START_TEST (test_read_only_file)
{
  struct lb_geometry g;
  struct lb_store *s = open_disk (&g, 1 << 20, 4096, 512, false);
  char err[256];

  s->ops->destroy (s);
  if (geteuid () == 0)
    return; /* root opens 0444 files for writing */
  ck_assert_int_eq (chmod (path, 0444), 0);
  errno = 0;
  ck_assert_ptr_null (open_again (&g, false, err, sizeof err));
  ck_assert_int_eq (errno, EACCES);
  ck_assert_msg (strstr (err, "serve it with nbdkit -r"), "%s", err);
  s = open_again (&g, true, err, sizeof err);
  ck_assert_msg (s != NULL, "%s", err);
  ck_assert (s->read_only);
  s->ops->destroy (s);
}
END_TEST

/* The whole-file lock: one writer, or any number of readers.  Open file
 * description locks conflict between two opens in one process as between
 * two servers, and a refused open changes nothing.
 */
START_TEST (test_lock_one_writer_or_many_readers)
{
  struct lb_geometry g;
  struct lb_store *rw = open_disk (&g, 1 << 20, 4096, 512, false);
  struct lb_store *ro1, *ro2;
  char err[256], buf[4096], data[4096];

  memset (data, 'A', sizeof data);
  ck_assert_int_eq (rw->ops->pwrite (rw, data, 4096, 0, false), 0);
  for (int read_only = 0; read_only <= 1; read_only++) {
    errno = 0;
    ck_assert_ptr_null (open_again (&g, read_only, err, sizeof err));
    ck_assert_int_eq (errno, EBUSY);
    ck_assert_msg (strstr (err, ": in use by another server (locked)"), "%s",
                   err);
    ck_assert_msg (strstr (err, path), "%s", err);
  }
  ck_assert_int_eq (rw->ops->pread (rw, buf, 4096, 0), 0);
  ck_assert_mem_eq (buf, data, 4096);
  rw->ops->destroy (rw);

  ro1 = open_again (&g, true, err, sizeof err);
  ck_assert_msg (ro1 != NULL, "%s", err);
  ro2 = open_again (&g, true, err, sizeof err);
  ck_assert_msg (ro2 != NULL, "%s", err);
  ck_assert (ro1->read_only && ro2->read_only);
  ck_assert_ptr_null (open_again (&g, false, err, sizeof err));
  ck_assert_int_eq (errno, EBUSY);
  ro1->ops->destroy (ro1);
  ck_assert_ptr_null (open_again (&g, false, err, sizeof err));
  ro2->ops->destroy (ro2);

  /* The last reader gone, a writer may open it again. */
  rw = open_again (&g, false, err, sizeof err);
  ck_assert_msg (rw != NULL, "%s", err);
  rw->ops->destroy (rw);
}
END_TEST

#define WRITERS 4
#define ROUNDS 1000

struct writer {
  struct lb_store *s;
  pthread_barrier_t *start;
  int id;
};

/* Writer id owns bytes [id*1000, +1000) of the first 4k unit and writes
 * them with a new pattern each round: unaligned, so each write is a
 * read-modify-write of a unit the other writers write too.  Before each
 * write it checks that its previous write to that unit is still there:
 * nobody else writes those bytes, so anything else is a lost update.
 * Returns NULL, (void *) 1 for an I/O error, (void *) 2 for a lost update.
 */
static void *
write_segments (void *arg)
{
  struct writer *w = arg;
  unsigned char data[1000], got[1000];

  pthread_barrier_wait (w->start);
  for (int r = 0; r < ROUNDS; r++) {
    uint64_t offset = (uint64_t) w->id * 1000;
    if (r > 0) {
      if (w->s->ops->pread (w->s, got, sizeof got, offset) == -1)
        return (void *) 1;
      if (memcmp (got, data, sizeof got) != 0)
        return (void *) 2;
    }
    memset (data, (unsigned char) (r * WRITERS + w->id), sizeof data);
    if (w->s->ops->pwrite (w->s, data, sizeof data, offset, false) == -1)
      return (void *) 1;
  }
  return NULL;
}

START_TEST (test_direct_rmw_loses_nothing)
{
  struct lb_geometry g;
  struct lb_file_info info;
  struct lb_store *s;
  pthread_t th[WRITERS];
  pthread_barrier_t start;
  struct writer w[WRITERS];
  static unsigned char got[4096];
  char err[256];

  test_geometry (&g, 1 << 20, 4096, 512, 1 << 20);
  ck_assert_int_eq (lb_file_probe (path, &info, err, sizeof err), 0);
  s = lb_filestore_open (&g, path, &info, true, false, err, sizeof err);
  if (s == NULL && strstr (err, "does not support O_DIRECT"))
    return; /* this filesystem cannot test it */
  ck_assert_msg (s != NULL, "%s", err);

  pthread_barrier_init (&start, NULL, WRITERS);
  for (int i = 0; i < WRITERS; i++) {
    w[i] = (struct writer) { .s = s, .start = &start, .id = i };
    ck_assert_int_eq (pthread_create (&th[i], NULL, write_segments, &w[i]), 0);
  }
  for (int i = 0; i < WRITERS; i++) {
    void *r;
    pthread_join (th[i], &r);
    ck_assert_msg (r != (void *) 2, "writer %d lost an update", i);
    ck_assert_ptr_null (r);
  }
  pthread_barrier_destroy (&start);
  ck_assert_int_eq (s->ops->pread (s, got, sizeof got, 0), 0);
  for (int i = 0; i < WRITERS; i++) {
    unsigned char want = (unsigned char) ((ROUNDS - 1) * WRITERS + i);
    for (int b = 0; b < 1000; b++)
      ck_assert_msg (got[i * 1000 + b] == want,
                     "writer %d's last write lost at byte %d", i, b);
  }
  s->ops->destroy (s);
}
END_TEST

/* A writer that rewrites a request spanning many more claim units than
 * the old 64 stripes (1 MiB of 4k blocks) races a thread that writes and
 * reads single blocks inside and outside that range: every physical
 * block read must be all of one write (never torn), and both make
 * progress to the end.
 */
#define BIG_BYTES (1u << 20)
#define BIG_ROUNDS 40

struct racer {
  struct lb_store *s;
  pthread_barrier_t *start;
  unsigned char *buf;
};

static void *
rewrite_big (void *arg)
{
  struct racer *r = arg;

  pthread_barrier_wait (r->start);
  for (int round = 0; round < BIG_ROUNDS; round++) {
    memset (r->buf, 0x10 + round, BIG_BYTES);
    if (r->s->ops->pwrite (r->s, r->buf, BIG_BYTES, 4096, round % 4 == 0) ==
        -1)
      return (void *) 1;
  }
  return NULL;
}

/* Returns NULL, (void *) 1 for an I/O error, (void *) 2 for a torn block. */
static void *
poke_small (void *arg)
{
  struct racer *r = arg;
  unsigned char block[4096];

  pthread_barrier_wait (r->start);
  for (int round = 0; round < BIG_ROUNDS * 8; round++) {
    uint64_t inside = 4096 * (uint64_t) (1 + round % 256);
    uint64_t outside = BIG_BYTES + 8192 + 4096 * (uint64_t) (round % 16);

    memset (block, 0xa0 + round % 16, sizeof block);
    if (r->s->ops->pwrite (r->s, block, sizeof block, outside, false) == -1 ||
        r->s->ops->pread (r->s, block, sizeof block, inside) == -1)
      return (void *) 1;
    for (size_t i = 1; i < sizeof block; i++)
      if (block[i] != block[0])
        return (void *) 2;
    if (round % 3 == 0) {
      memset (block, 0xf0, sizeof block);
      if (r->s->ops->pwrite (r->s, block, sizeof block, inside, false) == -1)
        return (void *) 1;
    }
  }
  return NULL;
}

START_TEST (test_big_request_beside_small_ones)
{
  struct lb_geometry g;
  struct lb_store *s = open_disk (&g, 4 << 20, 4096, 512, false);
  pthread_barrier_t start;
  pthread_t big, small;
  struct racer r;
  void *rb, *rs;

  r.buf = malloc (BIG_BYTES);
  ck_assert_ptr_nonnull (r.buf);
  r.s = s;
  r.start = &start;
  pthread_barrier_init (&start, NULL, 2);
  ck_assert_int_eq (pthread_create (&big, NULL, rewrite_big, &r), 0);
  ck_assert_int_eq (pthread_create (&small, NULL, poke_small, &r), 0);
  pthread_join (big, &rb);
  pthread_join (small, &rs);
  pthread_barrier_destroy (&start);
  ck_assert_ptr_null (rb);
  ck_assert_msg (rs != (void *) 2, "a physical block was read torn");
  ck_assert_ptr_null (rs);
  free (r.buf);
  s->ops->destroy (s);
}
END_TEST

/* direct=on: a misaligned request several bounce windows long (the
 * windows are at most 1 MiB) reads and writes exactly its bytes.
 */
START_TEST (test_direct_misaligned_spans_windows)
{
  const uint32_t count = (3u << 20) + 1000, offset = 1000;
  const uint64_t size = 8 << 20;
  struct lb_geometry g;
  struct lb_file_info info;
  struct lb_store *s;
  unsigned char *model = malloc (size), *got = malloc (size);
  char err[256];

  ck_assert_ptr_nonnull (model);
  ck_assert_ptr_nonnull (got);
  test_geometry (&g, size, 4096, 512, 4 << 20);
  ck_assert_int_eq (lb_file_probe (path, &info, err, sizeof err), 0);
  s = lb_filestore_open (&g, path, &info, true, false, err, sizeof err);
  if (s == NULL && strstr (err, "does not support O_DIRECT"))
    goto out; /* this filesystem cannot test it */
  ck_assert_msg (s != NULL, "%s", err);
  fill (model, size, 5);
  ck_assert_int_eq (s->ops->pwrite (s, model, (uint32_t) size, 0, false), 0);
  fill (model + offset, count, 6);
  ck_assert_int_eq (s->ops->pwrite (s, model + offset, count, offset, true),
                    0);
  ck_assert_int_eq (s->ops->pread (s, got + 7, count, offset + 7), 0);
  ck_assert_int_eq (memcmp (got + 7, model + offset + 7, count), 0);
  ck_assert_int_eq (s->ops->pread (s, got, (uint32_t) size, 0), 0);
  ck_assert_int_eq (memcmp (got, model, size), 0);
  s->ops->destroy (s);
out:
  free (model);
  free (got);
}
END_TEST

/* The file shrinks under the store: a read past its new end fails with
 * EIO and says why (LB_FAULT_PAST_EOF); a read before it still works; a
 * write past it extends the file.
 */
START_TEST (test_read_past_shrunk_end_eio)
{
  struct lb_geometry g;
  struct lb_store *s = open_disk (&g, 4 << 20, 4096, 512, false);
  static unsigned char buf[8192];
  struct stat st;

  fill (buf, sizeof buf, 7);
  ck_assert_int_eq (s->ops->pwrite (s, buf, sizeof buf, 0, false), 0);
  ck_assert_int_eq (truncate (path, 1 << 20), 0);
  lb_take_fault ();
  errno = 0;
  ck_assert_int_eq (s->ops->pread (s, buf, sizeof buf, 3 << 20), -1);
  ck_assert_int_eq (errno, EIO);
  ck_assert_int_eq (lb_take_fault (), LB_FAULT_PAST_EOF);
  ck_assert_int_eq (lb_take_fault (), LB_FAULT_NONE);
  ck_assert_int_eq (s->ops->pread (s, buf, sizeof buf, 0), 0);
  ck_assert_int_eq (s->ops->pwrite (s, buf, sizeof buf, 3 << 20, false), 0);
  ck_assert_int_eq (stat (path, &st), 0);
  ck_assert_uint_eq (st.st_size, (3 << 20) + sizeof buf);
  ck_assert_int_eq (s->ops->pread (s, buf, sizeof buf, 2 << 20), 0);
  for (size_t i = 0; i < sizeof buf; i++)
    ck_assert_uint_eq (buf[i], 0);
  s->ops->destroy (s);
}
END_TEST

static Suite *
filestore_suite (void)
{
  Suite *s = suite_create ("filestore");
  TCase *tc = tcase_create ("filestore");

  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_probe);
  tcase_add_test (tc, test_create_sparse_and_roundtrip);
  tcase_add_test (tc, test_trim_zero_and_extents);
  tcase_add_test (tc, test_partial_hole_is_data);
  tcase_add_test (tc, test_read_only_file);
  tcase_add_test (tc, test_lock_one_writer_or_many_readers);
  tcase_add_test (tc, test_direct_rmw_loses_nothing);
  tcase_add_test (tc, test_big_request_beside_small_ones);
  tcase_add_test (tc, test_direct_misaligned_spans_windows);
  tcase_add_test (tc, test_read_past_shrunk_end_eio);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (filestore_suite);
