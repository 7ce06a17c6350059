/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the crash log's writer and reader (crashlog.h has the
 * format).  The writer's state -- the file's size, the next sequence
 * number and epoch -- is guarded by log->lock (the last row of the lock
 * order in locking.h), held for the whole of one append, so a record
 * goes out in one writev at the offset its sequence number says.  The
 * reader is single-threaded.
 */
#include <config.h>

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
  pthread_mutex_t lock;
  int fd;         /* fixed */
  char *path;     /* fixed */
  uint64_t limit; /* fixed */
  uint64_t bytes; /* log->lock */
  uint64_t seq;   /* log->lock */
  uint64_t epoch; /* log->lock */
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
encode_record (uint8_t *h, enum lb_crashlog_type type, bool fua, uint64_t seq,
               uint64_t epoch, uint64_t offset, uint64_t length)
{
  memset (h, 0, LB_CRASHLOG_RECORD_SIZE);
  memcpy (h, record_magic, 4);
  h[4] = type;
  h[5] = fua ? LB_CRASHLOG_FUA : 0;
  put64 (h + 8, seq);
  put64 (h + 16, epoch);
  put64 (h + 24, offset);
  put64 (h + 32, length);
}

static int
append_locked (struct lb_crashlog *log, enum lb_crashlog_type type, bool fua,
               uint64_t offset, uint64_t length, const void *data, char *err,
               size_t errlen)
{
  uint64_t data_bytes = type == LB_CRASHLOG_WRITE ? padded (length) : 0;
  uint64_t size = LB_CRASHLOG_RECORD_SIZE + data_bytes;
  uint8_t h[LB_CRASHLOG_RECORD_SIZE];
  struct iovec iov[3] = { { h, sizeof h } };
  int n = 1;

  lb_assert_held_write (&log->lock);
  if (size > log->limit - log->bytes)
    return lb_fail (ENOSPC, err, errlen,
                    "crash-log=%s is full: %" PRIu64 " of its %" PRIu64
                    " bytes used, %" PRIu64 " more needed (raise "
                    "crash-log-size); the request was not done",
                    log->path, log->bytes, log->limit, size);
  encode_record (h, type, fua, log->seq, log->epoch, offset, length);
  if (data_bytes) {
    iov[n++] = (struct iovec) { (void *) data, length };
    if (data_bytes > length)
      iov[n++] = (struct iovec) { (void *) zero_pad, data_bytes - length };
  }
  if (writev_all (log->fd, iov, n) == -1) {
    int saved = errno;
    /* Cut a torn tail off, so the file stays readable. */
    if (ftruncate (log->fd, log->bytes) == 0)
      lseek (log->fd, log->bytes, SEEK_SET);
    return lb_fail (saved, err, errlen, "crash-log=%s: %s", log->path,
                    strerror (saved));
  }
  log->bytes += size;
  log->seq++;
  if (type == LB_CRASHLOG_FLUSH)
    log->epoch++;
  return 0;
}

int
lb_crashlog_append (struct lb_crashlog *log, enum lb_crashlog_type type,
                    bool fua, uint64_t offset, uint64_t length,
                    const void *data, char *err, size_t errlen)
{
  int r;

  if (type == LB_CRASHLOG_FLUSH && (offset || length || fua))
    return lb_fail (EINVAL, err, errlen,
                    "crash log: a flush has no range and no FUA flag");
  if (type < LB_CRASHLOG_WRITE || type > LB_CRASHLOG_FLUSH ||
      (type == LB_CRASHLOG_WRITE && length && data == NULL))
    return lb_fail (EINVAL, err, errlen, "crash log: record type %d: %s",
                    (int) type, "unknown, or a write without data");
  lb_mutex_lock (&log->lock);
  r = append_locked (log, type, fua, offset, length, data, err, errlen);
  lb_mutex_unlock (&log->lock);
  return r;
}

uint64_t
lb_crashlog_epoch (struct lb_crashlog *log)
{
  uint64_t e;

  lb_mutex_lock (&log->lock);
  e = log->epoch;
  lb_mutex_unlock (&log->lock);
  return e;
}

uint64_t
lb_crashlog_bytes (struct lb_crashlog *log)
{
  uint64_t b;

  lb_mutex_lock (&log->lock);
  b = log->bytes;
  lb_mutex_unlock (&log->lock);
  return b;
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
  if (h[4] < LB_CRASHLOG_WRITE || h[4] > LB_CRASHLOG_FLUSH)
    return "unknown record type";
  if ((h[5] & ~LB_CRASHLOG_FUA) || h[6] || h[7])
    return "unknown flags";
  if (rec->seq != r->seq)
    return "out of sequence";
  if (rec->epoch != r->epoch)
    return "epoch out of order";
  if (rec->type == LB_CRASHLOG_FLUSH) {
    if (rec->offset || rec->length || rec->fua)
      return "a flush with a range or FUA";
  }
  else if (rec->offset > r->g.disk_size ||
           rec->length > r->g.disk_size - rec->offset)
    return "range beyond the end of the disk";
  return NULL;
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
    .fua = h[5] & LB_CRASHLOG_FUA,
    .seq = get64 (h + 8),
    .epoch = get64 (h + 16),
    .offset = get64 (h + 24),
    .length = get64 (h + 32),
  };
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
  if (rec->type == LB_CRASHLOG_FLUSH)
    r->epoch++;
  return 1;
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
