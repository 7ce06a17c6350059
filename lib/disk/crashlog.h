/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the crash log -- every change a client made to a disk with
 * a volatile write cache, in the order the cache applied it, so that the
 * image after a power cut at any flush can be rebuilt later without
 * running the workload again (crash-log=PATH; docs/crash-testing.md).
 *
 * The log records what the cache did, one physical block at a time:
 * each write (with its data), trim and zero is one record per physical
 * block it touches, appended under the lock that orders that block, so
 * two requests racing on one block are logged in the order the cache
 * applied them.  A record that the cache wrote straight to the durable
 * store carries FUA (the client's) or THROUGH (no memory for a cache
 * entry): it is durable at once.  Every flush is logged -- the client's
 * and the cache's own (IMPLICIT: the cache was full, or the memory limit
 * made it write back), which make data durable just the same -- and so
 * is every power cut.
 *
 * Epochs.  Records are numbered (seq, from 0) and carry their epoch: the
 * number of flushes and cuts logged before them.  A flush or cut record
 * closes its epoch.  A flush holds every lock a request needs while it
 * is logged and writes the cache back, so exactly the records before it
 * are what it made durable.  To rebuild the image of a live cut just
 * before the record that closes epoch K: apply the records before epoch
 * K as the cache would (durable at each flush; THROUGH and FUA records
 * and WRITEBACK at once), those of epoch K into the cache, and cut.
 *
 * A cut record (the live power cut: power-cut-after, the cut FIFO,
 * lb_wcache_cut) says where the cut happened and how to reproduce it:
 * its mode, seed and number, from which the cut resolves every block
 * exactly as wcache.h describes.  The records after it are the post-cut
 * generation, over the post-cut image.
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
 *     4  u8 type               1 write, 2 trim, 3 zero, 4 flush,
 *                              5 write-back, 6 cut
 *     5  u8 flags              write, trim, zero: 1 FUA, 2 THROUGH;
 *                              flush: 4 IMPLICIT; cut: the mode
 *                              (0 lose, 1 atomic, 2 torn); else 0
 *     6  u16 zero
 *     8  u64 seq               0, 1, 2, ...
 *     16 u64 epoch
 *     24 u64 offset            bytes; a cut's seed; 0 for a flush
 *     32 u64 length            bytes; a cut's number (1, 2, ...); 0 for
 *                              a flush
 *
 * A write-back record says the cache wrote one block's newest content
 * to the durable store outside a flush (its range: the block): every
 * unflushed change to that block is durable from there on.
 *
 * Writing: lb_crashlog_create makes the file (O_EXCL: a log is never
 * appended to or overwritten), appends are whole records or nothing.
 * The bound: a request reserves room for all its records first
 * (lb_crashlog_reserve), so when the log is full it fails with ENOSPC
 * before the cache applies any of it, and every change the disk made is
 * in the log.  A little room (LB_CRASHLOG_SPARE_BYTES) is kept for the
 * cache's own flushes and for cuts, which cannot wait.  A failed
 * write(2) breaks the log: that append and every later one fail (the
 * disk then takes no more changes), so the log stays a true account of
 * what the disk did up to its end.  Appends from many threads are
 * serialised by the log's own mutex, a leaf, the last row of
 * lib/disk/locking.h's lock order: the caller appends while it holds the
 * lock that orders the change on the disk, so the log orders changes to
 * one block as the disk did.
 *
 * Reading: lb_crashlog_reader_* check the header and each record (magic,
 * type, flags, sequence, epoch never going back and rising by one after
 * a flush or cut only, offset + length within the disk) and refuse a
 * damaged or cut-short file in one line naming the record and byte
 * offset.  lb_crashlog_reader_tell and _seek give random access: a
 * replay indexes the log once and reads each epoch again from its first
 * record.
 */
#ifndef LARGEBLOCK_CRASHLOG_H
#define LARGEBLOCK_CRASHLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LB_CRASHLOG_HEADER_SIZE 64
#define LB_CRASHLOG_RECORD_SIZE 40
/* Room only the cache's own flushes and cuts may use: 16 records. */
#define LB_CRASHLOG_SPARE_BYTES (16 * LB_CRASHLOG_RECORD_SIZE)
/* The smallest limit: the header, the spare and one record. */
#define LB_CRASHLOG_MIN_LIMIT \
  (LB_CRASHLOG_HEADER_SIZE + LB_CRASHLOG_SPARE_BYTES + LB_CRASHLOG_RECORD_SIZE)

enum lb_crashlog_type {
  LB_CRASHLOG_WRITE = 1,
  LB_CRASHLOG_TRIM = 2,
  LB_CRASHLOG_ZERO = 3,
  LB_CRASHLOG_FLUSH = 4,
  LB_CRASHLOG_WRITEBACK = 5,
  LB_CRASHLOG_CUT = 6,
};

/* Flags of a write, trim or zero. */
#define LB_CRASHLOG_FUA 1     /* the client's FUA: written through */
#define LB_CRASHLOG_THROUGH 2 /* written through: no memory to cache it */
/* Flags of a flush. */
#define LB_CRASHLOG_IMPLICIT 4 /* the cache's own: it was full */

/* Where an append finds its room. */
enum lb_crashlog_room {
  LB_CRASHLOG_ROOM_FREE,     /* free room, leaving the spare */
  LB_CRASHLOG_ROOM_RESERVED, /* room the caller reserved */
  LB_CRASHLOG_ROOM_SPARE,    /* free room, the spare too */
};

struct lb_crashlog_geometry {
  uint64_t disk_size;
  uint32_t blksize;
  uint32_t logical_blksize;
};

/* For a cut: offset is its seed, length its number, flags its mode. */
struct lb_crashlog_record {
  enum lb_crashlog_type type;
  uint8_t flags;
  bool fua; /* flags & LB_CRASHLOG_FUA (the reader fills it) */
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

/* Append rec (its type, flags, offset, length and a write's data; seq
 * and epoch are the log's), its room found as room says.  Returns 0, or
 * -1 with errno and a message; nothing was added then: EINVAL for a
 * record the format forbids, ENOSPC when the log is full, EIO when the
 * log is broken (this write(2) failed, or an earlier one, or
 * lb_crashlog_break; lb_crashlog_status says why).  Thread-safe, does not
 * sleep beyond its write(2).
 */
int lb_crashlog_add (struct lb_crashlog *log,
                     const struct lb_crashlog_record *rec,
                     enum lb_crashlog_room room, char *err, size_t errlen);

/* lb_crashlog_add of a write, trim or zero (data only for a write), or
 * a flush (offset, length 0, data NULL), in free room.
 */
int lb_crashlog_append (struct lb_crashlog *log, enum lb_crashlog_type type,
                        bool fua, uint64_t offset, uint64_t length,
                        const void *data, char *err, size_t errlen);

/* The bytes a record of type and length takes in the file. */
uint64_t lb_crashlog_record_bytes (enum lb_crashlog_type type,
                                   uint64_t length);

/* Reserve bytes of free room (leaving the spare) for appends with
 * LB_CRASHLOG_ROOM_RESERVED.  Returns 0, or -1 with errno (ENOSPC: the
 * log is full; EIO: it is broken) and a message.  Thread-safe.
 */
int lb_crashlog_reserve (struct lb_crashlog *log, uint64_t bytes, char *err,
                         size_t errlen);

/* Give back reserved bytes that no append used. */
void lb_crashlog_unreserve (struct lb_crashlog *log, uint64_t bytes);

/* Break the log: the disk did something the log cannot describe (a
 * durable store failed under a logged flush, a cut found no room), so
 * every later append fails with EIO.  The first reason (errnum) stays.
 */
void lb_crashlog_break (struct lb_crashlog *log, int errnum);

/* The log's state at one moment, taken under its lock. */
struct lb_crashlog_status {
  int broken;     /* 0 while the log works, else the errno that broke it */
  uint64_t epoch; /* flushes and cuts logged so far: the next record's */
  uint64_t bytes; /* bytes in the file so far */
};

/* Fill *st from log.  Thread-safe. */
void lb_crashlog_status (struct lb_crashlog *log,
                         struct lb_crashlog_status *st);

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

/* Where a reader is: the next record's byte offset, sequence number and
 * epoch.
 */
struct lb_crashlog_position {
  uint64_t byte;
  uint64_t seq;
  uint64_t epoch;
};

/* Where r is now: the position of the record the next
 * lb_crashlog_reader_next reads.
 */
void lb_crashlog_reader_tell (const struct lb_crashlog_reader *r,
                              struct lb_crashlog_position *at);

/* Go back (or on) to at, a position lb_crashlog_reader_tell gave for the
 * same file: the next record read is the one there, checked as ever.
 * Returns 0, or -1 with errno (EINVAL: at is before the first record)
 * and a message.
 */
int lb_crashlog_reader_seek (struct lb_crashlog_reader *r,
                             const struct lb_crashlog_position *at, char *err,
                             size_t errlen);

void lb_crashlog_reader_close (struct lb_crashlog_reader *r);

#endif /* LARGEBLOCK_CRASHLOG_H */
