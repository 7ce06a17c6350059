/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-run and largeblock-vm: kernel versions (see
 * kernel-version.h).
 */
#include <config.h>

#include <stdio.h>
#include <sys/utsname.h>

#include "kernel-version.h"

bool
kernel_release_older_than (const char *release, int major, int minor)
{
  int release_major, release_minor;

  if (sscanf (release, "%d.%d", &release_major, &release_minor) != 2)
    return false;
  return release_major < major ||
    (release_major == major && release_minor < minor);
}

bool
kernel_running_older_than (int major, int minor, char *release, size_t len)
{
  struct utsname u;

  if (uname (&u) == -1) {
    if (release && len)
      snprintf (release, len, "?");
    return false;
  }
  if (release && len)
    snprintf (release, len, "%s", u.release);
  return kernel_release_older_than (u.release, major, minor);
}
