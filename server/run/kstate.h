/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run: what the kernel says exists -- sysfs block device
 * attributes, loop devices by backing file, the mount table, who else
 * uses a block device, and a process's identity (start time,
 * executable) -- and the one unmount loop that waits out a busy mount.
 *
 * Teardown and --cleanup ask these instead of trusting their own
 * records, because a step interrupted by a signal may or may not have
 * finished.  Reads (and one sysfs write, an exclusive open closed at
 * once, and the unmount); no state; no locking.
 */
#ifndef LARGEBLOCK_RUN_KSTATE_H
#define LARGEBLOCK_RUN_KSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Path of ATTR under /sys/block/NAME, NAME being dev's last component. */
void kstate_block_attr_path (char *path, size_t len, const char *dev,
                             const char *attr);

/* Read the number in dev's sysfs ATTR.  0, or -1 with errno set
 * (ENOENT: no such attribute).
 */
int kstate_read_block_attr (const char *dev, const char *attr,
                            unsigned long *val);

/* Write val to dev's sysfs ATTR.  0, or -1 with errno set. */
int kstate_write_block_attr (const char *dev, const char *attr,
                             unsigned long val);

/* /sys/block/nbdN/pid exists while nbdN is connected and holds the pid
 * of the process that connected it.  Returns that pid, -1 if it is
 * connected but the pid cannot be read, 0 if it is not connected.
 */
long kstate_nbd_owner (const char *dev);

/* Call fn (dev, arg) for each loop device whose backing file is
 * `backing' exactly or, if under_dir, any file under the directory
 * `backing'.  Stops at and returns fn's first non-zero result; else 0.
 */
int kstate_for_each_loop (const char *backing, bool under_dir,
                          int (*fn) (const char *dev, void *arg), void *arg);

struct kstate_mount {
  const char *dir; /* mount point, unescaped */
  const char *fstype;
  const char *source; /* what was mounted: a device path, say */
  dev_t dev;          /* st_dev of the mounted filesystem */
};

/* Call fn for each line of /proc/self/mountinfo, newest last.  Stops at
 * and returns fn's first non-zero result; else 0 (-1 if unreadable).
 */
int kstate_for_each_mount (int (*fn) (const struct kstate_mount *m, void *arg),
                           void *arg);

/* Is dir a mount point now? */
bool kstate_is_mount_point (const char *dir);

/* One try at unmounting dir: 0 once it is unmounted, else -1 with errno
 * set (EBUSY: worth another try).
 */
typedef int kstate_unmount_fn (const char *dir, void *arg);

/* Unmount dir with try_once (dir, arg) -- NULL: umount2 (dir,
 * UMOUNT_NOFOLLOW) -- trying again every 200 ms while it fails with
 * EBUSY, 25 times at most (5 s): a loop device detached a moment ago
 * lets go of its backing file only after the detach returned, so a
 * mount under it stays busy for a while.  0, or -1 with the last try's
 * errno (EBUSY if it stayed busy).  Sleeps; a caught signal does not
 * shorten it (teardown runs to the end).
 */
int kstate_unmount_retrying (const char *dir, kstate_unmount_fn *try_once,
                             void *arg);

/* Is dir a mount point of block device dev (a path) now? */
bool kstate_is_mounted_from (const char *dir, const char *dev);

/* Is block device dev (a path) in use by someone: mounted (by its
 * device number or its mount source), held by another block device
 * (/sys/block/NAME/holders) or opened exclusively for more than a
 * second?  If so, fills what[len] with "mounted on DIR", "held by
 * /dev/dm-0" or why, and returns true.  Reads, and exclusive opens
 * closed at once.
 */
bool kstate_device_user (const char *dev, char *what, size_t len);

/* Wait, up to timeout_ms, until nothing holds block device dev open
 * exclusively (a filesystem that our unmount left alive in another mount
 * namespace's copy shuts down there a little later).  0 once dev can be
 * opened O_EXCL (or cannot be opened for another reason: the caller's
 * next step reports that), -1 with errno = EBUSY if it is still held.
 */
int kstate_wait_device_released (const char *dev, unsigned timeout_ms);

/* The start time of process pid (field 22 of /proc/PID/stat, in clock
 * ticks since boot); 0 if there is no such process.  With the pid it
 * names one process for the life of the system: a reused pid starts
 * later.
 */
unsigned long long kstate_process_start_time (long pid);

/* The executable of process pid (/proc/PID/exe) in exe[len]; -1 with
 * errno set if it cannot be read (no such process, a kernel thread).
 */
int kstate_process_exe (long pid, char *exe, size_t len);

#endif /* LARGEBLOCK_RUN_KSTATE_H */
