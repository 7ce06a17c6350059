/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-verify: the descriptor target -- a block device or a
 * regular file opened with O_DIRECT.
 *
 * Every target is a dup of the path's claim (target-claim.c, opened and
 * checked once by main), never a fresh open of the path: the checks hold
 * for what is written, and a device's exclusive claim is shared.  The
 * file description is shared too, which is harmless: every request is a
 * pread/pwrite at its own offset, and the status flags are set once.
 *
 * Sizes come from lb_dio_info_get (aligned-io.h).  A device: minimum =
 * its logical block size, preferred = its physical block size, maximum =
 * queue/max_sectors_kb from sysfs (32M when unknown); trim is BLKDISCARD
 * (when queue/discard_max_bytes is not 0), zero BLKZEROOUT.  A file:
 * minimum = the O_DIRECT offset alignment, preferred = the larger of
 * st_blksize and the minimum, maximum 32M (not a limit: the kernel splits
 * larger requests); trim is fallocate PUNCH_HOLE|KEEP_SIZE, zero
 * fallocate ZERO_RANGE.  Flush is fdatasync for both.  Requests go to the
 * kernel unchecked (lb_p*_full without info), so a misaligned one is
 * refused by the kernel itself, with EINVAL.  No state besides the
 * descriptor: a target is used by one thread at a time.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "largeblock/aligned-io.h"
#include "target.h"

#define FILE_MAX_BYTES (32u << 20)
#define DEVICE_MAX_FALLBACK_BYTES (32u << 20)

struct fd_target {
  struct target t; /* first: the generic part */
  int fd;
  bool write;
  struct lb_dio_info info;
  char err[256];
};

static struct fd_target *
fd_target_of (struct target *t)
{
  return (struct fd_target *) t;
}

/* A number from the device's queue directory in sysfs (a partition's
 * queue is its disk's); 0 when there is none.
 */
static uint64_t
queue_value (int fd, const char *name)
{
  struct stat st;
  char path[128];
  unsigned long long v = 0;
  FILE *fp = NULL;

  if (fstat (fd, &st) == -1)
    return 0;
  for (int up = 0; up < 2 && !fp; up++) {
    snprintf (path, sizeof path, "/sys/dev/block/%u:%u/%squeue/%s",
              major (st.st_rdev), minor (st.st_rdev), up ? "../" : "", name);
    fp = fopen (path, "r");
  }
  if (!fp)
    return 0;
  if (fscanf (fp, "%llu", &v) != 1)
    v = 0;
  fclose (fp);
  return v;
}

static void
fd_target_describe (struct target *t, struct target_desc *d)
{
  struct fd_target *ft = fd_target_of (t);
  const struct lb_dio_info *info = &ft->info;

  *d = (struct target_desc) {
    .size_bytes = info->size_bytes,
    .read_only = !ft->write,
    .can_flush = true,
    .can_zero = true,
    .multi_conn = true, /* every descriptor sees the same device */
    .dio_offset_align_bytes = info->offset_align_bytes,
    .dio_mem_align_bytes = info->mem_align_bytes,
    .dio_source = info->source == LB_DIO_SOURCE_STATX ? "statx"
      : info->source == LB_DIO_SOURCE_BLKDEV          ? "logical block"
                                                      : "st_blksize guess",
  };
  if (info->is_blockdev) {
    uint64_t max_bytes = queue_value (ft->fd, "max_sectors_kb") * 1024;

    d->min_bytes = info->logical_bytes;
    d->preferred_bytes = info->physical_bytes;
    d->max_bytes = max_bytes && max_bytes <= UINT32_MAX
      ? (uint32_t) max_bytes
      : DEVICE_MAX_FALLBACK_BYTES;
    d->can_trim = queue_value (ft->fd, "discard_max_bytes") != 0;
  }
  else {
    d->min_bytes = info->offset_align_bytes;
    d->preferred_bytes = info->physical_bytes > d->min_bytes
      ? info->physical_bytes
      : d->min_bytes;
    d->max_bytes = FILE_MAX_BYTES;
    d->can_trim = true;
  }
}

static int
fd_target_pread (struct target *t, void *buf, uint64_t count, uint64_t offset)
{
  struct fd_target *ft = fd_target_of (t);
  return lb_pread_full (ft->fd, NULL, buf, count, offset, ft->err,
                        sizeof ft->err);
}

static int
fd_target_pwrite (struct target *t, const void *buf, uint64_t count,
                  uint64_t offset)
{
  struct fd_target *ft = fd_target_of (t);
  return lb_pwrite_full (ft->fd, NULL, buf, count, offset, ft->err,
                         sizeof ft->err);
}

/* One ioctl on a device range, or fallocate with mode on a file. */
static int
range_op (struct fd_target *ft, unsigned long request, int mode,
          uint64_t count, uint64_t offset, const char *what)
{
  uint64_t range[2] = { offset, count };
  int r = ft->info.is_blockdev
    ? ioctl (ft->fd, request, range)
    : fallocate (ft->fd, mode, (off_t) offset, (off_t) count);

  if (r == -1) {
    int err_no = errno;
    snprintf (ft->err, sizeof ft->err,
              "%s of %" PRIu64 " bytes at %" PRIu64 ": %s", what, count,
              offset, strerror (err_no));
    errno = err_no;
    return -1;
  }
  return 0;
}

static int
fd_target_trim (struct target *t, uint64_t count, uint64_t offset)
{
  return range_op (fd_target_of (t), BLKDISCARD,
                   FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, count, offset,
                   "trim");
}

static int
fd_target_zero (struct target *t, uint64_t count, uint64_t offset)
{
  return range_op (fd_target_of (t), BLKZEROOUT, FALLOC_FL_ZERO_RANGE, count,
                   offset, "zero");
}

static int
fd_target_flush (struct target *t)
{
  struct fd_target *ft = fd_target_of (t);

  if (fdatasync (ft->fd) == -1) {
    int err_no = errno;
    snprintf (ft->err, sizeof ft->err, "fdatasync: %s", strerror (err_no));
    errno = err_no;
    return -1;
  }
  return 0;
}

static bool
fd_target_is_dead (struct target *t)
{
  (void) t;
  return false;
}

static const char *
fd_target_last_error (struct target *t)
{
  return fd_target_of (t)->err;
}

static void
fd_target_close (struct target *t)
{
  close (fd_target_of (t)->fd);
  free (t);
}

static const struct target_ops fd_ops = {
  .describe = fd_target_describe,
  .pread = fd_target_pread,
  .pwrite = fd_target_pwrite,
  .trim = fd_target_trim,
  .zero = fd_target_zero,
  .flush = fd_target_flush,
  .is_dead = fd_target_is_dead,
  .last_error = fd_target_last_error,
  .close = fd_target_close,
};

struct target *
target_fd_open (int claim_fd, const char *path, bool write)
{
  struct fd_target *ft = calloc (1, sizeof *ft);
  const char *why = NULL;

  if (!ft) {
    fprintf (stderr, "largeblock-verify: %s: out of memory\n", path);
    return NULL;
  }
  ft->t.ops = &fd_ops;
  ft->write = write;
  ft->fd = fcntl (claim_fd, F_DUPFD_CLOEXEC, 0);
  if (ft->fd == -1)
    why = strerror (errno);
  else if (lb_dio_info_get (ft->fd, &ft->info, ft->err, sizeof ft->err) == -1)
    why = ft->err;
  else if (!ft->info.dio_supported)
    why = "the kernel says it cannot be opened with O_DIRECT";
  if (why) {
    fprintf (stderr, "largeblock-verify: cannot open %s with O_DIRECT: %s\n",
             path, why);
    if (ft->fd != -1)
      close (ft->fd);
    free (ft);
    return NULL;
  }
  return &ft->t;
}
