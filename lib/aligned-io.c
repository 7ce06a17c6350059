/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: aligned I/O on a file descriptor.
 *
 * Owns nothing but the descriptor calls: no state, so every function is
 * thread-safe; see aligned-io.h.  The direct-I/O alignment comes from
 * statx(STATX_DIOALIGN) where the kernel has it.  Debian 12's glibc may
 * predate that flag, so the flag and the two fields are read through the
 * kernel's fixed struct statx layout (256 bytes) rather than the C
 * library's names.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "largeblock/aligned-io.h"
#include "error.h"

#ifndef STATX_DIOALIGN
#define STATX_DIOALIGN 0x00002000U
#endif

/* The kernel's struct statx (include/uapi/linux/stat.h) up to the
 * direct-I/O fields, which glibc's own definition may lack.
 */
struct lb_statx_abi {
  uint32_t stx_mask;
  unsigned char pad0[4];
  uint64_t stx_attributes;
  unsigned char pad1[16];
  uint64_t stx_size;
  unsigned char pad2[112];
  uint32_t stx_dio_mem_align;
  uint32_t stx_dio_offset_align;
  unsigned char pad3[96];
};
/* clang-format 14 and 21 lay _Static_assert out differently. */
/* clang-format off */
_Static_assert (sizeof (struct lb_statx_abi) == 256, "struct statx is 256");
_Static_assert (offsetof (struct lb_statx_abi, stx_dio_mem_align) == 0x98,
                "stx_dio_mem_align at 0x98");
/* clang-format on */

#define LB_BYTES_MAX ((uint64_t) INT64_MAX)

static bool
is_power_of_2 (uint64_t v)
{
  return v != 0 && (v & (v - 1)) == 0;
}

/* Ask for STATX_DIOALIGN.  Returns true and the two alignments when the
 * kernel answered for this file; false when it does not know the flag.
 */
static bool
statx_dio_align (int fd, uint32_t *mem_align, uint32_t *offset_align)
{
  union {
    struct statx stx;
    struct lb_statx_abi abi;
  } u;

  memset (&u, 0, sizeof u);
  if (statx (fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &u.stx) == -1)
    return false;
  if ((u.abi.stx_mask & STATX_DIOALIGN) == 0)
    return false;
  *mem_align = u.abi.stx_dio_mem_align;
  *offset_align = u.abi.stx_dio_offset_align;
  return true;
}

static int
blockdev_info (int fd, struct lb_dio_info *info, char *err, size_t errlen)
{
  int logical = 0;
  unsigned physical = 0;
  uint64_t size = 0;
  uint32_t mem_align, offset_align;

  if (ioctl (fd, BLKSSZGET, &logical) == -1)
    return lb_fail (errno, err, errlen, "BLKSSZGET: %s", strerror (errno));
  if (ioctl (fd, BLKPBSZGET, &physical) == -1)
    return lb_fail (errno, err, errlen, "BLKPBSZGET: %s", strerror (errno));
  if (ioctl (fd, BLKGETSIZE64, &size) == -1)
    return lb_fail (errno, err, errlen, "BLKGETSIZE64: %s", strerror (errno));
  info->is_blockdev = true;
  info->dio_supported = true;
  info->size_bytes = size;
  info->logical_bytes = (uint32_t) logical;
  info->physical_bytes = physical;
  if (statx_dio_align (fd, &mem_align, &offset_align) && offset_align != 0) {
    info->source = LB_DIO_SOURCE_STATX;
    info->mem_align_bytes = mem_align;
    info->offset_align_bytes = offset_align;
  }
  else {
    info->source = LB_DIO_SOURCE_BLKDEV;
    info->mem_align_bytes = (uint32_t) logical;
    info->offset_align_bytes = (uint32_t) logical;
  }
  return 0;
}

static void
file_info (int fd, const struct stat *st, struct lb_dio_info *info)
{
  uint32_t mem_align, offset_align;
  uint32_t blksize = st->st_blksize >= 512 && is_power_of_2 (st->st_blksize)
    ? (uint32_t) st->st_blksize
    : 4096;

  info->is_blockdev = false;
  info->size_bytes = (uint64_t) st->st_size;
  info->physical_bytes = blksize;
  if (statx_dio_align (fd, &mem_align, &offset_align)) {
    info->source = LB_DIO_SOURCE_STATX;
    /* Zero alignments: this file cannot do direct I/O. */
    info->dio_supported = offset_align != 0 && mem_align != 0;
    info->mem_align_bytes = info->dio_supported ? mem_align : blksize;
    info->offset_align_bytes = info->dio_supported ? offset_align : blksize;
    info->logical_bytes = info->dio_supported ? offset_align : 512;
  }
  else {
    info->source = LB_DIO_SOURCE_GUESS;
    info->dio_supported = true; /* unknown: open(O_DIRECT) will tell */
    info->mem_align_bytes = blksize;
    info->offset_align_bytes = blksize;
    info->logical_bytes = 512;
  }
}

int
lb_dio_info_get (int fd, struct lb_dio_info *info, char *err, size_t errlen)
{
  struct stat st;

  memset (info, 0, sizeof *info);
  if (fstat (fd, &st) == -1)
    return lb_fail (errno, err, errlen, "fstat: %s", strerror (errno));
  if (S_ISBLK (st.st_mode))
    return blockdev_info (fd, info, err, errlen);
  if (!S_ISREG (st.st_mode))
    return lb_fail (EINVAL, err, errlen,
                    "descriptor %d is neither a block device nor a regular "
                    "file",
                    fd);
  file_info (fd, &st, info);
  return 0;
}

void *
lb_aligned_alloc (size_t align, size_t len)
{
  void *p;
  size_t rounded;
  int r;

  if (!is_power_of_2 (align) || len == 0) {
    errno = EINVAL;
    return NULL;
  }
  if (align < sizeof (void *))
    align = sizeof (void *);
  if (len > SIZE_MAX - (align - 1)) {
    errno = ENOMEM;
    return NULL;
  }
  rounded = (len + align - 1) & ~(align - 1);
  r = posix_memalign (&p, align, rounded);
  if (r != 0) {
    errno = r;
    return NULL;
  }
  return p;
}

int
lb_io_check (const struct lb_dio_info *info, const char *what, const void *buf,
             size_t count, uint64_t offset, char *err, size_t errlen)
{
  uint64_t off_align = info->offset_align_bytes ? info->offset_align_bytes : 1;
  uint64_t mem_align = info->mem_align_bytes ? info->mem_align_bytes : 1;

  if (count == 0)
    return lb_fail (EINVAL, err, errlen,
                    "%s offset %" PRIu64 " length 0: the length is zero", what,
                    offset);
  if (offset > LB_BYTES_MAX || count > LB_BYTES_MAX - offset)
    return lb_fail (EINVAL, err, errlen,
                    "%s offset %" PRIu64 " length %zu: ends beyond 2^63-1",
                    what, offset, count);
  if (offset % off_align != 0)
    return lb_fail (EINVAL, err, errlen,
                    "%s offset %" PRIu64 " length %zu: the offset is not a "
                    "multiple of the direct I/O alignment %" PRIu64,
                    what, offset, count, off_align);
  if (count % off_align != 0)
    return lb_fail (EINVAL, err, errlen,
                    "%s offset %" PRIu64 " length %zu: the length is not a "
                    "multiple of the direct I/O alignment %" PRIu64,
                    what, offset, count, off_align);
  if ((uintptr_t) buf % mem_align != 0)
    return lb_fail (EINVAL, err, errlen,
                    "%s offset %" PRIu64 " length %zu: the buffer %p is not "
                    "aligned to the direct I/O memory alignment %" PRIu64,
                    what, offset, count, buf, mem_align);
  return 0;
}

/* Move count bytes at offset: into rbuf (a read) or from wbuf (a write),
 * looping over short transfers and retrying EINTR.
 */
static int
transfer_full (int fd, void *rbuf, const void *wbuf, size_t count,
               uint64_t offset, char *err, size_t errlen)
{
  const char *what = rbuf ? "read" : "write";
  size_t done_bytes = 0;

  while (done_bytes < count) {
    off_t pos = (off_t) (offset + done_bytes);
    size_t left = count - done_bytes;
    ssize_t r = rbuf
      ? pread (fd, (char *) rbuf + done_bytes, left, pos)
      : pwrite (fd, (const char *) wbuf + done_bytes, left, pos);

    if (r == -1 && errno == EINTR)
      continue;
    if (r == -1)
      return lb_fail (errno, err, errlen,
                      "%s offset %" PRIu64 " length %zu: %s after %zu bytes",
                      what, offset, count, strerror (errno), done_bytes);
    if (r == 0)
      return lb_fail (EIO, err, errlen,
                      "%s offset %" PRIu64 " length %zu: %s after %zu bytes",
                      what, offset, count,
                      rbuf ? "end of file" : "no progress", done_bytes);
    done_bytes += (size_t) r;
  }
  return 0;
}

int
lb_pread_full (int fd, const struct lb_dio_info *info, void *buf, size_t count,
               uint64_t offset, char *err, size_t errlen)
{
  if (info &&
      lb_io_check (info, "read", buf, count, offset, err, errlen) == -1)
    return -1;
  return transfer_full (fd, buf, NULL, count, offset, err, errlen);
}

int
lb_pwrite_full (int fd, const struct lb_dio_info *info, const void *buf,
                size_t count, uint64_t offset, char *err, size_t errlen)
{
  if (info &&
      lb_io_check (info, "write", buf, count, offset, err, errlen) == -1)
    return -1;
  return transfer_full (fd, NULL, buf, count, offset, err, errlen);
}
