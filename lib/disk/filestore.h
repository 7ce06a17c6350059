/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the file store.
 *
 * Serves a disk from a regular file or a block device through the same
 * store interface as the RAM store (store.h): reads and writes go to the
 * file, trim and zero punch or zero ranges with fallocate, extents come
 * from SEEK_DATA/SEEK_HOLE, flush is fdatasync and FUA makes the write
 * durable before it returns.  With direct I/O the page cache is bypassed
 * and requests the device cannot take as they are go through aligned
 * bounce buffers.  See filestore.c for the locking rules.
 */
#ifndef LARGEBLOCK_FILESTORE_H
#define LARGEBLOCK_FILESTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "largeblock/geometry.h"
#include "store.h"

/* What a path is before anything is opened for writing. */
struct lb_file_info {
  bool exists;
  bool is_blockdev;
  uint64_t size_bytes;         /* file length or device capacity */
  uint32_t dev_logical_bytes;  /* block devices: BLKSSZGET, else 0 */
  uint32_t dev_physical_bytes; /* block devices: BLKPBSZGET, else 0 */
};

/* Look at path without creating or changing anything.  A missing path is
 * not an error (info->exists = false).  Returns 0, or -1 with errno set
 * and a one-line message in err (not a regular file or block device,
 * unreadable, ...).
 */
int lb_file_probe (const char *path, struct lb_file_info *info, char *err,
                   size_t errlen);

/* Refuse a geometry the device cannot serve: a logical-blksize smaller
 * than a block device's logical sector.  Returns 0, or -1 with errno =
 * EINVAL and both numbers in err.
 */
int lb_file_check_geometry (const char *path, const struct lb_file_info *info,
                            const struct lb_geometry *g, char *err,
                            size_t errlen);

/* Open (creating it with g->size_bytes if info says it does not exist)
 * and return the store; g must outlive it.  read_only (nbdkit -r) opens
 * for reading only and sets the store's read_only.  The file is locked
 * for the store's life with an open file description lock on the whole
 * file: shared if read_only, else exclusive; a block device opened for
 * writing is opened O_EXCL.  direct asks for O_DIRECT, refused with a
 * clear message where the filesystem lacks it.  Returns NULL with errno
 * set and a one-line message in err: EBUSY when another server holds a
 * conflicting lock or the device is mounted or held, EROFS for a
 * read-only filesystem and EACCES when only reading is allowed (both only
 * without read_only), ...  A file this call created is removed again on
 * failure.
 */
struct lb_store *lb_filestore_open (const struct lb_geometry *g,
                                    const char *path,
                                    const struct lb_file_info *info,
                                    bool direct, bool read_only, char *err,
                                    size_t errlen);

#endif /* LARGEBLOCK_FILESTORE_H */
