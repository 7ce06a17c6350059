/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: print a crash log (crashlog.h), one line per record, read
 * with the library's reader -- for tests/test-plugin-crash-log.py.
 *
 *   crashlog-dump LOG
 *
 * First line: "disk SIZE BLKSIZE LOGICAL limit LIMIT"; then per record
 * "SEQ EPOCH TYPE FLAGS OFFSET LENGTH DATA" where TYPE is write, trim,
 * zero, flush, writeback or cut, FLAGS a number, and DATA a write's
 * FNV-1a 64-bit hash in hex (else "-").  Exit status 0, or 1 with the
 * reader's message on stderr for a damaged log.
 */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "crashlog.h"

static const char *const type_names[] = {
  [LB_CRASHLOG_WRITE] = "write",         [LB_CRASHLOG_TRIM] = "trim",
  [LB_CRASHLOG_ZERO] = "zero",           [LB_CRASHLOG_FLUSH] = "flush",
  [LB_CRASHLOG_WRITEBACK] = "writeback", [LB_CRASHLOG_CUT] = "cut",
};

static uint64_t
fnv1a (const unsigned char *p, uint64_t len)
{
  uint64_t h = UINT64_C (0xcbf29ce484222325);

  for (uint64_t i = 0; i < len; i++)
    h = (h ^ p[i]) * UINT64_C (0x100000001b3);
  return h;
}

int
main (int argc, char **argv)
{
  struct lb_crashlog_geometry g;
  struct lb_crashlog_reader *r;
  struct lb_crashlog_record rec;
  uint64_t limit;
  char err[256];
  int got;

  if (argc != 2) {
    fprintf (stderr, "usage: crashlog-dump LOG\n");
    return 2;
  }
  r = lb_crashlog_reader_open (argv[1], &g, &limit, err, sizeof err);
  if (r == NULL) {
    fprintf (stderr, "crashlog-dump: %s\n", err);
    return 1;
  }
  printf ("disk %" PRIu64 " %" PRIu32 " %" PRIu32 " limit %" PRIu64 "\n",
          g.disk_size, g.blksize, g.logical_blksize, limit);
  while ((got = lb_crashlog_reader_next (r, &rec, err, sizeof err)) == 1) {
    printf ("%" PRIu64 " %" PRIu64 " %s %u %" PRIu64 " %" PRIu64, rec.seq,
            rec.epoch, type_names[rec.type], (unsigned) rec.flags, rec.offset,
            rec.length);
    if (rec.type == LB_CRASHLOG_WRITE)
      printf (" %016" PRIx64 "\n", fnv1a (rec.data, rec.length));
    else
      printf (" -\n");
  }
  lb_crashlog_reader_close (r);
  if (got == -1) {
    fprintf (stderr, "crashlog-dump: %s\n", err);
    return 1;
  }
  return 0;
}
