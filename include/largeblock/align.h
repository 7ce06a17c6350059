/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: request classification and the alignment policy.
 *
 * Owns the rules a request must meet against a geometry: within the disk,
 * offset and length multiples of the logical block, reads and writes no
 * larger than max-request.  Trim, zero, cache and extents may be any length
 * (the NBD 32-bit count); only reads and writes carry a data buffer, so
 * only they are bounded by max-request.
 *
 * Pure functions of their arguments; no state, no locking: every function
 * is thread-safe.  None of them fails or changes errno.  Part of the
 * installed library (largeblock.h, lb_align(3)).
 */
#ifndef LARGEBLOCK_ALIGN_H
#define LARGEBLOCK_ALIGN_H

#include <stddef.h>
#include <stdint.h>

#include <largeblock/geometry.h>

#ifdef __cplusplus
extern "C" {
#endif

/* New types are only ever added at the end. */
enum lb_req_type {
  LB_REQ_READ,
  LB_REQ_WRITE,
  LB_REQ_TRIM,
  LB_REQ_ZERO,
  LB_REQ_CACHE,
  LB_REQ_EXTENTS,
  LB_REQ_FLUSH
};

/* "read", "write", "trim", "zero", "cache", "extents", "flush". */
const char *lb_req_type_name (enum lb_req_type type);

enum lb_align_class {
  LB_ALIGN_OK,
  LB_ALIGN_ZERO_LENGTH,
  LB_ALIGN_PAST_END,  /* includes offset + count overflowing */
  LB_ALIGN_TOO_LARGE, /* read/write longer than max-request */
  LB_ALIGN_MISALIGNED_OFFSET,
  LB_ALIGN_MISALIGNED_LENGTH,
};

/* Classify a request.  The first rule broken wins, in the order of the
 * enum above (a request both too large and misaligned is TOO_LARGE).
 */
enum lb_align_class lb_align_classify (const struct lb_geometry *g,
                                       enum lb_req_type type, uint64_t offset,
                                       uint64_t count);

/* True for the two misalignment classes. */
static inline int
lb_align_is_misaligned (enum lb_align_class c)
{
  return c == LB_ALIGN_MISALIGNED_OFFSET || c == LB_ALIGN_MISALIGNED_LENGTH;
}

/* Write a one-line human reason for class c into buf, e.g.
 * "write offset 1000 is not a multiple of logical-blksize 4096".
 * Returns buf.
 */
char *lb_align_describe (const struct lb_geometry *g, enum lb_req_type type,
                         uint64_t offset, uint64_t count,
                         enum lb_align_class c, char *buf, size_t buflen);

#ifdef __cplusplus
}
#endif

#endif /* LARGEBLOCK_ALIGN_H */
