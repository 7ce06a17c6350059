/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/mkfscmd unit tests.
 *
 * Each filesystem gets the geometry options the SPEC of largeblock-run
 * promises (table), extra options land before the device, and an unknown
 * filesystem or too many words is refused with a message.
 */
#include <config.h>

#include <errno.h>
#include <string.h>

#include "suites.h"
#include "mkfscmd.h"

static const struct {
  const char *fstype;
  uint32_t logical, physical;
  uint64_t fs_blksize;
  const char *expect; /* argv joined by spaces */
} cases[] = {
  { "xfs", 16384, 16384, 0, "mkfs.xfs -f -q -b size=16384 -s size=16384 DEV" },
  { "xfs", 32768, 65536, 0, "mkfs.xfs -f -q -b size=65536 -s size=32768 DEV" },
  { "xfs", 4096, 16384, 8192, "mkfs.xfs -f -q -b size=8192 -s size=4096 DEV" },
  { "ext4", 512, 16384, 0, "mkfs.ext4 -F -q -b 4096 DEV" },
  { "ext4", 16384, 16384, 0, "mkfs.ext4 -F -q -b 16384 DEV" },
  { "ext4", 4096, 16384, 1024, "mkfs.ext4 -F -q -b 1024 DEV" },
  { "btrfs", 4096, 65536, 0, "mkfs.btrfs -f -q -s 4096 DEV" },
  { "btrfs", 16384, 16384, 0, "mkfs.btrfs -f -q -s 16384 DEV" },
};

static void
join (char *const argv[], char *out, size_t outlen)
{
  out[0] = '\0';
  for (size_t i = 0; argv[i]; i++) {
    if (i)
      strncat (out, " ", outlen - strlen (out) - 1);
    strncat (out, argv[i], outlen - strlen (out) - 1);
  }
}

START_TEST (test_geometry_options)
{
  struct lb_mkfs_cmd cmd;
  char err[256], got[512];

  ck_assert_int_eq (lb_mkfs_cmd_build (&cmd, cases[_i].fstype,
                                       cases[_i].logical, cases[_i].physical,
                                       cases[_i].fs_blksize, NULL, "DEV", err,
                                       sizeof err),
                    0);
  join (cmd.argv, got, sizeof got);
  ck_assert_str_eq (got, cases[_i].expect);
  lb_mkfs_cmd_free (&cmd);
}
END_TEST

START_TEST (test_extra_options_before_device)
{
  struct lb_mkfs_cmd cmd;
  char err[256], got[512];

  ck_assert_int_eq (lb_mkfs_cmd_build (&cmd, "ext4", 4096, 4096, 0,
                                       " -E  nodiscard\t-L x ", "/dev/loop9",
                                       err, sizeof err),
                    0);
  join (cmd.argv, got, sizeof got);
  ck_assert_str_eq (got,
                    "mkfs.ext4 -F -q -b 4096 -E nodiscard -L x /dev/loop9");
  lb_mkfs_cmd_free (&cmd);
}
END_TEST

START_TEST (test_unknown_filesystem)
{
  struct lb_mkfs_cmd cmd;
  char err[256];

  ck_assert_int_eq (lb_mkfs_known ("zfs"), 0);
  ck_assert_int_eq (lb_mkfs_cmd_build (&cmd, "zfs", 4096, 4096, 0, NULL, "DEV",
                                       err, sizeof err),
                    -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_str_eq (err,
                    "--mkfs=zfs: unknown filesystem; must be xfs, "
                    "ext4 or btrfs");
}
END_TEST

START_TEST (test_too_many_words)
{
  struct lb_mkfs_cmd cmd;
  char err[256], many[LB_MKFS_MAX_ARGS * 3 + 1] = "";

  for (int i = 0; i < LB_MKFS_MAX_ARGS; i++)
    strcat (many, "-x ");
  ck_assert_int_eq (lb_mkfs_cmd_build (&cmd, "xfs", 4096, 4096, 0, many, "DEV",
                                       err, sizeof err),
                    -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_ptr_nonnull (strstr (err, "--mkfs-options: too many words"));
  ck_assert_ptr_null (cmd.extra);
}
END_TEST

/* What mkfs.xfs (xfsprogs 6.1) answers with its usage text is refused
 * in one line, by the check and by the builder; the limits themselves
 * and other filesystems pass.
 */
static const struct {
  const char *fstype;
  uint32_t logical, physical;
  uint64_t fs_blksize;
  const char *expect; /* "" if accepted */
} refusals[] = {
  { "xfs", 65536, 65536, 0,
    "--mkfs=xfs: logical-blksize=65536 is above XFS's largest sector "
    "size (32768)" },
  { "xfs", 32768, 65536, 0, "" },
  { "xfs", 4096, 131072, 0,
    "--mkfs=xfs: blksize=131072 is above XFS's largest block size (65536)" },
  { "xfs", 4096, 131072, 65536, "" },
  { "xfs", 4096, 4096, 131072,
    "--mkfs=xfs: --fs-blksize=131072 is above XFS's largest block size "
    "(65536)" },
  { "xfs", 16384, 16384, 4096,
    "--mkfs=xfs: --fs-blksize=4096 is below the sector size, "
    "logical-blksize=16384" },
  { "xfs", 512, 512, 512, "" },
  { "ext4", 65536, 65536, 0, "" },
  { "btrfs", 65536, 65536, 0, "" },
};

START_TEST (test_geometry_refused)
{
  struct lb_mkfs_cmd cmd;
  char err[256] = "", built_err[256] = "";
  int want = refusals[_i].expect[0] ? -1 : 0;

  errno = 0;
  ck_assert_int_eq (lb_mkfs_check_geometry (refusals[_i].fstype,
                                            refusals[_i].logical,
                                            refusals[_i].physical,
                                            refusals[_i].fs_blksize, err,
                                            sizeof err),
                    want);
  ck_assert_str_eq (err, refusals[_i].expect);
  if (want == -1)
    ck_assert_int_eq (errno, EINVAL);
  ck_assert_int_eq (lb_mkfs_cmd_build (&cmd, refusals[_i].fstype,
                                       refusals[_i].logical,
                                       refusals[_i].physical,
                                       refusals[_i].fs_blksize, NULL, "DEV",
                                       built_err, sizeof built_err),
                    want);
  ck_assert_str_eq (built_err, refusals[_i].expect);
  lb_mkfs_cmd_free (&cmd);
}
END_TEST

static Suite *
mkfscmd_suite (void)
{
  Suite *s = suite_create ("mkfscmd");
  TCase *tc = tcase_create ("mkfscmd");

  tcase_add_loop_test (tc, test_geometry_options, 0,
                       (int) (sizeof cases / sizeof cases[0]));
  tcase_add_loop_test (tc, test_geometry_refused, 0,
                       (int) (sizeof refusals / sizeof refusals[0]));
  tcase_add_test (tc, test_extra_options_before_device);
  tcase_add_test (tc, test_unknown_filesystem);
  tcase_add_test (tc, test_too_many_words);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (mkfscmd_suite);
