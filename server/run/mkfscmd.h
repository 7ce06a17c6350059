/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the mkfs command line that fits a large-block geometry.
 *
 * Owns the choice of filesystem geometry options: XFS sector size = the
 * device's logical block size and block size = fs_blksize (default the
 * physical block size); ext4 block size = fs_blksize (default the larger
 * of 4096 and the logical block size); btrfs sector size = the larger of
 * 4096 and the logical block size.  Refuses, before anything runs, a
 * geometry mkfs.xfs would answer with its usage text: sectors above
 * 32 KiB, blocks above 64 KiB or below the sector size.  Pure: builds
 * argv, runs nothing.
 *
 * A struct lb_mkfs_cmd belongs to one thread; no locking.
 */
#ifndef LARGEBLOCK_MKFSCMD_H
#define LARGEBLOCK_MKFSCMD_H

#include <stddef.h>
#include <stdint.h>

#define LB_MKFS_MAX_ARGS 64

struct lb_mkfs_cmd {
  char *argv[LB_MKFS_MAX_ARGS + 1]; /* NULL-terminated */
  char blksize_arg[32];
  char sectsize_arg[32];
  char *extra; /* split copy of extra options */
};

/* 1 if fstype is one we can make (xfs, ext4, btrfs), else 0. */
int lb_mkfs_known (const char *fstype);

/* Can fstype be made with this geometry (fs_blksize_bytes 0: the
 * default)?  0, or -1 with errno = EINVAL and a one-line message in err
 * naming the parameter, its value and XFS's limit.
 */
int lb_mkfs_check_geometry (const char *fstype, uint32_t logical_bytes,
                            uint32_t physical_bytes, uint64_t fs_blksize_bytes,
                            char *err, size_t errlen);

/* Build argv for fstype on device.  fs_blksize_bytes 0 means the default
 * above; extra_options (may be NULL) is split at blanks and added before
 * the device.  Returns 0, or -1 with errno = EINVAL (unknown filesystem,
 * a geometry lb_mkfs_check_geometry refuses, too many options) or
 * ENOMEM and a one-line message in err.
 */
int lb_mkfs_cmd_build (struct lb_mkfs_cmd *cmd, const char *fstype,
                       uint32_t logical_bytes, uint32_t physical_bytes,
                       uint64_t fs_blksize_bytes, const char *extra_options,
                       const char *device, char *err, size_t errlen);

void lb_mkfs_cmd_free (struct lb_mkfs_cmd *cmd);

#endif /* LARGEBLOCK_MKFSCMD_H */
