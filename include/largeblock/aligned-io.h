/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: aligned I/O on a file descriptor.
 *
 * Owns what a test needs to do O_DIRECT I/O on a block device or a file
 * correctly: learning its block sizes and direct-I/O alignment, buffers
 * aligned for it, and whole-length pread/pwrite that check the alignment
 * rules before the kernel sees the request.
 *
 * No state: every function is thread-safe, and several threads may use
 * the same descriptor at different offsets (pread/pwrite do not move the
 * file offset).  Failing functions return -1 (NULL for allocation) with
 * errno set, and write one line naming the offset, length or value and the
 * rule into err (when err is not NULL and errlen > 0).  Part of the
 * installed library (largeblock.h, lb_aligned_io(3)).
 */
#ifndef LARGEBLOCK_ALIGNED_IO_H
#define LARGEBLOCK_ALIGNED_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where lb_dio_info_get learnt the direct-I/O alignment. */
enum lb_dio_source {
  LB_DIO_SOURCE_STATX,  /* statx(STATX_DIOALIGN): the kernel says so */
  LB_DIO_SOURCE_BLKDEV, /* the block device's logical block size */
  LB_DIO_SOURCE_GUESS,  /* a regular file without STATX_DIOALIGN:
                         * st_blksize, an upper bound on every
                         * filesystem's O_DIRECT alignment */
};

struct lb_dio_info {
  bool is_blockdev;
  bool dio_supported; /* false: the kernel says the file cannot
                       * be opened with O_DIRECT */
  enum lb_dio_source source;
  uint64_t size_bytes;         /* device or file size */
  uint32_t logical_bytes;      /* BLKSSZGET; files: offset alignment */
  uint32_t physical_bytes;     /* BLKPBSZGET; files: st_blksize */
  uint32_t mem_align_bytes;    /* O_DIRECT buffer address alignment */
  uint32_t offset_align_bytes; /* O_DIRECT offset and length alignment */
};

/* Learn fd's sizes and O_DIRECT alignment (fd need not be open with
 * O_DIRECT).  Block devices: BLKSSZGET, BLKPBSZGET, BLKGETSIZE64, and
 * statx STATX_DIOALIGN where the kernel reports it (else the logical block
 * size for both alignments).  Regular files: STATX_DIOALIGN (Linux 6.1 and
 * later, on filesystems that report it), else st_blksize for both
 * alignments and 512 as the logical block size, with source =
 * LB_DIO_SOURCE_GUESS.  Returns 0, or -1 with errno = EINVAL (neither a
 * block device nor a regular file) or the errno of the failing call.
 */
int lb_dio_info_get (int fd, struct lb_dio_info *info, char *err,
                     size_t errlen);

/* Allocate len bytes (rounded up to a multiple of align) aligned to align
 * (a power of two), e.g. info->mem_align_bytes or a physical block size;
 * free with free().  Returns NULL with errno = EINVAL (align not a power of
 * two, or len 0) or ENOMEM.
 */
void *lb_aligned_alloc (size_t align, size_t len);

/* Check a request against info's O_DIRECT rules: buf aligned to
 * mem_align_bytes, offset and count multiples of offset_align_bytes,
 * count not zero, offset + count within 2^63-1.  Returns 0, or -1 with
 * errno = EINVAL and a message such as "write offset 1000 length 4096:
 * the offset is not a multiple of the direct I/O alignment 4096".
 */
int lb_io_check (const struct lb_dio_info *info, const char *what,
                 const void *buf, size_t count, uint64_t offset, char *err,
                 size_t errlen);

/* Read or write exactly count bytes at offset, looping over short
 * transfers and retrying EINTR.  When info is not NULL the request is
 * first checked with lb_io_check and refused with EINVAL without any I/O.
 * Returns 0, or -1 with errno = EINVAL (misaligned), EIO (a read reached
 * the end of the file, or a write made no progress) or the errno of the
 * failing pread/pwrite; err names the offset and how much was done.
 * Data already transferred before a failure stays transferred.
 */
int lb_pread_full (int fd, const struct lb_dio_info *info, void *buf,
                   size_t count, uint64_t offset, char *err, size_t errlen);
int lb_pwrite_full (int fd, const struct lb_dio_info *info, const void *buf,
                    size_t count, uint64_t offset, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* LARGEBLOCK_ALIGNED_IO_H */
