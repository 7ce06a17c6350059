/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: reading a statsfile back.
 *
 * The plugin writes its statistics (lib/disk/stats: lb_stats_write_json, with
 * the write cache's object from lb_wcache_write_json) as one JSON object;
 * programs that drive it (largeblock-run --crash-test) need the write
 * cache's counters back.  This reader parses that document as JSON --
 * the whole top-level object, every value, strings with their escapes --
 * and takes the counters from the top-level "write_cache" member only,
 * so a key of the same name elsewhere (in another object, inside a
 * string) is never mistaken for them.  Members it does not know are
 * skipped, so a writer that adds some stays readable; a document that is
 * not well-formed JSON, or whose write_cache object lacks a counter or
 * holds one that is not an unsigned integer, is refused.
 *
 * Pure functions, no state: safe from any thread.
 */
#ifndef LARGEBLOCK_STATSREAD_H
#define LARGEBLOCK_STATSREAD_H

#include <stddef.h>
#include <stdint.h>

#include "wcache.h"

/* The "write_cache" object, as lb_wcache_write_json writes it. */
struct lb_statsread_wcache {
  enum lb_cut_mode mode;
  uint64_t seed;
  uint64_t size_bytes, bytes_peak;
  uint64_t implicit_flushes, written_through;
  uint64_t cuts;
  uint64_t blocks_kept, blocks_lost, blocks_torn;
  uint64_t logical_kept, logical_lost;
};

/* Parse text[0 .. len) (a whole statsfile) and fill *wc.  Returns 0; or
 * -1 with errno = ENOENT when the document is well-formed but has no
 * write_cache object (a server without write-cache=volatile), or
 * errno = EINVAL when it is malformed (empty, truncated, not JSON, a
 * counter missing, repeated or of the wrong type, an unknown mode), with
 * a one-line reason naming the byte offset in err.  *wc is then zeroed.
 */
int lb_statsread_wcache (const char *text, size_t len,
                         struct lb_statsread_wcache *wc, char *err,
                         size_t errlen);

/* Read the statsfile path and parse it as lb_statsread_wcache does.
 * Errors as there, the message prefixed with "statsfile PATH: "; also
 * errno from open or read (ENOENT: no file yet), or EFBIG for a file
 * beyond 1 MiB (no statsfile is that large).
 */
int lb_statsread_wcache_file (const char *path, struct lb_statsread_wcache *wc,
                              char *err, size_t errlen);

#endif /* LARGEBLOCK_STATSREAD_H */
