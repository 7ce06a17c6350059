/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock fuzzing: lb_statsread_wcache (a statsfile read back).
 *
 * Input: the file's bytes, exactly (no terminating NUL: the reader must
 * stop at the length).  Properties: never crashes, over-reads or leaks;
 * a refusal is ENOENT or EINVAL with a non-empty one-line message and a
 * zeroed result; an accepted document's counters, written back as the
 * writer would, read back to the same values.
 */
#include <config.h>

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "statsread.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static const struct lb_statsread_wcache zero;
  struct lb_statsread_wcache wc, again;
  char err[256], text[1024];
  int n;

  err[0] = '\0';
  if (lb_statsread_wcache ((const char *) data, size, &wc, err, sizeof err) ==
      -1) {
    assert (errno == EINVAL || errno == ENOENT);
    assert (err[0] != '\0' && strlen (err) < sizeof err);
    assert (strchr (err, '\n') == NULL);
    assert (memcmp (&wc, &zero, sizeof wc) == 0);
    return 0;
  }
  n = snprintf (text, sizeof text,
                "{ \"write_cache\": { \"mode\": \"%s\", \"seed\": %" PRIu64
                ", \"size\": %" PRIu64 ", \"bytes_peak\": %" PRIu64
                ", \"implicit_flushes\": %" PRIu64
                ", \"written_through\": %" PRIu64 ", \"cuts\": %" PRIu64
                ", \"blocks_kept\": %" PRIu64 ", \"blocks_lost\": %" PRIu64
                ", \"blocks_torn\": %" PRIu64 ", \"logical_kept\": %" PRIu64
                ", \"logical_lost\": %" PRIu64 " } }",
                lb_cut_mode_name (wc.mode), wc.seed, wc.size_bytes,
                wc.bytes_peak, wc.implicit_flushes, wc.written_through,
                wc.cuts, wc.blocks_kept, wc.blocks_lost, wc.blocks_torn,
                wc.logical_kept, wc.logical_lost);
  assert (n > 0 && (size_t) n < sizeof text);
  assert (lb_statsread_wcache (text, (size_t) n, &again, err, sizeof err) ==
          0);
  assert (memcmp (&wc, &again, sizeof wc) == 0);
  return 0;
}
