/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the crash log's writer and reader (crashlog.h has the
 * format).  The writer's state -- the file's size, the room reserved,
 * the next sequence number and epoch, whether it is broken -- is guarded
 * by log->lock (the last row of the lock order in locking.h), held for
 * the whole of one append, so a record goes out in one writev at the
 * offset its sequence number says.  The writer and the reader check a
 * record's shape with the same function.  The reader is single-threaded
 * (one user at a time); tell and seek move it between records.
 */
#include <config.h>

#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "crashlog.h"
#include "error.h"
#include "locking.h"

static const char header_magic[8] = "LBCRLOG1";
static const char record_magic[4] = "LBRC";
static const uint8_t zero_pad[8];

struct lb_crashlog {
  /* Protects the fields marked "lock"; a leaf (locking.h, row 7). */
  pthread_mutex_t lock;
  int fd;             /* fixed */
  char *path;         /* fixed */
  uint64_t limit;     /* fixed */
  uint64_t disk_size; /* fixed */
  uint64_t bytes;     /* lock: the file's size */
  uint64_t reserved;  /* lock: room promised to lb_crashlog_reserve */
  uint64_t seq;       /* lock */
  uint64_t epoch;     /* lock */
  int broken;         /* lock: 0, or the errno that broke the log */
};

static void
put32 (uint8_t *p, uint32_t v)
{
  v = htole32 (v);
  memcpy (p, &v, 4);
}

static void
put64 (uint8_t *p, uint64_t v)
{
  v = htole64 (v);
  memcpy (p, &v, 8);
}

static uint32_t
get32 (const uint8_t *p)
{
  uint32_t v;
  memcpy (&v, p, 4);
  return le32toh (v);
}

static uint64_t
get64 (const uint8_t *p)
{
  uint64_t v;
  memcpy (&v, p, 8);
  return le64toh (v);
}

static uint64_t
padded (uint64_t length)
{
  return (length + 7) & ~(uint64_t) 7;
}

/* write() all of iov, or fail; a short write leaves a torn tail. */
static int
writev_all (int fd, struct iovec *iov, int n)
{
  while (n > 0) {
    ssize_t r = writev (fd, iov, n);
    if (r == -1) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    while (n > 0 && (size_t) r >= iov->iov_len) {
      r -= iov->iov_len;
      iov++, n--;
    }
    if (n > 0) {
      iov->iov_base = (char *) iov->iov_base + r;
      iov->iov_len -= r;
    }
  }
  return 0;
}

static int
write_header (struct lb_crashlog *log, const struct lb_crashlog_geometry *g,
              char *err, size_t errlen)
{
  uint8_t h[LB_CRASHLOG_HEADER_SIZE] = { 0 };
  struct iovec iov = { h, sizeof h };

  memcpy (h, header_magic, 8);
  put64 (h + 8, g->disk_size);
  put32 (h + 16, g->blksize);
  put32 (h + 20, g->logical_blksize);
  put64 (h + 24, log->limit);
  if (writev_all (log->fd, &iov, 1) == -1)
    return lb_fail (errno, err, errlen, "crash-log=%s: writing its header: %m",
                    log->path);
  log->bytes = sizeof h;
  return 0;
}

struct lb_crashlog *
lb_crashlog_create (const char *path, const struct lb_crashlog_geometry *g,
                    uint64_t limit, char *err, size_t errlen)
{
  struct lb_crashlog *log;

  if (limit < LB_CRASHLOG_MIN_LIMIT) {
    lb_fail (EINVAL, err, errlen,
             "crash-log-size=%" PRIu64 ": must be at least %d bytes "
             "(the header and one record)",
             limit, LB_CRASHLOG_MIN_LIMIT);
    return NULL;
  }
  log = calloc (1, sizeof *log);
  if (log == NULL || (log->path = strdup (path)) == NULL) {
    lb_fail (errno, err, errlen, "crash-log=%s: %m", path);
    free (log);
    return NULL;
  }
  log->limit = limit;
  log->disk_size = g->disk_size;
  log->fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0600);
  if (log->fd == -1) {
    lb_fail (errno, err, errlen, "crash-log=%s: cannot create it%s: %m", path,
             errno == EEXIST ? " (a log is never overwritten)" : "");
    goto fail;
  }
  if (write_header (log, g, err, errlen) == -1) {
    int saved = errno;
    close (log->fd);
    unlink (path);
    errno = saved;
    goto fail;
  }
  pthread_mutex_init (&log->lock, NULL);
  return log;

fail:
  free (log->path);
  free (log);
  return NULL;
}

static void
encode_record (uint8_t *h, const struct lb_crashlog_record *rec)
{
  memset (h, 0, LB_CRASHLOG_RECORD_SIZE);
  memcpy (h, record_magic, 4);
  h[4] = rec->type;
  h[5] = rec->flags;
  put64 (h + 8, rec->seq);
  put64 (h + 16, rec->epoch);
  put64 (h + 24, rec->offset);
  put64 (h + 32, rec->length);
}

static bool
closes_epoch (enum lb_crashlog_type type)
{
  return type == LB_CRASHLOG_FLUSH || type == LB_CRASHLOG_CUT;
}

/* What the format forbids in rec (type, flags, range), or NULL.  The
 * writer and the reader share it.
 */
static const char *
shape_fault (const struct lb_crashlog_record *rec, uint64_t disk_size)
{
  switch (rec->type) {
  case LB_CRASHLOG_WRITE:
  case LB_CRASHLOG_TRIM:
  case LB_CRASHLOG_ZERO:
    if (rec->flags & ~(LB_CRASHLOG_FUA | LB_CRASHLOG_THROUGH) ||
        rec->flags == (LB_CRASHLOG_FUA | LB_CRASHLOG_THROUGH))
      return "unknown flags";
    break;
  case LB_CRASHLOG_FLUSH:
    if (rec->flags & ~LB_CRASHLOG_IMPLICIT)
      return "unknown flags";
    if (rec->offset || rec->length)
      return "a flush with a range";
    return NULL;
  case LB_CRASHLOG_WRITEBACK:
    if (rec->flags)
      return "unknown flags";
    break;
  case LB_CRASHLOG_CUT:
    if (rec->flags > 2)
      return "a cut with an unknown mode";
    if (rec->length == 0)
      return "a cut numbered 0";
    return NULL;
  default: return "unknown record type";
  }
  if (rec->offset > disk_size || rec->length > disk_size - rec->offset)
    return "range beyond the end of the disk";
  return NULL;
}

uint64_t
lb_crashlog_record_bytes (enum lb_crashlog_type type, uint64_t length)
{
  return LB_CRASHLOG_RECORD_SIZE +
    (type == LB_CRASHLOG_WRITE ? padded (length) : 0);
}

/* Free room, the reservations deducted, and the spare too unless
 * with_spare.
 */
static uint64_t
room_locked (const struct lb_crashlog *log, bool with_spare)
{
  uint64_t used = log->bytes + log->reserved +
    (with_spare ? 0 : LB_CRASHLOG_SPARE_BYTES);

  lb_assert_held_write (&log->lock);
  return used < log->limit ? log->limit - used : 0;
}

static int
full_locked (struct lb_crashlog *log, uint64_t size, char *err, size_t errlen)
{
  lb_assert_held_write (&log->lock);
  return lb_fail (ENOSPC, err, errlen,
                  "crash-log=%s is full: %" PRIu64 " of its %" PRIu64
                  " bytes used, %" PRIu64 " more needed (raise "
                  "crash-log-size); the request was not done",
                  log->path, log->bytes, log->limit, size);
}

static int
broken_locked (struct lb_crashlog *log, char *err, size_t errlen)
{
  lb_assert_held_write (&log->lock);
  return lb_fail (EIO, err, errlen,
                  "crash-log=%s stopped at %" PRIu64 " bytes (%s): the "
                  "disk takes no more changes",
                  log->path, log->bytes, strerror (log->broken));
}

/* Take size bytes of room as room says: 0, or -1 (ENOSPC). */
static int
take_room_locked (struct lb_crashlog *log, enum lb_crashlog_room room,
                  uint64_t size, char *err, size_t errlen)
{
  lb_assert_held_write (&log->lock);
  if (room == LB_CRASHLOG_ROOM_RESERVED) {
    if (size > log->reserved)
      return lb_fail (EINVAL, err, errlen,
                      "crash-log=%s: an append of %" PRIu64 " bytes beyond "
                      "the %" PRIu64 " reserved",
                      log->path, size, log->reserved);
    log->reserved -= size;
    return 0;
  }
  if (size > room_locked (log, room == LB_CRASHLOG_ROOM_SPARE))
    return full_locked (log, size, err, errlen);
  return 0;
}

static int
append_locked (struct lb_crashlog *log, struct lb_crashlog_record *rec,
               enum lb_crashlog_room room, char *err, size_t errlen)
{
  uint64_t size = lb_crashlog_record_bytes (rec->type, rec->length);
  uint64_t data_bytes = size - LB_CRASHLOG_RECORD_SIZE;
  uint8_t h[LB_CRASHLOG_RECORD_SIZE];
  struct iovec iov[3] = { { h, sizeof h } };
  int n = 1;

  lb_assert_held_write (&log->lock);
  if (log->broken)
    return broken_locked (log, err, errlen);
  if (take_room_locked (log, room, size, err, errlen) == -1)
    return -1;
  rec->seq = log->seq;
  rec->epoch = log->epoch;
  encode_record (h, rec);
  if (data_bytes) {
    iov[n++] = (struct iovec) { (void *) rec->data, rec->length };
    if (data_bytes > rec->length)
      iov[n++] = (struct iovec) { (void *) zero_pad,
                                  data_bytes - rec->length };
  }
  if (writev_all (log->fd, iov, n) == -1) {
    int saved = errno;
    /* Cut a torn tail off, so the file stays readable. */
    if (ftruncate (log->fd, log->bytes) == 0)
      lseek (log->fd, log->bytes, SEEK_SET);
    log->broken = saved;
    if (room == LB_CRASHLOG_ROOM_RESERVED)
      log->reserved += size; /* still the caller's, to give back */
    return lb_fail (EIO, err, errlen,
                    "crash-log=%s: writing it failed: %s; the disk takes "
                    "no more changes",
                    log->path, strerror (saved));
  }
  log->bytes += size;
  log->seq++;
  if (closes_epoch (rec->type))
    log->epoch++;
  return 0;
}

int
lb_crashlog_add (struct lb_crashlog *log, const struct lb_crashlog_record *rec,
                 enum lb_crashlog_room room, char *err, size_t errlen)
{
  struct lb_crashlog_record r = *rec;
  const char *fault = shape_fault (&r, log->disk_size);
  int ret;

  if (fault == NULL && r.type == LB_CRASHLOG_WRITE && r.length &&
      r.data == NULL)
    fault = "a write without data";
  if (fault)
    return lb_fail (EINVAL, err, errlen, "crash-log=%s: record type %d: %s",
                    log->path, (int) r.type, fault);
  lb_mutex_lock (&log->lock);
  ret = append_locked (log, &r, room, err, errlen);
  lb_mutex_unlock (&log->lock);
  return ret;
}

int
lb_crashlog_append (struct lb_crashlog *log, enum lb_crashlog_type type,
                    bool fua, uint64_t offset, uint64_t length,
                    const void *data, char *err, size_t errlen)
{
  struct lb_crashlog_record rec = {
    .type = type,
    .flags = fua ? LB_CRASHLOG_FUA : 0,
    .offset = offset,
    .length = length,
    .data = data,
  };

  return lb_crashlog_add (log, &rec, LB_CRASHLOG_ROOM_FREE, err, errlen);
}

int
lb_crashlog_reserve (struct lb_crashlog *log, uint64_t bytes, char *err,
                     size_t errlen)
{
  int r = 0;

  lb_mutex_lock (&log->lock);
  if (log->broken)
    r = broken_locked (log, err, errlen);
  else if (bytes > room_locked (log, false))
    r = full_locked (log, bytes, err, errlen);
  else
    log->reserved += bytes;
  lb_mutex_unlock (&log->lock);
  return r;
}

void
lb_crashlog_unreserve (struct lb_crashlog *log, uint64_t bytes)
{
  lb_mutex_lock (&log->lock);
  assert (bytes <= log->reserved);
  log->reserved -= bytes;
  lb_mutex_unlock (&log->lock);
}

void
lb_crashlog_break (struct lb_crashlog *log, int errnum)
{
  lb_mutex_lock (&log->lock);
  if (log->broken == 0)
    log->broken = errnum ? errnum : EIO;
  lb_mutex_unlock (&log->lock);
}

void
lb_crashlog_status (struct lb_crashlog *log, struct lb_crashlog_status *st)
{
  lb_mutex_lock (&log->lock);
  *st = (struct lb_crashlog_status) {
    .broken = log->broken,
    .epoch = log->epoch,
    .bytes = log->bytes,
  };
  lb_mutex_unlock (&log->lock);
}

int
lb_crashlog_close (struct lb_crashlog *log, char *err, size_t errlen)
{
  int r = 0;

  if (log == NULL)
    return 0;
  if (close (log->fd) == -1)
    r = lb_fail (errno, err, errlen, "crash-log=%s: closing it: %m",
                 log->path);
  pthread_mutex_destroy (&log->lock);
  free (log->path);
  free (log);
  return r;
}

/* ---- reading ---- */

struct lb_crashlog_reader {
  int fd;     /* fixed */
  char *path; /* fixed */
  struct lb_crashlog_geometry g;
  uint64_t pos;   /* byte offset of the next record */
  uint64_t seq;   /* the next record's expected sequence number */
  uint64_t epoch; /* the next record's expected epoch */
  void *data;
  size_t data_cap;
};

/* Read exactly len bytes: 1; 0 at a clean end (nothing read); -1 with
 * errno (EINVAL for a cut-short read).
 */
static int
read_exact (int fd, void *buf, size_t len)
{
  size_t done = 0;

  while (done < len) {
    ssize_t r = read (fd, (char *) buf + done, len - done);
    if (r == -1 && errno == EINTR)
      continue;
    if (r == -1)
      return -1;
    if (r == 0) {
      if (done == 0)
        return 0;
      errno = EINVAL;
      return -1;
    }
    done += r;
  }
  return 1;
}

static int
check_header (struct lb_crashlog_reader *r, const uint8_t *h, uint64_t *limit,
              char *err, size_t errlen)
{
  static const uint8_t zeroes[32];

  if (memcmp (h, header_magic, 8) != 0)
    return lb_fail (EINVAL, err, errlen,
                    "%s: not a largeblock crash log "
                    "(no \"LBCRLOG1\" at its start)",
                    r->path);
  r->g.disk_size = get64 (h + 8);
  r->g.blksize = get32 (h + 16);
  r->g.logical_blksize = get32 (h + 20);
  *limit = get64 (h + 24);
  if (memcmp (h + 32, zeroes, sizeof zeroes) != 0 || r->g.blksize == 0 ||
      r->g.logical_blksize == 0 || r->g.blksize % r->g.logical_blksize)
    return lb_fail (EINVAL, err, errlen,
                    "%s: damaged crash log header "
                    "(block sizes %" PRIu32 "/%" PRIu32 ")",
                    r->path, r->g.blksize, r->g.logical_blksize);
  return 0;
}

struct lb_crashlog_reader *
lb_crashlog_reader_open (const char *path, struct lb_crashlog_geometry *g,
                         uint64_t *limit, char *err, size_t errlen)
{
  struct lb_crashlog_reader *r = calloc (1, sizeof *r);
  uint8_t h[LB_CRASHLOG_HEADER_SIZE];
  int got;

  if (r == NULL || (r->path = strdup (path)) == NULL) {
    lb_fail (errno, err, errlen, "%s: %m", path);
    free (r);
    return NULL;
  }
  r->fd = open (path, O_RDONLY | O_CLOEXEC);
  if (r->fd == -1) {
    lb_fail (errno, err, errlen, "%s: cannot open the crash log: %m", path);
    goto fail;
  }
  got = read_exact (r->fd, h, sizeof h);
  if (got != 1) {
    lb_fail (got == 0 ? EINVAL : errno, err, errlen,
             "%s: not a largeblock crash log (%s)", path,
             got == -1 && errno != EINVAL ? strerror (errno)
                                          : "shorter than its header");
    goto fail;
  }
  if (check_header (r, h, limit, err, errlen) == -1)
    goto fail;
  r->pos = sizeof h;
  *g = r->g;
  return r;

fail : {
  int saved = errno;
  lb_crashlog_reader_close (r);
  errno = saved;
}
  return NULL;
}

/* What is wrong with the record header h, or NULL. */
static const char *
record_fault (const struct lb_crashlog_reader *r, const uint8_t *h,
              const struct lb_crashlog_record *rec)
{
  if (memcmp (h, record_magic, 4) != 0)
    return "no record magic";
  if (h[4] < LB_CRASHLOG_WRITE || h[4] > LB_CRASHLOG_CUT)
    return "unknown record type";
  if (h[6] || h[7])
    return "unknown flags";
  if (rec->seq != r->seq)
    return "out of sequence";
  if (rec->epoch != r->epoch)
    return "epoch out of order";
  return shape_fault (rec, r->g.disk_size);
}

static int
read_data (struct lb_crashlog_reader *r, struct lb_crashlog_record *rec)
{
  uint64_t want = padded (rec->length);

  if (want > r->data_cap) {
    void *p = realloc (r->data, want);
    if (p == NULL)
      return -1;
    r->data = p;
    r->data_cap = want;
  }
  if (want) {
    int got = read_exact (r->fd, r->data, want);
    if (got == 0)
      errno = EINVAL; /* the file ends before the data */
    if (got != 1)
      return -1;
  }
  rec->data = r->data;
  return 0;
}

int
lb_crashlog_reader_next (struct lb_crashlog_reader *r,
                         struct lb_crashlog_record *rec, char *err,
                         size_t errlen)
{
  uint8_t h[LB_CRASHLOG_RECORD_SIZE];
  const char *fault;
  int got = read_exact (r->fd, h, sizeof h);

  if (got == 0)
    return 0;
  if (got == -1)
    return lb_fail (errno, err, errlen,
                    "%s: record %" PRIu64 " at byte %" PRIu64 ": %s", r->path,
                    r->seq, r->pos,
                    errno == EINVAL ? "cut short" : strerror (errno));
  *rec = (struct lb_crashlog_record) {
    .type = h[4],
    .flags = h[5],
    .seq = get64 (h + 8),
    .epoch = get64 (h + 16),
    .offset = get64 (h + 24),
    .length = get64 (h + 32),
  };
  rec->fua = rec->type != LB_CRASHLOG_CUT && (rec->flags & LB_CRASHLOG_FUA);
  fault = record_fault (r, h, rec);
  if (fault)
    return lb_fail (EINVAL, err, errlen,
                    "%s: record %" PRIu64 " at byte %" PRIu64 ": %s", r->path,
                    r->seq, r->pos, fault);
  if (rec->type == LB_CRASHLOG_WRITE && read_data (r, rec) == -1)
    return lb_fail (errno, err, errlen,
                    "%s: record %" PRIu64 " at byte %" PRIu64 ": its data %s",
                    r->path, r->seq, r->pos,
                    errno == EINVAL ? "is cut short" : strerror (errno));
  r->pos += sizeof h +
    (rec->type == LB_CRASHLOG_WRITE ? padded (rec->length) : 0);
  r->seq++;
  if (closes_epoch (rec->type))
    r->epoch++;
  return 1;
}

void
lb_crashlog_reader_tell (const struct lb_crashlog_reader *r,
                         struct lb_crashlog_position *at)
{
  *at = (struct lb_crashlog_position) {
    .byte = r->pos,
    .seq = r->seq,
    .epoch = r->epoch,
  };
}

int
lb_crashlog_reader_seek (struct lb_crashlog_reader *r,
                         const struct lb_crashlog_position *at, char *err,
                         size_t errlen)
{
  if (at->byte < LB_CRASHLOG_HEADER_SIZE || at->byte > INT64_MAX)
    return lb_fail (EINVAL, err, errlen,
                    "%s: byte %" PRIu64 " is not a record's position "
                    "(records start at byte %d)",
                    r->path, at->byte, LB_CRASHLOG_HEADER_SIZE);
  if (lseek (r->fd, (off_t) at->byte, SEEK_SET) == -1)
    return lb_fail (errno, err, errlen, "%s: seeking to byte %" PRIu64 ": %m",
                    r->path, at->byte);
  r->pos = at->byte;
  r->seq = at->seq;
  r->epoch = at->epoch;
  return 0;
}

void
lb_crashlog_reader_close (struct lb_crashlog_reader *r)
{
  if (r == NULL)
    return;
  if (r->fd >= 0)
    close (r->fd);
  free (r->data);
  free (r->path);
  free (r);
}
