/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the file store -- see filestore.h.
 *
 * Owns the open backing file (or block device), its direct I/O alignment,
 * the range lock below and the capabilities found at run time.
 *
 * Locking (the plugin's order is locking.h's).  Requests are ordered per
 * claim unit (a folio, or the direct I/O unit if that is larger) as the
 * RAM store orders them per folio: a unit is never seen half-written,
 * half-trimmed or half-zeroed.
 * The host filesystem alone does not promise that (a buffered read racing
 * a write or a hole punch on the same page can copy a mix of both), and
 * with direct I/O a request that is not aligned to the device's unit
 * becomes a read-modify-write of whole units, which must not interleave
 * with another write to those units or it brings back stale bytes.
 *
 * So every operation claims the byte range it touches, rounded out to
 * whole claim units, in a range lock: shared for reads, exclusive for
 * writes, trims and zeros.  A claim waits only for earlier claims that
 * overlap it and conflict (any pair but two shared ones), so requests to
 * different units never wait for each other however large they are, and
 * overlapping ones are served in arrival order (no starvation, and no
 * deadlock: a claim only ever waits for older ones).  The lock's own
 * mutex guards just the list of claims, never any I/O.
 *
 * No claim is held across fdatasync: a FUA write that cannot use
 * RWF_DSYNC syncs after its claim is dropped, before it returns.  The
 * write-zeros fallback claims one chunk at a time (each chunk whole claim
 * units, so per-unit atomicity holds).  Flush and extents take no claim.
 *
 * Capabilities discovered at run time (whether the filesystem can punch
 * holes, zero ranges or do per-write O_DSYNC) are cached in atomics: the
 * first EOPNOTSUPP clears the flag and later requests go straight to the
 * fallback.
 *
 * A backing file that shrank while served: a read reaching past its end
 * fails with EIO (and lb_fault says why); a write there extends the file
 * again, as nbdkit's file plugin does.
 *
 * Between servers: the one descriptor of the backing file carries an open
 * file description lock on the whole file (lock_backing), exclusive when
 * serving read-write and shared when read-only, taken before the store is
 * returned and held until it is destroyed; a block device served
 * read-write is also opened O_EXCL.  The file is opened once per store
 * (probing and creating use short-lived descriptors of their own, which
 * take no lock), so no second description of it in this process can
 * conflict with the lock or drop it.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "filestore.h"
#include "error.h"
#include "extents.h"
#include "locking.h"

#define ZERO_CHUNK_BYTES (1u << 20)
#define BOUNCE_BYTES (1u << 20) /* largest direct I/O bounce window */
#define PAGE_ALIGN_BYTES 4096u

/* One request's claim on the byte range [lo, hi), in the range lock's
 * list (oldest first) from claim_range until release_range.  Lives on
 * the claiming thread's stack.
 */
struct range_claim {
  uint64_t lo, hi;                 /* fixed before it joins the list */
  bool exclusive;                  /* fixed before it joins the list */
  struct range_claim *prev, *next; /* the range lock's mutex */
};

struct range_lock {
  /* Protects the list and nr_waiting only, never any I/O: taken only
   * inside claim_range and release_range (row 3 of locking.h's order).
   */
  pthread_mutex_t mutex;
  pthread_cond_t changed;              /* mutex: a claim left */
  struct range_claim *oldest, *newest; /* mutex */
  unsigned nr_waiting;                 /* mutex */
};

/* Fixed after open but for the atomics (no lock) and the range lock. */
struct filestore {
  struct lb_store store; /* must be first */
  const struct lb_geometry *g;
  int fd;
  bool is_blockdev;
  bool direct;
  uint32_t dio_align_bytes; /* offset and length unit for O_DIRECT */
  uint32_t mem_align_bytes; /* buffer alignment for O_DIRECT */
  void *zeros;              /* ZERO_CHUNK_BYTES, aligned */
  atomic_bool can_punch;
  atomic_bool can_zero_range;
  atomic_bool can_dsync;
  _Atomic uint64_t peak_folios;
  /* The unit claims are rounded out to: a folio, or the direct I/O unit
   * if that is larger.  Fixed.
   */
  uint64_t claim_unit_bytes;
  struct range_lock locks;
};

static struct filestore *
to_filestore (struct lb_store *s)
{
  return (struct filestore *) s;
}

static bool
is_unsupported (int errnum)
{
  return errnum == EOPNOTSUPP || errnum == ENOTSUP || errnum == ENOSYS;
}

static uint64_t
round_down (uint64_t v, uint64_t unit)
{
  return v - v % unit;
}

static uint64_t
round_up (uint64_t v, uint64_t unit)
{
  return round_down (v + unit - 1, unit);
}

static uint64_t
min_u64 (uint64_t a, uint64_t b)
{
  return a < b ? a : b;
}

/* ---- the range lock ---- */

static bool
claims_conflict (const struct range_claim *a, const struct range_claim *b)
{
  return a->lo < b->hi && b->lo < a->hi && (a->exclusive || b->exclusive);
}

static bool
must_wait_locked (const struct range_lock *l, const struct range_claim *c)
{
  lb_assert_held (&l->mutex);
  for (const struct range_claim *p = c->prev; p != NULL; p = p->prev)
    if (claims_conflict (p, c))
      return true;
  return false;
}

/* Claim [offset, offset + count) rounded out to whole claim units; returns
 * once no older conflicting claim is left.
 */
static void
claim_range (struct filestore *fs, struct range_claim *c, uint64_t count,
             uint64_t offset, bool exclusive)
{
  struct range_lock *l = &fs->locks;

  c->lo = round_down (offset, fs->claim_unit_bytes);
  c->hi = round_up (offset + count, fs->claim_unit_bytes);
  c->exclusive = exclusive;
  c->next = NULL;
  lb_mutex_lock (&l->mutex);
  c->prev = l->newest;
  if (l->newest)
    l->newest->next = c;
  else
    l->oldest = c;
  l->newest = c;
  if (must_wait_locked (l, c)) {
    l->nr_waiting++;
    do
      lb_cond_wait (&l->changed, &l->mutex);
    while (must_wait_locked (l, c));
    l->nr_waiting--;
  }
  lb_mutex_unlock (&l->mutex);
}

/* Keeps errno, so callers can release between a failure and its return. */
static void
release_range (struct filestore *fs, struct range_claim *c)
{
  struct range_lock *l = &fs->locks;
  int saved = errno;

  lb_mutex_lock (&l->mutex);
  if (c->prev)
    c->prev->next = c->next;
  else
    l->oldest = c->next;
  if (c->next)
    c->next->prev = c->prev;
  else
    l->newest = c->prev;
  if (l->nr_waiting > 0)
    pthread_cond_broadcast (&l->changed);
  lb_mutex_unlock (&l->mutex);
  errno = saved;
}

/* ---- plain positional I/O ---- */

/* What a read that meets the end of the file does. */
enum at_eof {
  EOF_FAILS, /* a client's read: the file shrank under us, EIO */
  EOF_ZEROS, /* a read-modify-write: the write will extend the file */
};

static int
read_fully (int fd, void *buf, size_t count, uint64_t offset,
            enum at_eof at_eof)
{
  char *p = buf;

  while (count > 0) {
    ssize_t r = pread (fd, p, count, (off_t) offset);
    if (r == -1) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    if (r == 0 && at_eof == EOF_ZEROS) {
      memset (p, 0, count);
      return 0;
    }
    if (r == 0) {
      lb_set_fault (LB_FAULT_PAST_EOF);
      errno = EIO;
      return -1;
    }
    p += r;
    count -= (size_t) r;
    offset += (uint64_t) r;
  }
  return 0;
}

/* Write all of buf.  *dsync asks for RWF_DSYNC (durable on return); it is
 * cleared when the filesystem cannot do that, and then the caller must
 * fdatasync -- after releasing its claim.
 */
static int
write_fully (struct filestore *fs, const void *buf, size_t count,
             uint64_t offset, bool *dsync)
{
  const char *p = buf;

  while (count > 0) {
    struct iovec iov = { .iov_base = (void *) p, .iov_len = count };
    ssize_t r = pwritev2 (fs->fd, &iov, 1, (off_t) offset,
                          *dsync ? RWF_DSYNC : 0);
    if (r == -1) {
      if (errno == EINTR)
        continue;
      if (*dsync && is_unsupported (errno)) {
        atomic_store (&fs->can_dsync, false);
        *dsync = false;
        continue;
      }
      return -1;
    }
    p += r;
    count -= (size_t) r;
    offset += (uint64_t) r;
  }
  return 0;
}

/* ---- direct I/O: alignment and bounded bounce buffers ---- */

static bool
direct_can_take (const struct filestore *fs, const void *buf, uint64_t count,
                 uint64_t offset)
{
  return (uintptr_t) buf % fs->mem_align_bytes == 0 &&
    count % fs->dio_align_bytes == 0 && offset % fs->dio_align_bytes == 0;
}

/* A request the device cannot take as it is goes through an aligned
 * bounce buffer one window at a time: [lo, hi) is the request rounded out
 * to direct I/O units, and a window is at most BOUNCE_BYTES (or one unit,
 * if that is larger), so the buffer never grows with the request.
 */
struct bounce {
  uint64_t offset, end; /* the request */
  uint64_t lo, hi;      /* rounded out to units */
  uint64_t window_bytes;
  char *buf;
};

static int
bounce_start (const struct filestore *fs, struct bounce *b, uint64_t count,
              uint64_t offset)
{
  uint64_t unit = fs->dio_align_bytes;

  b->offset = offset;
  b->end = offset + count;
  b->lo = round_down (offset, unit);
  b->hi = round_up (b->end, unit);
  b->window_bytes = min_u64 (b->hi - b->lo,
                             unit > BOUNCE_BYTES ? unit : BOUNCE_BYTES);
  if (posix_memalign ((void **) &b->buf, fs->mem_align_bytes,
                      b->window_bytes) != 0) {
    errno = ENOMEM;
    return -1;
  }
  return 0;
}

/* The request's bytes inside the window at pos of n bytes: [*a, *b). */
static void
bounce_overlap (const struct bounce *b, uint64_t pos, uint64_t n, uint64_t *a,
                uint64_t *z)
{
  *a = pos > b->offset ? pos : b->offset;
  *z = min_u64 (pos + n, b->end);
}

static int
direct_read (struct filestore *fs, void *buf, uint32_t count, uint64_t offset)
{
  struct bounce b;
  int r = 0;

  if (direct_can_take (fs, buf, count, offset))
    return read_fully (fs->fd, buf, count, offset, EOF_FAILS);
  if (bounce_start (fs, &b, count, offset) == -1)
    return -1;
  for (uint64_t pos = b.lo, n; pos < b.hi && r == 0; pos += n) {
    uint64_t a, z;

    n = min_u64 (b.window_bytes, b.hi - pos);
    r = read_fully (fs->fd, b.buf, n, pos, EOF_FAILS);
    bounce_overlap (&b, pos, n, &a, &z);
    if (r == 0)
      memcpy ((char *) buf + (a - offset), b.buf + (a - pos), z - a);
  }
  free (b.buf);
  return r;
}

/* Caller holds the claim.  In each window, reads the partial units at
 * either end, lays the new bytes over them and writes whole units.
 */
static int
direct_write_claimed (struct filestore *fs, const void *buf, uint32_t count,
                      uint64_t offset, bool *dsync)
{
  const uint64_t unit = fs->dio_align_bytes;
  struct bounce b;
  int r = 0;

  if (direct_can_take (fs, buf, count, offset))
    return write_fully (fs, buf, count, offset, dsync);
  if (bounce_start (fs, &b, count, offset) == -1)
    return -1;
  for (uint64_t pos = b.lo, n; pos < b.hi && r == 0; pos += n) {
    uint64_t a, z;

    n = min_u64 (b.window_bytes, b.hi - pos);
    bounce_overlap (&b, pos, n, &a, &z);
    if (a != pos)
      r = read_fully (fs->fd, b.buf, unit, pos, EOF_ZEROS);
    if (r == 0 && z != pos + n && (n != unit || a == pos))
      r = read_fully (fs->fd, b.buf + n - unit, unit, pos + n - unit,
                      EOF_ZEROS);
    if (r == 0) {
      memcpy (b.buf + (a - pos), (const char *) buf + (a - offset), z - a);
      r = write_fully (fs, b.buf, n, pos, dsync);
    }
  }
  free (b.buf);
  return r;
}

/* ---- the store operations ---- */

static int
file_pread (struct lb_store *s, void *buf, uint32_t count, uint64_t offset)
{
  struct filestore *fs = to_filestore (s);
  struct range_claim claim;
  int r;

  claim_range (fs, &claim, count, offset, false);
  if (fs->direct)
    r = direct_read (fs, buf, count, offset);
  else
    r = read_fully (fs->fd, buf, count, offset, EOF_FAILS);
  release_range (fs, &claim);
  return r;
}

static int
write_claimed (struct filestore *fs, const void *buf, uint32_t count,
               uint64_t offset, bool *dsync)
{
  if (fs->direct)
    return direct_write_claimed (fs, buf, count, offset, dsync);
  return write_fully (fs, buf, count, offset, dsync);
}

static int
file_pwrite (struct lb_store *s, const void *buf, uint32_t count,
             uint64_t offset, bool fua)
{
  struct filestore *fs = to_filestore (s);
  struct range_claim claim;
  bool dsync = fua && atomic_load (&fs->can_dsync);
  int r;

  claim_range (fs, &claim, count, offset, true);
  r = write_claimed (fs, buf, count, offset, &dsync);
  release_range (fs, &claim);
  if (r == 0 && fua && !dsync)
    r = fdatasync (fs->fd);
  return r;
}

/* 0: done; 1: this mode cannot do it here, try another; -1: a real error
 * (EIO, ENOSPC) for the client.
 */
static int
try_fallocate (struct filestore *fs, atomic_bool *supported, int mode,
               uint32_t count, uint64_t offset)
{
  if (!atomic_load (supported))
    return 1;
  if (fallocate (fs->fd, mode, (off_t) offset, (off_t) count) == 0)
    return 0;
  if (is_unsupported (errno)) {
    atomic_store (supported, false);
    return 1;
  }
  /* A device refuses ranges it cannot map to whole sectors. */
  if (errno == EINVAL && fs->is_blockdev)
    return 1;
  return -1;
}

static int
punch_hole (struct filestore *fs, uint32_t count, uint64_t offset)
{
  return try_fallocate (fs, &fs->can_punch,
                        FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, count,
                        offset);
}

static int
file_trim (struct lb_store *s, uint32_t count, uint64_t offset)
{
  struct filestore *fs = to_filestore (s);
  struct range_claim claim;
  int r;

  claim_range (fs, &claim, count, offset, true);
  r = punch_hole (fs, count, offset);
  release_range (fs, &claim);
  return r == -1 ? -1 : 0; /* trim is advisory where unsupported */
}

/* Write zeros over the range one claim at a time, each claim whole claim
 * units and at least ZERO_CHUNK_BYTES, so every unit is zeroed under a
 * single claim but a long request never holds all of its range.
 */
static int
write_zeros (struct filestore *fs, uint32_t count, uint64_t offset)
{
  const uint64_t span = fs->claim_unit_bytes > ZERO_CHUNK_BYTES
    ? fs->claim_unit_bytes
    : ZERO_CHUNK_BYTES;
  const uint64_t end = offset + count;
  int r = 0;

  for (uint64_t pos = offset, next; pos < end && r == 0; pos = next) {
    struct range_claim claim;
    bool dsync = false;

    next = min_u64 (round_down (pos, span) + span, end);
    claim_range (fs, &claim, next - pos, pos, true);
    for (uint64_t p = pos, n; p < next && r == 0; p += n) {
      n = min_u64 (ZERO_CHUNK_BYTES, next - p);
      r = write_claimed (fs, fs->zeros, (uint32_t) n, p, &dsync);
    }
    release_range (fs, &claim);
  }
  return r;
}

/* Zero keeping the blocks allocated (NBD_CMD_FLAG_NO_HOLE). */
static int
zero_allocated (struct filestore *fs, uint32_t count, uint64_t offset)
{
  int r = try_fallocate (fs, &fs->can_zero_range,
                         FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, count,
                         offset);

  if (r != 1 || fs->is_blockdev)
    return r;
  /* tmpfs and friends: punch, then allocate the range again. */
  r = punch_hole (fs, count, offset);
  if (r != 0)
    return r;
  if (fallocate (fs->fd, FALLOC_FL_KEEP_SIZE, (off_t) offset, (off_t) count) ==
      -1)
    return -1;
  return 0;
}

/* Zero with fallocate under the caller's claim: 0 done, 1 not possible
 * here (write zeros instead), -1 error.
 */
static int
zero_by_fallocate (struct filestore *fs, uint32_t count, uint64_t offset,
                   unsigned flags)
{
  int r = 1;

  if (flags & LB_ZERO_MAY_TRIM)
    r = punch_hole (fs, count, offset);
  /* A device's ZERO_RANGE may quietly write zeros: not fast. */
  if (r == 1 && !(fs->is_blockdev && (flags & LB_ZERO_FAST)))
    r = zero_allocated (fs, count, offset);
  return r;
}

static int
file_zero (struct lb_store *s, uint32_t count, uint64_t offset, unsigned flags)
{
  struct filestore *fs = to_filestore (s);
  struct range_claim claim;
  int r;

  claim_range (fs, &claim, count, offset, true);
  r = zero_by_fallocate (fs, count, offset, flags);
  release_range (fs, &claim);
  if (r != 1)
    return r;
  if (flags & LB_ZERO_FAST) {
    errno = ENOTSUP;
    return -1;
  }
  return write_zeros (fs, count, offset);
}

static int
file_flush (struct lb_store *s)
{
  return fdatasync (to_filestore (s)->fd);
}

/* ---- extents ---- */

/* The file has a hole [start, end).  The client sees only its whole
 * logical blocks as a hole; the rest reads as zeros but counts as data
 * (the builder merges it with the data around it).
 */
static int
add_hole (struct lb_extents *reply, const struct lb_geometry *g,
          uint64_t start, uint64_t end)
{
  uint64_t hs = round_up (start, g->logical_bytes);
  uint64_t he = round_down (end, g->logical_bytes);
  int r;

  if (hs >= he)
    return lb_extents_add (reply, start, end, false);
  r = lb_extents_add (reply, start, hs, false);
  if (r == 0)
    r = lb_extents_add (reply, hs, he, true);
  if (r == 0)
    r = lb_extents_add (reply, he, end, false);
  return r;
}

/* Walks whole logical blocks around the request, so that a block the
 * request only partly covers is judged as a whole; the builder clips.
 */
static int
file_extents (struct lb_store *s, uint32_t count, uint64_t offset,
              bool req_one, lb_extent_fn fn, void *opaque)
{
  struct filestore *fs = to_filestore (s);
  const struct lb_geometry *g = fs->g;
  struct lb_extents reply;
  uint64_t pos = round_down (offset, g->logical_bytes);
  uint64_t end = round_up (offset + count, g->logical_bytes);
  int r = 0;

  lb_extents_init (&reply, offset, count, req_one, fn, opaque);
  if (end > g->size_bytes)
    end = g->size_bytes;
  while (pos < end && r == 0) {
    off_t data = lseek (fs->fd, (off_t) pos, SEEK_DATA);
    off_t hole;

    if (data == -1 && errno == ENXIO)
      data = (off_t) end; /* only a hole from here on */
    else if (data == -1) {
      /* No SEEK_DATA here (a block device): all of it is data. */
      r = lb_extents_add (&reply, pos, end, false);
      break;
    }
    if ((uint64_t) data > end)
      data = (off_t) end;
    if ((uint64_t) data > pos)
      r = add_hole (&reply, g, pos, (uint64_t) data);
    if (r != 0 || (uint64_t) data >= end)
      break;
    hole = lseek (fs->fd, data, SEEK_HOLE);
    if (hole == -1 || (uint64_t) hole > end)
      hole = (off_t) end;
    r = lb_extents_add (&reply, (uint64_t) data, (uint64_t) hole, false);
    pos = (uint64_t) hole;
  }
  if (r == -1)
    return -1;
  return lb_extents_finish (&reply);
}

/* ---- usage, destroy ---- */

static void
file_usage (struct lb_store *s, struct lb_store_usage *u)
{
  struct filestore *fs = to_filestore (s);
  const struct lb_geometry *g = fs->g;
  uint64_t bytes = g->size_bytes;
  struct stat st;
  uint64_t folios, peak;

  if (!fs->is_blockdev && fstat (fs->fd, &st) == 0)
    bytes = (uint64_t) st.st_blocks * 512;
  folios = (bytes + g->physical_bytes - 1) >> g->physical_shift;
  peak = atomic_load (&fs->peak_folios);
  while (folios > peak &&
         !atomic_compare_exchange_weak (&fs->peak_folios, &peak, folios))
    ;
  u->folios_allocated = folios;
  u->folios_peak = folios > peak ? folios : peak;
  u->bytes_resident = bytes;
  u->metadata_bytes = sizeof *fs;
}

static void
file_destroy (struct lb_store *s)
{
  struct filestore *fs = to_filestore (s);

  close (fs->fd);
  pthread_mutex_destroy (&fs->locks.mutex);
  pthread_cond_destroy (&fs->locks.changed);
  free (fs->zeros);
  free (fs);
}

static const struct lb_store_ops filestore_ops = {
  .name = "file",
  .pread = file_pread,
  .pwrite = file_pwrite,
  .trim = file_trim,
  .zero = file_zero,
  .flush = file_flush,
  .extents = file_extents,
  .usage = file_usage,
  .destroy = file_destroy,
};

/* ---- probing and opening ---- */

static int
probe_blockdev (const char *path, struct lb_file_info *info, char *err,
                size_t errlen)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  uint64_t bytes;
  int logical;
  unsigned int physical;

  if (fd == -1)
    return lb_fail (errno, err, errlen, "file %s cannot be opened: %s", path,
                    strerror (errno));
  if (ioctl (fd, BLKGETSIZE64, &bytes) == -1 ||
      ioctl (fd, BLKSSZGET, &logical) == -1 ||
      ioctl (fd, BLKPBSZGET, &physical) == -1) {
    int e = errno;
    close (fd);
    return lb_fail (e, err, errlen,
                    "file %s: cannot read the block device's "
                    "size and sector sizes: %s",
                    path, strerror (e));
  }
  close (fd);
  info->size_bytes = bytes;
  info->dev_logical_bytes = (uint32_t) logical;
  info->dev_physical_bytes = physical;
  return 0;
}

int
lb_file_probe (const char *path, struct lb_file_info *info, char *err,
               size_t errlen)
{
  struct stat st;

  memset (info, 0, sizeof *info);
  if (stat (path, &st) == -1) {
    if (errno == ENOENT)
      return 0;
    return lb_fail (errno, err, errlen, "file %s: %s", path, strerror (errno));
  }
  info->exists = true;
  if (S_ISREG (st.st_mode)) {
    info->size_bytes = (uint64_t) st.st_size;
    return 0;
  }
  if (!S_ISBLK (st.st_mode))
    return lb_fail (EINVAL, err, errlen,
                    "file %s is not a regular file or a "
                    "block device",
                    path);
  info->is_blockdev = true;
  return probe_blockdev (path, info, err, errlen);
}

int
lb_file_check_geometry (const char *path, const struct lb_file_info *info,
                        const struct lb_geometry *g, char *err, size_t errlen)
{
  if (info->is_blockdev && g->logical_bytes < info->dev_logical_bytes)
    return lb_fail (
      EINVAL, err, errlen,
      "logical-blksize %" PRIu32 " is "
      "smaller than the logical sector of block device %s (%" PRIu32
      " bytes, physical %" PRIu32 "): use "
      "logical-blksize=%" PRIu32 " or larger",
      g->logical_bytes, path, info->dev_logical_bytes,
      info->dev_physical_bytes, info->dev_logical_bytes);
  return 0;
}

/* A new file is created (sparse, at its full size) before the real open,
 * so a refused O_DIRECT cannot leave a half-made file behind.
 */
static int
create_file (const char *path, uint64_t size_bytes, char *err, size_t errlen)
{
  int fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

  if (fd == -1)
    return lb_fail (errno, err, errlen, "file %s cannot be created: %s", path,
                    strerror (errno));
  if (ftruncate (fd, (off_t) size_bytes) == -1) {
    int e = errno;
    close (fd);
    unlink (path);
    return lb_fail (e, err, errlen,
                    "file %s cannot be made %" PRIu64 " bytes long: %s", path,
                    size_bytes, strerror (e));
  }
  close (fd);
  return 0;
}

/* Read-write opens of a block device are exclusive (O_EXCL): the kernel
 * refuses a device that is mounted or held by another exclusive opener.
 * Read-only ones are not, so that -r servers can share a device.
 */
static int
open_backing (const char *path, const struct lb_file_info *info, bool direct,
              bool read_only, char *err, size_t errlen)
{
  int flags = O_CLOEXEC | (direct ? O_DIRECT : 0);
  int fd;

  if (read_only)
    flags |= O_RDONLY;
  else
    flags |= O_RDWR | (info->is_blockdev ? O_EXCL : 0);
  fd = open (path, flags);
  if (fd != -1)
    return fd;
  if (errno == EROFS && !read_only)
    return lb_fail (EROFS, err, errlen,
                    "file=%s is on a read-only filesystem: serve it with "
                    "nbdkit -r",
                    path);
  if ((errno == EACCES || errno == EPERM) && !read_only)
    return lb_fail (errno, err, errlen,
                    "file=%s cannot be opened for writing (%s): serve it "
                    "with nbdkit -r",
                    path, strerror (errno));
  if (errno == EBUSY && info->is_blockdev)
    return lb_fail (EBUSY, err, errlen,
                    "file=%s: block device is in use (mounted, or opened "
                    "exclusively by another program): refusing to write to it",
                    path);
  if (errno == EINVAL && direct)
    return lb_fail (EINVAL, err, errlen,
                    "direct=on: the filesystem holding "
                    "file %s does not support O_DIRECT",
                    path);
  return lb_fail (errno, err, errlen, "file %s cannot be opened: %s", path,
                  strerror (errno));
}

/* An open file description lock on the whole file, held as long as fd's
 * description is open: exclusive for a read-write server, shared for a
 * read-only one, so a second server cannot write under a first one's
 * feet (or its write cache) nor read a file another server is writing.
 * OFD locks, not POSIX ones: a POSIX lock belongs to the process and
 * would vanish when any descriptor of the file in this process is closed
 * (the probe's, or one a library opens), and it would not conflict with
 * a second open in the same process.  An OFD lock is shared by a forked
 * child's copy of the descriptor, so it survives nbdkit daemonizing.
 */
static int
lock_backing (int fd, const char *path, bool read_only, char *err,
              size_t errlen)
{
  struct flock fl = {
    .l_type = read_only ? F_RDLCK : F_WRLCK,
    .l_whence = SEEK_SET,
    .l_start = 0,
    .l_len = 0, /* to the end, however far the file grows */
  };

  if (fcntl (fd, F_OFD_SETLK, &fl) == 0)
    return 0;
  if (errno == EAGAIN || errno == EACCES)
    return lb_fail (EBUSY, err, errlen,
                    "file=%s: in use by another server (locked); one "
                    "server may write a file, or any number may share it "
                    "read-only (nbdkit -r)",
                    path);
  return lb_fail (errno, err, errlen, "file=%s cannot be locked: %s", path,
                  strerror (errno));
}

/* The unit O_DIRECT needs for offsets and lengths, and for buffers. */
static void
direct_alignment (int fd, const struct lb_file_info *info,
                  uint32_t *offset_align, uint32_t *mem_align)
{
  struct stat st;

  *offset_align = info->is_blockdev ? info->dev_logical_bytes : 0;
  *mem_align = PAGE_ALIGN_BYTES;
#ifdef STATX_DIOALIGN
  struct statx stx;
  if (statx (fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
      (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align != 0) {
    *offset_align = stx.stx_dio_offset_align;
    if (stx.stx_dio_mem_align > *mem_align)
      *mem_align = stx.stx_dio_mem_align;
    return;
  }
#endif
  /* Older kernels: the filesystem block is always enough. */
  if (*offset_align == 0 && fstat (fd, &st) == 0)
    *offset_align = (uint32_t) st.st_blksize;
  if (*offset_align < 512)
    *offset_align = 512;
}

static int
setup_direct (struct filestore *fs, const char *path,
              const struct lb_file_info *info, char *err, size_t errlen)
{
  direct_alignment (fs->fd, info, &fs->dio_align_bytes, &fs->mem_align_bytes);
  if (!lb_is_power_of_2 (fs->dio_align_bytes))
    return lb_fail (EINVAL, err, errlen,
                    "direct=on: file %s has a direct "
                    "I/O unit of %" PRIu32 " bytes, not a power of two",
                    path, fs->dio_align_bytes);
  if (fs->dio_align_bytes > fs->g->physical_bytes)
    fs->claim_unit_bytes = fs->dio_align_bytes;
  if (fs->g->size_bytes % fs->dio_align_bytes != 0)
    return lb_fail (EINVAL, err, errlen,
                    "direct=on: size %" PRIu64 " of "
                    "file %s is not a multiple of its direct I/O unit %" PRIu32
                    " bytes",
                    fs->g->size_bytes, path, fs->dio_align_bytes);
  return 0;
}

static struct filestore *
filestore_alloc (const struct lb_geometry *g, int fd, bool is_blockdev,
                 bool direct)
{
  struct filestore *fs = calloc (1, sizeof *fs);

  if (fs == NULL)
    return NULL;
  if (posix_memalign (&fs->zeros, PAGE_ALIGN_BYTES, ZERO_CHUNK_BYTES) != 0) {
    free (fs);
    errno = ENOMEM;
    return NULL;
  }
  memset (fs->zeros, 0, ZERO_CHUNK_BYTES);
  fs->store.ops = &filestore_ops;
  fs->store.geom = g;
  fs->g = g;
  fs->fd = fd;
  fs->is_blockdev = is_blockdev;
  fs->direct = direct;
  fs->dio_align_bytes = 1;
  fs->mem_align_bytes = 1;
  fs->claim_unit_bytes = g->physical_bytes;
  atomic_init (&fs->can_punch, true);
  atomic_init (&fs->can_zero_range, true);
  atomic_init (&fs->can_dsync, true);
  atomic_init (&fs->peak_folios, 0);
  pthread_mutex_init (&fs->locks.mutex, NULL);
  pthread_cond_init (&fs->locks.changed, NULL);
  return fs;
}

struct lb_store *
lb_filestore_open (const struct lb_geometry *g, const char *path,
                   const struct lb_file_info *info, bool direct,
                   bool read_only, char *err, size_t errlen)
{
  bool created = !info->exists;
  struct filestore *fs;
  int fd, e;

  if (created && create_file (path, g->size_bytes, err, errlen) == -1)
    return NULL;
  fd = open_backing (path, info, direct, read_only, err, errlen);
  if (fd == -1)
    goto undo_create;
  if (lock_backing (fd, path, read_only, err, errlen) == -1) {
    e = errno;
    close (fd);
    errno = e;
    goto undo_create;
  }
  fs = filestore_alloc (g, fd, info->is_blockdev, direct);
  if (fs == NULL) {
    lb_fail (ENOMEM, err, errlen, "file %s: out of memory", path);
    close (fd);
    goto undo_create;
  }
  fs->store.read_only = read_only;
  if (direct && setup_direct (fs, path, info, err, errlen) == -1) {
    e = errno;
    file_destroy (&fs->store);
    errno = e;
    goto undo_create;
  }
  return &fs->store;

undo_create:
  e = errno;
  if (created)
    unlink (path);
  errno = e;
  return NULL;
}
