/* largeblock-run: what the kernel says exists -- sysfs block device
 * attributes, loop devices by backing file, and the mount table.
 *
 * Teardown and --cleanup ask these instead of trusting their own
 * records, because a step interrupted by a signal may or may not have
 * finished.  Pure reads (and one sysfs write); no state; no locking.
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
  dev_t dev; /* st_dev of the mounted filesystem */
};

/* Call fn for each line of /proc/self/mountinfo, newest last.  Stops at
 * and returns fn's first non-zero result; else 0 (-1 if unreadable).
 */
int kstate_for_each_mount (int (*fn) (const struct kstate_mount *m, void *arg),
                           void *arg);

/* Is dir a mount point now? */
bool kstate_is_mount_point (const char *dir);

/* Is dir a mount point of block device dev (a path) now? */
bool kstate_is_mounted_from (const char *dir, const char *dev);

#endif /* LARGEBLOCK_RUN_KSTATE_H */
