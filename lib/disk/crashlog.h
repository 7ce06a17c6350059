/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the crash log -- every change a client made to a disk with
 * a volatile write cache, in the order the cache applied it, so that the
 * image after a power cut at any flush can be rebuilt later without
 * running the workload again (crash-log=PATH; docs/crash-testing.md).
 *
 * The log records requests, not cache state: writes (with their data),
 * trims and zeroes, each with its FUA flag, and every flush.  Records are
 * numbered (seq, from 0) and carry the flush epoch they belong to: the
 * number of flushes logged before them.  A flush record closes its epoch:
 * a flush with epoch K is the K+1-th flush.  Replaying the records of
 * epochs < K as durable and those of epoch K as the cache's unflushed
 * contents reproduces what a live cut just before the K+1-th flush sees.
 *
 * The file (all integers little-endian):
 *
 *   header, 64 bytes:
 *     0  "LBCRLOG1"            magic and format version
 *     8  u64 disk size         bytes
 *     16 u32 block size        the disk's physical block (blksize)
 *     20 u32 logical block     logical-blksize
 *     24 u64 limit             the most bytes the file may hold
 *     32 ... 63                zero
 *   records, each 40 bytes, then for a write its data padded with zeroes
 *   to a multiple of 8 bytes:
 *     0  "LBRC"                record magic
 *     4  u8 type               1 write, 2 trim, 3 zero, 4 flush
 *     5  u8 flags              1 FUA
 *     6  u16 zero
 *     8  u64 seq               0, 1, 2, ...
 *     16 u64 epoch
 *     24 u64 offset            bytes (0 for a flush)
 *     32 u64 length            bytes (0 for a flush)
 *
 * Writing: lb_crashlog_create makes the file (O_EXCL: a log is never
 * appended to or overwritten), appends are whole records or nothing.
 * When the next record would take the file past its limit the append
 * fails with ENOSPC and nothing is written: the caller fails that request
 * and applies nothing, so every change the disk made is in the log.
 * Appends from many threads are serialised by the log's own mutex, a
 * leaf, the last row of lib/disk/locking.h's lock order: the caller appends
 * while it holds the lock that orders the change on the disk, so the log
 * orders changes to one block as the disk did.
 *
 * Reading: lb_crashlog_reader_* check the header and each record (magic,
 * type, flags, sequence, epoch never going back and rising by one after
 * a flush only, offset + length within the disk) and refuse a damaged or
 * cut-short file in one line naming the record and byte offset.
 */
#ifndef LARGEBLOCK_CRASHLOG_H
#define LARGEBLOCK_CRASHLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LB_CRASHLOG_HEADER_SIZE 64
#define LB_CRASHLOG_RECORD_SIZE 40
/* The smallest limit: the header and one flush. */
#define LB_CRASHLOG_MIN_LIMIT \
  (LB_CRASHLOG_HEADER_SIZE + LB_CRASHLOG_RECORD_SIZE)

enum lb_crashlog_type {
  LB_CRASHLOG_WRITE = 1,
  LB_CRASHLOG_TRIM = 2,
  LB_CRASHLOG_ZERO = 3,
  LB_CRASHLOG_FLUSH = 4,
};

#define LB_CRASHLOG_FUA 1

struct lb_crashlog_geometry {
  uint64_t disk_size;
  uint32_t blksize;
  uint32_t logical_blksize;
};

struct lb_crashlog_record {
  enum lb_crashlog_type type;
  bool fua;
  uint64_t seq;
  uint64_t epoch;
  uint64_t offset;
  uint64_t length;
  const void *data; /* a write's data; valid until the next read */
};

struct lb_crashlog;

/* Create path (mode 0600, O_EXCL | O_NOFOLLOW) for a disk of geometry g,
 * holding at most limit bytes, and write its header.  Returns the log,
 * or NULL with errno (EINVAL: limit below LB_CRASHLOG_MIN_LIMIT; EEXIST
 * and the rest from open) and a message naming crash-log.
 */
struct lb_crashlog *lb_crashlog_create (const char *path,
                                        const struct lb_crashlog_geometry *g,
                                        uint64_t limit, char *err,
                                        size_t errlen);

/* Append a write, trim or zero (data only for a write), or a flush
 * (offset, length 0, data NULL).  Returns 0, or -1 with errno (ENOSPC:
 * the log is full; EIO and the rest from write) and a message; nothing
 * was added then.  Thread-safe.
 */
int lb_crashlog_append (struct lb_crashlog *log, enum lb_crashlog_type type,
                        bool fua, uint64_t offset, uint64_t length,
                        const void *data, char *err, size_t errlen);

/* Flushes logged so far: the epoch of the next record.  Thread-safe. */
uint64_t lb_crashlog_epoch (struct lb_crashlog *log);

/* Bytes in the file so far.  Thread-safe. */
uint64_t lb_crashlog_bytes (struct lb_crashlog *log);

/* Close the file and free log (NULL is fine).  Returns 0, or -1 with
 * errno and a message if closing failed.
 */
int lb_crashlog_close (struct lb_crashlog *log, char *err, size_t errlen);

struct lb_crashlog_reader;

/* Open path and check its header.  Returns the reader with the disk's
 * geometry and the log's limit, or NULL with errno (EINVAL: not a crash
 * log, or a damaged header) and a message.
 */
struct lb_crashlog_reader *
lb_crashlog_reader_open (const char *path, struct lb_crashlog_geometry *g,
                         uint64_t *limit, char *err, size_t errlen);

/* The next record: 1 and *rec filled; 0 at the end of the log; -1 with
 * errno = EINVAL and a message naming the record and its byte offset for
 * a damaged or cut-short record (or the errno of a failed read).
 */
int lb_crashlog_reader_next (struct lb_crashlog_reader *r,
                             struct lb_crashlog_record *rec, char *err,
                             size_t errlen);

void lb_crashlog_reader_close (struct lb_crashlog_reader *r);

#endif /* LARGEBLOCK_CRASHLOG_H */
