/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock tests: a deliberately broken nbdkit plugin.
 *
 * A RAM disk with 4096-byte blocks (minimum = preferred = 4096, maximum
 * 1M) that, by parameter, gets one thing wrong -- the bugs
 * largeblock-verify must catch and name:
 *
 *   mode=misdirect target=T dest=D   data written to the block at T lands
 *                                    in the block at D instead
 *   mode=tear target=T sectors=MASK  writes to the block at T drop the
 *                                    512-byte sectors set in MASK
 *   mode=stale freeze=PATH           while PATH exists, writes are
 *                                    acknowledged and lost
 *   mode=good                        no bug (the control)
 *
 * and, in any mode, misaligned=einval (the default: refuse misaligned
 * requests with EINVAL), misaligned=eio (refuse them with the wrong
 * errno) or misaligned=drop (serve misaligned reads, acknowledge
 * misaligned writes and store nothing).
 *
 * Test-only code.  One mutex guards the disk.
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#define BLOCK_BYTES 4096u
#define SECTOR_BYTES 512u

enum mode { MODE_GOOD, MODE_MISDIRECT, MODE_TEAR, MODE_STALE };

static uint64_t size_bytes, target_bytes, dest_bytes;
static const char *freeze_path;
static enum { MIS_EINVAL, MIS_EIO, MIS_DROP } misaligned_mode;
static unsigned sector_mask;
static enum mode mode = MODE_GOOD;
static uint8_t *disk;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int
broken_config (const char *key, const char *value)
{
  if (strcmp (key, "size") == 0)
    return (size_bytes = nbdkit_parse_size (value)) == (uint64_t) -1 ? -1 : 0;
  if (strcmp (key, "target") == 0)
    return nbdkit_parse_uint64_t (key, value, &target_bytes);
  if (strcmp (key, "dest") == 0)
    return nbdkit_parse_uint64_t (key, value, &dest_bytes);
  if (strcmp (key, "sectors") == 0)
    return nbdkit_parse_unsigned (key, value, &sector_mask);
  if (strcmp (key, "misaligned") == 0) {
    misaligned_mode = strcmp (value, "eio") == 0 ? MIS_EIO
      : strcmp (value, "drop") == 0              ? MIS_DROP
                                                 : MIS_EINVAL;
    return 0;
  }
  if (strcmp (key, "freeze") == 0) {
    freeze_path = value;
    return 0;
  }
  if (strcmp (key, "mode") == 0) {
    static const char *const names[] = { "good", "misdirect", "tear",
                                         "stale" };
    for (int m = 0; m < 4; m++)
      if (strcmp (value, names[m]) == 0) {
        mode = (enum mode) m;
        return 0;
      }
  }
  nbdkit_error ("broken: unknown parameter %s=%s", key, value);
  return -1;
}

static int
broken_get_ready (void)
{
  if (size_bytes == 0 || size_bytes % BLOCK_BYTES ||
      target_bytes % BLOCK_BYTES || dest_bytes % BLOCK_BYTES ||
      target_bytes >= size_bytes || dest_bytes >= size_bytes) {
    nbdkit_error ("broken: size, target and dest must be multiples of 4096 "
                  "inside the disk");
    return -1;
  }
  disk = calloc (1, size_bytes);
  if (!disk || (mode == MODE_STALE && !freeze_path)) {
    nbdkit_error ("broken: out of memory, or mode=stale without freeze=");
    return -1;
  }
  return 0;
}

static void
broken_unload (void)
{
  free (disk);
}

static void *
broken_open (int readonly)
{
  return NBDKIT_HANDLE_NOT_NEEDED;
}

static int64_t
broken_get_size (void *handle)
{
  return (int64_t) size_bytes;
}

static int
broken_block_size (void *handle, uint32_t *minimum, uint32_t *preferred,
                   uint32_t *maximum)
{
  *minimum = *preferred = BLOCK_BYTES;
  *maximum = 1u << 20;
  return 0;
}

/* Misaligned requests get EINVAL (like a real 4k-sector device) or, by
 * parameter, EIO; with misaligned=drop they pass (*served says so).
 */
static bool
misaligned (uint32_t count, uint64_t offset, bool *served)
{
  *served = false;
  if (offset % BLOCK_BYTES == 0 && count % BLOCK_BYTES == 0)
    return false;
  *served = misaligned_mode == MIS_DROP;
  nbdkit_set_error (misaligned_mode == MIS_EIO ? EIO : EINVAL);
  return !*served;
}

static int
broken_pread (void *handle, void *buf, uint32_t count, uint64_t offset,
              uint32_t flags)
{
  bool served;

  if (misaligned (count, offset, &served))
    return -1;
  pthread_mutex_lock (&lock);
  memcpy (buf, disk + offset, count);
  pthread_mutex_unlock (&lock);
  return 0;
}

/* Store one whole block the broken way. */
static void
store_block (const uint8_t *src, uint64_t off)
{
  if (mode == MODE_STALE && access (freeze_path, F_OK) == 0)
    return;
  if (mode == MODE_MISDIRECT && off == target_bytes)
    off = dest_bytes;
  for (unsigned s = 0; s < BLOCK_BYTES / SECTOR_BYTES; s++)
    if (!(mode == MODE_TEAR && off == target_bytes && (sector_mask >> s & 1)))
      memcpy (disk + off + s * SECTOR_BYTES, src + s * SECTOR_BYTES,
              SECTOR_BYTES);
}

static int
broken_pwrite (void *handle, const void *buf, uint32_t count, uint64_t offset,
               uint32_t flags)
{
  bool dropped;

  if (misaligned (count, offset, &dropped))
    return -1;
  if (dropped)
    return 0;
  pthread_mutex_lock (&lock);
  for (uint32_t done = 0; done < count; done += BLOCK_BYTES)
    store_block ((const uint8_t *) buf + done, offset + done);
  pthread_mutex_unlock (&lock);
  return 0;
}

static struct nbdkit_plugin plugin = {
  .name = "broken",
  .config = broken_config,
  .get_ready = broken_get_ready,
  .unload = broken_unload,
  .open = broken_open,
  .get_size = broken_get_size,
  .block_size = broken_block_size,
  .pread = broken_pread,
  .pwrite = broken_pwrite,
};

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL
NBDKIT_REGISTER_PLUGIN (plugin)
