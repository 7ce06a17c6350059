/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-verify: the claim on a path -- the one open file of a block
 * device or a regular file, and the checks that keep --write to what the
 * user gave it.
 *
 * main opens the path here once, before any thread starts, and every
 * descriptor target (target-fd.c) is a dup of that descriptor, so the
 * probes and the integrity phase all work on the object that was
 * checked, whatever happens to the path meanwhile.  One file description
 * matters for a device: the kernel's exclusive claim (O_EXCL) belongs to
 * the open file, and a second O_EXCL open, even by this process, gets
 * EBUSY.  The claim lasts until the last dup is closed.
 *
 * With write the path must pass, in order:
 *  - a block device is opened O_EXCL: the kernel refuses one that is
 *    mounted, or held by a RAID, device-mapper or another exclusive
 *    opener (EBUSY), and holds it against them for the whole run;
 *  - a symbolic link is followed only to a block device
 *    (/dev/disk/by-id/...): a link to a regular file could have been
 *    planted to make root overwrite a file it was never given;
 *  - unless force, libblkid finds no filesystem, RAID, encryption or
 *    partition-table signature anywhere on it.
 * Read-only (--verify-only) opens take none of these steps: reading
 * destroys nothing, and a re-check of a device another program holds is
 * allowed.  Nothing is ever created or truncated.  libblkid reads
 * through the page cache at offsets of its choosing, so a regular file
 * gets O_DIRECT (fcntl) only after the probe.  A block device gets it
 * before: a large-sector device attached a moment ago can still have
 * 4 KiB page-cache blocks, and the reads it then sends are below its
 * logical block (the plugin refuses them: EIO).  Its head and tail,
 * where signatures live, are copied with aligned direct reads into a
 * sparse memory file of the same size, and libblkid probes that.
 */
#include <config.h>

#include <blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/fs.h>

#include "target.h"

#define PREFIX "largeblock-verify: "

/* How much of a device's head and of its tail the probe copies: more
 * than any signature libblkid looks for needs (btrfs at 64 KiB, ZFS
 * labels at 256 KiB from either end, md 0.90 64 KiB from the end, the
 * backup GPT in the last sectors).  A multiple of every logical block.
 */
#define PROBE_SPAN (4u << 20)

/* Open path without following a final symbolic link to anything but a
 * block device.  Returns the descriptor, or -1 with errno set; ELOOP:
 * the link leads to something else (or loops).
 */
static int
open_no_link_to_file (const char *path, int flags)
{
  struct stat st;
  int fd = open (path, flags | O_NOFOLLOW);

  if (fd != -1 || errno != ELOOP)
    return fd;
  /* A link (or a loop): follow it, and keep only a block device. */
  fd = open (path, flags);
  if (fd == -1)
    return -1;
  if (fstat (fd, &st) == 0 && S_ISBLK (st.st_mode))
    return fd;
  close (fd);
  errno = ELOOP;
  return -1;
}

/* The path opened as the run needs it, or -1 after printing one line. */
static int
open_path (const char *path, bool write, enum target_claim_status *status)
{
  /* O_NONBLOCK: a FIFO must not hang the open; it is refused below.
   * O_EXCL without O_CREAT claims a block device and means nothing for
   * any other file.
   */
  int flags = O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  int fd = write ? open_no_link_to_file (path, flags | O_RDWR | O_EXCL)
                 : open (path, flags | O_RDONLY);

  if (fd != -1)
    return fd;
  *status = TARGET_CLAIM_REFUSED;
  if (write && errno == EBUSY)
    fprintf (stderr,
             PREFIX "%s is in use (mounted or held by another program): "
                    "refusing to write it\n",
             path);
  else if (write && errno == ELOOP)
    fprintf (stderr,
             PREFIX "%s is a symbolic link to something other than a "
                    "block device: refusing to write through it (name the "
                    "file itself)\n",
             path);
  else {
    *status = TARGET_CLAIM_FAILED;
    fprintf (stderr, PREFIX "cannot open %s: %s\n", path, strerror (errno));
  }
  return -1;
}

/* What libblkid's USAGE value calls the thing that was found, with its
 * article.
 */
static const char *
usage_noun (const char *usage)
{
  if (!usage || strcmp (usage, "filesystem") == 0)
    return "a filesystem";
  if (strcmp (usage, "raid") == 0)
    return "a RAID member";
  if (strcmp (usage, "crypto") == 0)
    return "an encrypted volume";
  return "a signature";
}

/* Print the refusal for what probe pr found. */
static void
print_signature (blkid_probe pr, const char *path)
{
  const char *type = NULL, *usage = NULL, *pttype = NULL;

  blkid_probe_lookup_value (pr, "TYPE", &type, NULL);
  blkid_probe_lookup_value (pr, "USAGE", &usage, NULL);
  blkid_probe_lookup_value (pr, "PTTYPE", &pttype, NULL);
  if (type)
    fprintf (stderr, PREFIX "%s holds %s (%s)", path, usage_noun (usage),
             type);
  else
    fprintf (stderr, PREFIX "%s holds a partition table (%s)", path,
             pttype ? pttype : "of an unknown type");
  fprintf (stderr, "; refusing to overwrite it (use --force)\n");
}

/* Copy len bytes at off of dev (O_DIRECT; off and len multiples of its
 * logical block) into image at the same offset.  0, or -1 with errno.
 */
static int
copy_span (int dev, int image, void *buf, uint64_t off, uint64_t len)
{
  while (len > 0) {
    size_t n = len < PROBE_SPAN ? (size_t) len : PROBE_SPAN;
    ssize_t r = pread (dev, buf, n, (off_t) off);

    if (r <= 0) {
      if (r == 0)
        errno = EIO;
      return -1;
    }
    if (pwrite (image, buf, (size_t) r, (off_t) off) != r)
      return -1;
    off += (uint64_t) r;
    len -= (uint64_t) r;
  }
  return 0;
}

/* A sparse memory file as large as block device dev (already O_DIRECT)
 * holding its head and tail.  The descriptor, or -1 with errno set.
 */
static int
probe_image_of_device (int dev)
{
  uint64_t size, head, tail_off;
  void *buf = NULL;
  int image, err;

  if (ioctl (dev, BLKGETSIZE64, &size) == -1)
    return -1;
  image = memfd_create ("largeblock-verify-probe", MFD_CLOEXEC);
  if (image == -1)
    return -1;
  head = size < PROBE_SPAN ? size : PROBE_SPAN;
  tail_off = size - head > head ? size - head : head;
  if (ftruncate (image, (off_t) size) == -1 ||
      (errno = posix_memalign (&buf, 65536, PROBE_SPAN)) != 0 ||
      copy_span (dev, image, buf, 0, head) == -1 ||
      copy_span (dev, image, buf, tail_off, size - tail_off) == -1) {
    err = errno;
    free (buf);
    close (image);
    errno = err;
    return -1;
  }
  free (buf);
  return image;
}

/* Refuse fd when libblkid finds a signature on it.  Returns
 * TARGET_CLAIM_OK, or another status after printing one line.
 */
static enum target_claim_status
check_no_signature (int fd, const char *path)
{
  enum target_claim_status status = TARGET_CLAIM_FAILED;
  blkid_probe pr = blkid_new_probe ();
  int r;

  if (!pr || blkid_probe_set_device (pr, fd, 0, 0) == -1) {
    fprintf (stderr, PREFIX "cannot look for signatures on %s: %s\n", path,
             pr ? "libblkid cannot probe it" : "out of memory");
    goto out;
  }
  blkid_probe_enable_superblocks (pr, 1);
  blkid_probe_set_superblocks_flags (pr,
                                     BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE);
  blkid_probe_enable_partitions (pr, 1);
  errno = 0;
  r = blkid_do_safeprobe (pr);
  if (r == 1)
    status = TARGET_CLAIM_OK;
  else if (r == 0) {
    print_signature (pr, path);
    status = TARGET_CLAIM_REFUSED;
  }
  else if (r == -2) {
    fprintf (stderr,
             PREFIX "%s holds more than one filesystem or partition-table "
                    "signature; refusing to overwrite it (use --force)\n",
             path);
    status = TARGET_CLAIM_REFUSED;
  }
  else
    fprintf (stderr, PREFIX "cannot look for signatures on %s: %s\n", path,
             errno ? strerror (errno) : "libblkid failed");
out:
  if (pr)
    blkid_free_probe (pr);
  return status;
}

static int
set_direct (int fd, const char *path)
{
  if (fcntl (fd, F_SETFL, O_DIRECT) == -1) {
    fprintf (stderr, PREFIX "cannot open %s with O_DIRECT: %s\n", path,
             strerror (errno));
    return -1;
  }
  return 0;
}

/* check_no_signature on a regular file itself, on a device's image. */
static enum target_claim_status
check_device_or_file (int fd, bool is_device, const char *path)
{
  enum target_claim_status status;
  int image = is_device ? probe_image_of_device (fd) : fd;

  if (image == -1) {
    fprintf (stderr, PREFIX "cannot look for signatures on %s: %s\n", path,
             strerror (errno));
    return TARGET_CLAIM_FAILED;
  }
  status = check_no_signature (image, path);
  if (is_device)
    close (image);
  return status;
}

/* From the opened file to the run's descriptor: a device or a regular
 * file, free of signatures unless force, and O_DIRECT.
 */
static enum target_claim_status
check_and_set_direct (int fd, const char *path, bool write, bool force)
{
  enum target_claim_status status;
  struct stat st;

  if (fstat (fd, &st) == -1) {
    fprintf (stderr, PREFIX "cannot open %s: %s\n", path, strerror (errno));
    return TARGET_CLAIM_FAILED;
  }
  if (!S_ISBLK (st.st_mode) && !S_ISREG (st.st_mode)) {
    fprintf (stderr,
             PREFIX "cannot open %s: not a block device or a "
                    "regular file\n",
             path);
    return TARGET_CLAIM_FAILED;
  }
  if (S_ISBLK (st.st_mode) && set_direct (fd, path) == -1)
    return TARGET_CLAIM_FAILED;
  if (write && !force) {
    status = check_device_or_file (fd, S_ISBLK (st.st_mode), path);
    if (status != TARGET_CLAIM_OK)
      return status;
  }
  if (!S_ISBLK (st.st_mode) && set_direct (fd, path) == -1)
    return TARGET_CLAIM_FAILED;
  return TARGET_CLAIM_OK;
}

enum target_claim_status
target_claim_path (const char *path, bool write, bool force, int *fd_out)
{
  enum target_claim_status status = TARGET_CLAIM_OK;
  int fd = open_path (path, write, &status);

  if (fd == -1)
    return status;
  status = check_and_set_direct (fd, path, write, force);
  if (status != TARGET_CLAIM_OK) {
    close (fd);
    return status;
  }
  *fd_out = fd;
  return TARGET_CLAIM_OK;
}
