/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/aligned-io unit tests.
 *
 * What lb_dio_info_get learns of a regular file and refuses of a pipe;
 * aligned buffers; every rule lb_io_check enforces, with its message; and
 * whole-length reads and writes, buffered and with O_DIRECT where the
 * filesystem of $TMPDIR (default /var/tmp) allows it.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suites.h"
#include "largeblock/aligned-io.h"

/* A new empty file in $TMPDIR or /var/tmp, already unlinked. */
static int
temp_file (int extra_flags)
{
  const char *dir = getenv ("TMPDIR") ? getenv ("TMPDIR") : "/var/tmp";
  char path[4096];
  int fd;

  snprintf (path, sizeof path, "%s/check-aligned-io.XXXXXX", dir);
  fd = mkostemp (path, extra_flags);
  if (fd == -1 && errno == EINVAL && extra_flags != 0)
    return -1; /* the filesystem refuses extra_flags (O_DIRECT) */
  ck_assert_msg (fd >= 0, "mkostemp %s: %s", path, strerror (errno));
  unlink (path);
  return fd;
}

static bool
is_power_of_2 (uint64_t v)
{
  return v != 0 && (v & (v - 1)) == 0;
}

START_TEST (test_info_regular_file)
{
  struct lb_dio_info info;
  char err[256] = "";
  char data[10000] = { 0 };
  int fd = temp_file (0);

  ck_assert_int_eq (write (fd, data, sizeof data), (ssize_t) sizeof data);
  ck_assert_msg (lb_dio_info_get (fd, &info, err, sizeof err) == 0, "%s", err);
  ck_assert (!info.is_blockdev);
  ck_assert_uint_eq (info.size_bytes, sizeof data);
  ck_assert (is_power_of_2 (info.mem_align_bytes));
  ck_assert (is_power_of_2 (info.offset_align_bytes));
  ck_assert (is_power_of_2 (info.logical_bytes));
  ck_assert (is_power_of_2 (info.physical_bytes));
  ck_assert (info.source == LB_DIO_SOURCE_STATX ||
             info.source == LB_DIO_SOURCE_GUESS);
  close (fd);
}
END_TEST

START_TEST (test_info_refuses_pipe_and_bad_fd)
{
  struct lb_dio_info info;
  char err[256] = "";
  int p[2];

  ck_assert_int_eq (pipe (p), 0);
  errno = 0;
  ck_assert_int_eq (lb_dio_info_get (p[0], &info, err, sizeof err), -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_msg (strstr (err, "neither a block device nor a regular file"),
                 "%s", err);
  close (p[0]);
  close (p[1]);

  errno = 0;
  ck_assert_int_eq (lb_dio_info_get (-1, &info, err, sizeof err), -1);
  ck_assert_int_eq (errno, EBADF);
  ck_assert_msg (strncmp (err, "fstat: ", 7) == 0, "%s", err);
}
END_TEST

/* Loop index: log2 of the alignment, 0 ... 21 (2 MiB). */
START_TEST (test_aligned_alloc)
{
  size_t align = (size_t) 1 << _i;
  char *p = lb_aligned_alloc (align, 1000);

  ck_assert_ptr_nonnull (p);
  ck_assert_uint_eq ((uintptr_t) p % align, 0);
  memset (p, 0xaa, 1000);
  free (p);
}
END_TEST

START_TEST (test_aligned_alloc_errors)
{
  errno = 0;
  ck_assert_ptr_null (lb_aligned_alloc (0, 4096));
  ck_assert_int_eq (errno, EINVAL);
  errno = 0;
  ck_assert_ptr_null (lb_aligned_alloc (3000, 4096));
  ck_assert_int_eq (errno, EINVAL);
  errno = 0;
  ck_assert_ptr_null (lb_aligned_alloc (4096, 0));
  ck_assert_int_eq (errno, EINVAL);
  errno = 0;
  ck_assert_ptr_null (lb_aligned_alloc (4096, SIZE_MAX - 100));
  ck_assert_int_eq (errno, ENOMEM);
}
END_TEST

/* Every rule of lb_io_check, against a 4096/512 info, with its message. */
static const struct {
  uintptr_t buf;
  size_t count;
  uint64_t offset;
  const char *msg; /* NULL: passes */
} io_cases[] = {
  { 0x10000, 4096, 0, NULL },
  { 0x10200, 8192, 1ull << 40, NULL },
  { 0x10000, 4096, 1000,
    "write offset 1000 length 4096: the offset is not a multiple of the "
    "direct I/O alignment 4096" },
  { 0x10000, 4096, 512,
    "write offset 512 length 4096: the offset is not a multiple of the "
    "direct I/O alignment 4096" },
  { 0x10000, 1000, 4096,
    "write offset 4096 length 1000: the length is not a multiple of the "
    "direct I/O alignment 4096" },
  { 0x10000, 0, 4096, "write offset 4096 length 0: the length is zero" },
  { 0x10100, 4096, 8192,
    "write offset 8192 length 4096: the buffer 0x10100 is not aligned to the "
    "direct I/O memory alignment 512" },
  { 0x10000, 4096, (1ull << 63) - 8192, NULL },
  { 0x10000, 8192, (1ull << 63) - 8192,
    "write offset 9223372036854767616 length 8192: ends beyond 2^63-1" },
  { 0x10000, 4096, UINT64_MAX - 4095,
    "write offset 18446744073709547520 length 4096: ends beyond 2^63-1" },
};

START_TEST (test_io_check_rules)
{
  struct lb_dio_info info = { .mem_align_bytes = 512,
                              .offset_align_bytes = 4096 };
  char err[256] = "";
  int r;

  errno = 0;
  r = lb_io_check (&info, "write", (const void *) io_cases[_i].buf,
                   io_cases[_i].count, io_cases[_i].offset, err, sizeof err);
  if (io_cases[_i].msg == NULL)
    ck_assert_msg (r == 0, "%s", err);
  else {
    ck_assert_int_eq (r, -1);
    ck_assert_int_eq (errno, EINVAL);
    ck_assert_str_eq (err, io_cases[_i].msg);
  }
}
END_TEST

START_TEST (test_full_roundtrip_buffered)
{
  const size_t len = 3 << 20;
  char *out = malloc (len), *in = malloc (len);
  char err[256] = "";
  size_t i;
  int fd = temp_file (0);

  for (i = 0; i < len; i++)
    out[i] = (char) (i * 7 + i / 4096);
  ck_assert_msg (lb_pwrite_full (fd, NULL, out, len, 12345, err, sizeof err) ==
                   0,
                 "%s", err);
  ck_assert_msg (lb_pread_full (fd, NULL, in, len, 12345, err, sizeof err) ==
                   0,
                 "%s", err);
  ck_assert (memcmp (in, out, len) == 0);

  /* A read past the end of the file: EIO, naming how much was read. */
  errno = 0;
  ck_assert_int_eq (lb_pread_full (fd, NULL, in, 100, 12345 + len - 40, err,
                                   sizeof err),
                    -1);
  ck_assert_int_eq (errno, EIO);
  ck_assert_msg (strstr (err, "end of file after 40 bytes"), "%s", err);

  /* A descriptor that cannot be read: its errno, and the offset. */
  errno = 0;
  ck_assert_int_eq (lb_pread_full (-1, NULL, in, 100, 7, err, sizeof err), -1);
  ck_assert_int_eq (errno, EBADF);
  ck_assert_msg (strncmp (err, "read offset 7 length 100: ", 26) == 0, "%s",
                 err);
  errno = 0;
  ck_assert_int_eq (lb_pwrite_full (-1, NULL, in, 100, 7, err, sizeof err),
                    -1);
  ck_assert_int_eq (errno, EBADF);
  free (out);
  free (in);
  close (fd);
}
END_TEST

/* With info, a misaligned request is refused before any I/O: the file
 * stays empty.
 */
START_TEST (test_full_misaligned_refused_untouched)
{
  struct lb_dio_info info;
  char err[256] = "";
  char *buf;
  int fd = temp_file (0);

  ck_assert_int_eq (lb_dio_info_get (fd, &info, err, sizeof err), 0);
  buf = lb_aligned_alloc (info.mem_align_bytes, 2 * info.offset_align_bytes);
  ck_assert_ptr_nonnull (buf);
  memset (buf, 'x', 2 * info.offset_align_bytes);
  errno = 0;
  ck_assert_int_eq (lb_pwrite_full (fd, &info, buf, info.offset_align_bytes,
                                    100, err, sizeof err),
                    -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_msg (strstr (err, "write offset 100 length"), "%s", err);
  errno = 0;
  ck_assert_int_eq (lb_pwrite_full (fd, &info, buf + 1,
                                    info.offset_align_bytes, 0, err,
                                    sizeof err),
                    -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_int_eq (lseek (fd, 0, SEEK_END), 0);
  errno = 0;
  ck_assert_int_eq (lb_pread_full (fd, &info, buf, 100, 0, err, sizeof err),
                    -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_msg (strstr (err, "read offset 0 length 100: the length"), "%s",
                 err);
  free (buf);
  close (fd);
}
END_TEST

/* O_DIRECT with what lb_dio_info_get says, where the filesystem has it. */
START_TEST (test_full_roundtrip_direct)
{
  struct lb_dio_info info;
  char err[256] = "";
  char *out, *in;
  size_t len;
  int fd = temp_file (O_DIRECT);

  if (fd == -1) {
    fprintf (stderr,
             "check-aligned-io: O_DIRECT not tested: the "
             "filesystem of TMPDIR refuses it\n");
    return;
  }
  ck_assert_int_eq (lb_dio_info_get (fd, &info, err, sizeof err), 0);
  len = 16 * (size_t) info.offset_align_bytes;
  out = lb_aligned_alloc (info.mem_align_bytes, len);
  in = lb_aligned_alloc (info.mem_align_bytes, len);
  ck_assert_ptr_nonnull (out);
  ck_assert_ptr_nonnull (in);
  memset (out, 0x5a, len);
  if (lb_pwrite_full (fd, &info, out, len, info.offset_align_bytes, err,
                      sizeof err) == -1 &&
      errno == EINVAL) {
    /* The filesystem refuses O_DIRECT (tmpfs before Linux 6.6). */
    fprintf (stderr, "check-aligned-io: O_DIRECT not tested: %s\n", err);
    goto out;
  }
  ck_assert_msg (lb_pread_full (fd, &info, in, len, info.offset_align_bytes,
                                err, sizeof err) == 0,
                 "%s", err);
  ck_assert (memcmp (in, out, len) == 0);
out:
  free (out);
  free (in);
  close (fd);
}
END_TEST

static Suite *
aligned_io_suite (void)
{
  Suite *s = suite_create ("aligned_io");
  TCase *info = tcase_create ("info");
  TCase *alloc = tcase_create ("alloc");
  TCase *check = tcase_create ("check");
  TCase *full = tcase_create ("full");

  tcase_add_test (info, test_info_regular_file);
  tcase_add_test (info, test_info_refuses_pipe_and_bad_fd);
  tcase_add_loop_test (alloc, test_aligned_alloc, 0, 22);
  tcase_add_test (alloc, test_aligned_alloc_errors);
  tcase_add_loop_test (check, test_io_check_rules, 0,
                       sizeof io_cases / sizeof io_cases[0]);
  tcase_add_test (full, test_full_roundtrip_buffered);
  tcase_add_test (full, test_full_misaligned_refused_untouched);
  tcase_add_test (full, test_full_roundtrip_direct);
  suite_add_tcase (s, info);
  suite_add_tcase (s, alloc);
  suite_add_tcase (s, check);
  suite_add_tcase (s, full);
  return s;
}

LB_UNIT_SUITE (aligned_io_suite);
