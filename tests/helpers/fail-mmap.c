/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock tests: an LD_PRELOAD shim that makes anonymous mmap fail.
 *
 * While the file named by $LB_FAIL_MMAP_FLAG exists, every anonymous
 * mapping of at least $LB_FAIL_MMAP_MIN_BYTES (default 4 MiB) fails with
 * ENOMEM, as it would when the host is out of memory.  Smaller mappings
 * (thread stacks, malloc arenas, nbdkit's own buffers) still work, so the
 * folio allocator is the one that sees the failure.  Test-only: never
 * installed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

void *mmap (void *addr, size_t length, int prot, int flags, int fd,
            off_t offset);

static int
should_fail (size_t length, int flags)
{
  const char *flag = getenv ("LB_FAIL_MMAP_FLAG");
  const char *min = getenv ("LB_FAIL_MMAP_MIN_BYTES");
  size_t min_bytes = min ? strtoull (min, NULL, 0) : 4u << 20;

  return flag && (flags & MAP_ANONYMOUS) && length >= min_bytes &&
    access (flag, F_OK) == 0;
}

void *
mmap (void *addr, size_t length, int prot, int flags, int fd, off_t offset)
{
  static void *(*real_mmap) (void *, size_t, int, int, int, off_t);

  if (should_fail (length, flags)) {
    errno = ENOMEM;
    return MAP_FAILED;
  }
  if (real_mmap == NULL)
    real_mmap = (void *(*) (void *, size_t, int, int, int,
                            off_t)) dlsym (RTLD_NEXT, "mmap");
  return real_mmap (addr, length, prot, flags, fd, offset);
}
