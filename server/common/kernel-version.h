/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run and largeblock-vm: is a kernel too old for something?
 *
 * Compares a kernel release string ("6.12.118+deb12-cloud-amd64",
 * uname -r) with a major.minor version.  A release that does not start
 * with two numbers is never called older: a message that blames the
 * kernel must be sure.  Pure but for uname; no state.
 */
#ifndef LARGEBLOCK_COMMON_KERNEL_VERSION_H
#define LARGEBLOCK_COMMON_KERNEL_VERSION_H

#include <stdbool.h>
#include <stddef.h>

/* Is release older than major.minor?  false if it cannot be parsed. */
bool kernel_release_older_than (const char *release, int major, int minor);

/* Is the running kernel older than major.minor?  Its release goes into
 * release (if not NULL), "?" if uname fails.
 */
bool kernel_running_older_than (int major, int minor, char *release,
                                size_t len);

#endif /* LARGEBLOCK_COMMON_KERNEL_VERSION_H */
