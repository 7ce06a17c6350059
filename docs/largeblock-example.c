/* SPDX-License-Identifier: BSD-3-Clause */
/* Write 16 stamped 16k blocks to FILE with O_DIRECT, read them back and
 * classify each.  cc ex.c $(pkg-config --cflags --libs largeblock)
 */
#define _GNU_SOURCE /* O_DIRECT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <largeblock/largeblock.h>

int
main (int argc, char **argv)
{
  struct lb_geometry g;
  struct lb_dio_info info;
  struct lb_pattern_key key = { .seed = 42, .generation = 1 };
  struct lb_pattern_result r;
  const uint32_t block = 16384, nr_blocks = 16;
  char err[256], why[256];
  char *buf, *scratch;
  uint64_t lba = 0, i;
  int fd, bad = 0;

  if (argc != 2) {
    fprintf (stderr, "usage: %s FILE\n", argv[0]);
    return 2;
  }
  fd = open (argv[1], O_RDWR | O_CREAT | O_DIRECT, 0600);
  if (fd == -1 && errno == EINVAL) { /* this filesystem has no O_DIRECT */
    fprintf (stderr, "%s: no O_DIRECT here, using the page cache\n", argv[1]);
    fd = open (argv[1], O_RDWR | O_CREAT, 0600);
  }
  if (fd == -1 || lb_dio_info_get (fd, &info, err, sizeof err) == -1 ||
      lb_geometry_make (&g, (uint64_t) block * nr_blocks, block, block, err,
                        sizeof err) == -1) {
    fprintf (stderr, "%s: %s\n", argv[1], fd == -1 ? "cannot open" : err);
    return 1;
  }
  if (info.offset_align_bytes > block) {
    fprintf (stderr, "direct I/O alignment %u exceeds %u\n",
             info.offset_align_bytes, block);
    return 1;
  }
  buf = lb_aligned_alloc (info.mem_align_bytes, g.size_bytes);
  scratch = lb_aligned_alloc (info.mem_align_bytes, block);
  if (buf == NULL || scratch == NULL)
    return 1;

  key.block_bytes = block;
  lb_pattern_fill_range (&key, buf, g.size_bytes);
  if (lb_pwrite_full (fd, &info, buf, g.size_bytes, 0, err, sizeof err) == -1 ||
      lb_pread_full (fd, &info, buf, g.size_bytes, 0, err, sizeof err) == -1) {
    fprintf (stderr, "%s\n", err);
    return 1;
  }
  for (i = 0; i < nr_blocks; i++) {
    key.offset_bytes = i * block;
    if (lb_pattern_check (&key, buf + i * block, scratch, &r) != LB_PATTERN_GOOD) {
      lb_convert (&g, key.offset_bytes, LB_UNIT_BYTE, LB_UNIT_LOGICAL, &lba);
      printf ("block %llu: %s\n", (unsigned long long) lba,
              lb_pattern_describe (&key, &r, why, sizeof why));
      bad++;
    }
  }
  printf ("%u blocks of %u bytes: %d bad\n", nr_blocks, block, bad);
  free (buf);
  free (scratch);
  close (fd);
  return bad ? 1 : 0;
}
