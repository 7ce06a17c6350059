/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-verify: the target -- an NBD export, a block device or a
 * regular file behind one small set of synchronous operations.
 *
 * A target is one connection (NBD) or one descriptor (O_DIRECT on a
 * device or a file): a dup of the path's claim (target_claim_path), taken
 * once by main.  The probes and the integrity phase call only these
 * operations, so they never branch on the backend, except where NBD's
 * asynchronous API is used for --depth (target_nbd_handle).  One target is
 * used by one thread at a time; the integrity phase opens one per
 * connection.  Operations return 0, or -1 with errno set (the server's
 * errno for NBD, the kernel's for a descriptor).
 */
#ifndef LARGEBLOCK_VERIFY_TARGET_H
#define LARGEBLOCK_VERIFY_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libnbd.h>

/* What the target says about itself (NBD: as advertised, 0 when not). */
struct target_desc {
  uint64_t size_bytes;
  uint32_t min_bytes, preferred_bytes, max_bytes;
  bool max_enforced; /* requests above max_bytes must be refused (NBD);
                      * the kernel splits them for a descriptor */
  bool read_only, can_trim, can_zero, can_flush, multi_conn;
  /* A descriptor's O_DIRECT alignment and where it was learnt; 0 and
   * NULL for NBD. */
  uint32_t dio_offset_align_bytes, dio_mem_align_bytes;
  const char *dio_source;
};

struct target;

struct target_ops {
  void (*describe) (struct target *t, struct target_desc *d);
  int (*pread) (struct target *t, void *buf, uint64_t count, uint64_t offset);
  int (*pwrite) (struct target *t, const void *buf, uint64_t count,
                 uint64_t offset);
  int (*trim) (struct target *t, uint64_t count, uint64_t offset);
  int (*zero) (struct target *t, uint64_t count, uint64_t offset);
  int (*flush) (struct target *t);
  /* The connection was dropped by the other side (never for an fd). */
  bool (*is_dead) (struct target *t);
  /* The last failure in words, for a line of the report. */
  const char *(*last_error) (struct target *t);
  void (*close) (struct target *t);
};

struct target {
  const struct target_ops *ops;
};

/* Whether name is a path (a block device or a file) rather than an NBD
 * URI: it starts with "/", "./" or "../".
 */
bool target_is_path (const char *name);

/* What target_claim_path did. */
enum target_claim_status {
  TARGET_CLAIM_OK,
  TARGET_CLAIM_REFUSED, /* in use, a signature, or a link to a file */
  TARGET_CLAIM_FAILED,  /* could not open or probe it */
};

/* Open path once for the whole run (target-claim.c): read-only, or with
 * write read-write, a block device exclusively (O_EXCL), never through a
 * symbolic link to anything but a block device, and, unless force, only
 * when libblkid finds no filesystem or partition-table signature on it.
 * On TARGET_CLAIM_OK *fd is the descriptor, O_DIRECT set; otherwise one
 * line has been printed.  Call before any thread starts.
 */
enum target_claim_status target_claim_path (const char *path, bool write,
                                            bool force, int *fd);

/* Open name: a path with target_fd_open on path_fd (its claim), else an
 * NBD URI with target_nbd_open.  Returns NULL after printing one line on
 * failure.
 */
struct target *target_open (const char *name, int path_fd, bool strict,
                            bool write);

/* NBD: libnbd's client-side checks are off when strict is false. */
struct target *target_nbd_open (const char *uri, bool strict);

/* As target_nbd_open, but a failure fills err with one line instead of
 * printing it (for callers that retry).
 */
struct target *target_nbd_try_open (const char *uri, bool strict, char *err,
                                    size_t errlen);

/* Path: a dup of claim_fd, the descriptor target_claim_path opened
 * (read-write only when write); path names it in messages.
 */
struct target *target_fd_open (int claim_fd, const char *path, bool write);

/* The libnbd handle of an NBD target, NULL for any other. */
struct nbd_handle *target_nbd_handle (struct target *t);

#endif /* LARGEBLOCK_VERIFY_TARGET_H */
