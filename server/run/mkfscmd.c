/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the mkfs command line for a geometry (see mkfscmd.h). */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "mkfscmd.h"

#define MIN_FS_SECTOR_BYTES 4096u
/* What mkfs.xfs takes (xfsprogs 6.1: larger values get its usage text). */
#define XFS_MAX_SECTOR_BYTES 32768u
#define XFS_MAX_BLOCK_BYTES 65536u

static uint32_t
at_least_4k (uint32_t bytes)
{
  return bytes > MIN_FS_SECTOR_BYTES ? bytes : MIN_FS_SECTOR_BYTES;
}

int
lb_mkfs_known (const char *fstype)
{
  return strcmp (fstype, "xfs") == 0 || strcmp (fstype, "ext4") == 0 ||
    strcmp (fstype, "btrfs") == 0;
}

/* The XFS block size largeblock-run asks for. */
static uint64_t
xfs_block_bytes (uint32_t physical_bytes, uint64_t fs_blksize_bytes)
{
  return fs_blksize_bytes ? fs_blksize_bytes : physical_bytes;
}

/* Where the XFS block size came from, for messages. */
static const char *
xfs_block_source (uint64_t fs_blksize_bytes)
{
  return fs_blksize_bytes ? "--fs-blksize" : "blksize";
}

int
lb_mkfs_check_geometry (const char *fstype, uint32_t logical_bytes,
                        uint32_t physical_bytes, uint64_t fs_blksize_bytes,
                        char *err, size_t errlen)
{
  uint64_t block_bytes = xfs_block_bytes (physical_bytes, fs_blksize_bytes);

  if (strcmp (fstype, "xfs") != 0)
    return 0;
  if (logical_bytes > XFS_MAX_SECTOR_BYTES)
    return lb_fail (EINVAL, err, errlen,
                    "--mkfs=xfs: logical-blksize=%" PRIu32
                    " is above XFS's largest sector size (%u)",
                    logical_bytes, XFS_MAX_SECTOR_BYTES);
  if (block_bytes > XFS_MAX_BLOCK_BYTES)
    return lb_fail (EINVAL, err, errlen,
                    "--mkfs=xfs: %s=%" PRIu64
                    " is above XFS's largest block size (%u)",
                    xfs_block_source (fs_blksize_bytes), block_bytes,
                    XFS_MAX_BLOCK_BYTES);
  if (block_bytes < logical_bytes)
    return lb_fail (EINVAL, err, errlen,
                    "--mkfs=xfs: %s=%" PRIu64
                    " is below the sector size, logical-blksize=%" PRIu32,
                    xfs_block_source (fs_blksize_bytes), block_bytes,
                    logical_bytes);
  return 0;
}

/* The program and its geometry options; returns the argument count. */
static size_t
add_geometry_args (struct lb_mkfs_cmd *cmd, const char *fstype,
                   uint32_t logical_bytes, uint32_t physical_bytes,
                   uint64_t fs_blksize_bytes)
{
  char **a = cmd->argv;
  size_t n = 0;

  if (strcmp (fstype, "xfs") == 0) {
    snprintf (cmd->blksize_arg, sizeof cmd->blksize_arg, "size=%" PRIu64,
              xfs_block_bytes (physical_bytes, fs_blksize_bytes));
    snprintf (cmd->sectsize_arg, sizeof cmd->sectsize_arg, "size=%" PRIu32,
              logical_bytes);
    a[n++] = "mkfs.xfs";
    a[n++] = "-f";
    a[n++] = "-q";
    a[n++] = "-b";
    a[n++] = cmd->blksize_arg;
    a[n++] = "-s";
    a[n++] = cmd->sectsize_arg;
  }
  else if (strcmp (fstype, "ext4") == 0) {
    snprintf (cmd->blksize_arg, sizeof cmd->blksize_arg, "%" PRIu64,
              fs_blksize_bytes ? fs_blksize_bytes
                               : at_least_4k (logical_bytes));
    a[n++] = "mkfs.ext4";
    a[n++] = "-F";
    a[n++] = "-q";
    a[n++] = "-b";
    a[n++] = cmd->blksize_arg;
  }
  else {
    snprintf (cmd->sectsize_arg, sizeof cmd->sectsize_arg, "%" PRIu32,
              at_least_4k (logical_bytes));
    a[n++] = "mkfs.btrfs";
    a[n++] = "-f";
    a[n++] = "-q";
    a[n++] = "-s";
    a[n++] = cmd->sectsize_arg;
  }
  return n;
}

int
lb_mkfs_cmd_build (struct lb_mkfs_cmd *cmd, const char *fstype,
                   uint32_t logical_bytes, uint32_t physical_bytes,
                   uint64_t fs_blksize_bytes, const char *extra_options,
                   const char *device, char *err, size_t errlen)
{
  char *saveptr, *tok;
  size_t n;

  memset (cmd, 0, sizeof *cmd);
  if (!lb_mkfs_known (fstype)) {
    return lb_fail (EINVAL, err, errlen,
                    "--mkfs=%s: unknown filesystem; "
                    "must be xfs, ext4 or btrfs",
                    fstype);
  }
  if (lb_mkfs_check_geometry (fstype, logical_bytes, physical_bytes,
                              fs_blksize_bytes, err, errlen) == -1)
    return -1;
  n = add_geometry_args (cmd, fstype, logical_bytes, physical_bytes,
                         fs_blksize_bytes);
  if (extra_options) {
    cmd->extra = strdup (extra_options);
    if (cmd->extra == NULL)
      return lb_fail (ENOMEM, err, errlen, "--mkfs-options: out of memory");
    for (tok = strtok_r (cmd->extra, " \t", &saveptr); tok;
         tok = strtok_r (NULL, " \t", &saveptr)) {
      if (n == LB_MKFS_MAX_ARGS - 1) {
        lb_mkfs_cmd_free (cmd);
        return lb_fail (EINVAL, err, errlen,
                        "--mkfs-options: too many "
                        "words (mkfs takes at most %d arguments here)",
                        LB_MKFS_MAX_ARGS);
      }
      cmd->argv[n++] = tok;
    }
  }
  cmd->argv[n++] = (char *) device;
  cmd->argv[n] = NULL;
  return 0;
}

void
lb_mkfs_cmd_free (struct lb_mkfs_cmd *cmd)
{
  free (cmd->extra);
  cmd->extra = NULL;
}
