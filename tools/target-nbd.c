/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-verify: the NBD target -- one libnbd connection.
 *
 * Each operation is one synchronous libnbd call; errno is the server's
 * error (EIO when libnbd has none).  The integrity phase uses the handle
 * directly (target_nbd_handle) for its asynchronous requests.  A handle is
 * used by one thread at a time.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target.h"

struct nbd_target {
  struct target t; /* first: the generic part */
  struct nbd_handle *h;
};

static struct nbd_handle *
handle_of (struct target *t)
{
  return ((struct nbd_target *) t)->h;
}

/* -1 with errno = the server's error when r is -1. */
static int
result_of (int r)
{
  if (r == -1) {
    int err_no = nbd_get_errno ();
    errno = err_no ? err_no : EIO;
  }
  return r == -1 ? -1 : 0;
}

static uint32_t
block_size_of (struct nbd_handle *h, int which)
{
  int64_t v = nbd_get_block_size (h, which);
  return v > 0 ? (uint32_t) v : 0;
}

static void
nbd_target_describe (struct target *t, struct target_desc *d)
{
  struct nbd_handle *h = handle_of (t);

  *d = (struct target_desc) {
    .size_bytes = (uint64_t) nbd_get_size (h),
    .min_bytes = block_size_of (h, LIBNBD_SIZE_MINIMUM),
    .preferred_bytes = block_size_of (h, LIBNBD_SIZE_PREFERRED),
    .max_bytes = block_size_of (h, LIBNBD_SIZE_MAXIMUM),
    .max_enforced = true,
    .read_only = nbd_is_read_only (h) == 1,
    .can_trim = nbd_can_trim (h) == 1,
    .can_zero = nbd_can_zero (h) == 1,
    .can_flush = nbd_can_flush (h) == 1,
    .multi_conn = nbd_can_multi_conn (h) == 1,
  };
}

static int
nbd_target_pread (struct target *t, void *buf, uint64_t count, uint64_t offset)
{
  return result_of (nbd_pread (handle_of (t), buf, count, offset, 0));
}

static int
nbd_target_pwrite (struct target *t, const void *buf, uint64_t count,
                   uint64_t offset)
{
  return result_of (nbd_pwrite (handle_of (t), buf, count, offset, 0));
}

static int
nbd_target_trim (struct target *t, uint64_t count, uint64_t offset)
{
  return result_of (nbd_trim (handle_of (t), count, offset, 0));
}

static int
nbd_target_zero (struct target *t, uint64_t count, uint64_t offset)
{
  return result_of (nbd_zero (handle_of (t), count, offset, 0));
}

static int
nbd_target_flush (struct target *t)
{
  return result_of (nbd_flush (handle_of (t), 0));
}

static bool
nbd_target_is_dead (struct target *t)
{
  return nbd_aio_is_dead (handle_of (t)) || nbd_aio_is_closed (handle_of (t));
}

static const char *
nbd_target_last_error (struct target *t)
{
  (void) t;
  return nbd_get_error ();
}

static void
nbd_target_close (struct target *t)
{
  nbd_close (handle_of (t));
  free (t);
}

static const struct target_ops nbd_ops = {
  .describe = nbd_target_describe,
  .pread = nbd_target_pread,
  .pwrite = nbd_target_pwrite,
  .trim = nbd_target_trim,
  .zero = nbd_target_zero,
  .flush = nbd_target_flush,
  .is_dead = nbd_target_is_dead,
  .last_error = nbd_target_last_error,
  .close = nbd_target_close,
};

/* libnbd names a server that hangs up in the middle of the handshake by
 * its state machine ("external event 0 is invalid in state
 * CONNECT.START") or by the failed send or recv; say it in words.
 */
static const char *
hung_up_in_handshake (int err, const char *msg)
{
  if (err == EPIPE || err == ECONNRESET ||
      (msg &&
       (strstr (msg, "is invalid in state") || strstr (msg, "end of file"))))
    return "the server closed the connection during the NBD handshake";
  return NULL;
}

struct target *
target_nbd_try_open (const char *uri, bool strict, char *err, size_t errlen)
{
  struct nbd_target *nt = calloc (1, sizeof *nt);
  struct nbd_handle *h = nbd_create ();

  if (!nt || !h || (!strict && nbd_set_strict_mode (h, 0) == -1) ||
      nbd_connect_uri (h, uri) == -1) {
    const char *hung_up = hung_up_in_handshake (nbd_get_errno (),
                                                nbd_get_error ());

    if (hung_up)
      snprintf (err, errlen, "cannot connect to %s: %s (%s)", uri, hung_up,
                nbd_get_error ());
    else
      snprintf (err, errlen, "cannot connect to %s: %s", uri,
                nt ? nbd_get_error () : "out of memory");
    if (h)
      nbd_close (h);
    free (nt);
    return NULL;
  }
  nt->t.ops = &nbd_ops;
  nt->h = h;
  return &nt->t;
}

struct target *
target_nbd_open (const char *uri, bool strict)
{
  char err[512];
  struct target *t = target_nbd_try_open (uri, strict, err, sizeof err);

  if (!t)
    fprintf (stderr, "largeblock-verify: %s\n", err);
  return t;
}

struct nbd_handle *
target_nbd_handle (struct target *t)
{
  return t->ops == &nbd_ops ? handle_of (t) : NULL;
}

bool
target_is_path (const char *name)
{
  return name[0] == '/' || strncmp (name, "./", 2) == 0 ||
    strncmp (name, "../", 3) == 0;
}

struct target *
target_open (const char *name, int path_fd, bool strict, bool write)
{
  return target_is_path (name) ? target_fd_open (path_fd, name, write)
                               : target_nbd_open (name, strict);
}
